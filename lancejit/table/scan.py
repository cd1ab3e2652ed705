"""Scanning a dataset version: fragments in order, split into units of physical rows, read
concurrently with bounded readahead, filtered, then offset/limit applied in scan order.

A *unit* is a half-open physical row range ``[lo, hi)`` of one fragment.  With a filter, the
filter's columns are read first; the other columns are read only for the matching rows (by
take) when the matches are sparse, otherwise the whole unit is read and sliced.
"""

from __future__ import annotations

import asyncio
from collections import deque
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, AsyncIterator, Iterator

import numpy as np
import pyarrow as pa

from lancejit.core.config import DEFAULT_BATCH_SIZE

from .context import DatasetContext
from .fields import TopField
from .fragment import ROWADDR, ROWID, FragmentReader

if TYPE_CHECKING:
    from .filter import CompiledFilter

#: Target encoded bytes per unit (bounds batch memory).  Larger units waste less at their
#: edges (a page straddling two units is read and decoded by both): 32 MiB costs ~15% less CPU
#: than 16 MiB on a 1M-row scan; ``DEFAULT_READAHEAD`` keeps the bytes in flight at 128 MiB.
UNIT_TARGET_BYTES = 32 * 1024 * 1024
#: Most physical rows per unit (units are decoded at once, then cut into ``batch_size`` batches).
MAX_UNIT_ROWS = 1 << 17
#: Fraction of a unit's rows below which rows are fetched by take rather than by range.
TAKE_FRACTION = 0.25
#: Units in flight at once.
DEFAULT_READAHEAD = 4


@dataclass(frozen=True, slots=True)
class OutColumn:
    """One output column: ``name``; either a top-level field ``top`` (``path``: struct children
    to descend into, e.g. ``("x",)`` for ``st.x``) or a meta column (``_rowid``/``_rowaddr``)."""

    name: str
    top: str | None
    path: tuple[str, ...] = ()
    #: Keep only these struct sub-paths of ``top`` (the reference's take shape for ``st.x``).
    prune: tuple[tuple[str, ...], ...] | None = None


@dataclass(frozen=True, slots=True)
class ScanSpec:
    """What to read: top-level fields, filter, meta columns, output order and paging.

    ``outputs`` (None = the ``tops`` in order, then ``_rowid``, then ``_rowaddr``) names the
    result columns in order.
    """

    tops: tuple[TopField, ...]
    filter: CompiledFilter | None = None
    with_row_id: bool = False
    with_row_address: bool = False
    limit: int | None = None
    offset: int = 0
    batch_size: int = DEFAULT_BATCH_SIZE
    readahead: int = DEFAULT_READAHEAD
    fragment_ids: tuple[int, ...] | None = None
    outputs: tuple[OutColumn, ...] | None = None


def output_columns(spec: ScanSpec) -> tuple[OutColumn, ...]:
    if spec.outputs is not None:
        return spec.outputs
    cols = [OutColumn(t.name, t.name) for t in spec.tops]
    if spec.with_row_id:
        cols.append(OutColumn(ROWID, None))
    if spec.with_row_address:
        cols.append(OutColumn(ROWADDR, None))
    return tuple(cols)


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
    """Physical rows per unit: about ``UNIT_TARGET_BYTES`` of the fragment's files, at least one
    batch, at most ``MAX_UNIT_ROWS``."""
    total = sum(df.file_size_bytes or 0 for df in frag.fragment.files)
    rows = frag.physical_rows or 1
    bpr = total / rows if total else 0
    by_bytes = int(UNIT_TARGET_BYTES / bpr) if bpr > 0 else MAX_UNIT_ROWS
    return max(1, min(MAX_UNIT_ROWS, max(batch_size, by_bytes)))


def _select(arrays: list, positions: np.ndarray, n: int) -> list:
    """``arrays`` (``n`` rows each) at the sorted, unique ``positions`` (int64): a boolean
    filter, which keeps chunking and is far cheaper than ``take`` on wide types."""
    if len(positions) == n:
        return list(arrays)
    mask = np.zeros(n, dtype=bool)
    mask[positions] = True
    keep = pa.array(mask)
    return [a.filter(keep) for a in arrays]


