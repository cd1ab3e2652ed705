"""Reading the rows scalar indices selected: a take of the candidate rows instead of a scan.

The candidates (row addresses of covered fragments, deleted rows removed; see
:mod:`.index_query`) are grouped by fragment position; :func:`read_candidates` reads them in
(fragment position, offset) order:

* few candidates (at most :data:`FEW_ROWS`): one take of the projected columns -- plus the
  filter's when the indices do not answer the whole filter exactly -- for all of them at once
  (the multi-file take path, :mod:`.take`), then the filter evaluated again where needed;
* more: fragment by fragment, in units of at most ``MAX_UNIT_ROWS`` physical rows, late
  materialized: the filter's columns read at the candidates and evaluated (when needed), the
  other projected columns read only at the matches (:func:`.late._read_at`: by runs when
  sparse, by range then selected when dense).

:func:`count_candidates` counts the matches without reading the projected columns.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from lancejit.core.arrow_compute import take as arrow_take
from lancejit.core.config import settings

from ..indices.scalar import rowset
from ..meta.context import DatasetContext
from .assemble import assemble_table
from .fragment import ROWADDR, ROWID, numpy_array
from .spec import ScanSpec
from .take import _read

if TYPE_CHECKING:  # pragma: no cover
    from ..filter.compile import CompiledFilter
    from .fragment import FragmentReader
    from .version_index import DatasetIndex


def candidate_positions(index: "DatasetIndex", rows: np.ndarray,
                        rank: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``(positions, offsets)`` of sorted row addresses ``rows`` (of fragments of the version),
    sorted by (fragment position, offset), or by (``rank[position]``, offset) when ``rank``
    (int64, by version-index position) is given: the scan's order.  Fragments are reordered
    as whole runs (no sort of the rows)."""
    if not len(rows):
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    frag_ids, bounds = rowset.fragment_runs(rows)
    pos, _ = index.positions_of(frag_ids)
    pos = pos.astype(np.int64, copy=False)
    low = (rows & np.uint64(0xFFFFFFFF)).astype(np.int64)
    counts = np.diff(bounds)
    key = pos if rank is None else rank[pos]
    if len(key) > 1 and not bool((np.diff(key) > 0).all()):  # fragments in another order than ids
        order = np.argsort(key, kind="stable")
        pos, counts = pos[order], counts[order]
        low = low[rowset.span_positions(bounds[:-1][order], bounds[1:][order])]
    return np.repeat(pos, counts), low


def _filter_table(batch: pa.RecordBatch | pa.Table, compiled: "CompiledFilter") -> pa.Table:
    names = [n for n in batch.schema.names if n in compiled.columns]
    table = batch if isinstance(batch, pa.Table) else pa.Table.from_batches([batch])
    return table.select(names)


#: Candidates read by one multi-file take; more are read fragment by fragment (late materialized).
FEW_ROWS = 2048
#: Physical rows per unit when reading many candidates of one fragment.
UNIT_ROWS = 1 << 17


async def read_candidates(ctx: DatasetContext, spec: ScanSpec, index: "DatasetIndex", upos: np.ndarray,
                          uoff: np.ndarray, recheck: bool, fixed: dict | None = None) -> pa.Table | None:
    """The output rows of the candidates at (positions ``upos``, offsets ``uoff``; sorted,
    unique) that match ``spec.filter`` (evaluated on them when ``recheck``), as one table; None
    when none matches.  ``fixed``: columns whose value in every candidate the filter gives
    (name -> scalar; see :func:`.index_query.fixed_columns`): made, not read."""
    from ..filter.compile import filter_positions

    if not len(upos):
        return None
    consts = {k: v for k, v in (fixed or {}).items() if _constant(v, 0) is not None}
    if len(upos) > FEW_ROWS:
        return await _read_many(ctx, spec, index, upos, uoff, recheck, consts)
    compiled = spec.filter
    have: dict[str, Any] = {}
    if recheck and compiled is not None:
        # late materialization: the filter's columns at every candidate, the others at the matches
        ftops = tuple(t for t in ctx.top_fields if t.name in compiled.columns)
        fbatch = await _read_some(ctx, ScanSpec(tops=tuple(t for t in ftops if t.name not in consts)), index, upos,
                                  uoff)
        have = _columns(fbatch, ftops, consts, len(upos))
        keep = filter_positions(compiled, pa.table({t.name: have[t.name] for t in ftops}), len(upos))
        if not len(keep):
            return None
        if len(keep) < len(upos):
            idx = numpy_array(keep, pa.int64())
            have = {k: arrow_take(v, idx) for k, v in have.items()}
            upos, uoff = upos[keep], uoff[keep]
    have.update((k, _constant(v, len(upos))) for k, v in consts.items() if k not in have)
    rest = tuple(t for t in spec.tops if t.name not in have)
    batch = await _read_some(ctx, ScanSpec(tops=rest, with_row_id=spec.with_row_id,
                                           with_row_address=spec.with_row_address), index, upos, uoff)
    return _assemble(ctx, spec, batch, len(upos), have)


