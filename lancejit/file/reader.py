"""``LanceFileReader``: read one Lance file (any supported version) into Arrow.

:class:`AsyncLanceFileReader` is the implementation (``await AsyncLanceFileReader.open(uri)``);
:class:`LanceFileReader` is its synchronous face, every method running the async one through
:func:`lancejit.io.sync.run_sync`: in the caller's thread for local and memory files, on
lancejit's I/O loop thread for object stores.

Row ranges are half-open ``[start, end)``.  The reader owns row bookkeeping (projection,
batching, sorting/deduplicating take indices, restoring request order); the per-version
decoders (``make_field_decoders(reader, metadata, field_names)``) see only row ranges and
sorted unique indices.
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import threading
from typing import Any, AsyncGenerator, Iterator, Sequence

import numpy as np
import pyarrow as pa

from lancejit.core.arrow_compute import take as arrow_take
from lancejit.core.config import DEFAULT_BATCH_SIZE, FOOTER_PREFETCH_BYTES, SCAN_READ_BYTES, settings
from lancejit.core.cores import off_loop_if_idle
from lancejit.core.errors import (
    InvalidInputError,
    LanceJitError,
    NotFoundError,
    NotSupportedError,
    RowIndexError,
    StoreError,
)
from lancejit.file.cache import SearchCache, default_cache, file_key
from lancejit.file.container import FileMetadata, parse_file_metadata, parse_tail_metadata
from lancejit.file.summary import FileSummary, summarize
from lancejit.file.take_plan import (
    TAKE_PLAN_VERSIONS,
    TableRequest,
    file_take_table,
    run_take,
    table_from,
    table_request,
    take_table,
)
from lancejit.file.windows import Slicer, windows
from lancejit.io.sync import bridged


#: Projections whose take plan a reader keeps.
MAX_PROJECTIONS = 64

#: Most rows one scan window decodes per column (bounds memory for tiny-bytes-per-row columns).
MAX_WINDOW_ROWS = 1 << 20

#: Range reads of step-plan decoders up to this many encoded bytes (all fields together) run
#: every field's steps in lockstep (one ``read_ranges`` per step).
STEPS_READ_BYTES = 4 << 20

_DECODER_MODULES = {
    "2.0": "lancejit.encoding.v20",
    "2.1": "lancejit.encoding.v21",
    "2.2": "lancejit.encoding.v21",
    "0.1": "lancejit.encoding.legacy",
}


def decoder_factory(version: str):
    """The ``make_field_decoders`` of the decoders for files of ``version``.

    Raises :class:`NotSupportedError` when those decoders are not available.
    """
    module_name = _DECODER_MODULES.get(version)
    if module_name is None:
        raise NotSupportedError(f"no decoders for Lance file version {version}")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name and module_name.startswith(exc.name):
            raise NotSupportedError(f"reading Lance {version} files is not supported yet") from None
        raise
    factory = getattr(module, "make_field_decoders", None)
    if factory is None:
        raise NotSupportedError(f"reading Lance {version} files is not supported yet")
    return factory


def _sorted_unique(idx: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
    """``(sorted unique indices, positions restoring request order or None if already sorted unique)``."""
    if idx.size <= 1 or bool(np.all(idx[1:] > idx[:-1])):
        return np.ascontiguousarray(idx, dtype=np.int64), None
    unique, inverse = np.unique(idx, return_inverse=True)
    return np.ascontiguousarray(unique, dtype=np.int64), inverse.astype(np.int64, copy=False).reshape(-1)


_MIN, _MAX = np.minimum.reduce, np.maximum.reduce


def _to_indices(indices: Any, num_rows: int) -> np.ndarray:
    """Row indices as int64, checked against ``[0, num_rows)``."""
    if isinstance(indices, (pa.Array, pa.ChunkedArray)):
        if indices.null_count:
            raise InvalidInputError("row indices must not contain nulls")
        indices = indices.to_numpy()
    try:
        arr = np.asarray(indices)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"row indices must be integers: {exc}") from None
    if arr.ndim != 1:
        arr = arr.reshape(-1)
    if arr.size == 0:
        return np.zeros(0, dtype=np.int64)
    if arr.dtype.kind not in "iu":
        if arr.dtype.kind == "f" and np.all(np.mod(arr, 1) == 0):
            arr = arr.astype(np.int64)
        else:
            raise InvalidInputError(f"row indices must be integers, got dtype {arr.dtype}")
    if arr.dtype.kind == "u" and arr.size and int(arr.max()) > np.iinfo(np.int64).max:
        raise RowIndexError(f"row index {int(arr.max())} is out of range for {num_rows} rows")
    arr = arr.astype(np.int64, copy=False)
    lo, hi = int(_MIN(arr)), int(_MAX(arr))
    if lo < 0 or hi >= num_rows:
        bad = lo if lo < 0 else hi
        raise RowIndexError(f"row index {bad} is out of range for a file of {num_rows} rows")
    return arr


class AsyncLanceFileReader:
    """Reads one Lance file (versions 0.1, 2.0, 2.1, 2.2) asynchronously.

    Open with ``await AsyncLanceFileReader.open(uri, storage_options, cache=...)``; opening
    costs one read request when the file's metadata fits in its last 64 KiB (or the file is in
    the search cache), else two.
    """

    def __init__(
        self, uri: str, store: Any, path: str, scheduler: Any, metadata: FileMetadata, stats: Any = None
    ) -> None:
        self.uri = uri
        self._stats = stats
        self._store = store
        self._path = path
        self._scheduler = scheduler
        # Decoders read through ``_ranges`` (made on first use: the array take path does not
        # need it): the reads of all projected fields issued in one loop tick become one
        # scheduler batch (coalesced across columns).
        self._coalesced: Any = None
        self._metadata = metadata
        self._decoders: dict[str, Any] = {}
        #: Per projection (``columns`` as a tuple, or None): see :meth:`_take_projection`.
        self._projections: dict[Any, tuple] = {}
        #: Target encoded bytes per column per scan window (bytes); see :meth:`_window_rows`.
        self.scan_read_bytes = SCAN_READ_BYTES

    @classmethod
    async def open(
        cls,
        uri: str,
        storage_options: dict[str, str] | None = None,
        *,
        cache: SearchCache | None = None,
    ) -> "AsyncLanceFileReader":
        """Open the file at ``uri`` (local path, ``file://``, ``memory://``, ``s3://``, ``gs://``).

        ``cache``: the search cache holding metadata and decoder state (default: the
        process-wide one).
        """
        from lancejit.io import FileScheduler, IOStats, open_store

        if not isinstance(uri, str):
            uri = str(uri)  # os.PathLike
        store_and_path = open_store(uri, storage_options)
        if inspect.isawaitable(store_and_path):
            store_and_path = await store_and_path
        store, path = store_and_path
        stats = IOStats()  # this reader's requests (the store's own stats count every reader)
        scheduler = FileScheduler(store, path, stats=stats)
        return await cls.from_reader(scheduler, uri=uri, store=store, cache=cache, stats=stats)

    @classmethod
    async def from_reader(
        cls,
        reader: Any,
        *,
        uri: str | None = None,
        store: Any = None,
        cache: SearchCache | None = None,
        stats: Any = None,
        immutable: bool = False,
        tail: tuple[int, bytes | memoryview] | None = None,
    ) -> "AsyncLanceFileReader":
        """Open a file through an existing :class:`~lancejit.core.ranges.RangeReader` (e.g. a
        ``FileScheduler`` from a dataset scan's ``ScanScheduler``, sharing its stats).

        ``store`` defaults to ``reader.store``; ``stats`` (what :meth:`io_stats` reports) to
        ``reader.stats`` or the store's.  ``immutable``: the file is never rewritten in place
        (a dataset's data file), so its search-cache key digests less of the tail
        (:func:`~lancejit.file.cache.file_key`), and its columns' metadata is decoded when a
        column is first used (:class:`~lancejit.file.container.LazyColumns`).  ``tail``: the
        ``(file size, last bytes)`` already read (e.g. by a batched open), else one
        ``read_tail`` of 64 KiB.
        """
        store = store if store is not None else getattr(reader, "store", None)
        if stats is None:
            stats = getattr(reader, "stats", None)
        name = uri or getattr(reader, "uri", None) or reader.path
        if tail is not None:
            file_size, last = tail
        else:
            try:
                file_size, last = await reader.read_tail(FOOTER_PREFETCH_BYTES)
            except Exception as exc:
                err = tail_error(exc, name)
                if err is exc:
                    raise
                raise err from exc
        cache = cache if cache is not None else default_cache()
        key = file_key(str(getattr(reader, "uri", None) or name), file_size, last, immutable=immutable)
        metadata = cache.get_metadata(key)
        if metadata is None:
            metadata = await parse_file_metadata(reader, file_size, last, cache=cache.file(key),
                                                 lazy_columns=immutable)
            cache.put_metadata(key, metadata)
        return cls(name, store, getattr(reader, "path", name), reader, metadata, stats)

    @classmethod
    def from_tail(cls, reader: Any, file_size: int, tail: Any, *, uri: str, store: Any, stats: Any,
                  immutable: bool = False, cache: SearchCache | None = None) -> "AsyncLanceFileReader | None":
        """:meth:`from_reader` without I/O, given the file's size and its last bytes ``tail``
        (read by the caller, e.g. for many files at once): None when the metadata does not lie
        in ``tail`` (or the file is a legacy one): then ``await from_reader(..., tail=...)``."""
        cache = cache if cache is not None else default_cache()
        key = file_key(uri, file_size, tail, immutable=immutable)
        metadata = cache.get_metadata(key)
        if metadata is None:
            metadata = parse_tail_metadata(uri, file_size, tail, cache=cache.file(key), lazy_columns=immutable)
            if metadata is None:
                return None
            cache.put_metadata(key, metadata)
        return cls(uri, store, reader.path, reader, metadata, stats)

    # ------------------------------------------------------------------ properties
    @property
    def _ranges(self) -> Any:
        """The scheduler wrapped so same-tick reads of several decoders merge (see __init__)."""
        got = self._coalesced
        if got is None:  # (two threads at once may each make one: both merge correctly)
            got = self._coalesced = _coalescing(self._scheduler)
        return got

    @property
    def file_metadata(self) -> FileMetadata:
        """The parsed container metadata (shared with the decoders)."""
        return self._metadata

    @property
    def schema(self) -> pa.Schema:
        """The file's Arrow schema (field and schema metadata included)."""
        return self._metadata.arrow_schema

    @property
    def num_rows(self) -> int:
        return self._metadata.num_rows

    @property
    def version(self) -> str:
        """"0.1", "2.0", "2.1" or "2.2"."""
        return self._metadata.version

    def metadata(self) -> FileSummary:
        """Version, rows, schema, global buffers and per-column pages (rows, bytes, layouts)."""
        return summarize(self._metadata)

    async def read_global_buffer(self, index: int) -> bytes:
        """The bytes of global buffer ``index`` (0 is the file's schema)."""
        bufs = self.file_metadata.global_buffers
        if not 0 <= int(index) < len(bufs):
            raise RowIndexError(f"{self.uri}: no global buffer {index} (the file has {len(bufs)})")
        pos, size = bufs[int(index)]
        data = await self._scheduler.read_ranges([(pos, pos + size)])
        return bytes(data[0])

    def io_stats(self):
        """This reader's I/O counters (requests, bytes, latency; an ``IOStatsSnapshot``),
        opening included.  ``reader.store.stats`` counts every reader of the same store."""
        stats = self._stats
        if stats is None and self._store is not None:
            stats = self._store.stats
        if stats is None:
            raise NotSupportedError("this reader's RangeReader keeps no I/O statistics")
        return stats.snapshot()

    @property
    def store(self) -> Any:
        return self._store

    # ------------------------------------------------------------------ projection
    def _resolve(self, columns: Sequence[str] | None) -> list[tuple[str, tuple[str, ...], str]]:
        """``(top-level field, child path, output name)`` for each requested column."""
        names = self.schema.names
        if columns is None:
            return [(n, (), n) for n in names]
        if isinstance(columns, str):
            columns = [columns]
        out: list[tuple[str, tuple[str, ...], str]] = []
        for col in columns:
            if not isinstance(col, str):
                raise InvalidInputError(f"column names must be strings, got {col!r}")
            if col in names:
                out.append((col, (), col))
                continue
            parts = col.split(".")
            for cut in range(len(parts) - 1, 0, -1):
                top = ".".join(parts[:cut])
                if top in names and self._has_path(self.schema.field(top), parts[cut:]):
                    out.append((top, tuple(parts[cut:]), col))
                    break
            else:
                raise InvalidInputError(f"no column {col!r} in the file (columns: {names})")
        return out

    def _shape(self, columns: Sequence[str] | None) -> tuple[list, pa.Schema]:
        """``(resolved, result schema)`` of a projection: :meth:`_resolve` and
        :meth:`_result_schema`, computed once per file schema and projection (the data files
        of a dataset share one schema object)."""
        key = _projection_key(columns)
        schema = self.schema
        if key is _NO_KEY:
            resolved = self._resolve(columns)
            return resolved, self._result_schema(resolved)
        hit = _SHAPES.get((id(schema), key))
        if hit is not None and hit[0] is schema:
            return hit[1], hit[2]
        resolved = self._resolve(columns)
        shape = (schema, resolved, self._result_schema(resolved))
        if len(_SHAPES) >= _SHAPES_MAX:
            _SHAPES.clear()
        _SHAPES[(id(schema), key)] = shape
        return resolved, shape[2]

    @staticmethod
    def _has_path(field: pa.Field, path: Sequence[str]) -> bool:
        t = field.type
        for name in path:
            if not isinstance(t, pa.StructType) or t.get_field_index(name) < 0:
                return False
            t = t.field(name).type
        return True

    def _output_field(self, top: str, path: tuple[str, ...], name: str) -> pa.Field:
        field = self.schema.field(top)
        if not path:
            return field
        nullable = field.nullable
        for part in path:
            field = field.type.field(part)
            nullable = nullable or field.nullable
        # a null parent struct makes its children null: nullable if any ancestor is
        return field.with_name(name).with_nullable(nullable)

    async def _decoders_for(self, tops: Sequence[str]) -> dict[str, Any]:
        """The decoders of top-level fields ``tops``, created once per reader (thread-safe:
        the sync face and ``take_rows_async`` may use the reader from two event loops)."""
        missing = [t for t in dict.fromkeys(tops) if t not in self._decoders]
        if missing:
            factory = decoder_factory(self._metadata.version)
            with _DECODER_LOCK:
                missing = [t for t in missing if t not in self._decoders]
                made = factory(self._ranges, self._metadata, list(missing)) if missing else []
            if inspect.isawaitable(made):
                made = await made
            made = list(made)
            if len(made) != len(missing):
                raise LanceJitError(f"decoder factory returned {len(made)} decoders for {len(missing)} fields")
            with _DECODER_LOCK:
                for name, decoder in zip(missing, made):
                    self._decoders.setdefault(name, decoder)
        return {t: self._decoders[t] for t in tops}

    @staticmethod
    def _extract(array: pa.Array | pa.ChunkedArray, path: tuple[str, ...]) -> Any:
        for part in path:
            if isinstance(array, pa.ChunkedArray):
                array = pa.chunked_array(
                    [_struct_child(c, part) for c in array.chunks],
                    type=array.type.field(part).type,
                )
            else:
                array = _struct_child(array, part)
        return array

    def _result_schema(self, resolved) -> pa.Schema:
        fields = [self._output_field(top, path, name) for top, path, name in resolved]
        return pa.schema(fields, metadata=self.schema.metadata)

    def _table(self, resolved, arrays: list[Any], num_rows: int) -> pa.Table:
        schema = self._result_schema(resolved)
        if not resolved:
            return _empty_projection(num_rows)
        cols = [self._extract(a, path) for a, (_, path, _) in zip(arrays, resolved)]
        return pa.Table.from_arrays(cols, schema=schema)

    # ------------------------------------------------------------------ reads
    async def read_range(
        self, start: int, num_rows: int, columns: Sequence[str] | None = None
    ) -> pa.Table:
        """Rows ``[start, start + num_rows)`` of the projected columns as one table.

        Long ranges are read per column in ~8 MiB windows (one window read ahead), so no
        single request or decode step grows with the range.
        """
        start, num_rows = int(start), int(num_rows)
        if start < 0 or num_rows < 0 or start + num_rows > self.num_rows:
            raise RowIndexError(
                f"row range [{start}, {start + num_rows}) is outside the file's {self.num_rows} rows"
            )
        resolved = self._resolve(columns)
        if num_rows == 0 or not resolved:
            return self._result_schema(resolved).empty_table() if resolved else _empty_projection(num_rows)
        decoders = await self._decoders_for([t for t, _, _ in resolved])
        tops = list(dict.fromkeys(t for t, _, _ in resolved))
        end = start + num_rows

        decs = [decoders[t] for t in tops]
        if (all(hasattr(d, "range_steps") for d in decs) and self._small_read(decs, num_rows)
                and not getattr(self._scheduler.store, "decode_off_loop", False)):
            # (remote stores: each column's own read and decode, so a column decodes in a
            # worker thread as soon as its bytes arrive, while the others still stream)
            arrays = await _run_steps(self._ranges, [d.range_steps(start, end) for d in decs], start)
            by_top = dict(zip(tops, [_chunked(a, d.field.type) for a, d in zip(arrays, decs)]))
            return self._table(resolved, [by_top[t] for t, _, _ in resolved], num_rows)

        async def column(dec) -> pa.ChunkedArray:
            window = self._window_rows(dec, 1)
            if window >= num_rows:
                array = await dec.read_range(start, end)
                return array if isinstance(array, pa.ChunkedArray) else pa.chunked_array([array], type=dec.field.type)
            chunks = [a async for a in windows(dec, start, end, window)]
            return pa.chunked_array(chunks, type=dec.field.type)

        arrays = await asyncio.gather(*(column(decoders[t]) for t in tops))
        by_top = dict(zip(tops, arrays))
        return self._table(resolved, [by_top[t] for t, _, _ in resolved], num_rows)

    async def read_all(self, columns: Sequence[str] | None = None) -> pa.Table:
        """Every row of the projected columns (read in ~8 MiB windows per column)."""
        return await self.read_range(0, self.num_rows, columns)

    async def take_rows(self, indices: Any, columns: Sequence[str] | None = None) -> pa.Table:
        """Rows at ``indices`` (any order, duplicates allowed), in request order."""
        idx = _to_indices(indices, self.num_rows)
        projection = self._projections.get(_projection_key(columns))
        if projection is not None and idx.size and projection[1] is not None:
            # the array take path: one plan, one read, one decode per column (take_plan)
            resolved, table, schema = projection
            arrays = await run_take(table, self._scheduler, np.ascontiguousarray(idx))
            return pa.Table.from_arrays(arrays, schema=schema)
        resolved, schema = self._shape(columns)
        if idx.size == 0 or not resolved:
            return schema.empty_table() if resolved else _empty_projection(int(idx.size))
        if projection is None and self._metadata.version in TAKE_PLAN_VERSIONS:
            projection = await self._take_projection(columns, resolved, schema)
            if projection[1] is not None:
                arrays = await run_take(projection[1], self._scheduler, np.ascontiguousarray(idx))
                return pa.Table.from_arrays(arrays, schema=projection[2])
        big = idx.size >= settings().take_offload_rows
        unique, inverse = await off_loop_if_idle(_sorted_unique, idx) if big else _sorted_unique(idx)
        decoders = await self._decoders_for([t for t, _, _ in resolved])
        tops = list(dict.fromkeys(t for t, _, _ in resolved))
        decs = [decoders[t] for t in tops]
        if all(hasattr(d, "take_steps") for d in decs):
            # step-generator decoders (2.0, legacy): every field's step k in ONE read_ranges call
            arrays = await _run_steps(self._ranges, [d.take_steps(unique) for d in decs], int(unique[0]))
        else:
            arrays = await asyncio.gather(*(d.take(unique) for d in decs))
        if inverse is not None:
            order = pa.array(inverse)
            if big:
                arrays = await off_loop_if_idle(lambda: [arrow_take(a, order) for a in arrays])
            else:
                arrays = [arrow_take(a, order) for a in arrays]
        by_top = dict(zip(tops, arrays))
        return self._table(resolved, [by_top[t] for t, _, _ in resolved], int(idx.size))

    async def take_table(self, columns: Sequence[str]) -> Any:
        """The array take path's :class:`~lancejit.file.take_plan.TakeTable` of ``columns``
        (whole top-level fields of a 2.1/2.2 file, in that order), built once and kept with the
        projection; None when the projection does not qualify.  With :attr:`range_reader`, what
        a multi-file take plans and reads with."""
        projection = self._projections.get(_projection_key(columns))
        if projection is None:
            if self._metadata.version not in TAKE_PLAN_VERSIONS:
                return None
            resolved, schema = self._shape(columns)
            if not resolved:
                return None
            projection = await self._take_projection(columns, resolved, schema)
        return projection[1]

    def take_table_request(self, columns: Sequence[str]) -> tuple[bool, Any]:
        """Phase one of :meth:`take_table` without I/O, for callers building the tables of
        many files with one read (see :func:`~lancejit.file.take_plan.read_many`):
        ``(True, table or None)`` when known now (cached, built from cached chunk words, or not
        qualifying); ``(False, request)``: a :class:`~lancejit.file.take_plan.TableRequest`
        whose ranges to read, then :meth:`take_table_from`; ``(False, None)``: use ``await
        take_table(columns)``."""
        key = _projection_key(columns)
        projection = self._projections.get(key)
        if projection is not None:
            return True, projection[1]
        if self._metadata.version not in TAKE_PLAN_VERSIONS:
            return True, None
        resolved, schema = self._shape(columns)
        tops = [t for t, _, _ in resolved]
        if not resolved or any(path for _, path, _ in resolved) or len(set(tops)) != len(tops):
            return False, None
        got = table_request(self._metadata, tops)
        if isinstance(got, TableRequest):
            return False, got
        if got is None:
            return False, None
        self._keep(key, (resolved, got, schema))
        return True, got

    def take_table_from(self, columns: Sequence[str], request: Any, bufs: Sequence[Any]) -> Any:
        """Phase two of :meth:`take_table_request`: the table from the bytes of
        ``request.ranges``, kept with the projection; None when a check fails (then use
        ``await take_table(columns)``, which reports the damage)."""
        table = table_from(request, bufs)
        if table is not None:
            resolved, schema = self._shape(columns)
            self._keep(_projection_key(columns), (resolved, table, schema))
        return table

    def keep_take_table(self, columns: Sequence[str], table: Any) -> None:
        """Keep ``table`` (built by the caller from :meth:`take_table_request`'s request, e.g.
        with :func:`~lancejit.file.take_plan.tables_from` for many files) as the take table of
        ``columns``."""
        resolved, schema = self._shape(columns)
        self._keep(_projection_key(columns), (resolved, table, schema))

    def _keep(self, key: Any, projection: tuple) -> None:
        if key is not _NO_KEY and len(self._projections) < MAX_PROJECTIONS:
            self._projections[key] = projection

    @property
    def range_reader(self) -> Any:
        """The ``RangeReader`` this file is read through (its scheduler)."""
        return self._scheduler

    async def _take_projection(self, columns: Sequence[str] | None, resolved, schema: pa.Schema) -> tuple:
        """``(resolved, take table or None, result schema)`` of a projection, kept per reader:
        the table when every column is a whole top-level field with a take index."""
        key = _projection_key(columns)
        table = None
        tops = [t for t, _, _ in resolved]
        if not any(path for _, path, _ in resolved) and len(set(tops)) == len(tops):
            # a file not read yet: its take table from the metadata alone (no decoders)
            table = await file_take_table(self._metadata, tops, self._scheduler)
            if table is None:
                decoders = await self._decoders_for(tops)
                table = await take_table([decoders[t] for t in tops], self.num_rows, self._metadata.cache,
                                         self._scheduler)
        projection = (resolved, table, schema)
        self._keep(key, projection)
        return projection

    def _small_read(self, decoders: Sequence[Any], num_rows: int) -> bool:
        """True when ``num_rows`` rows of every decoder fit one window and all of them together
        are at most :data:`STEPS_READ_BYTES` (then the step plans run in lockstep, decoding on
        the loop; larger reads keep each decoder's own async path, which may decode in threads)."""
        total = 0.0
        for d in decoders:
            if self._window_rows(d, 1) < num_rows:
                return False
            try:
                total += float(d.estimated_bytes_per_row()) * num_rows
            except (AttributeError, TypeError, ValueError):
                return False
        return total <= STEPS_READ_BYTES

    def _window_rows(self, decoder: Any, batch_size: int) -> int:
        """Rows per scan window of one column: ~``scan_read_bytes`` of encoded data, a multiple
        of ``batch_size``, between ``batch_size`` and ``max(batch_size, MAX_WINDOW_ROWS)``."""
        try:
            bpr = float(decoder.estimated_bytes_per_row())
        except (AttributeError, TypeError, ValueError, ZeroDivisionError):
            bpr = 0.0
        if not bpr > 0 or bpr != bpr:
            rows = MAX_WINDOW_ROWS
        else:
            rows = int(min(self.scan_read_bytes / bpr, MAX_WINDOW_ROWS))
        rows = max(batch_size, (rows // batch_size) * batch_size)
        return max(1, rows)

    async def to_batches(
        self,
        columns: Sequence[str] | None = None,
        batch_size: int = DEFAULT_BATCH_SIZE,
        *,
        start: int = 0,
        end: int | None = None,
    ) -> AsyncGenerator[pa.RecordBatch, None]:
        """Scan rows ``[start, end)`` as record batches of at most ``batch_size`` rows.

        Each column is decoded in windows of ~8 MiB of encoded data (a multiple of
        ``batch_size`` rows) with one window read ahead, so I/O and decoding overlap.
        """
        batch_size = int(batch_size)
        if batch_size <= 0:
            raise InvalidInputError(f"batch_size must be positive, got {batch_size}")
        end = self.num_rows if end is None else int(end)
        start = int(start)
        if start < 0 or end < start or end > self.num_rows:
            raise RowIndexError(f"row range [{start}, {end}) is outside the file's {self.num_rows} rows")
        resolved = self._resolve(columns)
        schema = self._result_schema(resolved)
        if start == end:
            return
        if not resolved:
            for s in range(start, end, batch_size):
                yield _empty_projection_batch(min(batch_size, end - s))
            return
        from lancejit.io._tasks import gather_all

        decoders = await self._decoders_for([t for t, _, _ in resolved])
        tops = list(dict.fromkeys(t for t, _, _ in resolved))
        streams = {t: Slicer(windows(decoders[t], start, end, self._window_rows(decoders[t], batch_size))) for t in tops}
        try:
            for s in range(start, end, batch_size):
                n = min(batch_size, end - s)
                # all columns at once: their first windows (and read-ahead) are in flight together
                # (on a failure the other columns' takes are cancelled and awaited before the
                # streams close: a stream cannot close while its take is running)
                parts = dict(zip(tops, await gather_all([streams[t].take(n) for t in tops])))
                cols = [self._extract(parts[top], path) for top, path, _ in resolved]
                yield pa.RecordBatch.from_arrays(cols, schema=schema)
        finally:
            for stream in streams.values():
                await stream.aclose()


_NO_KEY = object()

#: Guards every reader's decoder creation (one lock for all readers: a reader kept per data
#: file holds no lock object of its own; creating decoders takes microseconds).
_DECODER_LOCK = threading.RLock()

#: ``(id(file schema), projection key) -> (schema, resolved, result schema)``: see ``_shape``.
_SHAPES: dict[tuple[int, Any], tuple[pa.Schema, list, pa.Schema]] = {}
_SHAPES_MAX = 256


def tail_error(exc: BaseException, name: str) -> BaseException:
    """The error to raise when reading the tail of the file ``name`` failed with ``exc``: a
    missing file is :class:`NotFoundError`, a directory :class:`InvalidInputError`, others as
    they are."""
    if isinstance(exc, (NotFoundError, FileNotFoundError)):
        return NotFoundError(f"{name}: no such Lance file")
    if isinstance(exc, IsADirectoryError) or (isinstance(exc, StoreError) and (
            isinstance(exc.__cause__, IsADirectoryError) or "directory" in str(exc))):
        return InvalidInputError(f"{name}: is a directory, not a Lance file")
    return exc


def _projection_key(columns: Any) -> Any:
    """The key of a projection in ``AsyncLanceFileReader._projections`` (a name stays a str,
    a sequence becomes a tuple; :data:`_NO_KEY`, never stored, when it cannot be hashed)."""
    if columns is None or type(columns) is str:
        return columns
    try:
        key = tuple(columns)
        hash(key)
    except TypeError:
        return _NO_KEY
    return key


def _coalescing(scheduler: Any) -> Any:
    """``scheduler`` wrapped so same-tick reads of several decoders merge into one batch."""
    from lancejit.io.coalesce import CoalescingReader

    if isinstance(scheduler, CoalescingReader):
        return scheduler
    return CoalescingReader(scheduler)


async def _run_steps(reader: Any, plans: list[Any], priority: int) -> list[Any]:
    """Run step-generator plans in lockstep (one ``read_ranges`` per step for all of them)."""
    from lancejit.encoding.v20.steps import run_plans

    return await run_plans(reader, plans, priority=priority)


def _chunked(array: Any, type_: pa.DataType) -> pa.ChunkedArray:
    return array if isinstance(array, pa.ChunkedArray) else pa.chunked_array([array], type=type_)


def _struct_child(array: pa.Array, name: str) -> pa.Array:
    """Child ``name`` of a struct array with the parent's nulls applied."""
    index = array.type.get_field_index(name)
    return array.flatten()[index]


def _empty_projection(num_rows: int) -> pa.Table:
    """A table with no columns and ``num_rows`` rows."""
    return pa.Table.from_batches([_empty_projection_batch(num_rows)])


def _empty_projection_batch(num_rows: int) -> pa.RecordBatch:
    return pa.RecordBatch.from_struct_array(pa.array([{}] * num_rows, type=pa.struct([])))


# ---------------------------------------------------------------------- synchronous face
class ReaderResults:
    """The rows a read returned (the reference's ``ReaderResults``): :meth:`to_table`, or
    :meth:`to_batches` (a ``RecordBatchReader`` of batches of ``batch_size`` rows).

    It also stands for the table itself (attributes, ``==``, ``len``, indexing and the Arrow
    stream protocol are the table's), as lancejit's readers returned tables before."""

    __slots__ = ("_table", "_batch_size")

    def __init__(self, table: pa.Table, batch_size: int = 1024) -> None:
        self._table = table
        self._batch_size = max(1, int(batch_size))

    def to_table(self) -> pa.Table:
        return self._table

    def to_batches(self) -> pa.RecordBatchReader:
        t = self._table
        return pa.RecordBatchReader.from_batches(t.schema, t.to_batches(max_chunksize=self._batch_size))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._table, name)

    def __eq__(self, other: object) -> bool:
        return self._table == (other._table if isinstance(other, ReaderResults) else other)

    __hash__ = None  # type: ignore[assignment]  # unhashable; typeshed types object.__hash__ as a method only

    def __len__(self) -> int:
        return len(self._table)

    def __getitem__(self, key: Any) -> Any:
        return self._table[key]

    def __arrow_c_stream__(self, requested_schema: Any = None) -> Any:
        return self._table.__arrow_c_stream__(requested_schema)

    def __repr__(self) -> str:
        return repr(self._table)


class _Count(int):
    """A row count that may also be called (the reference's ``num_rows()`` is a method)."""

    def __call__(self) -> int:
        return int(self)


class LanceFileReader:
    """Synchronous reader of one Lance file; see :class:`AsyncLanceFileReader` for details.

    ``LanceFileReader(uri, storage_options=None, columns=None, *, cache=None)`` opens the file
    (one read request when its metadata fits in the last 64 KiB or is cached, else two);
    ``columns`` is the projection reads use when they name none.  ``read_all`` /
    ``read_range`` / ``take_rows`` return :class:`ReaderResults` (``to_table()``,
    ``to_batches()``), as the reference's reader does.
    """

    def __init__(
        self,
        uri: str,
        storage_options: dict[str, str] | None = None,
        columns: Sequence[str] | None = None,
        *,
        cache: SearchCache | None = None,
        **kwargs: Any,
    ) -> None:
        import os

        from lancejit.io.sync import run_sync, store_hint

        uri = os.fspath(uri)
        opening = AsyncLanceFileReader.open(uri, storage_options, cache=cache)
        self._inner = run_sync(opening, store=store_hint(uri))
        self._columns = list(columns) if columns is not None else None

    @classmethod
    def from_async(cls, inner: AsyncLanceFileReader) -> "LanceFileReader":
        self = cls.__new__(cls)
        self._inner = inner
        self._columns = None
        return self

    @property
    def async_reader(self) -> AsyncLanceFileReader:
        return self._inner

    @property
    def uri(self) -> str:
        return self._inner.uri

    @property
    def schema(self) -> pa.Schema:
        """The file's Arrow schema."""
        return self._inner.schema

    @property
    def num_rows(self) -> int:
        """Rows in the file (also callable: ``num_rows()``, as in the reference)."""
        return _Count(self._inner.num_rows)

    @property
    def version(self) -> str:
        return self._inner.version

    @property
    def file_metadata(self) -> FileMetadata:
        return self._inner.file_metadata

    def metadata(self) -> FileSummary:
        """Version, rows, schema, global buffers and per-column pages (rows, bytes, layouts)."""
        return self._inner.metadata()

    def io_stats(self):
        """This reader's I/O counters (an ``IOStatsSnapshot``), opening included."""
        return self._inner.io_stats()

    def _run(self, coro: Any) -> Any:
        from lancejit.io.sync import run_sync

        return run_sync(coro, store=self._inner.store)

    def _cols(self, columns: Sequence[str] | None) -> Sequence[str] | None:
        return columns if columns is not None else self._columns

    def read_all(self, columns: Sequence[str] | None = None, *, batch_size: int = 1024,
                 batch_readahead: int = 16) -> ReaderResults:
        """Every row (of ``columns``, default the reader's); ``to_table()`` / ``to_batches()``
        of ``batch_size`` rows."""
        return ReaderResults(self._run(self._inner.read_all(self._cols(columns))), batch_size)

    def read_range(self, start: int, num_rows: int, columns: Sequence[str] | None = None, *,
                   batch_size: int = 1024, batch_readahead: int = 16) -> ReaderResults:
        """Rows ``[start, start + num_rows)``."""
        return ReaderResults(self._run(self._inner.read_range(start, num_rows, self._cols(columns))), batch_size)

    def take_rows(self, indices: Any, columns: Sequence[str] | None = None, *, batch_size: int = 1024,
                  batch_readahead: int = 16) -> ReaderResults:
        """Rows at ``indices`` (any order, duplicates allowed), in request order."""
        return ReaderResults(self._run(self._inner.take_rows(indices, self._cols(columns))), batch_size)

    def file_statistics(self) -> Any:
        """Pages and bytes of every column (the reference's ``LanceFileStatistics``)."""
        from types import SimpleNamespace

        cols = self._inner.metadata().columns
        return SimpleNamespace(columns=[SimpleNamespace(num_pages=c.num_pages, size_bytes=c.num_bytes)
                                        for c in cols])

    read_global_buffer = bridged(AsyncLanceFileReader.read_global_buffer, via="_inner")

    async def take_rows_async(self, indices: Any, columns: Sequence[str] | None = None) -> pa.Table:
        """``take_rows`` for async callers: awaited on the caller's own event loop."""
        return await self._inner.take_rows(indices, columns)

    def to_batches(
        self,
        columns: Sequence[str] | None = None,
        batch_size: int = DEFAULT_BATCH_SIZE,
        *,
        start: int = 0,
        end: int | None = None,
    ) -> Iterator[pa.RecordBatch]:
        """Scan as record batches of at most ``batch_size`` rows (windows read ahead on the I/O loop)."""
        from lancejit.io.sync import iter_sync

        return iter_sync(self._inner.to_batches(columns, batch_size, start=start, end=end))

    def to_table(self, columns: Sequence[str] | None = None) -> pa.Table:
        """Every row as a ``pyarrow.Table``."""
        return self.read_all(columns).to_table()

    def __repr__(self) -> str:
        return f"LanceFileReader({self.uri!r}, version={self.version}, num_rows={self.num_rows})"


__all__ = ["AsyncLanceFileReader", "LanceFileReader", "ReaderResults", "MAX_WINDOW_ROWS", "decoder_factory"]
