"""Scanning a dataset version as one pipeline: units planned as arrays over the version index
(:mod:`.scan_plan`, pruned by statistics where an index covers a fragment), read concurrently with readahead bounded by
estimated bytes in flight (many small fragments are opened and read together), filtered,
re-batched (batches of ``batch_size`` rows may span fragments), then offset/limit applied in
scan order.

A *unit* is a half-open physical row range ``[lo, hi)`` of one fragment.  With a filter, the
filter's columns are read first; the other columns are read only for the matching rows (by
take) when the matches are sparse, otherwise the whole unit is read and sliced
(the ``late_materialization`` knob; :mod:`.late` decides per unit from its measured selectivity).
"""

from __future__ import annotations

import asyncio
from collections import deque
from typing import TYPE_CHECKING, Any, AsyncGenerator, Awaitable, Callable

import numpy as np
import pyarrow as pa

from lancejit.core.config import settings

from ..meta.context import DatasetContext
from .fragment import FragmentReader, unit_live_offsets as _live
from .heap import keep_scan_buffers
from .assemble import _no_column_batch, assemble_table
from .spec import ScanSpec
from .version_index import dataset_index
from .late import NOT_HANDLED, SMALL_UNIT_ROWS, _finish_unit, _group_matches, _read_rows, read_small_group
from .scan_multi import filter_members, member_lives, read_members
from .scan_plan import ScanPlan, bytes_per_row, plan_units, ramp_first_unit, with_takes

if TYPE_CHECKING:
    from ..filter.compile import CompiledFilter
    from .version_index import DatasetIndex

#: Filtered scans with late materialization take units of up to this many times the
#: ``scan_unit_rows`` knob's rows (same ``scan_unit_bytes``): each unit's filter columns are read,
#: evaluated and its other columns fetched in turn, so the per-unit Python counts for more than
#: the overlap smaller units give (filtered scans are faster with units twice as large; an
#: unfiltered scan, slower with them, keeps its units).
FILTERED_UNIT_FACTOR = 2
#: A filtered scan evaluates its filter once for runs of consecutive small units of up to
#: this many rows (one Arrow call instead of one per small fragment).
EVAL_GROUP_ROWS = 1 << 15
#: An unfiltered scan reads runs of consecutive units of at most ``GROUP_UNIT_ROWS`` rows each
#: together (one plan, one data buffer and one decode kernel per column for all their files:
#: :mod:`.scan_multi`), up to this many rows ...
SCAN_GROUP_ROWS = 1 << 16
GROUP_UNIT_ROWS = 1 << 16
#: ... and this many estimated encoded bytes per group.
GROUP_BYTES = 16 * 1024 * 1024
#: Most candidate rows of consecutive take units (fragments scalar indices answer) read at once.
TAKE_GROUP_ROWS = 1 << 16


def _rows_per_unit(frag: FragmentReader, batch_size: int) -> int:
    """Physical rows per unit: about ``scan_unit_bytes`` (a knob) of the fragment's files, at least
    one batch, at most ``scan_unit_rows``."""
    s = settings()
    total = sum(df.file_size_bytes or 0 for df in frag.fragment.files)
    rows = frag.physical_rows or 1
    bpr = total / rows if total else 0
    by_bytes = int(s.scan_unit_bytes / bpr) if bpr > 0 else s.scan_unit_rows
    return max(1, min(s.scan_unit_rows, max(batch_size, by_bytes)))


async def read_group_table(
    ctx: DatasetContext, spec: ScanSpec, members: list[tuple[FragmentReader, int, int]]
) -> pa.Table | None:
    """The output rows of several consecutive units of a filtered scan (their filter evaluated
    at once), in order, as one table (None when no row survives)."""
    assert spec.filter is not None
    late = settings().late_materialization
    if late and len(members) > 1:  # many small units: as arrays (late.py)
        got = await read_small_group(ctx, spec, members)
        if got is not NOT_HANDLED:
            return None if got is None else assemble_table(ctx, spec, *got)
    early = [] if late else list(spec.tops)
    lives, read, arrays, matches = await _group_matches(ctx, spec.filter, members, early)
    parts = await asyncio.gather(*(
        _finish_unit(r, spec, lo, hi, live, read, arrs, m)
        for (r, lo, hi), live, arrs, m in zip(members, lives, arrays, matches)
    ))
    tables = [assemble_table(ctx, spec, *p) for p in parts if p is not None]
    if not tables:
        return None
    return tables[0] if len(tables) == 1 else pa.concat_tables(tables)


