"""Opening a fragment's data file through the dataset's store and reading dataset fields from it.

A data file is opened once per dataset object (cached by path) with
``AsyncLanceFileReader.from_reader`` on a scheduler counting into the dataset's stats and
knowing the manifest's file size: one tail read of 64 KiB, rarely one more; a file that tail
holds entirely is read from it afterwards (no further request).  Dataset fields are matched to
the file's fields by Lance field id at every level (names may differ after a rename, nested
children may be renamed, dropped or missing); arrays come back with the dataset's names.
"""

from __future__ import annotations

import gc
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Iterator, Sequence

import numpy as np
import pyarrow as pa

from lancejit.core.config import settings
from lancejit.core.errors import CorruptFileError, LanceJitError, NotFoundError

from ..meta.fields import TopField, conform_array
from ..meta.manifest import DataFile

if TYPE_CHECKING:  # pragma: no cover
    from ..meta.context import DatasetContext


class DataFileHandle:
    """An opened data file: reads dataset fields by Lance field id."""

    def __init__(self, reader: Any, data_file: DataFile, path: str, store: Any = None,
                 store_path: str | None = None) -> None:
        self.reader = reader
        self.data_file = data_file
        #: The file's URI (for messages and as its cache key).
        self.path = path
        #: The store holding the file and its path there (None: not known).
        self.store = store
        self.store_path = store_path
        self._name_of_id, self._names = _names_of(reader)
        #: field id -> (dataset schema, fields to conform by or None: used as read).
        self._conform: dict[int, tuple[Any, Any]] = {}

    @property
    def num_rows(self) -> int:
        return self.reader.num_rows

    def _file_name(self, top: TopField) -> str:
        name = self._name_of_id.get(top.id)
        if name is None:
            if top.name in self._names:
                return top.name
            raise CorruptFileError(
                f"data file has no field with id {top.id} ({top.name!r})", path=self.path
            )
        return name

    def conform(self, top: TopField, array: Any, dataset_schema: Any, target: pa.DataType) -> Any:
        """``array`` (this file's field ``top.id``) with nested children matched to the dataset's
        field tree ``dataset_schema`` by field id (renames, dropped or missing children)."""
        entry = self._conform.get(top.id)
        if entry is None or entry[0] is not dataset_schema:
            entry = self._conform[top.id] = (dataset_schema, self._conform_fields(top, dataset_schema))
        fields = entry[1]
        if fields is None:
            return array
        dfield, ffield = fields
        if isinstance(array, pa.ChunkedArray):
            chunks = [conform_array(c, dfield, ffield, target) for c in array.chunks]
            return pa.chunked_array(chunks, type=chunks[0].type if chunks else target)
        return conform_array(array, dfield, ffield, target)

    def _conform_fields(self, top: TopField, dataset_schema: Any) -> tuple[Any, Any] | None:
        """``(dataset field, file field)`` of ``top`` when its children need matching by id,
        else None (the array is used as read)."""
        file_schema = self.reader.file_metadata.schema
        if dataset_schema is None or not getattr(file_schema, "has_field_id", lambda _: False)(top.id):
            return None
        if not dataset_schema.has_field_id(top.id):
            return None
        dfield = dataset_schema.field_by_id(top.id)
        if not dfield.children:
            return None
        return dfield, file_schema.field_by_id(top.id)

    def _columns(self, tops: Sequence[TopField]) -> tuple[list[str], list[str]]:
        """``(file column names of tops, the same without repeats)`` (shared, never modified):
        computed once per file schema and ``tops`` (the data files of a dataset share one
        decoded schema, so a newly opened file finds them made)."""
        names_map = self._name_of_id
        hit = _COLUMNS.get((id(names_map), id(tops)))
        if hit is not None and hit[0] is names_map and hit[1] is tops:
            return hit[2]
        key = (id(names_map), tuple((t.id, t.name) for t in tops))
        got = _COLUMNS.get(key)
        if got is None or got[0] is not names_map:
            names = [self._file_name(t) for t in tops]
            got = (names_map, None, (names, list(dict.fromkeys(names))))
        if len(_COLUMNS) >= 1024:
            _COLUMNS.clear()
        _COLUMNS[key] = got
        _COLUMNS[(id(names_map), id(tops))] = (names_map, tops, got[2])
        return got[2]

    async def read_range(self, tops: Sequence[TopField], start: int, end: int) -> list[pa.ChunkedArray]:
        """Fields ``tops`` at rows ``[start, end)`` (half-open), as chunked arrays."""
        names, unique = self._columns(tops)
        table = await self.reader.read_range(start, end - start, unique)
        # chunked as decoded (one chunk per read window): no concatenation copy
        return [table.column(n) for n in names]

    async def take(self, tops: Sequence[TopField], offsets: np.ndarray) -> list[pa.Array]:
        """Fields ``tops`` at sorted unique row ``offsets`` of this file."""
        names, unique = self._columns(tops)
        table = await self.reader.take_rows(offsets, unique)
        return [_one(table.column(n)) for n in names]