async def _read_some(ctx: DatasetContext, spec: ScanSpec, index: "DatasetIndex", upos: np.ndarray,
                     uoff: np.ndarray) -> pa.RecordBatch | pa.Table | None:
    """One take of ``spec``'s columns at the candidates; None when it reads nothing."""
    if not (spec.tops or spec.with_row_id or spec.with_row_address):
        return None
    return await _read(ctx, spec, index, upos, uoff)


def _columns(batch: pa.RecordBatch | pa.Table | None, tops: tuple, consts: dict, n: int) -> dict[str, Any]:
    """``tops``' columns by name: from ``batch``, or made from ``consts``."""
    out: dict[str, Any] = {}
    for t in tops:
        if t.name in consts:
            out[t.name] = _constant(consts[t.name], n)
        else:
            assert batch is not None  # the columns that are not constant were read into ``batch``
            out[t.name] = batch.column(t.name)
    return out


def _constant(value: pa.Scalar, n: int) -> pa.Array | None:
    """``n`` copies of ``value`` (integers, booleans, text and binary values), or None for
    other types."""
    t = value.type
    if pa.types.is_integer(t) or pa.types.is_boolean(t):
        return pa.array(np.full(n, value.as_py(), dtype=t.to_pandas_dtype()), type=t)
    large = pa.types.is_large_string(t) or pa.types.is_large_binary(t)
    if not (large or pa.types.is_string(t) or pa.types.is_binary(t)):
        return None
    data = value.as_py()
    data = data.encode() if isinstance(data, str) else bytes(data)
    offsets = np.arange(n + 1, dtype=np.int64 if large else np.int32) * len(data)
    return pa.Array.from_buffers(t, n, [None, pa.py_buffer(offsets), pa.py_buffer(data * n)])


def _assemble(ctx: DatasetContext, spec: ScanSpec, batch: pa.RecordBatch | pa.Table | None, n: int,
              have: dict) -> pa.Table:
    """The output table from a take's ``batch`` (its columns by name) and columns in ``have``."""
    by_top = {}
    for t in spec.tops:
        if t.name in have:
            by_top[t.name] = have[t.name]
        else:
            assert batch is not None  # the columns not in ``have`` were read into ``batch``
            by_top[t.name] = batch.column(t.name)
    meta = {} if batch is None else {name: batch.column(name) for name in (ROWID, ROWADDR)
                                     if name in batch.schema.names}
    return assemble_table(ctx, spec, by_top, meta, n)


