"""Late materialization of filtered scans: the live rows of a unit, the filter's columns read
and evaluated once for a group of units, then the other projected columns read only for the
matching rows (by take when sparse, by range then selected when dense).

Groups of small units (many small fragments) go through :func:`read_small_group`: arrays for
the whole group (:func:`.scan_multi.read_members`), no per-fragment reads or assembly.  Big
units (one big fragment) are read unit by unit (:func:`_group_matches`, :func:`_finish_unit`):
an AND over several columns column by column, sparse rows by ``read_members`` run plans.

A *unit* is a half-open physical row range ``[lo, hi)`` of one fragment (see :mod:`.scan`).
"""

from __future__ import annotations

import asyncio
import enum
from typing import TYPE_CHECKING, Any, Final, Literal, Sequence

import numpy as np
import pyarrow as pa

from lancejit.core import arrow_compute as pc
from lancejit.core.config import settings
from lancejit.core.cores import off_loop_if_idle

from ..meta.context import DatasetContext
from ..meta.fields import TopField
from .fragment import FragmentReader, unit_live_offsets as _live

if TYPE_CHECKING:
    from ..filter.compile import CompiledFilter
    from .spec import ScanSpec

#: Units of at most this many rows are read by take of their rows (see ``_read_rows``).
SMALL_UNIT_ROWS = 4096
#: Selections of at least this many rows run in a worker thread (pyarrow's take releases the
#: GIL), so the event loop keeps issuing reads and decodes meanwhile.
OFFLOAD_SELECT_ROWS = 1 << 15
#: Big units evaluate their filter kernels in a worker thread (the kernels release the GIL)
#: while the event loop reads and decodes other units.  Off: with few cores, the hand-off made
#: filtered scans spend more CPU on their filters and was not faster.
OFFLOAD_EVAL = False


def _select(arrays: list, positions: np.ndarray, n: int) -> list:
    """``arrays`` (``n`` rows each, plain or chunked) at the sorted, unique ``positions``
    (int64): Arrow's ``take`` with one index array for all columns.  (Whether few or most rows
    are selected, take costs a fraction of building a boolean mask and filtering, on
    int64 / float64 / string / 64-float vector columns alike.)"""
    if len(positions) == n:
        return list(arrays)
    idx = pa.Array.from_buffers(pa.int64(), len(positions), [None, pa.py_buffer(np.ascontiguousarray(positions))])
    return [pc.take(a, idx) for a in arrays]


async def _read_rows(
    frag: FragmentReader, tops: list[TopField], lo: int, hi: int, live: np.ndarray | None
) -> list[pa.Array | pa.ChunkedArray]:
    """Fields at the live rows of ``[lo, hi)`` (``live``: their offsets, None = all).  Small
    units are read by take (the file reader's one-plan array path, which keeps its plan on the
    opened file: cheapest when a scan visits many small files); big ones by :func:`_read_at`."""
    if hi - lo <= SMALL_UNIT_ROWS:
        return await frag.read(tops, np.arange(lo, hi, dtype=np.int64) if live is None else live)
    return await _read_at(frag, tops, lo, hi, live)


async def _read_at(
    frag: FragmentReader, tops: list[TopField], lo: int, hi: int, rows: np.ndarray | None
) -> list[pa.Array | pa.ChunkedArray]:
    """Fields ``tops`` at the sorted physical offsets ``rows`` of a big unit ``[lo, hi)`` (None:
    every row), in ``tops`` order.

    Fewer than the ``late_take_fraction`` knob of the rows: one :func:`.scan_multi.read_members` call (a run
    plan over the selected rows, one decode kernel per column: cheaper than the file reader's
    take), or the fragment reader's take for columns it does not qualify.  Otherwise the whole
    range by the fragment reader (its page decoders beat the run decoder on whole ranges, of
    fixed-width and FSST string columns alike), then one ``take`` of the rows."""
    from .scan_multi import read_members

    n = hi - lo
    if rows is not None and len(rows) < settings().late_take_fraction * n:
        got = await read_members(frag.ctx, tops, [(frag, lo, hi)], [rows])
        return got if got is not None else await frag.read(tops, rows)
    out = await frag.read(tops, (lo, hi))
    if rows is None:
        return out
    return await _select_async(out, rows - lo, n)


