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
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, AsyncIterator, Awaitable, Callable, Iterator

import numpy as np
import pyarrow as pa

from lancejit.core.config import settings

from ..meta.context import DatasetContext
from ..meta.fields import TopField
from .fragment import ROWADDR, ROWID, FragmentReader, unit_live_offsets as _live
from .heap import keep_scan_buffers
from .spec import OutColumn, ScanSpec, output_columns
from .version_index import dataset_index
from .late import NOT_HANDLED, SMALL_UNIT_ROWS, _finish_unit, _group_matches, _read_rows, read_small_group
from .scan_multi import filter_members, member_lives, read_members
from .scan_plan import ScanPlan, plan_units

if TYPE_CHECKING:
    from ..filter.compile import CompiledFilter
    from .version_index import DatasetIndex

#: Filtered scans with late materialization take units of up to this many times the
#: ``scan_unit_rows`` knob's rows (same ``scan_unit_bytes``): each unit's filter columns are read,
#: evaluated and its other columns fetched in turn, so the per-unit Python counts for more than
#: the overlap smaller units give (1M rows, one fragment: six filtered scans 12-26% faster
#: with 2x; an unfiltered scan, 15% slower with 2x, keeps its units).
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


def _pruned_type(t: pa.DataType, paths: tuple[tuple[str, ...], ...]) -> pa.DataType:
    if any(len(p) == 0 for p in paths):
        return t
    fields = []
    for f in t:
        sub = tuple(p[1:] for p in paths if p[0] == f.name)
        if sub:
            fields.append(f.with_type(_pruned_type(f.type, sub)))
    return pa.struct(fields)


def _prune_array(arr: pa.Array, paths: tuple[tuple[str, ...], ...]) -> pa.Array:
    if any(len(p) == 0 for p in paths):
        return arr
    children, fields = [], []
    for i, f in enumerate(arr.type):
        sub = tuple(p[1:] for p in paths if p[0] == f.name)
        if sub:
            child = _prune_array(arr.field(i), sub)
            children.append(child)
            fields.append(f.with_type(child.type))
    mask = arr.is_null() if arr.null_count else None
    return pa.StructArray.from_arrays(children, fields=fields, mask=mask)


def _out_field(ctx: DatasetContext, col: OutColumn) -> pa.Field:
    if col.top is None:
        return pa.field(col.name, pa.uint64())
    f = ctx.schema.field(col.top)
    if col.prune is not None:
        return f.with_type(_pruned_type(f.type, col.prune)).with_name(col.name)
    for part in col.path:
        f = f.type.field(part)
    return f.with_name(col.name)


def output_schema(ctx: DatasetContext, spec: ScanSpec) -> pa.Schema:
    fields = [_out_field(ctx, c) for c in output_columns(spec)]
    return pa.schema(fields, metadata=ctx.schema.metadata)


def _child(array: pa.Array, path: tuple[str, ...]) -> pa.Array:
    for part in path:
        array = array.flatten()[array.type.get_field_index(part)]
    return array


def assemble_batch(
    ctx: DatasetContext, spec: ScanSpec, by_top: dict[str, pa.Array], meta: dict[str, pa.Array], n: int
) -> pa.RecordBatch:
    """The output batch of ``n`` rows from top-level arrays and meta arrays."""
    schema = output_schema(ctx, spec)
    cols = []
    for c in output_columns(spec):
        if c.top is None:
            cols.append(meta[c.name])
        elif c.prune is not None:
            arr = by_top[c.top]
            if isinstance(arr, pa.ChunkedArray):
                arr = arr.combine_chunks()
            cols.append(_prune_array(arr, c.prune))
        else:
            cols.append(_child(by_top[c.top], c.path))
    if not cols:
        return _no_column_batch(n, schema)
    return pa.RecordBatch.from_arrays(cols, schema=schema)


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
            return None if got is None else assemble_table(ctx, spec, *got)  # type: ignore[misc]
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