async def read_unit_table(
    ctx: DatasetContext, frag: FragmentReader, spec: ScanSpec, lo: int, hi: int
) -> pa.Table | None:
    """One unit's output rows as a table whose columns keep the decoder's chunks (None when no
    row survives).  With a filter and late materialization, the filter's columns are read
    first and the other projected columns only for the matching rows (see :mod:`.late`)."""
    if spec.filter is not None:
        return await read_group_table(ctx, spec, [(frag, lo, hi)])
    live = await _live(frag, lo, hi)
    if live is not None and len(live) == 0:
        return None
    tops = list(spec.tops)
    arrays = await _read_rows(frag, tops, lo, hi, live)
    by_name = {t.name: a for t, a in zip(tops, arrays)}
    rows = (lo, hi) if live is None else live
    n = (hi - lo) if isinstance(rows, tuple) else len(rows)
    meta = dict(await frag.meta_columns(rows, spec.with_row_id, spec.with_row_address))
    return assemble_table(ctx, spec, by_name, meta, n)


async def read_plain_group(
    ctx: DatasetContext, spec: ScanSpec, members: list[tuple[FragmentReader, int, int]],
    limit: asyncio.Semaphore | None = None,
) -> pa.Table | list[pa.Table] | None:
    """The output rows of consecutive units of an unfiltered scan, in order, as one table
    (None when no row survives): every projected field decoded once for all of them
    (:func:`.scan_multi.read_members`), else unit by unit (a list of the units' tables; at
    most ``limit`` units of the scan read at once)."""
    assert spec.filter is None
    keep = []
    for (frag, lo, hi), live in zip(members, await member_lives(members)):
        if live is None or len(live):
            keep.append((frag, lo, hi, live))
    if not keep:
        return None
    arrays = None
    if spec.tops:
        arrays = await read_members(ctx, spec.tops, [k[:3] for k in keep], [k[3] for k in keep])
    if arrays is None:
        if len(keep) == 1:
            tables = [await read_unit_table(ctx, keep[0][0], spec, keep[0][1], keep[0][2])]
        else:
            async def one(f: FragmentReader, lo: int, hi: int) -> pa.Table | None:
                if limit is None:
                    return await read_unit_table(ctx, f, spec, lo, hi)
                async with limit:
                    return await read_unit_table(ctx, f, spec, lo, hi)

            tables = await asyncio.gather(*(one(f, lo, hi) for f, lo, hi, _ in keep))
        return [t for t in tables if t is not None]
    n = sum((hi - lo) if live is None else len(live) for _, lo, hi, live in keep)
    by_name = {t.name: a for t, a in zip(spec.tops, arrays)}
    meta: dict[str, pa.Array] = {}
    if spec.with_row_id or spec.with_row_address:
        per = [dict(await f.meta_columns((lo, hi) if live is None else live, spec.with_row_id,
                                         spec.with_row_address)) for f, lo, hi, live in keep]
        meta = {name: pa.concat_arrays([p[name] for p in per]) for name in per[0]}
    return assemble_table(ctx, spec, by_name, meta, n)


async def read_unit(
    ctx: DatasetContext, frag: FragmentReader, spec: ScanSpec, lo: int, hi: int
) -> pa.RecordBatch | None:
    """One unit's output batch (None when no row survives); one contiguous batch."""
    table = await read_unit_table(ctx, frag, spec, lo, hi)
    if table is None:
        return None
    if table.num_columns == 0:
        return _no_column_batch(table.num_rows, table.schema)
    return table.combine_chunks().to_batches()[0] if table.num_rows else None


def _positions(index: "DatasetIndex", fragment_ids: tuple[int, ...] | None) -> np.ndarray:
    """Index positions of the fragments to scan, in scan order (``fragment_ids`` order when
    given; ids not in the version are skipped, repeats read once)."""
    if fragment_ids is None:
        return np.arange(len(index), dtype=np.int64)
    ids = np.asarray(fragment_ids, dtype=np.int64)
    _, first = np.unique(ids, return_index=True)
    ids = ids[np.sort(first)]
    pos, found = index.positions_of(ids)
    return pos[found]


