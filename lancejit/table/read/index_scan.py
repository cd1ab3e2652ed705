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

from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from lancejit.core.arrow_compute import take as arrow_take

from ..meta.context import DatasetContext
from .assemble import assemble_table
from .fragment import ROWADDR, ROWID, numpy_array
from .spec import ScanSpec
from .take import _read

if TYPE_CHECKING:  # pragma: no cover
    from ..filter.compile import CompiledFilter
    from .version_index import DatasetIndex


def candidate_positions(index: "DatasetIndex", rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(positions, offsets)`` of sorted row addresses ``rows`` (of fragments of the version),
    sorted by (fragment position, offset): the scan's order."""
    if not len(rows):
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    high = (rows >> np.uint64(32)).astype(np.int64)
    low = (rows & np.uint64(0xFFFFFFFF)).astype(np.int64)
    if high[0] == high[-1]:
        pos, _ = index.positions_of(high[:1])
        return np.full(len(rows), int(pos[0]), dtype=np.int64), low
    frag_ids, inverse = np.unique(high, return_inverse=True)
    pos, _ = index.positions_of(frag_ids)
    upos = pos[inverse.reshape(-1)].astype(np.int64)
    if len(frag_ids) > 1 and not bool((np.diff(pos) > 0).all()):  # manifest order differs from id order
        order = np.lexsort((low, upos))
        return upos[order], low[order]
    return upos, low


def _filter_table(batch: pa.RecordBatch | pa.Table, compiled: "CompiledFilter") -> pa.Table:
    names = [n for n in batch.schema.names if n in compiled.columns]
    table = batch if isinstance(batch, pa.Table) else pa.Table.from_batches([batch])
    return table.select(names)


#: Candidates read by one multi-file take; more are read fragment by fragment (late materialized).
FEW_ROWS = 2048
#: Physical rows per unit when reading many candidates of one fragment.
UNIT_ROWS = 1 << 17


async def read_candidates(ctx: DatasetContext, spec: ScanSpec, index: "DatasetIndex", upos: np.ndarray,
                          uoff: np.ndarray, recheck: bool) -> pa.Table | None:
    """The output rows of the candidates at (positions ``upos``, offsets ``uoff``; sorted,
    unique) that match ``spec.filter`` (evaluated on them when ``recheck``), as one table; None
    when none matches."""
    from ..filter.compile import filter_positions

    if not len(upos):
        return None
    if len(upos) > FEW_ROWS:
        return await _read_many(ctx, spec, index, upos, uoff, recheck)
    compiled = spec.filter
    if not (recheck and compiled is not None):
        batch = await _read(ctx, ScanSpec(tops=spec.tops, with_row_id=spec.with_row_id,
                                          with_row_address=spec.with_row_address), index, upos, uoff)
        return _assemble(ctx, spec, batch, len(upos), {})
    # late materialization: the filter's columns at every candidate, the others at the matches
    ftops = tuple(t for t in ctx.top_fields if t.name in compiled.columns)
    fbatch = await _read(ctx, ScanSpec(tops=ftops), index, upos, uoff)
    keep = filter_positions(compiled, _filter_table(fbatch, compiled), len(upos))
    if not len(keep):
        return None
    if len(keep) < len(upos):
        fbatch = arrow_take(fbatch, numpy_array(keep, pa.int64()))
        upos, uoff = upos[keep], uoff[keep]
    have = {t.name: fbatch.column(t.name) for t in ftops}
    rest = tuple(t for t in spec.tops if t.name not in have)
    batch = None
    if rest or spec.with_row_id or spec.with_row_address:
        batch = await _read(ctx, ScanSpec(tops=rest, with_row_id=spec.with_row_id,
                                          with_row_address=spec.with_row_address), index, upos, uoff)
    return _assemble(ctx, spec, batch, len(upos), have)


def _assemble(ctx: DatasetContext, spec: ScanSpec, batch: pa.RecordBatch | pa.Table | None, n: int,
              have: dict) -> pa.Table:
    """The output table from a take's ``batch`` (its columns by name) and columns in ``have``."""
    by_top = {}
    names = batch.schema.names if batch is not None else ()
    for t in spec.tops:
        by_top[t.name] = have[t.name] if t.name in have else batch.column(t.name)
    meta = {name: batch.column(name) for name in (ROWID, ROWADDR) if name in names}
    return assemble_table(ctx, spec, by_top, meta, n)


async def _read_many(ctx: DatasetContext, spec: ScanSpec, index: "DatasetIndex", upos: np.ndarray,
                     uoff: np.ndarray, recheck: bool) -> pa.Table | None:
    """:func:`read_candidates` of many candidates: per fragment unit, late materialized."""
    import asyncio

    from ..filter.compile import filter_positions
    from .late import _read_at

    compiled = spec.filter if recheck else None
    ftops = [t for t in ctx.top_fields if compiled is not None and t.name in compiled.columns]
    cuts = np.flatnonzero(upos[1:] != upos[:-1]) + 1
    bounds = [0, *cuts.tolist(), len(upos)]
    units: list[tuple[int, int, int, np.ndarray]] = []
    for a, b in zip(bounds[:-1], bounds[1:]):
        offs = uoff[a:b]
        unit = offs // UNIT_ROWS
        ucuts = [0, *(np.flatnonzero(unit[1:] != unit[:-1]) + 1).tolist(), len(offs)]
        for c, d in zip(ucuts[:-1], ucuts[1:]):
            lo = int(unit[c]) * UNIT_ROWS
            units.append((int(upos[a]), lo, lo + UNIT_ROWS, offs[c:d]))

    async def one(p: int, lo: int, hi: int, offs: np.ndarray) -> pa.Table | None:
        frag = index.reader(p)
        hi = min(hi, frag.physical_rows)
        by_name: dict = {}
        if ftops:
            arrays = await _read_at(frag, ftops, lo, hi, offs)
            table = pa.Table.from_arrays(list(arrays), names=[t.name for t in ftops])
            keep = filter_positions(compiled, table, len(offs))
            if not len(keep):
                return None
            if len(keep) < len(offs):
                idx = numpy_array(keep, pa.int64())
                arrays = [arrow_take(a, idx) for a in arrays]
                offs = offs[keep]
            by_name = {t.name: a for t, a in zip(ftops, arrays)}
        rest = [t for t in spec.tops if t.name not in by_name]
        if rest:
            got = await _read_at(frag, rest, lo, hi, offs)
            by_name.update({t.name: a for t, a in zip(rest, got)})
        meta = dict(await frag.meta_columns(offs, spec.with_row_id, spec.with_row_address))
        return assemble_table(ctx, spec, {t.name: by_name[t.name] for t in spec.tops}, meta, len(offs))

    parts = [t for t in await asyncio.gather(*(one(*u) for u in units)) if t is not None]
    if not parts:
        return None
    return parts[0] if len(parts) == 1 else pa.concat_tables(parts)


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