async def _select_async(arrays: list, positions: np.ndarray, n: int) -> list:
    if len(positions) < n and len(positions) >= OFFLOAD_SELECT_ROWS:
        return await off_loop_if_idle(_select, arrays, positions, n)
    return _select(arrays, positions, n)


def _chunks(array: Any) -> list:
    return list(array.chunks) if isinstance(array, pa.ChunkedArray) else [array]


async def _group_matches(
    ctx: DatasetContext, compiled: "CompiledFilter", members: list[tuple[FragmentReader, int, int]],
    extra: Sequence[TopField] = (),
) -> tuple[list, list[TopField], list, list[np.ndarray]]:
    """The filter's columns (plus ``extra``) read for the live rows of every member unit
    (concurrently), evaluated ONCE over all of them (one Arrow call for many small units),
    and the matches split back: ``(lives, columns read, arrays per member, matches per member
    as positions among that member's live rows)``."""
    lives = await asyncio.gather(*(_live(r, lo, hi) for r, lo, hi in members))
    ftops = [t for t in ctx.top_fields if t.name in compiled.columns]
    read = ftops + [t for t in extra if t.name not in compiled.columns]
    # column by column only for big units: for small ones another read per column costs
    # more than the decoding it may save
    big = any(hi - lo > SMALL_UNIT_ROWS for _, lo, hi in members)
    stages = _stages(compiled, ftops) if STAGED_AND and big and not extra else None
    if stages is not None:
        staged = await _staged_matches(stages, members, list(lives), read)
        if staged is not None:
            return list(lives), read, staged[0], staged[1]
    arrays = await asyncio.gather(*(_read_rows(r, read, lo, hi, live) for (r, lo, hi), live in zip(members, lives)))
    n_lives = [(hi - lo) if live is None else len(live) for (_, lo, hi), live in zip(members, lives)]
    schema = pa.schema([ctx.schema.field(t.name) for t in ftops])
    cols = [pa.chunked_array([c for arrs in arrays for c in _chunks(arrs[i])], type=schema.field(i).type)
            for i in range(len(ftops))]
    ftable = pa.Table.from_arrays(cols, schema=schema)
    from ..filter.compile import filter_positions  # sqlglot loads with the first filter

    matches = None
    if big and compiled.fast is not None and ftable.num_columns and OFFLOAD_EVAL:
        from ..filter.fast import fast_positions

        # the kernels release the GIL: other units decode meanwhile
        matches = await asyncio.to_thread(fast_positions, compiled.fast, ftable)
    if matches is None:
        matches = filter_positions(compiled, ftable, sum(n_lives))
    bounds = np.zeros(len(members) + 1, dtype=np.int64)
    np.cumsum(n_lives, out=bounds[1:])
    cuts = np.searchsorted(matches, bounds).tolist()
    split = [matches[cuts[i]:cuts[i + 1]] - bounds[i] for i in range(len(members))]
    return list(lives), read, list(arrays), split


#: An AND of predicates on several columns is evaluated column by column (see ``_stages``):
#: a unit none of whose rows passes the first columns' predicates skips the other columns.
STAGED_AND = True
_STAGE_ORDER = {"int": 0, "f64": 1, "dbl": 0, "mod": 0, "bitmap": 0, "sorted": 1, "null": 2, "prefix": 3, "streq": 3}


def _stages(compiled: "CompiledFilter", ftops: list[TopField]) -> list[tuple[TopField, Any]] | None:
    """``[(column, predicate on it)]`` in evaluation order when the filter's kernel plan is an
    AND of predicates each on one column, over at least two columns; else None.  Integer
    columns come first (keys and timestamps are often clustered: their predicates tend to
    reject whole units), then floats, then strings."""
    from ..filter.fast import Junction, columns_of

    fast = compiled.fast
    if not isinstance(fast, Junction) or fast.op != "and":
        return None
    by_col: dict[str, list] = {}
    rank: dict[str, int] = {}
    for part in fast.parts:
        cols = columns_of(part)
        if len(cols) != 1:
            return None
        (name,) = cols
        by_col.setdefault(name, []).append(part)
        stack, kinds = [part], []
        while stack:
            n = stack.pop()
            if isinstance(n, Junction):
                stack.extend(n.parts)
            else:
                kinds.append(_STAGE_ORDER.get(n.kind, 3))
        rank[name] = min(rank.get(name, 3), max(kinds))
    if len(by_col) < 2:
        return None
    tops = {t.name: t for t in ftops}
    if any(name not in tops for name in by_col):
        return None
    order = sorted(by_col, key=lambda c: (rank[c], list(by_col).index(c)))
    return [(tops[c], by_col[c][0] if len(by_col[c]) == 1 else Junction("and", tuple(by_col[c])))
            for c in order]