def _range_positions(index: "DatasetIndex", ranges: tuple[tuple[int, int, int], ...]
                     ) -> tuple[np.ndarray, tuple[np.ndarray, np.ndarray]]:
    """Index positions and clipped physical row bounds ``(lo, hi)`` of ``(fragment id, lo, hi)``
    ranges, in the given order (ranges of fragments not in the version dropped)."""
    arr = np.asarray(ranges, dtype=np.int64).reshape(-1, 3)
    pos, found = index.positions_of(arr[:, 0])
    arr, pos = arr[found], pos[found]
    rows = index.physical_rows[pos].astype(np.int64, copy=False)
    lo = np.clip(arr[:, 1], 0, rows)
    hi = np.clip(arr[:, 2], lo, rows)
    return pos, (lo, hi)


async def _plan(ctx: DatasetContext, spec: ScanSpec, count: bool = False) -> tuple["DatasetIndex", ScanPlan, int]:
    """The version index, the units to read and the rows still to skip for the offset (whole
    fragments inside the offset, and past offset + limit, are dropped from the plan when there
    is no filter).  With a
    filter, fragments scalar indices answer get take units of their candidate rows
    (:mod:`.index_plan`) when that beats scanning them (``count``: also when the indices count
    the matches exactly: the plan's ``indexed`` then holds the count and no unit reads them)."""
    index = await dataset_index(ctx)
    bounds = None
    if spec.fragment_ranges is not None:
        positions, bounds = _range_positions(index, spec.fragment_ranges)
    else:
        positions = _positions(index, spec.fragment_ids)
    to_skip = spec.offset
    if spec.filter is None and to_skip > 0 and len(positions) and bounds is None:
        ends = np.cumsum(index.live_rows[positions])
        k = int(np.searchsorted(ends, to_skip, side="right"))
        if k:
            to_skip -= int(ends[k - 1])
            positions = positions[k:]
    if spec.filter is None and spec.limit is not None and len(positions) and bounds is None:
        # fragments past the limit are not read (``head``, ``limit=``)
        ends = np.cumsum(index.live_rows[positions])
        positions = positions[:int(np.searchsorted(ends, to_skip + spec.limit, side="left")) + 1]
    indexed = None
    scanned = positions
    pruner = None
    if spec.filter is not None:
        if bounds is None and ctx.manifest.index_section is not None:  # (row ranges are scanned)
            from .index_plan import plan_indexed  # scalar indices: candidates taken instead of scanned

            indexed = await plan_indexed(ctx, index, spec.filter, positions)
        if indexed is not None and (indexed.worth_taking() or (count and indexed.matches() is not None)):
            scanned = positions if not len(indexed.positions) else (
                positions[:0] if len(indexed.positions) == len(positions)
                else positions[~np.isin(positions, indexed.positions)])
        else:
            indexed = None
        if len(scanned):
            from .pruning import prepare  # page statistics / zone maps where their index covers a fragment

            pruner = await prepare(ctx, spec.filter)
    knobs = settings()
    filtered_late = spec.filter is not None and knobs.late_materialization
    max_rows = knobs.scan_unit_rows * (FILTERED_UNIT_FACTOR if filtered_late else 1)
    if spec.unit_rows is not None:
        max_rows = spec.unit_rows
    plan = plan_units(ctx, index, scanned, spec.batch_size, knobs.scan_unit_bytes, max_rows, pruner, bounds)
    if indexed is not None:
        if count and indexed.matches() is not None:
            plan = ScanPlan(plan.pos, plan.lo, plan.hi, plan.est_bytes, None, indexed)
        else:
            plan = with_takes(plan, indexed, positions, bytes_per_row(ctx, index))
    return index, plan, to_skip