async def _read_many(ctx: DatasetContext, spec: ScanSpec, index: "DatasetIndex", upos: np.ndarray,
                     uoff: np.ndarray, recheck: bool, consts: dict) -> pa.Table | None:
    """:func:`read_candidates` of many candidates: per fragment unit, late materialized."""
    import asyncio

    from ..filter.compile import filter_positions

    compiled = spec.filter if recheck else None
    ftops = [t for t in ctx.top_fields if compiled is not None and t.name in compiled.columns]
    units: list[tuple[int, int, int, np.ndarray]] = []
    for p, offs in _by_fragment(upos, uoff):
        first, last = int(offs[0]) // UNIT_ROWS, int(offs[-1]) // UNIT_ROWS
        cuts = np.searchsorted(offs, np.arange(first + 1, last + 1, dtype=np.int64) * UNIT_ROWS).tolist()
        for k, (c, d) in enumerate(zip([0, *cuts], [*cuts, len(offs)])):
            if d > c:
                lo = (first + k) * UNIT_ROWS
                units.append((p, lo, lo + UNIT_ROWS, offs[c:d]))

    async def one(p: int, lo: int, hi: int, offs: np.ndarray) -> pa.Table | None:
        frag = index.reader(p)
        hi = min(hi, frag.physical_rows)
        by_name: dict = {}
        if ftops and compiled is not None:  # (ftops: the filter's columns when rechecking)
            fread = [t for t in ftops if t.name not in consts]
            by_name = dict(zip((t.name for t in fread), await _read_rows(frag, fread, lo, hi, offs) if fread else ()))
            by_name.update((t.name, _constant(consts[t.name], len(offs))) for t in ftops if t.name in consts)
            table = pa.table({t.name: by_name[t.name] for t in ftops})
            keep = filter_positions(compiled, table, len(offs))
            if not len(keep):
                return None
            if len(keep) < len(offs):
                idx = numpy_array(keep, pa.int64())
                by_name = {k: arrow_take(a, idx) for k, a in by_name.items()}
                offs = offs[keep]
        by_name.update((k, _constant(v, len(offs))) for k, v in consts.items() if k not in by_name)
        rest = [t for t in spec.tops if t.name not in by_name]
        if rest:
            got = await _read_rows(frag, rest, lo, hi, offs)
            by_name.update({t.name: a for t, a in zip(rest, got)})
        meta = dict(await frag.meta_columns(offs, spec.with_row_id, spec.with_row_address))
        return assemble_table(ctx, spec, {t.name: by_name[t.name] for t in spec.tops}, meta, len(offs))

    parts = [t for t in await asyncio.gather(*(one(*u) for u in units)) if t is not None]
    if not parts:
        return None
    return parts[0] if len(parts) == 1 else pa.concat_tables(parts)


def _by_fragment(upos: np.ndarray, uoff: np.ndarray) -> list[tuple[int, np.ndarray]]:
    """``(position, offsets)`` of each fragment's run of candidates (``upos`` grouped)."""
    if upos[0] == upos[-1]:
        return [(int(upos[0]), uoff)]
    cuts = (np.flatnonzero(upos[1:] != upos[:-1]) + 1).tolist()
    return [(int(upos[a]), uoff[a:b]) for a, b in zip([0, *cuts], [*cuts, len(upos)])]


async def _read_rows(frag: "FragmentReader", tops: list, lo: int, hi: int, offs: np.ndarray) -> list:
    """Fields ``tops`` at the sorted physical offsets ``offs`` of the unit ``[lo, hi)`` of
    ``frag``, in ``tops`` order.  At least the ``late_take_fraction`` knob of the unit's rows:
    the whole range read, then the rows selected (:func:`.late._read_at`); fewer: the fields the
    multi-file decoder takes by one run plan over the rows (:func:`.scan_multi.read_members`),
    the others (dictionary pages...) by the fragment's take."""
    from .late import _read_at
    from .scan_multi import member_fields, read_members

    if len(offs) >= settings().late_take_fraction * (hi - lo):
        return await _read_at(frag, tops, lo, hi, offs)
    ok = await member_fields(frag.ctx, tops, frag)
    runs = [t for t, k in zip(tops, ok) if k]
    taken = [t for t, k in zip(tops, ok) if not k]
    got: dict[str, Any] = {}
    if runs:
        arrays = await read_members(frag.ctx, runs, [(frag, lo, hi)], [offs])
        if arrays is None:
            taken = list(tops)
        else:
            got.update((t.name, a) for t, a in zip(runs, arrays))
    if taken:
        got.update((t.name, a) for t, a in zip(taken, await frag.read(taken, offs)))
    return [got[t.name] for t in tops]


async def count_candidates(ctx: DatasetContext, compiled: "CompiledFilter", index: "DatasetIndex",
                           upos: np.ndarray, uoff: np.ndarray) -> int:
    """How many candidates match ``compiled`` (their filter columns read and evaluated)."""
    from ..filter.compile import filter_positions

    if not len(upos):
        return 0
    tops = tuple(t for t in ctx.top_fields if t.name in compiled.columns)
    batch = await _read(ctx, ScanSpec(tops=tops), index, upos, uoff)
    return len(filter_positions(compiled, _filter_table(batch, compiled), len(upos)))


__all__ = ["candidate_positions", "count_candidates", "read_candidates"]