async def _staged_matches(
    stages: list[tuple[TopField, Any]], members: list[tuple[FragmentReader, int, int]],
    lives: list[np.ndarray | None], read: list[TopField],
) -> tuple[list, list[np.ndarray]] | None:
    """``(arrays per member, matches per member)`` of an AND evaluated stage by stage (see
    ``_stages``): each column is read only for the members with rows still passing; a member
    left without rows gets None for the columns it did not read.  None when a decoded chunk
    has a layout the kernels do not read (the caller evaluates the usual way)."""
    from ..filter.fast import fast_mask, positions

    n_lives = [(hi - lo) if live is None else len(live) for (_, lo, hi), live in zip(members, lives)]
    got: list[dict[str, Any]] = [{} for _ in members]
    masks: list[np.ndarray | None] = [None] * len(members)
    alive = [i for i, n in enumerate(n_lives) if n]
    for top, node in stages:
        cols = await asyncio.gather(*(_read_rows(members[i][0], [top], members[i][1], members[i][2], lives[i])
                                      for i in alive))
        still = []
        for i, (arr,) in zip(alive, cols):
            got[i][top.name] = arr
            by_name = {top.name: _chunks(arr)}
            if OFFLOAD_EVAL:  # (stages run for big units only)
                mask = await asyncio.to_thread(fast_mask, node, by_name, n_lives[i])
            else:
                mask = fast_mask(node, by_name, n_lives[i])
            if mask is None:
                return None
            prev = masks[i]
            if prev is not None:
                np.bitwise_and(mask, prev, out=mask)
            masks[i] = mask
            if mask.view(np.bool_).any():
                still.append(i)
        alive = still
    rest = [t for t in read if t.name not in got[alive[0]]] if alive else []
    if rest:
        more = await asyncio.gather(*(_read_rows(members[i][0], rest, members[i][1], members[i][2], lives[i])
                                      for i in alive))
        for i, arrs in zip(alive, more):
            got[i].update({t.name: a for t, a in zip(rest, arrs)})
    arrays = [[g.get(t.name) for t in read] for g in got]
    empty = np.zeros(0, dtype=np.int64)
    survivors = set(alive)
    matches = []
    for i, m in enumerate(masks):
        if i in survivors:
            assert m is not None  # every survivor passed the stages
            matches.append(positions(m))
        else:
            matches.append(empty)
    return arrays, matches


async def _finish_unit(
    frag: FragmentReader, spec: "ScanSpec", lo: int, hi: int, live: np.ndarray | None,
    read: list[TopField], arrays: list, matches: np.ndarray,
) -> tuple[dict[str, Any], dict[str, pa.Array], int] | None:
    """A filtered unit's output columns from its ``matches`` (positions among its live rows)
    and the columns already ``read``: the other projected columns by take when fewer than
    ``late_take_fraction`` of the unit's rows match, else by range then selected.  Returns
    ``(arrays by top-level name, meta columns, rows)`` for ``scan.assemble_table``, or None
    when no row matches."""
    if len(matches) == 0:
        return None
    tops = list(spec.tops)
    n_live = (hi - lo) if live is None else len(live)
    offsets = (live if live is not None else np.arange(lo, hi, dtype=np.int64))[matches]
    wanted = [(t, arr) for t, arr in zip(read, arrays) if any(t.name == p.name for p in tops)]
    picked = await _select_async([arr for _, arr in wanted], matches, n_live)
    by_name = {t.name: arr for (t, _), arr in zip(wanted, picked)}
    rest = [t for t in tops if t.name not in by_name]
    if rest:
        if hi - lo <= SMALL_UNIT_ROWS:
            got = await frag.read(rest, offsets)
        else:
            got = await _read_at(frag, rest, lo, hi, offsets)
        by_name.update({t.name: a for t, a in zip(rest, got)})
    meta = dict(await frag.meta_columns(offsets, spec.with_row_id, spec.with_row_address))
    return by_name, meta, len(offsets)