async def _pipeline(
    index: "DatasetIndex", plan: ScanPlan, readahead: int,
    read: Callable[[list[tuple[FragmentReader, int, int]]], Awaitable[Any]], group_rows: int = 0,
    unit_rows: int = SMALL_UNIT_ROWS, read_take: Callable[[int, int], Awaitable[Any]] | None = None,
    solo: int = 0,
) -> AsyncGenerator[Any, None]:
    """``read(members)`` of every unit, results in plan order; with ``group_rows``, runs of
    consecutive units of at most ``unit_rows`` rows each are handed over together, up to
    ``group_rows`` rows and ``GROUP_BYTES`` estimated bytes (filtered scans evaluate a group's
    filter once, unfiltered ones decode a group's columns once).  Work runs ahead
    while fewer than ``readahead`` groups are in flight, or while their estimated bytes stay
    under the ``scan_readahead_bytes`` knob (at most ``scan_units_in_flight``): many small fragments are read
    and opened concurrently, a few big units bound memory.  The first ``solo`` units are read
    alone (the ramp of :func:`.scan_plan.ramp_first_unit`).  Fragment readers come from the
    version index (made on first use, kept with the version: their opened files and layouts
    serve later scans).  Take units (see :class:`~.scan_plan.ScanPlan`) go to ``read_take(a,
    b)`` (a range of the indices' candidate rows), consecutive ones together up to
    ``TAKE_GROUP_ROWS`` candidates."""
    pending: deque[tuple[asyncio.Future, int]] = deque()
    pos, lo, hi, est = (a.tolist() for a in (plan.pos, plan.lo, plan.hi, plan.est_bytes))
    take = plan.take.tolist() if plan.take is not None else None
    n = len(pos)
    nxt = 0
    in_flight = 0
    knobs = settings()
    ahead_bytes, max_units = knobs.scan_readahead_bytes, knobs.scan_units_in_flight

    def fill() -> None:
        nonlocal nxt, in_flight
        while nxt < n and (len(pending) < readahead or (
                in_flight + est[nxt] <= ahead_bytes and len(pending) < max_units)):
            if take is not None and take[nxt]:
                a, b, size = lo[nxt], hi[nxt], est[nxt]
                nxt += 1
                while nxt < n and take[nxt] and hi[nxt] - a <= TAKE_GROUP_ROWS:
                    b, size = hi[nxt], size + est[nxt]
                    nxt += 1
                assert read_take is not None
                pending.append((asyncio.ensure_future(read_take(a, b)), size))
                in_flight += size
                continue
            members = [(index.reader(pos[nxt]), lo[nxt], hi[nxt])]
            size, rows = est[nxt], hi[nxt] - lo[nxt]
            nxt += 1
            if group_rows and rows <= unit_rows and nxt > solo:
                while (nxt < n and (take is None or not take[nxt]) and hi[nxt] - lo[nxt] <= unit_rows
                       and rows + hi[nxt] - lo[nxt] <= group_rows
                       and size + est[nxt] <= GROUP_BYTES):
                    members.append((index.reader(pos[nxt]), lo[nxt], hi[nxt]))
                    size += est[nxt]
                    rows += hi[nxt] - lo[nxt]
                    nxt += 1
            pending.append((asyncio.ensure_future(read(members)), size))
            in_flight += size

    try:
        fill()
        while pending:
            fut, size = pending[0]
            result = await fut
            pending.popleft()
            in_flight -= size
            fill()
            yield result
    finally:
        for fut, _ in pending:
            fut.cancel()
        if pending:
            await asyncio.gather(*(f for f, _ in pending), return_exceptions=True)


async def scan(ctx: DatasetContext, spec: ScanSpec, *, ramp: bool = True) -> AsyncGenerator[pa.RecordBatch, None]:
    """Output batches in scan order with offset and limit applied; batches hold exactly
    ``spec.batch_size`` rows but the last and may span fragments.  ``ramp``: the first unit is
    read in growing pieces (the first batch sooner; off for scans consumed whole)."""
    remaining = spec.limit
    if remaining is not None and remaining <= 0:
        return
    keep_scan_buffers()  # (once per process: freed scan buffers reused, see .heap)
    index, plan, to_skip = await _plan(ctx, spec)
    plan, solo = ramp_first_unit(plan, spec.batch_size) if ramp else (plan, 0)
    limit = asyncio.Semaphore(settings().scan_units_in_flight)

    async def read(members: list[tuple[FragmentReader, int, int]]) -> Any:
        if spec.filter is not None:
            return await read_group_table(ctx, spec, members)
        if len(members) == 1 and members[0][2] - members[0][1] > GROUP_UNIT_ROWS:
            frag, lo, hi = members[0]
            return await read_unit_table(ctx, frag, spec, lo, hi)
        return await read_plain_group(ctx, spec, members, limit)

    read_take = None
    if plan.indexed is not None:
        from .index_scan import read_candidates

        got = plan.indexed

        async def read_take(a: int, b: int) -> Any:
            return await read_candidates(ctx, spec, index, got.upos[a:b], got.uoff[a:b], not got.exact, got.fixed)

    if read_take is not None and plan.take is not None and bool(plan.take.all()) and (
            not len(plan.hi) or int(plan.hi[-1]) - int(plan.lo[0]) <= TAKE_GROUP_ROWS):
        pipeline = _one(read_take(int(plan.lo[0]), int(plan.hi[-1])) if len(plan.hi) else None)
    elif spec.filter is not None:
        pipeline = _pipeline(index, plan, max(1, spec.readahead), read, EVAL_GROUP_ROWS, read_take=read_take,
                             solo=solo)
    else:
        pipeline = _pipeline(index, plan, max(1, spec.readahead), read, SCAN_GROUP_ROWS, GROUP_UNIT_ROWS, solo=solo)
    batches = _rebatch(pipeline, spec.batch_size)
    try:
        async for piece in batches:
            if to_skip > 0:
                if piece.num_rows <= to_skip:
                    to_skip -= piece.num_rows
                    continue
                piece = piece.slice(to_skip)
                to_skip = 0
            if remaining is not None:
                if piece.num_rows >= remaining:
                    yield piece.slice(0, remaining)
                    return
                remaining -= piece.num_rows
            yield piece
    finally:
        await batches.aclose()


