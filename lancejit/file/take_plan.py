"""The file-level array take: plan every column at once, read once, decode once per column.

For a projection whose columns all have a take index
(:class:`~lancejit.encoding.v21.take_index.ColumnTakeIndex`), :class:`TakeTable` concatenates
their segment tables once (kept on the reader and in the file's search cache).  A take of ``k``
rows (request order, duplicates allowed) is then:

1. one kernel (:func:`~lancejit.encoding.kernels.take.plan_take`) mapping all ``c * k`` items to
   segments and producing the unique byte ranges, sorted;
2. ONE ``read_ranges`` call on the file's scheduler (which coalesces neighbours);
3. one decode kernel per column writing the requested rows, in request order, straight into
   the output buffers (no sort, no reorder afterwards).

The Python work per take is constant in the number of pages, chunks and rows.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
import pyarrow as pa

from lancejit.encoding.kernels.take import plan_take

#: Take path for files of these versions.
TAKE_PLAN_VERSIONS = frozenset({"2.1", "2.2"})


@dataclass(frozen=True, slots=True)
class TakeTable:
    """The segment tables of several columns of one file, concatenated.

    Column ``j``'s segments have keys ``col_base[j] + row0`` (``col_base[j] = j * (num_rows + 1)``),
    so one binary search over ``seg_key`` finds the segment of any (column, row).
    """

    columns: tuple[Any, ...]
    col_base: np.ndarray
    seg0: tuple[int, ...]
    seg_key: np.ndarray
    seg_b0: np.ndarray
    seg_stride: np.ndarray
    seg_len: np.ndarray
    seg_szw: np.ndarray
    seg_count: np.ndarray
    seg_def: np.ndarray

    def nbytes(self) -> int:
        return sum(a.nbytes for a in (self.seg_key, self.seg_b0, self.seg_stride, self.seg_len,
                                      self.seg_szw, self.seg_count, self.seg_def)) + 256


def combine(indexes: Sequence[Any], num_rows: int) -> TakeTable:
    """The :class:`TakeTable` of column take indexes (all of one file of ``num_rows`` rows)."""
    span = int(num_rows) + 1
    col_base = np.arange(len(indexes), dtype=np.int64) * span
    key = np.concatenate([ix.row0 + col_base[j] for j, ix in enumerate(indexes)])

    def cat(name: str) -> np.ndarray:
        return np.ascontiguousarray(np.concatenate([getattr(ix, name) for ix in indexes]), dtype=np.int64)

    firsts = np.cumsum([0] + [ix.row0.size for ix in indexes])[:-1]
    return TakeTable(tuple(indexes), col_base, tuple(int(f) for f in firsts), np.ascontiguousarray(key),
                     cat("b0"), cat("stride"),
                     cat("length"), cat("szw"), cat("count"), cat("defw"))


async def take_table(decoders: Sequence[Any], num_rows: int, cache: Any, reader: Any = None) -> TakeTable | None:
    """The take table of ``decoders`` (one per column, in output order), or None when one of
    them does not qualify; cached under the columns in ``cache`` (a ``FileCache`` or None).

    ``reader`` (the file's ``RangeReader``): when given, the chunk metadata of every column's
    mini-block pages not loaded yet is read with ONE ``read_ranges`` call and parsed inline
    (when small) before the indexes are built, instead of one coalesced read per page."""
    from lancejit.encoding.v21.take_index import build_column_index

    key = None
    if cache is not None:
        cols = tuple(_column_of(d) for d in decoders)
        if None in cols:
            return None
        key = ("take-table", cols)
        hit = cache.get(key)
        if hit is not None:
            return hit
    loaded = reader is not None and await _load_chunk_tables(decoders, reader)
    # all columns at once: their page metadata reads merge into one request (same loop tick);
    # one after the other when every chunk table is loaded (no I/O left: no tasks)
    if len(decoders) == 1 or loaded:
        indexes = [await build_column_index(d) for d in decoders]
    else:
        indexes = await asyncio.gather(*(build_column_index(d) for d in decoders))
    if any(ix is None for ix in indexes):
        return None
    table = combine(indexes, num_rows)
    if cache is not None:
        cache.put(key, table, table.nbytes())
    return table


@dataclass(frozen=True, slots=True)
class TableRequest:
    """What building a file's take table from its metadata still needs (:func:`table_request`):
    the bytes of ``ranges`` (absolute half-open byte ranges of the chunk metadata words, read
    in ONE call, possibly batched with other files' requests), then :func:`table_from`."""

    metadata: Any
    plan: Any
    ranges: list


def table_request(metadata: Any, names: Sequence[str]) -> TakeTable | TableRequest | None:
    """Phase one of :func:`file_take_table` (no I/O): the cached take table of top-level fields
    ``names`` of a 2.1/2.2 file, or the :class:`TableRequest` building it, or None when a field
    does not qualify for the metadata-only path (then use :func:`take_table`)."""
    from lancejit.encoding.v21.take_template import chunk_ranges, plan_columns

    plan = plan_columns(metadata, names)
    if plan is None:
        return None
    cache = metadata.cache
    if cache is not None:
        hit = cache.get(("take-table", plan.columns))
        if hit is not None:
            return hit
    ranges = chunk_ranges(metadata, plan)
    if ranges is None or (ranges and sum(e - s for s, e in ranges) > PREFETCH_META_BYTES):
        return None
    return TableRequest(metadata, plan, ranges)


def table_from(request: TableRequest, bufs: Sequence[Any]) -> TakeTable | None:
    """Phase two of :func:`file_take_table` (no I/O): the take table from the bytes of
    ``request.ranges`` (one buffer per range, in order), cached with the file; None when a
    check fails (then use :func:`take_table`, which reports the damage)."""
    from lancejit.encoding.v21.take_template import build_table

    if len(bufs) != len(request.ranges):
        return None
    parts = build_table(request.metadata, request.plan, bufs)
    if parts is None:
        return None
    table = TakeTable(*parts)
    cache = request.metadata.cache
    if cache is not None:
        cache.put(("take-table", request.plan.columns), table, table.nbytes())
    return table


def tables_from(requests: Sequence[TableRequest], bufs: Sequence[Sequence[Any]]) -> list[TakeTable | None]:
    """:func:`table_from` of several files' requests (``bufs[i]``: the bytes of
    ``requests[i].ranges``) with ONE kernel call for all their pages; None for a file whose
    check fails."""
    from lancejit.encoding.v21.take_template import build_tables

    items = []
    for r, b in zip(requests, bufs):
        if len(b) != len(r.ranges):
            return [table_from(r, b) for r, b in zip(requests, bufs)]
        items.append((r.metadata, r.plan, b))
    out: list[TakeTable | None] = []
    for r, parts in zip(requests, build_tables(items)):
        table = None
        if parts is not None:
            table = TakeTable(*parts)
            cache = r.metadata.cache
            if cache is not None:  # (the seven segment arrays are rows of one array)
                cache.put(("take-table", r.plan.columns), table, 56 * len(table.seg_key) + 256)
        out.append(table)
    return out


async def file_take_table(metadata: Any, names: Sequence[str], reader: Any) -> TakeTable | None:
    """The take table of top-level fields ``names`` of a 2.1/2.2 file straight from its
    metadata (no field decoders, page readers or chunk tables: see
    :mod:`lancejit.encoding.v21.take_template`), cached like :func:`take_table`; None when a
    field does not qualify or a check fails (the caller then uses :func:`take_table`).

    Costs at most one ``read_ranges`` call on ``reader`` (the chunk metadata words of every
    mini-block page of the fields) when the table is not cached.  :func:`table_request` and
    :func:`table_from` are its two halves, for callers batching the reads of many files."""
    got = table_request(metadata, names)
    if not isinstance(got, TableRequest):
        return got
    bufs = await _read_small(reader, got.ranges) if got.ranges else []
    return table_from(got, bufs)


async def _read_small(reader: Any, ranges: list) -> list:
    """The bytes of a few small byte ranges of one file (one buffer per range, in order): on a
    store that reads in the caller's thread, through :func:`lancejit.io.multi_read.read_files`
    (ranges merged like the scheduler merges them: same requests, no planning or queueing
    work), else one ``read_ranges`` call on ``reader``."""
    store = getattr(reader, "store", None)
    if getattr(store, "read_files_into", None) is None or getattr(reader, "store_path", None) is None:
        return await reader.read_ranges(ranges, priority=0)
    return (await read_many([reader], [ranges]))[0]


async def read_many(readers: Sequence[Any], ranges: Sequence[list]) -> list[list]:
    """The bytes of a few small byte ranges of each of several files (``ranges[i]``: half-open
    ``(start, end)`` ranges of ``readers[i]``, a file scheduler or a wrapper with ``store``,
    ``store_path``, ``stats``, ``config``; one buffer per range, in order) with ONE
    :func:`lancejit.io.multi_read.read_files` call: each file's ranges merged as its scheduler
    merges them (same requests and bytes), files held whole served from memory."""
    from lancejit.io.multi_read import FileSource, read_files

    if all(len(rs) == 1 for rs in ranges):  # (the usual: one mini-block page per file)
        return await _read_one_each(readers, ranges)
    reads: list[list[int]] = []
    spans = []  # per file: its first and end index in ``reads``
    pos = 0
    for f, (reader, rs) in enumerate(zip(readers, ranges)):
        gap = int(getattr(getattr(reader, "config", None), "block_size", 4096))
        first = len(reads)
        for a, b in sorted(rs):
            if len(reads) > first and a - reads[-1][2] <= gap:
                last = reads[-1]
                if b > last[2]:
                    pos += b - last[2]
                    last[2] = b
            else:
                reads.append([f, a, b, pos])
                pos += b - a
        spans.append((first, len(reads)))
    if not reads:
        return [[] for _ in readers]
    data = (await read_files([FileSource.of(r) for r in readers], np.array(reads, dtype=np.int64), pos)).data
    out = []
    for (lo, hi), rs in zip(spans, ranges):
        bufs = []
        for a, b in rs:
            for i in range(lo, hi):
                _, s, e, p = reads[i]
                if s <= a and b <= e:
                    bufs.append(data[p + a - s:p + b - s])
                    break
        out.append(bufs)
    return out


async def _read_one_each(readers: Sequence[Any], ranges: Sequence[list]) -> list[list]:
    """:func:`read_many` when every file has exactly one range (one read each, nothing to
    merge): the reads' table built with a few array operations."""
    from lancejit.io.multi_read import FileSource, read_files

    se = np.array([rs[0] for rs in ranges], dtype=np.int64).reshape(-1, 2)
    n = len(se)
    reads = np.empty((n, 4), dtype=np.int64)
    reads[:, 0] = np.arange(n)
    reads[:, 1:3] = se
    lens = se[:, 1] - se[:, 0]  # (sizes from file metadata: never negative)
    reads[:, 3] = np.cumsum(lens) - lens
    total = int(lens.sum())
    data = (await read_files([FileSource.of(r) for r in readers], reads, total)).data
    at = reads[:, 3].tolist()
    return [[data[p:p + k]] for p, k in zip(at, lens.tolist())]


#: At most this many bytes of chunk metadata are read and parsed at once by
#: :func:`_load_chunk_tables` (larger loads keep the pages' own path, which may parse in threads).
PREFETCH_META_BYTES = 64 * 1024


async def _load_chunk_tables(decoders: Sequence[Any], reader: Any) -> bool:
    """Load the chunk tables of the single-leaf ``decoders``' mini-block pages that are neither
    loaded nor cached: one read of all their metadata ranges, each page's table parsed and
    cached as :meth:`MiniBlockPage.table_steps` does.  Does nothing when there is nothing to
    load or more than :data:`PREFETCH_META_BYTES`.  True when every such page's table is loaded."""
    from lancejit.encoding.v21.miniblock import MiniBlockPage

    pages: list[MiniBlockPage] = []
    for d in decoders:
        leaves = getattr(d, "leaves", None)
        if leaves and len(leaves) == 1:
            pages.extend(p for p in leaves[0].pages if isinstance(p, MiniBlockPage) and p._table is None)
    gens, reqs, total = [], [], 0
    for p in pages:
        gen = p.table_steps()
        try:
            req = next(gen)
        except StopIteration:  # cached
            continue
        gens.append(gen)
        reqs.append(req)
        total += sum(e - s for s, e in req)
        if total > PREFETCH_META_BYTES:
            for g in gens:
                g.close()
            return False
    if not gens:
        return True
    flat = [r for req in reqs for r in req]
    bufs = await reader.read_ranges(flat, priority=min(p.page.priority for p in pages))
    if len(bufs) != len(flat):
        return False  # the pages' own path reports it
    pos = 0
    for gen, req in zip(gens, reqs):
        part = list(bufs[pos:pos + len(req)])
        pos += len(req)
        try:
            gen.send(part)
        except StopIteration:
            continue
        gen.close()  # pragma: no cover - table_steps reads once
    return all(p._table is not None for p in pages)


def _column_of(decoder: Any) -> int | None:
    leaves = getattr(decoder, "leaves", None)
    if not leaves or len(leaves) != 1:
        return None
    return leaves[0].ctx.column_index


async def run_take(table: TakeTable, reader: Any, rows: np.ndarray) -> list[pa.Array]:
    """The rows ``rows`` (int64, request order, checked in range) of every column of ``table``,
    read through ``reader`` (a ``RangeReader``) with one ``read_ranges`` call."""
    from lancejit.encoding.v21.take_index import take_column

    k = rows.size
    n = len(table.columns) * k
    work = np.empty(5 * n, dtype=np.int64)  # one allocation: three item arrays and the ranges
    item_seg, item_in, item_pos = work[:n], work[n:2 * n], work[2 * n:3 * n]
    ranges = work[3 * n:].reshape(n, 2)
    nr = plan_take(table.seg_key, table.seg_b0, table.seg_stride, table.seg_len, table.col_base, rows,
                   item_seg, item_in, item_pos, ranges)
    bufs = await reader.read_ranges(_as_ranges(reader, ranges[:nr]), priority=int(rows[0]))
    data = np.frombuffer(bufs[0] if len(bufs) == 1 else b"".join(bufs), dtype=np.uint8)
    data.flags.writeable = False
    out = []
    for j, ix in enumerate(table.columns):
        lo, hi = j * k, (j + 1) * k
        out.append(take_column(ix, data, item_pos[lo:hi], item_in[lo:hi], item_seg[lo:hi],
                               table.seg_szw, table.seg_len, table.seg_count, table.seg_def, table.seg0[j]))
    return out


#: Per reader class: whether it takes an ``(n, 2)`` array of ranges (lancejit's own readers).
_TAKES_ARRAYS: dict[type, bool] = {}


def _as_ranges(reader: Any, ranges: np.ndarray) -> Any:
    """``ranges`` as the reader takes them: the array for lancejit's readers (schedulers and
    their wrappers plan arrays without per-range Python work), else ``(start, end)`` pairs."""
    cls = type(reader)
    ok = _TAKES_ARRAYS.get(cls)
    if ok is None:
        ok = _TAKES_ARRAYS[cls] = cls.__module__.startswith("lancejit.")
    if ok:
        return ranges
    return [tuple(p) for p in ranges.tolist()]


__all__ = ["TAKE_PLAN_VERSIONS", "TableRequest", "TakeTable", "combine", "file_take_table", "run_take", "table_from",
           "table_request", "take_table", "read_many", "tables_from"]