class _NotHandled(enum.Enum):
    NOT_HANDLED = "not handled"


#: What :func:`read_small_group` returns for members it does not take.
NOT_HANDLED: Final = _NotHandled.NOT_HANDLED


async def read_small_group(
    ctx: DatasetContext, spec: "ScanSpec", members: list[tuple[FragmentReader, int, int]],
) -> tuple[dict[str, Any], dict[str, pa.Array], int] | None | Literal[_NotHandled.NOT_HANDLED]:
    """A filtered scan's output for a group of small units (at most ``SMALL_UNIT_ROWS`` rows
    each, e.g. many small fragments) as arrays: the filter's columns decoded for every member
    at once (:func:`.scan_multi.read_members`) and evaluated once, the matching rows' other
    columns read by one more ``read_members`` call for the members with matches.  Returns
    ``(arrays by top-level name, meta columns, rows)`` for ``scan.assemble_table``, None when
    no row matches, or ``NOT_HANDLED`` when a member is big or the filter's columns do not
    qualify for ``read_members`` (then only the deletion vectors were read)."""
    from .scan_multi import evaluate_members, read_members

    compiled = spec.filter
    assert compiled is not None
    if any(hi - lo > SMALL_UNIT_ROWS for _, lo, hi in members):
        return NOT_HANDLED
    evaluated = await evaluate_members(ctx, compiled, members)
    if evaluated is None:
        return NOT_HANDLED
    ftops, lives, arrays, matches, bounds = evaluated
    k = len(members)
    los = np.fromiter((lo for _, lo, _ in members), dtype=np.int64, count=k)
    n = len(matches)
    if n == 0:
        return None
    # physical offsets of the matches, member by member
    cuts = np.searchsorted(matches, bounds)
    per = np.diff(cuts)
    owner = np.repeat(np.arange(k, dtype=np.int64), per)
    phys = matches - bounds[owner] + los[owner]
    hit = np.flatnonzero(per).tolist()
    for i in hit:
        live = lives[i]
        if live is not None:
            a, b = int(cuts[i]), int(cuts[i + 1])
            phys[a:b] = live[matches[a:b] - bounds[i]]
    sels = [phys[int(cuts[i]):int(cuts[i + 1])] for i in hit]
    subs = [members[i] for i in hit]
    have = {t.name: j for j, t in enumerate(ftops)}
    by_name: dict[str, Any] = {}
    kept = [t for t in spec.tops if t.name in have]
    if kept:
        picked = _select([arrays[have[t.name]] for t in kept], matches, int(bounds[-1]))
        by_name.update({t.name: a for t, a in zip(kept, picked)})
    rest = [t for t in spec.tops if t.name not in have]
    if rest:
        total = int(bounds[-1])
        if n >= settings().late_take_fraction * total:  # dense: every live row (ranges), then the matches
            got = await read_members(ctx, rest, members, lives)
            if got is not None:
                got = _select(got, matches, total)
        else:
            got = await read_members(ctx, rest, subs, sels)
        if got is None:  # columns the run decoder does not take (nested, dictionary...)
            parts = await asyncio.gather(*(f.read(rest, s) for (f, _, _), s in zip(subs, sels)))
            got = [pa.chunked_array([c for p in parts for c in _chunks(p[j])], type=ctx.schema.field(t.name).type)
                   for j, t in enumerate(rest)]
        by_name.update({t.name: a for t, a in zip(rest, got)})
    meta: dict[str, pa.Array] = {}
    if spec.with_row_id or spec.with_row_address:
        got_meta = [dict(await f.meta_columns(s, spec.with_row_id, spec.with_row_address))
                    for (f, _, _), s in zip(subs, sels)]
        meta = {name: pa.concat_arrays([g[name] for g in got_meta]) for name in got_meta[0]}
    return by_name, meta, n