def assemble_table(
    ctx: DatasetContext, spec: ScanSpec, by_top: dict[str, Any], meta: dict[str, pa.Array], n: int
) -> pa.Table:
    """The output rows (``n``) from top-level arrays (plain or chunked) and meta arrays."""
    schema = output_schema(ctx, spec)
    cols = []
    for c in output_columns(spec):
        if c.top is None:
            cols.append(meta[c.name])
        elif c.prune is not None:
            arr = by_top[c.top]
            if isinstance(arr, pa.ChunkedArray):
                arr = arr.combine_chunks()
            cols.append(_prune_array(arr, c.prune))
        else:
            cols.append(_child_chunked(by_top[c.top], c.path))
    if not cols:
        return pa.Table.from_batches([_no_column_batch(n, schema)])
    cols = [c if isinstance(c, pa.ChunkedArray) else pa.chunked_array([c], type=c.type) for c in cols]
    return pa.Table.from_arrays(cols, schema=schema)


def _child_chunked(array: Any, path: tuple[str, ...]) -> Any:
    if not path or not isinstance(array, pa.ChunkedArray):
        return _child(array, path)
    chunks = [_child(c, path) for c in array.chunks]
    t = array.type
    for part in path:
        t = t.field(part).type
    return pa.chunked_array(chunks, type=t)


def _no_column_batch(n: int, schema: pa.Schema) -> pa.RecordBatch:
    return pa.RecordBatch.from_struct_array(pa.nulls(n, pa.struct([])))


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


async def _plan(ctx: DatasetContext, spec: ScanSpec) -> tuple["DatasetIndex", ScanPlan, int]:
    """The version index, the units to read and the rows still to skip for the offset (whole
    fragments inside the offset are dropped from the plan when there is no filter)."""
    index = await dataset_index(ctx)
    positions = _positions(index, spec.fragment_ids)
    to_skip = spec.offset
    if spec.filter is None and to_skip > 0 and len(positions):
        ends = np.cumsum(index.live_rows[positions])
        k = int(np.searchsorted(ends, to_skip, side="right"))
        if k:
            to_skip -= int(ends[k - 1])
            positions = positions[k:]
    pruner = None
    if spec.filter is not None:
        from .pruning import prepare  # page statistics / zone maps where their index covers a fragment

        pruner = await prepare(ctx, spec.filter)
    knobs = settings()
    filtered_late = spec.filter is not None and knobs.late_materialization
    max_rows = knobs.scan_unit_rows * (FILTERED_UNIT_FACTOR if filtered_late else 1)
    plan = plan_units(ctx, index, positions, spec.batch_size, knobs.scan_unit_bytes, max_rows, pruner)
    return index, plan, to_skip