#: ``id(file schema) -> (schema, {field id: top-level name}, top-level names)``: the data files
#: of a dataset share one decoded schema object.
_NAMES: dict[int, tuple[Any, dict[int, str], frozenset[str]]] = {}
#: ``(id of a {field id: name} map of _NAMES, id(tops) or the tops' (id, name)s) -> (that map,
#: tops or None, (file column names, the same without repeats))``: see ``DataFileHandle._columns``
#: (the map and tops are kept, so their ids are not reused while an entry lives).
_COLUMNS: dict[tuple[int, Any], tuple[Any, Any, tuple[list[str], list[str]]]] = {}


def _names_of(reader: Any) -> tuple[dict[int, str], frozenset[str]]:
    """``({field id: name}, names)`` of the top-level fields of ``reader``'s file (shared,
    never modified)."""
    schema = reader.file_metadata.schema
    hit = _NAMES.get(id(schema))
    if hit is not None and hit[0] is schema:
        return hit[1], hit[2]
    name_of_id = {f.id: f.name for f in getattr(schema, "fields", ())}
    names = frozenset(reader.schema.names)
    if len(_NAMES) >= 256:
        _NAMES.clear()
    _NAMES[id(schema)] = (schema, name_of_id, names)
    return name_of_id, names


def _one(col: pa.ChunkedArray) -> pa.Array:
    if col.num_chunks == 1:
        return col.chunk(0)
    return col.combine_chunks() if col.num_chunks else pa.array([], col.type)


class _SmallFileReader:
    """The :class:`~lancejit.core.ranges.RangeReader` a data file is opened through: forwards
    to the dataset's scheduler, except that once a tail read has returned the whole file (at
    most the ``whole_file_bytes`` knob), every later read is served from that buffer (no request).
    Other attributes (``stats``, ``store``, ``config``...) are the scheduler's."""

    def __init__(self, inner: Any, expected_size: int | None = None, budget: Any = None,
                 uri: str | None = None) -> None:
        self.inner = inner
        #: A :class:`~lancejit.table.meta.context.WholeFileBudget` bounding the bytes held whole.
        self.budget = budget
        #: The size the manifest records (bytes), checked on the first tail read.
        self.expected_size = expected_size
        self._whole: memoryview | None = None
        self._seen_tail = False
        # the scheduler's fixed attributes read per take admission, copied (no __getattr__)
        self.store, self.config, self.stats = inner.store, inner.config, inner.stats
        self.store_path: str = inner.store_path
        self.uri: str = uri if uri is not None else inner.uri

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    @property
    def path(self) -> str:
        return self.inner.path

    @property
    def whole(self) -> memoryview | None:
        """The whole file when its open's tail read held it (later reads need no request)."""
        return self._whole

    async def size(self) -> int:
        if self._whole is not None:
            return len(self._whole)
        return await self.inner.size()

    async def read_tail(self, nbytes: int) -> tuple[int, memoryview]:
        if self._whole is not None:
            n = len(self._whole)
            return n, self._whole[max(0, n - int(nbytes)):]
        size, data = await self.inner.read_tail(nbytes)
        self.first_tail(size, data)
        return size, data

    def first_tail(self, size: int, data: Any) -> None:
        """Note the file's size and tail read by its open (through :meth:`read_tail` or, for
        a batched open, by the caller): checked against the manifest's size, and the file
        kept whole when the tail holds it (and the budget allows)."""
        if self._seen_tail:
            return
        self._seen_tail = True
        if self.expected_size and self.expected_size != size:
            raise CorruptFileError(
                f"data file has {size} bytes but the manifest records {self.expected_size}", path=self.path
            )
        if len(data) == size and size <= settings().whole_file_bytes and (self.budget is None or self.budget.take(size)):
            self._whole = data

    async def read_ranges(self, ranges: Any, *, priority: int = 0) -> list[memoryview]:
        whole = self._whole
        if whole is None:
            return await self.inner.read_ranges(ranges, priority=priority)
        arr = np.asarray(ranges, dtype=np.int64).reshape(-1, 2)
        n = len(whole)
        bad = (arr[:, 0] < 0) | (arr[:, 1] > n) | (arr[:, 1] < arr[:, 0])
        if bad.any():
            a, b = (int(v) for v in arr[bad][0])
            raise CorruptFileError(f"byte range [{a}, {b}) is outside the file's {n} bytes", path=self.path)
        return [whole[a:b] for a, b in arr.tolist()]


async def open_data_file(ctx: "DatasetContext", data_file: DataFile) -> DataFileHandle:
    """The cached handle of ``data_file`` (opened with one tail read of 64 KiB on first use,
    rarely one more; a file the tail holds entirely is then read from memory)."""
    store, path = ctx.data_file_location(data_file)

    async def load() -> DataFileHandle:
        from lancejit.file.reader import AsyncLanceFileReader

        with ctx.errors(path, store):
            uri = store.uri(path)
            size = data_file.file_size_bytes or None
            source = _SmallFileReader(ctx.reader(store, path, size), size, ctx.caches.whole_files)
            try:
                reader = await AsyncLanceFileReader.from_reader(source, uri=uri, store=store, stats=ctx.stats,
                                                                immutable=True)
            except NotFoundError:
                raise NotFoundError("data file is missing") from None
            return DataFileHandle(reader, data_file, uri, store, path)

    return await ctx.caches.files.get(store.uri(path), load)