async def _one(work: Awaitable[Any] | None) -> AsyncGenerator[Any, None]:
    """The result of one read as a pipeline (every unit of the plan read at once: no task)."""
    if work is not None:
        yield await work


async def _rebatch(
    results: AsyncGenerator[pa.Table | list[pa.Table] | None, None], size: int
) -> AsyncGenerator[pa.RecordBatch, None]:
    """Batches of exactly ``size`` rows, the last one excepted, as the reference yields them:
    each unit's rows are cut zero-copy at multiples of ``size`` from where the previous batch
    ended; a batch spanning units (or chunk edges inside a unit) copies its rows once.
    ``results`` are tables, lists of tables (one per unit) or None."""
    pending: pa.Table | None = None  # fewer than ``size`` rows waiting for the next unit
    try:
        async for result in results:
            for table in result if isinstance(result, list) else (result,):
                if table is None or table.num_rows == 0:
                    continue
                if pending is not None:
                    table = _join(pending, table)
                    pending = None
                n = table.num_rows
                full = n - n % size
                for start in range(0, full, size):
                    yield _one_batch(table.slice(start, size))
                if full < n:
                    pending = table.slice(full)
        if pending is not None:
            yield _one_batch(pending)
    finally:
        await results.aclose()


def _join(a: pa.Table, b: pa.Table) -> pa.Table:
    """``a`` then ``b``, zero-copy (chunked); zero-column tables keep their row count."""
    if a.num_columns == 0:
        return pa.Table.from_batches([_no_column_batch(a.num_rows + b.num_rows, a.schema)])
    return pa.concat_tables([a, b])


def _one_batch(table: pa.Table) -> pa.RecordBatch:
    """``table`` as one record batch: zero-copy for every column whose rows lie in one chunk
    (a slice keeps empty chunks at its edges), the others' rows copied once."""
    if table.num_columns == 0:
        return _no_column_batch(table.num_rows, table.schema)
    if all(c.num_chunks == 1 for c in table.columns):
        return table.to_batches()[0]
    cols = []
    for col in table.columns:
        chunks = col.chunks if col.num_chunks == 1 else [c for c in col.chunks if len(c)]
        if len(chunks) == 1:
            cols.append(chunks[0])
        elif not chunks:
            cols.append(pa.array([], col.type) if col.num_chunks == 0 else col.chunk(0))
        else:
            cols.append(pa.concat_arrays(chunks))
    return pa.RecordBatch.from_arrays(cols, schema=table.schema)


async def count_rows(ctx: DatasetContext, filter: "CompiledFilter | None", readahead: int | None = None) -> int:
    """Rows of the version (after deletions), or rows matching ``filter``."""
    if filter is None:
        return (await dataset_index(ctx)).total_rows
    spec = (ScanSpec(tops=(), filter=filter) if readahead is None
            else ScanSpec(tops=(), filter=filter, readahead=readahead))
    index, plan, _ = await _plan(ctx, spec, count=True)

    async def read(members: list[tuple[FragmentReader, int, int]]) -> int:
        got = await filter_members(ctx, filter, members)  # the filter's columns decoded at once
        if got is not None:
            return len(got[1])
        return sum(len(m) for m in (await _group_matches(ctx, filter, members))[3])

    total = 0
    read_take = None
    got = plan.indexed
    if got is not None:
        exact = got.matches()
        if plan.take is None and exact is not None:  # the indices counted the answered fragments
            total += exact
        else:
            from .index_scan import count_candidates

            async def read_take(a: int, b: int) -> int:
                if got.exact:
                    return b - a
                return await count_candidates(ctx, filter, index, got.upos[a:b], got.uoff[a:b])

    async for n in _pipeline(index, plan, max(1, spec.readahead), read, SCAN_GROUP_ROWS, GROUP_UNIT_ROWS,
                             read_take=read_take):
        total += n
    return total