async def _pipeline(
    index: "DatasetIndex", plan: ScanPlan, readahead: int,
    read: Callable[[list[tuple[FragmentReader, int, int]]], Awaitable[Any]], group_rows: int = 0,
    unit_rows: int = SMALL_UNIT_ROWS,
) -> AsyncIterator[Any]:
    """``read(members)`` of every unit, results in plan order; with ``group_rows``, runs of
    consecutive units of at most ``unit_rows`` rows each are handed over together, up to
    ``group_rows`` rows and ``GROUP_BYTES`` estimated bytes (filtered scans evaluate a group's
    filter once, unfiltered ones decode a group's columns once).  Work runs ahead
    while fewer than ``readahead`` groups are in flight, or while their estimated bytes stay
    under the ``scan_readahead_bytes`` knob (at most ``scan_units_in_flight``): many small fragments are read
    and opened concurrently, a few big units bound memory.  Fragment readers come from the
    version index (made on first use, kept with the version: their opened files and layouts
    serve later scans)."""
    pending: deque[tuple[asyncio.Future, int]] = deque()
    pos, lo, hi, est = (a.tolist() for a in (plan.pos, plan.lo, plan.hi, plan.est_bytes))
    n = len(pos)
    nxt = 0
    in_flight = 0
    knobs = settings()
    ahead_bytes, max_units = knobs.scan_readahead_bytes, knobs.scan_units_in_flight

    def fill() -> None:
        nonlocal nxt, in_flight
        while nxt < n and (len(pending) < readahead or (
                in_flight + est[nxt] <= ahead_bytes and len(pending) < max_units)):
            members = [(index.reader(pos[nxt]), lo[nxt], hi[nxt])]
            size, rows = est[nxt], hi[nxt] - lo[nxt]
            nxt += 1
            if group_rows and rows <= unit_rows:
                while (nxt < n and hi[nxt] - lo[nxt] <= unit_rows and rows + hi[nxt] - lo[nxt] <= group_rows
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


async def scan(ctx: DatasetContext, spec: ScanSpec) -> AsyncIterator[pa.RecordBatch]:
    """Output batches in scan order with offset and limit applied; batches hold at most
    ``spec.batch_size`` rows and may span fragments (small units are gathered into one batch)."""
    remaining = spec.limit
    if remaining is not None and remaining <= 0:
        return
    keep_scan_buffers()  # (once per process: freed scan buffers reused, see .heap)
    index, plan, to_skip = await _plan(ctx, spec)
    limit = asyncio.Semaphore(settings().scan_units_in_flight)

    async def read(members: list[tuple[FragmentReader, int, int]]) -> Any:
        if spec.filter is not None:
            return await read_group_table(ctx, spec, members)
        if len(members) == 1 and members[0][2] - members[0][1] > GROUP_UNIT_ROWS:
            frag, lo, hi = members[0]
            return await read_unit_table(ctx, frag, spec, lo, hi)
        return await read_plain_group(ctx, spec, members, limit)

    if spec.filter is not None:
        pipeline = _pipeline(index, plan, max(1, spec.readahead), read, EVAL_GROUP_ROWS)
    else:
        pipeline = _pipeline(index, plan, max(1, spec.readahead), read, SCAN_GROUP_ROWS, GROUP_UNIT_ROWS)
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


async def _rebatch(
    results: AsyncIterator[pa.Table | list[pa.Table] | None], size: int
) -> AsyncIterator[pa.RecordBatch]:
    """Batches of at most ``size`` rows: a unit of at least ``size`` rows is cut zero-copy (at
    ``size`` and at its chunk edges); smaller units are gathered until ``size`` rows (one copy
    of those rows), so a scan of many small fragments yields full batches.  ``results`` are
    tables, lists of tables (one per unit) or None."""
    buf: list[pa.Table] = []
    buf_rows = 0
    try:
        async for result in results:
            for table in result if isinstance(result, list) else (result,):
                if table is None or table.num_rows == 0:
                    continue
                if table.num_rows >= size:
                    if buf:
                        for b in _gather(buf, size):
                            yield b
                        buf, buf_rows = [], 0
                    for b in _split(table, size):
                        yield b
                    continue
                buf.append(table)
                buf_rows += table.num_rows
                if buf_rows >= size:
                    whole = _concat(buf)
                    full = (buf_rows // size) * size
                    for b in _split(whole.slice(0, full), size):
                        yield b
                    buf = [whole.slice(full)] if full < buf_rows else []
                    buf_rows -= full
        if buf:
            for b in _gather(buf, size):
                yield b
    finally:
        await results.aclose()  # type: ignore[attr-defined]


def _concat(tables: list[pa.Table]) -> pa.Table:
    """One table with one chunk per column (zero-column tables keep their row count)."""
    if tables[0].num_columns == 0:
        n = sum(t.num_rows for t in tables)
        return pa.Table.from_batches([_no_column_batch(n, tables[0].schema)])
    return pa.concat_tables(tables).combine_chunks()


def _gather(tables: list[pa.Table], size: int) -> Iterator[pa.RecordBatch]:
    return _split(_concat(tables), size)


def _split(table: pa.Table, size: int) -> Iterator[pa.RecordBatch]:
    """Batches of at most ``size`` rows, zero-copy (cut at ``size`` and at chunk boundaries)."""
    if table.num_columns == 0:
        for start in range(0, table.num_rows, size):
            yield _no_column_batch(min(size, table.num_rows - start), table.schema)
        return
    yield from table.to_batches(max_chunksize=size)


async def count_rows(ctx: DatasetContext, filter: "CompiledFilter | None", readahead: int | None = None) -> int:
    """Rows of the version (after deletions), or rows matching ``filter``."""
    if filter is None:
        return (await dataset_index(ctx)).total_rows
    spec = ScanSpec(tops=(), filter=filter, **({} if readahead is None else {"readahead": readahead}))
    index, plan, _ = await _plan(ctx, spec)

    async def read(members: list[tuple[FragmentReader, int, int]]) -> int:
        got = await filter_members(ctx, filter, members)  # the filter's columns decoded at once
        if got is not None:
            return len(got[1])
        return sum(len(m) for m in (await _group_matches(ctx, filter, members))[3])

    total = 0
    async for n in _pipeline(index, plan, max(1, spec.readahead), read, SCAN_GROUP_ROWS, GROUP_UNIT_ROWS):
        total += n
    return total