async def _read_rows(
    frag: FragmentReader, tops: list[TopField], lo: int, hi: int, live: np.ndarray | None
) -> list[pa.Array | pa.ChunkedArray]:
    """Fields at the live rows of ``[lo, hi)`` (``live``: their offsets, None = all)."""
    if live is None:
        return await frag.read(tops, (lo, hi))
    if len(live) < TAKE_FRACTION * (hi - lo):
        return await frag.read(tops, live)
    arrays = await frag.read(tops, (lo, hi))
    return await _select_async(arrays, live - lo, hi - lo)


#: Rows from which selecting the live rows of a unit runs in a worker thread (pyarrow's filter
#: releases the GIL), so the event loop keeps issuing reads and decodes meanwhile.
OFFLOAD_SELECT_ROWS = 1 << 15


async def _select_async(arrays: list, positions: np.ndarray, n: int) -> list:
    if n >= OFFLOAD_SELECT_ROWS and len(positions) < n:
        return await asyncio.to_thread(_select, arrays, positions, n)
    return _select(arrays, positions, n)


async def read_unit_table(
    ctx: DatasetContext, frag: FragmentReader, spec: ScanSpec, lo: int, hi: int
) -> pa.Table | None:
    """One unit's output rows as a table whose columns keep the decoder's chunks (None when no
    row survives)."""
    deleted = await frag.deleted()
    live: np.ndarray | None = None
    if deleted is not None and len(deleted):
        a, b = np.searchsorted(deleted, [lo, hi])
        if b > a:
            mask = np.ones(hi - lo, dtype=bool)
            mask[deleted[a:b].astype(np.int64) - lo] = False
            live = np.flatnonzero(mask).astype(np.int64) + lo
            if len(live) == 0:
                return None
    tops = list(spec.tops)
    by_name: dict[str, pa.Array | pa.ChunkedArray] = {}
    if spec.filter is not None:
        ftops = [t for t in ctx.top_fields if t.name in spec.filter.columns]
        farrays = await _read_rows(frag, ftops, lo, hi, live)
        ftable = pa.Table.from_arrays(farrays, schema=pa.schema([ctx.schema.field(t.name) for t in ftops]))
        n_live = (hi - lo) if live is None else len(live)
        from .filter import evaluate_filter  # sqlglot loads with the first filter

        matches = evaluate_filter(spec.filter, ftable, n_live).to_numpy().astype(np.int64)
        if len(matches) == 0:
            return None
        offsets = (live if live is not None else np.arange(lo, hi, dtype=np.int64))[matches]
        wanted = [(t, arr) for t, arr in zip(ftops, farrays) if any(t.name == p.name for p in tops)]
        picked = _select([arr for _, arr in wanted], matches, n_live)
        by_name.update({t.name: arr for (t, _), arr in zip(wanted, picked)})
        rest = [t for t in tops if t.name not in by_name]
        if rest:
            if len(offsets) < TAKE_FRACTION * (hi - lo):
                arrays = await frag.read(rest, offsets)
            else:
                arrays = await _select_async(await frag.read(rest, (lo, hi)), offsets - lo, hi - lo)
            by_name.update({t.name: a for t, a in zip(rest, arrays)})
        rows: tuple[int, int] | np.ndarray = offsets
    else:
        arrays = await _read_rows(frag, tops, lo, hi, live)
        by_name = {t.name: a for t, a in zip(tops, arrays)}
        rows = (lo, hi) if live is None else live
    n = (hi - lo) if isinstance(rows, tuple) else len(rows)
    meta = dict(await frag.meta_columns(rows, spec.with_row_id, spec.with_row_address))
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
    return pa.RecordBatch.from_struct_array(pa.array([{}] * n, type=pa.struct([])))