@contextmanager
def collector_paused(ctx: "DatasetContext", nfiles: int) -> Iterator[None]:
    """Pause the garbage collector while ``nfiles`` new data files open in this thread, when
    there are at least ``gc_pause_files`` (a knob) and the dataset's store reads in the caller's
    thread (``serial_batches``: the pause then covers no waiting on other threads); nested
    pauses leave it to the outermost one.  The collector is on again afterwards, also when the
    open fails.  Opening creates a few long-lived objects per file and many short-lived ones:
    young collections in between would only walk them."""
    pause = nfiles >= settings().gc_pause_files and gc.isenabled() and getattr(ctx.store, "serial_batches", False)
    if pause:
        gc.disable()
    try:
        yield
    finally:
        if pause:
            gc.enable()


async def open_data_files(ctx: "DatasetContext", data_files: Sequence[DataFile]) -> list[DataFileHandle]:
    """The cached handles of ``data_files`` (in that order; repeats allowed), the files not
    opened yet opened together: ONE batched read of all their 64 KiB tails
    (:func:`lancejit.io.multi_read.read_tails`: on local disk one inline loop, one request per
    file and no task per file; on object stores every tail at once through the files'
    schedulers), their metadata parsed inline (a file whose metadata starts before its tail
    reads the rest through :meth:`AsyncLanceFileReader.from_reader`), every handle put in the
    dataset's file cache.  Each handle's ``store`` and ``store_path`` say where its file is.

    Errors are those of :func:`open_data_file`, for the first failing file in ``data_files``
    order (``NotFoundError`` "data file is missing", ``CorruptFileError``...), naming it.
    Batches of many new files open with the collector paused (:func:`collector_paused`), and
    set the C heap to keep freed memory (:func:`lancejit.table.read.heap.keep_scan_buffers`)."""
    files = ctx.caches.files
    out: list[Any] = [None] * len(data_files)
    todo: dict[str, tuple[list[int], DataFile, Any, str]] = {}  # uri -> (indexes, file, store, path)
    waits = []
    for i, df in enumerate(data_files):
        store, path = ctx.data_file_location(df)
        uri = store.uri(path)
        got = files.peek(uri)
        if got is not None:
            out[i] = got
        elif uri in todo:
            todo[uri][0].append(i)
        elif files.loading(uri):  # another caller is opening it: share its load
            waits.append((i, df))
        else:
            todo[uri] = ([i], df, store, path)
    if todo:
        if len(todo) >= settings().gc_pause_files:
            # many 64 KiB tails: let the C heap keep freed memory (as the first scan does), so
            # later batches read into pages already mapped (a fresh 64 KiB buffer costs a page
            # fault per 4 KiB, more than reading into it)
            from .heap import keep_scan_buffers

            keep_scan_buffers()
        with collector_paused(ctx, len(todo)):
            await _open_new(ctx, todo, out)
    for i, df in waits:
        out[i] = await open_data_file(ctx, df)
    return out


async def _open_new(ctx: "DatasetContext", todo: dict, out: list) -> None:
    """Open the files of ``todo`` (``uri -> (indexes in out, data file, store, path)``): see
    :func:`open_data_files`."""
    from lancejit.core.config import FOOTER_PREFETCH_BYTES
    from lancejit.file.reader import AsyncLanceFileReader, tail_error
    from lancejit.io.multi_read import read_tails

    from ..meta.context import with_context

    files = ctx.caches.files
    budget = ctx.caches.whole_files
    sources = []
    for uri, (_, df, store, path) in todo.items():
        size = df.file_size_bytes or None
        sources.append(_SmallFileReader(ctx.reader(store, path, size), size, budget, uri))
    tails = await read_tails([s.inner for s in sources], FOOTER_PREFETCH_BYTES)
    stats = ctx.stats
    for (uri, (idxs, df, store, path)), src, tail in zip(todo.items(), sources, tails):
        try:
            if not isinstance(tail, tuple):
                err = tail_error(tail, uri)
                raise (NotFoundError("data file is missing") if isinstance(err, NotFoundError) else err)
            size, data = tail
            src.first_tail(size, data)
            reader = AsyncLanceFileReader.from_tail(src, size, data, uri=uri, store=store, stats=stats,
                                                    immutable=True)
            if reader is None:
                reader = await AsyncLanceFileReader.from_reader(src, uri=uri, store=store, stats=stats,
                                                                immutable=True, tail=tail)
        except LanceJitError as exc:
            raise with_context(exc, ctx.describe_where(path, store)) from exc
        handle = files.put(uri, DataFileHandle(reader, df, uri, store, path))
        for i in idxs:
            out[i] = handle
