"""Opened scalar index segments: their files, lookups and loaded parts, and searches.

:func:`open_segment` opens one index segment (an ``IndexMetadata`` entry of the manifest; its
files under ``_indices/<uuid>/``) as a :class:`ScalarIndex` of kind ``BTREE``, ``BITMAP`` or
``LABEL_LIST``: the lookup part (BTREE page bounds, BITMAP keys) is read once and kept per
dataset by uuid (an index's files never change); the parts a search needs (BTREE pages,
bitmaps) are read on first use and kept in the dataset's ``index_parts`` cache (bounded in
bytes), consecutive BTREE pages in one read; the pages of a numeric BTREE go to its page slab
(:mod:`.btree_slab`: searched side by side by kernels), other BTREEs keep them page by page.  Entries written before index details existed
(no ``index_details``) are recognized as the reference does: a list column's index is a label
list, a directory holding ``bitmap_page_lookup.lance`` a bitmap, anything else a BTREE.

:meth:`ScalarIndex.search` answers a :class:`~.domain.Query` with a row set (sorted uint64 ids
as stored in the index: row addresses, or stable row ids when the dataset has them);
:meth:`ScalarIndex.null_rows` gives the rows where the query's predicate is NULL (NULL values;
for label lists NULL lists, None when the index does not record them).  Searches and parts
read are counted in the dataset's ``io_stats()`` (``index_searches``, ``index_parts_loaded``).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from lancejit.core.config import settings
from lancejit.core.errors import CorruptFileError, LanceJitError, NotFoundError
from lancejit.io.store import join_path

from . import bitmap as _bm
from . import btree as _bt
from . import btree_slab as _slabs
from . import rowset
from .domain import Query, Unusable, convert

if TYPE_CHECKING:  # pragma: no cover
    from ...meta.context import DatasetContext

BTREE = "BTREE"
BITMAP = "BITMAP"
LABEL_LIST = "LABEL_LIST"
#: Index details message name -> kind.
DETAILS = {"BTreeIndexDetails": BTREE, "BitmapIndexDetails": BITMAP, "LabelListIndexDetails": LABEL_LIST}
#: A BTREE search over more pages than this searches their values side by side at once.
MERGE_PAGES = 16
#: Kind -> the reference's index type names (``describe_indices`` / ``list_indices``).
TYPE_NAMES = {BTREE: "BTree", BITMAP: "Bitmap", LABEL_LIST: "LabelList"}


def details_kind(type_url: str) -> str:
    """``"/lance.table.BTreeIndexDetails"`` -> ``"BTreeIndexDetails"``."""
    return type_url.rpartition("/")[2].rpartition(".")[2]


async def _open_file(ctx: "DatasetContext", path: str) -> Any:
    from lancejit.file.reader import AsyncLanceFileReader

    return await AsyncLanceFileReader.from_reader(ctx.reader(ctx.store, path), uri=ctx.store.uri(path),
                                                  store=ctx.store, immutable=True)


async def _global_buffer(ctx: "DatasetContext", path: str, reader: Any, position: int) -> bytes:
    meta = reader.file_metadata
    try:
        start, size = meta.global_buffers[position]
    except (IndexError, TypeError):
        raise CorruptFileError(f"no global buffer {position}", path=ctx.store.uri(path)) from None
    if start < 0 or size < 0 or start + size > meta.file_size:
        raise CorruptFileError(f"global buffer {position} lies outside the file", path=ctx.store.uri(path))
    (buf,) = await ctx.reader(ctx.store, path).read_ranges([(start, start + size)])
    return bytes(buf)


@dataclass(eq=False)
class ScalarIndex:
    """One opened index segment (see the module docstring)."""

    uuid: str
    kind: str
    directory: str
    value_type: pa.DataType
    lookup: Any
    #: The file parts are read from (BTREE: page_data.lance; BITMAP: bitmap_page_lookup.lance).
    parts_file: Any
    parts_path: str
    #: The columns parts are read from.
    part_columns: tuple[str, ...] = ()
    #: BTREE: the dtype its pages are searched in side by side (None: page by page).
    slab_dtype: np.dtype | None = None

    # ------------------------------------------------------------------ searches
    async def search(self, ctx: "DatasetContext", q: Query) -> np.ndarray:
        """The row set (ids as stored) of the rows matching ``q``; :class:`Unusable` when the
        index cannot answer it."""
        if self.kind == BTREE:
            got = await self._search_btree(ctx, q)
        elif q.op in ("any", "all"):
            if self.kind != LABEL_LIST:
                raise Unusable("array predicates need a label list index")
            got = await self._search_labels(ctx, q)
        else:
            if self.kind == LABEL_LIST:
                raise Unusable("a label list index answers array predicates only")
            _bm.check_literals(self.lookup, q)
            got = rowset.union_many(await self._bitmaps(ctx, self.lookup.rows_for(q)))
        ctx.stats.record_index(searches=1)
        return got

    async def null_rows(self, ctx: "DatasetContext") -> np.ndarray | None:
        """Rows where a predicate on the column is NULL: NULL values (BTREE, BITMAP) or NULL
        lists (LABEL_LIST; None when the index does not record them)."""
        if self.kind == LABEL_LIST:
            return self.lookup.list_nulls
        if self.kind == BTREE:
            return await self._search_btree(ctx, Query("null"))
        return rowset.union_many(await self._bitmaps(ctx, self.lookup.rows_for(Query("null"))))

    async def _search_btree(self, ctx: "DatasetContext", q: Query) -> np.ndarray:
        lookup: _bt.BTreeIndex = self.lookup
        c = convert(q, lookup.value_type)
        pages = lookup.pages_for(c)
        if not len(pages):
            return rowset.EMPTY
        slab = self._slab(ctx, c)
        if slab is not None:
            missing = slab.missing(pages)
            if len(missing):
                await self._fill(ctx, slab, missing)
            return rowset.of(slab.search(lookup, c))
        loaded = await self._pages(ctx, pages)
        if len(loaded) > MERGE_PAGES and c.op == "in" and lookup.ordered:
            # many pages: one search over their values side by side (pages in value order)
            merged = _bt.BTreePage(np.concatenate([p.values for p in loaded]),
                                   np.concatenate([p.ids for p in loaded]), rowset.EMPTY)
            return rowset.of(_bt.search_page(merged, c))
        parts = [_bt.search_page(p, c) for p in loaded]
        if len(parts) == 1:
            return rowset.of(parts[0])
        return rowset.of(np.concatenate(parts))

    async def _search_labels(self, ctx: "DatasetContext", q: Query) -> np.ndarray:
        _bm.check_literals(self.lookup, q)
        rows = self.lookup.rows_for(q)
        if q.op == "all" and (rows < 0).any():
            return rowset.EMPTY
        sets = await self._bitmaps(ctx, rows[rows >= 0])
        if q.op == "any":
            return rowset.union_many(sets)
        if not sets:  # array_has_all(col, []) is compiled to TRUE: never asked here
            raise Unusable("array_has_all of no labels")
        out = sets[0]
        for s in sets[1:]:
            out = rowset.intersect(out, s)
        return out

    async def entries(self, ctx: "DatasetContext") -> tuple[pa.Array, np.ndarray]:
        """Every ``(value, id)`` pair the index holds (BTREE: its pages; BITMAP / LABEL_LIST:
        each key once per row (label) of its bitmap), for rewriting it."""
        where = ctx.store.uri(self.parts_path)
        try:
            if self.kind == BTREE:
                table = await self.parts_file.read_all(list(self.part_columns))
                values = table.column(0).combine_chunks()
                return values, np.ascontiguousarray(table.column(1).to_numpy(), dtype=np.uint64)
            table = await self.parts_file.read_all([_bm.KEYS, _bm.BITMAPS])
        except LanceJitError as exc:
            raise _where(exc, where) from exc
        keys = table.column(_bm.KEYS).combine_chunks()
        sets = []
        for raw in table.column(_bm.BITMAPS).to_pylist():
            if raw is None:
                raise CorruptFileError("bitmap index holds a NULL bitmap", path=where)
            ids, full = rowset.decode_treemap(raw, where)
            if len(full):
                raise Unusable("bitmap selecting whole fragments")
            sets.append(ids)
        counts = np.array([len(x) for x in sets], dtype=np.int64)
        ids = np.concatenate(sets) if sets else rowset.EMPTY
        return keys.take(pa.array(np.repeat(np.arange(len(keys)), counts))), ids

    # ------------------------------------------------------------------ parts
    def _slab(self, ctx: "DatasetContext", c: Any) -> _slabs.PageSlab | None:
        """The index's page slab (cached with the other parts; made empty on first use), or
        None when its pages are searched one by one: text values, lookups out of value order,
        NaN literals, or an index bigger than the ``index_parts_bytes`` knob."""
        dtype = self.slab_dtype
        if dtype is None or not _slabs.searchable(c, dtype):
            return None
        cache = ctx.caches.index_parts
        key = (self.uuid, "slab")
        slab = cache.peek(key)
        if slab is None:
            if _slabs.PageSlab.full_bytes(self.lookup, dtype) > settings().index_parts_bytes:
                return None
            slab = cache.put(key, _slabs.PageSlab.empty(self.lookup, dtype))
        return slab

    async def _fill(self, ctx: "DatasetContext", slab: _slabs.PageSlab, missing: np.ndarray) -> None:
        """Read the pages ``missing`` (sorted numbers) into ``slab``: runs of consecutive pages
        in one read each."""
        cuts = np.flatnonzero(np.diff(missing) != 1) + 1
        runs = [r.tolist() for r in np.split(missing, cuts)] if len(cuts) else [missing.tolist()]
        read = await asyncio.gather(*(self._read_pages(ctx, run) for run in runs))
        added = 0
        for run, pages_read in zip(runs, read):
            for p, page in zip(run, pages_read):
                added += slab.fill(p, page)
        ctx.caches.index_parts.grew((self.uuid, "slab"), slab, added)
        ctx.stats.record_index(parts=len(missing))

    async def _pages(self, ctx: "DatasetContext", pages: np.ndarray) -> list[_bt.BTreePage]:
        """BTREE pages ``pages`` (sorted numbers), from the cache or read: runs of consecutive
        missing pages in one read each."""
        cache = ctx.caches.index_parts
        got: dict[int, _bt.BTreePage] = {}
        missing = []
        for p in pages.tolist():
            page = cache.peek((self.uuid, p))
            if page is None:
                missing.append(p)
            else:
                got[p] = page
        if missing:
            runs: list[list[int]] = []
            for p in missing:
                if runs and runs[-1][-1] + 1 == p:
                    runs[-1].append(p)
                else:
                    runs.append([p])
            read = await asyncio.gather(*(self._read_pages(ctx, run) for run in runs))
            for run, pages_read in zip(runs, read):
                for p, page in zip(run, pages_read):
                    got[p] = cache.put((self.uuid, p), page)
            ctx.stats.record_index(parts=len(missing))
        return [got[p] for p in pages.tolist()]

    async def _read_pages(self, ctx: "DatasetContext", run: list[int]) -> list[_bt.BTreePage]:
        lookup: _bt.BTreeIndex = self.lookup
        start, _ = lookup.page_rows(run[0])
        last_start, last_n = lookup.page_rows(run[-1])
        where = ctx.store.uri(self.parts_path)
        try:
            table = await self.parts_file.read_range(start, last_start + last_n - start, list(self.part_columns))
        except LanceJitError as exc:
            raise _where(exc, where) from exc
        out = []
        for p in run:
            s, n = lookup.page_rows(p)
            out.append(_bt.BTreePage.from_table(table.slice(s - start, n), where))
        return out

    async def _bitmaps(self, ctx: "DatasetContext", rows: np.ndarray) -> list[np.ndarray]:
        """The row sets of the bitmaps at lookup-file ``rows``, from the cache or read (all the
        missing ones in one take)."""
        cache = ctx.caches.index_parts
        keys = rows.tolist()
        got: dict[int, Any] = {}
        missing = []
        for r in keys:
            part = cache.peek((self.uuid, r))
            if part is None:
                missing.append(r)
            else:
                got[r] = part
        if missing:
            where = ctx.store.uri(self.parts_path)
            uniq = sorted(set(missing))
            try:
                table = await self.parts_file.take_rows(np.asarray(uniq, dtype=np.int64), list(self.part_columns))
            except LanceJitError as exc:
                raise _where(exc, where) from exc
            col = table.column(_bm.BITMAPS)
            for r, raw in zip(uniq, col.to_pylist()):
                if raw is None:
                    raise CorruptFileError("bitmap index holds a NULL bitmap", path=where)
                ids, full = rowset.decode_treemap(raw, where)
                if len(full):
                    raise Unusable("bitmap selecting whole fragments")
                got[r] = cache.put((self.uuid, r), _Part(ids))
            ctx.stats.record_index(parts=len(uniq))
        return [got[r].ids for r in keys]


@dataclass(frozen=True, slots=True)
class _Part:
    """A cached bitmap: its row set."""

    ids: np.ndarray

    @property
    def nbytes(self) -> int:
        return int(self.ids.nbytes) + 64


def _where(exc: LanceJitError, where: str) -> LanceJitError:
    from ...meta.context import with_context

    return with_context(exc, f"index file {where}")


async def _load(ctx: "DatasetContext", uuid: str, kind: str, value_type: pa.DataType) -> ScalarIndex:
    directory = join_path(ctx.root, "_indices", uuid)
    if kind == BTREE:
        lpath, dpath = join_path(directory, _bt.LOOKUP_FILE), join_path(directory, _bt.PAGES_FILE)
        lookup_file, data_file = await asyncio.gather(_open_file(ctx, lpath), _open_file(ctx, dpath))
        meta = lookup_file.file_metadata.schema_metadata
        where = ctx.store.uri(lpath)
        if _text(meta.get("range_partitioned", b"false")).lower() == "true":
            raise Unusable("range-partitioned btree")
        try:
            batch = int(_text(meta.get("batch_size", str(_bt.DEFAULT_BATCH_SIZE))))
        except ValueError:
            raise CorruptFileError("btree batch_size metadata is not a number", path=where) from None
        table = await lookup_file.read_all()
        vt = table.schema.field("min").type if "min" in table.column_names else value_type
        lookup = _bt.BTreeIndex.from_lookup(table, vt, batch, data_file.num_rows, where)
        if data_file.version == "0.1" and lookup.null_counts.any():
            raise Unusable("a btree in 0.1 files lost its NULLs (stored as values)")
        names = data_file.schema.names
        ids_column = _bt.IDS if _bt.IDS in names else _bt.LEGACY_IDS
        if _bt.VALUES not in names or ids_column not in names:
            raise CorruptFileError("btree page data needs 'values' and 'ids' columns", path=ctx.store.uri(dpath))
        ctx.stats.record_index(parts=1)
        return ScalarIndex(uuid, kind, directory, vt, lookup, data_file, dpath, (_bt.VALUES, ids_column),
                           _slabs.search_dtype(lookup))
    path = join_path(directory, _bm.LOOKUP_FILE)
    reader = await _open_file(ctx, path)
    where = ctx.store.uri(path)
    keys = await reader.read_all([_bm.KEYS])
    list_nulls = None
    if kind == LABEL_LIST:
        pos = reader.file_metadata.schema_metadata.get(_bm.LIST_NULLS_KEY)
        if pos is not None:
            try:
                position = int(_text(pos))
            except ValueError:
                raise CorruptFileError(f"{_bm.LIST_NULLS_KEY} is not a number", path=where) from None
            ids, full = rowset.decode_treemap(await _global_buffer(ctx, path, reader, position), where)
            list_nulls = None if len(full) else ids
    bitmap = _bm.BitmapIndex.from_keys(keys.column(_bm.KEYS), list_nulls, where)
    ctx.stats.record_index(parts=1)
    return ScalarIndex(uuid, kind, directory, bitmap.value_type, bitmap, reader, path, (_bm.BITMAPS,))


def _text(v: Any) -> str:
    return v.decode() if isinstance(v, (bytes, bytearray)) else str(v)


async def infer_kind(ctx: "DatasetContext", uuid: str, column_type: pa.DataType) -> str:
    """The kind of an index entry without details, as the reference infers it."""
    if pa.types.is_list(column_type) or pa.types.is_large_list(column_type):
        return LABEL_LIST
    path = join_path(ctx.root, "_indices", uuid, _bm.LOOKUP_FILE)
    try:
        await ctx.reader(ctx.store, path).size()
        return BITMAP
    except (NotFoundError, FileNotFoundError):
        return BTREE


async def open_segment(ctx: "DatasetContext", uuid: str, kind: str, column_type: pa.DataType) -> ScalarIndex:
    """The opened index ``uuid`` of ``kind`` (``""``: inferred) on a column of ``column_type``
    (cached per dataset by uuid); :class:`Unusable` when lancejit cannot use it."""
    async def load() -> ScalarIndex | Unusable:
        k = kind or await infer_kind(ctx, uuid, column_type)
        try:
            return await _load(ctx, uuid, k, column_type)
        except Unusable as exc:
            return exc
    got = await ctx.caches.scalar_indices.get(("scalar", uuid), load)
    if isinstance(got, Unusable):
        raise got
    return got


__all__ = ["BITMAP", "BTREE", "DETAILS", "LABEL_LIST", "ScalarIndex", "TYPE_NAMES", "details_kind", "infer_kind",
           "open_segment"]