async def _units(ctx: DatasetContext, spec: ScanSpec) -> list[tuple[FragmentReader, int, int]]:
    frags = [FragmentReader(ctx, f) for f in ctx.manifest.fragments]
    if spec.fragment_ids is not None:
        wanted = {fid: i for i, fid in enumerate(spec.fragment_ids)}
        frags = sorted((f for f in frags if f.id in wanted), key=lambda f: wanted[f.id])
    skip = spec.offset if spec.filter is None else 0
    out: list[tuple[FragmentReader, int, int]] = []
    for frag in frags:
        if skip > 0:
            count = await frag.count_rows()
            if count <= skip:
                skip -= count
                continue
            skip = 0
        step = _rows_per_unit(frag, spec.batch_size)
        for lo in range(0, frag.physical_rows, step):
            out.append((frag, lo, min(frag.physical_rows, lo + step)))
    if spec.filter is not None and (ctx.manifest.data_storage_version in ("0.1", "legacy")
                                    or ctx.manifest.index_section is not None):
        out = await _prune_units(ctx, spec.filter, out)
    return out


async def _prune_units(ctx: DatasetContext, filt: "CompiledFilter", units: list[tuple[FragmentReader, int, int]]
                       ) -> list[tuple[FragmentReader, int, int]]:
    """``units`` cut to the row ranges page statistics say may match (:mod:`.pruning`)."""
    from .pruning import may_match_ranges, prunable

    if not prunable(filt, ctx.schema):
        return units
    spans = await asyncio.gather(*(may_match_ranges(ctx, frag, lo, hi, filt) for frag, lo, hi in units))
    return [(frag, int(a), int(b)) for (frag, _, _), rs in zip(units, spans) for a, b in rs]


async def _skipped_rows(ctx: DatasetContext, spec: ScanSpec) -> int:
    """Rows of whole fragments skipped by ``_units`` because of the offset (no filter only)."""
    if spec.filter is not None or spec.offset <= 0:
        return 0
    frags = [FragmentReader(ctx, f) for f in ctx.manifest.fragments]
    if spec.fragment_ids is not None:
        wanted = {fid: i for i, fid in enumerate(spec.fragment_ids)}
        frags = sorted((f for f in frags if f.id in wanted), key=lambda f: wanted[f.id])
    skipped, remaining = 0, spec.offset
    for frag in frags:
        c = await frag.count_rows()
        if c > remaining:
            break
        skipped += c
        remaining -= c
    return skipped


async def scan(ctx: DatasetContext, spec: ScanSpec) -> AsyncIterator[pa.RecordBatch]:
    """Output batches in scan order with offset and limit applied."""
    units = await _units(ctx, spec)
    to_skip = spec.offset - await _skipped_rows(ctx, spec)
    remaining = spec.limit
    if remaining is not None and remaining <= 0:
        return
    pending: deque[asyncio.Future] = deque()
    it: Iterator[tuple[FragmentReader, int, int]] = iter(units)
    readahead = max(1, spec.readahead)

    def fill() -> None:
        while len(pending) < readahead:
            try:
                frag, lo, hi = next(it)
            except StopIteration:
                return
            pending.append(asyncio.ensure_future(read_unit_table(ctx, frag, spec, lo, hi)))

    try:
        fill()
        while pending:
            batch = await pending.popleft()
            fill()
            if batch is None or batch.num_rows == 0:
                continue
            for piece in _split(batch, spec.batch_size):
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
        for fut in pending:
            fut.cancel()
        if pending:
            await asyncio.gather(*pending, return_exceptions=True)


def _split(table: pa.Table, size: int) -> Iterator[pa.RecordBatch]:
    """Batches of at most ``size`` rows, zero-copy (cut at ``size`` and at chunk boundaries)."""
    if table.num_columns == 0:
        for start in range(0, table.num_rows, size):
            yield _no_column_batch(min(size, table.num_rows - start), table.schema)
        return
    yield from table.to_batches(max_chunksize=size)


async def count_rows(ctx: DatasetContext, filter: CompiledFilter | None, readahead: int = DEFAULT_READAHEAD) -> int:
    """Rows of the version (after deletions), or rows matching ``filter``."""
    frags = [FragmentReader(ctx, f) for f in ctx.manifest.fragments]
    if filter is None:
        counts = await asyncio.gather(*(f.count_rows() for f in frags))
        return int(sum(counts))
    spec = ScanSpec(tops=(), filter=filter, readahead=readahead)
    total = 0
    async for batch in scan(ctx, spec):
        total += batch.num_rows
    return total
