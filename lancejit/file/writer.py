"""Writing one Lance file (versions 2.0, 2.1, 2.2): :class:`LanceFileWriter` (sync) over
:class:`AsyncLanceFileWriter`.

Layout written (the Lance file format specification): page buffers, each padded with 0x48 to a 64-byte boundary;
global buffer 0 (``FileDescriptor{schema, length}``); the column metadatas back to back; the
column-metadata offset table and the global-buffer offset table (u64 position, u64 size each);
the 40-byte footer ending in ``LANC``.  Pages are streamed as soon as a column has buffered
about ``max_page_bytes`` (default 8 MiB), so memory stays bounded by columns x page size.
"""

from __future__ import annotations

import asyncio
import functools
import os
import struct
from typing import Any, Awaitable, Callable, Iterable

import pyarrow as pa
from google.protobuf import any_pb2

from lancejit.core.errors import InvalidInputError, NotSupportedError, SchemaMismatchError
from lancejit.io.store import AsyncWriter
from lancejit.io.sync import run_sync
from lancejit.pb import file2_pb2, file_pb2

from lancejit.core.schema import LanceSchema

from lancejit.core.cores import idle_core
from .writer_schema import WriterTemplate, writer_template
from .writer_sink import open_sink

ALIGN = 64
PAD_BYTE = b"\x48"
MAGIC = b"LANC"
DEFAULT_PAGE_BYTES = 8 * 1024 * 1024

_VERSIONS = {
    "2.0": (2, 0), "0.3": (2, 0), "2.1": (2, 1), "2.2": (2, 2), "stable": (2, 2),
}


def parse_version(version: str | None) -> tuple[int, int]:
    """``(major, minor)`` of a user version string ('2.0'/'0.3', '2.1', '2.2'/'stable')."""
    v = (version or "2.2").strip().lower()
    if v in _VERSIONS:
        return _VERSIONS[v]
    if v in ("legacy", "0.1", "next", "2.3"):
        raise NotSupportedError(f"writing file version {version!r} is not supported")
    raise InvalidInputError(f"unknown file version {version!r}")


def _footer_numbers(version: tuple[int, int]) -> tuple[int, int]:
    return (0, 3) if version == (2, 0) else version


def _pack_any(msg, type_url: str) -> bytes:
    a = any_pb2.Any(type_url=type_url, value=msg.SerializeToString())
    return a.SerializeToString()


@functools.lru_cache(maxsize=None)
def _column_encoding_bytes() -> bytes:
    from lancejit.pb import encodings_v2_0_pb2 as pb20

    ce = pb20.ColumnEncoding()
    ce.values.SetInParent()
    return _pack_any(ce, "/lance.encodings.ColumnEncoding")


def _schemas_match(expected: pa.Schema, got: pa.Schema) -> bool:
    if len(expected) != len(got):
        return False
    for a, b in zip(expected, got):
        if a.name != b.name or not a.type.equals(b.type):
            return False
    return True


def _check_nullability(f: pa.Field, arr: pa.Array) -> None:
    if not f.nullable and arr.null_count > 0:
        raise SchemaMismatchError(
            f"field {f.name!r} is non-nullable but the batch has {arr.null_count} null values")
    t = f.type
    if pa.types.is_struct(t) and isinstance(arr, pa.StructArray):
        for i in range(t.num_fields):
            _check_nullability(t.field(i), arr.field(i))


async def _run_all(calls: list) -> list:
    """The results of ``calls`` (columns to encode): concurrently in worker threads while a
    core is idle (Numba kernels and NumPy release the GIL), else one after the other in the
    calling thread (:mod:`lancejit.core.cores`: a worker would only get the core late)."""
    if len(calls) > 1 and idle_core():
        return list(await asyncio.gather(*(asyncio.to_thread(c) for c in calls)))
    return [c() for c in calls]


class AsyncLanceFileWriter:
    """Streams record batches into one Lance file at ``uri``.

    ``schema``: the Arrow schema (taken from the first batch when None).  ``version``: '2.2'
    (default), '2.1' or '2.0'.  ``max_page_bytes``: target bytes buffered per column before a
    page is written (default 8 MiB).  ``encoding_options``: ``lance-encoding:*`` keys (prefix
    optional) applied to every field; a field's own metadata overrides them.  ``lance_schema``:
    the dataset's :class:`LanceSchema` whose field ids the file's schema should carry (a table's
    data files do); when ``schema`` is None it also gives the Arrow schema
    (``lance_schema.to_arrow(dataset=False)``).  Without it fields are numbered from 0 in
    pre-order.  Nothing is visible at ``uri`` until :meth:`close` succeeds.

    ``template``: the :class:`~.writer_schema.WriterTemplate` of ``schema`` and ``lance_schema``
    when the caller holds it (files of one table write share it); ``opener``: opens the
    destination (default: the store of ``uri``).
    """

    def __init__(self, uri: str, schema: pa.Schema | None = None, version: str | None = "2.2",
                 storage_options: dict[str, Any] | None = None,
                 max_page_bytes: int | None = None,
                 encoding_options: dict[str, str] | None = None,
                 lance_schema: LanceSchema | None = None, *, template: WriterTemplate | None = None,
                 opener: Callable[[], Awaitable[AsyncWriter]] | None = None) -> None:
        self.uri = str(uri)
        self._template = template
        self._opener = opener
        if lance_schema is not None and not isinstance(lance_schema, LanceSchema):
            raise InvalidInputError(
                f"lance_schema must be a LanceSchema, got {type(lance_schema).__name__}")
        self.lance_schema = lance_schema
        if schema is None and lance_schema is not None:
            schema = lance_schema.to_arrow(dataset=False)
        self.encoding_options = {
            (k if str(k).startswith("lance-encoding:") else f"lance-encoding:{k}"): str(v)
            for k, v in (encoding_options or {}).items()
        }
        self.version = parse_version(version)
        self.storage_options = storage_options
        if max_page_bytes is not None and max_page_bytes <= 0:
            raise InvalidInputError("max_page_bytes must be positive")
        self.page_bytes = int(max_page_bytes) if max_page_bytes else DEFAULT_PAGE_BYTES
        self.schema: pa.Schema | None = None
        self._extra_metadata: dict[str, bytes] = {}
        self._sink: AsyncWriter | None = None
        self._pos = 0
        self._rows = 0
        self._encoders: list = []
        self._columns: list[file2_pb2.ColumnMetadata] = []
        self._global_buffers: list[tuple[int, int]] = []
        self._state = "open"
        if schema is not None:
            self._initialize(schema)

    # ------------------------------------------------------------------------------ state
    @property
    def num_columns(self) -> int:
        """Physical columns of the file (0 until the schema is known)."""
        return len(self._columns)

    @property
    def bytes_written(self) -> int:
        """Bytes handed to the destination so far (the file size once :meth:`close` returned)."""
        return self._pos

    @property
    def field_ids(self) -> list[int]:
        """Field ids of the file schema, pre-order ([] until the schema is known)."""
        pb = getattr(self, "_schema_pb", None)
        return [f.id for f in pb.fields] if pb is not None else []

    @property
    def rows_written(self) -> int:
        """Rows accepted so far."""
        return self._rows

    # ------------------------------------------------------------------------------ setup
    def _initialize(self, schema: pa.Schema) -> None:
        t = self._template
        if t is None or t.schema is not schema:
            t = writer_template(schema, self.lance_schema)
        self.schema = schema
        self._schema_pb = t.schema_pb
        first = 0
        encs = []
        for f in schema:
            enc = self._make_field_encoder(f, first)
            encs.append(enc)
            first += enc.num_columns
        self._encoders = encs
        self._columns = [file2_pb2.ColumnMetadata() for _ in range(first)]

    def _make_field_encoder(self, f: pa.Field, first: int):
        if self.version == (2, 0):
            from lancejit.encoding.v20.encode.field import FieldEncoder20

            return FieldEncoder20(f, first, self.page_bytes, self.encoding_options)
        from lancejit.encoding.v21.encode.field import FieldEncoder

        defaults = {k.encode(): v.encode() for k, v in self.encoding_options.items()}
        return FieldEncoder(f, first, self.version, self.page_bytes, defaults)

    async def _ensure_sink(self) -> AsyncWriter:
        if self._sink is None:
            if self._opener is not None:
                self._sink = await self._opener()
            else:
                self._sink = await open_sink(self.uri, self.storage_options)
        return self._sink

    def _check_open(self) -> None:
        if self._state != "open":
            raise InvalidInputError(f"{self.uri}: writer is {self._state}")

    # ------------------------------------------------------------------------------ bytes
    async def _write(self, data: bytes) -> None:
        sink = await self._ensure_sink()
        if data:
            await sink.write(data)
            self._pos += len(data)

    async def _write_buffer(self, data: bytes) -> tuple[int, int]:
        pos = self._pos
        await self._write(data)
        pad = (-len(data)) % ALIGN
        if pad:
            await self._write(PAD_BYTE * pad)
        return pos, len(data)

    async def _write_pages(self, pages) -> None:
        for col, page, first_row in pages:
            if page.finish is not None:
                positions = []
                for ext in page.external or []:
                    pos, _ = await self._write_buffer(ext)
                    positions.append(pos)
                page = page.finish(positions)
                if page is None:  # out-of-line values only (a blob column's): the page comes later
                    continue
            pb = file2_pb2.ColumnMetadata.Page()
            for buf in page.buffers:
                pos, size = await self._write_buffer(buf)
                pb.buffer_offsets.append(pos)
                pb.buffer_sizes.append(size)
            pb.length = page.num_rows
            pb.priority = first_row
            url = "/lance.encodings.ArrayEncoding" if self.version == (2, 0) else "/lance.encodings21.PageLayout"
            pb.encoding.direct.encoding = _pack_any(page.layout, url)
            self._columns[col].pages.append(pb)

    # ------------------------------------------------------------------------------ API
    def add_schema_metadata(self, key: str, value: str | bytes) -> None:
        """Add a key to the schema metadata written at close."""
        self._extra_metadata[str(key)] = value.encode() if isinstance(value, str) else bytes(value)

    async def add_global_buffer(self, data: bytes) -> int:
        """Write an extra global buffer now; returns its index (1, 2, ...)."""
        self._check_open()
        pos, size = await self._write_buffer(bytes(data))
        self._global_buffers.append((pos, size))
        return len(self._global_buffers)

    def _batches(self, data) -> Iterable[pa.RecordBatch]:
        if isinstance(data, pa.Table):
            return data.to_batches()
        if isinstance(data, pa.RecordBatch):
            return [data]
        raise InvalidInputError(f"write_batch expects a pyarrow RecordBatch or Table, got {type(data).__name__}")

    async def write_batch(self, data: pa.RecordBatch | pa.Table) -> None:
        """Append the rows of ``data``.  A schema mismatch raises :class:`SchemaMismatchError`
        and aborts the file (nothing is left at the destination)."""
        self._check_open()
        if self.schema is None:
            try:
                self._initialize(data.schema)
            except BaseException:
                self.schema = None
                await self.abort()
                raise
        schema = self.schema
        assert schema is not None  # set by _initialize
        if not _schemas_match(schema, data.schema):
            await self.abort()
            raise SchemaMismatchError(
                f"{self.uri}: batch schema {data.schema} does not match the file schema {schema}")
        try:
            for batch in self._batches(data):
                if batch.num_rows == 0:
                    continue
                for f, col in zip(schema, batch.columns):
                    _check_nullability(f, col)
                # pages are written in column order so files are deterministic
                results = await _run_all([functools.partial(enc.add, col)
                                          for enc, col in zip(self._encoders, batch.columns)])
                for pages in results:
                    await self._write_pages(pages)
                self._rows += batch.num_rows
        except BaseException:
            await self.abort()  # nothing is left at the destination
            raise

    async def close(self) -> int | None:
        """Flush every column, write the metadata and footer, publish the file.  Returns rows
        (None when the file was closed already: a second close does nothing)."""
        if self._state == "closed":
            return None
        self._check_open()
        if self.schema is None:
            await self.abort()
            raise InvalidInputError(f"{self.uri}: no schema given and no data written")
        try:
            results = await _run_all([enc.finish for enc in self._encoders])
            for pages in results:
                await self._write_pages(pages)
            col_enc = _column_encoding_bytes()
            for cm in self._columns:
                cm.encoding.direct.encoding = col_enc
            for enc in self._encoders:
                for col, msg in getattr(enc, "column_encodings", dict)().items():
                    self._columns[col].encoding.direct.encoding = _pack_any(
                        msg, "/lance.encodings.ColumnEncoding")
            fd = file_pb2.FileDescriptor()
            fd.schema.CopyFrom(self._schema_pb)
            for k, v in self._extra_metadata.items():
                fd.schema.metadata[k] = v
            fd.length = self._rows
            # global buffer 0 starts 64-aligned (the previous buffer was padded)
            gb0 = (self._pos, 0)
            fd_bytes = fd.SerializeToString()
            await self._write(fd_bytes)
            gb0 = (gb0[0], len(fd_bytes))
            cm_start = self._pos
            positions = []
            for cm in self._columns:
                b = cm.SerializeToString()
                positions.append((self._pos, len(b)))
                await self._write(b)
            cmo = self._pos
            await self._write(b"".join(struct.pack("<QQ", p, s) for p, s in positions))
            gbo = self._pos
            gbs = [gb0] + self._global_buffers
            await self._write(b"".join(struct.pack("<QQ", p, s) for p, s in gbs))
            major, minor = _footer_numbers(self.version)
            await self._write(struct.pack("<QQQIIHH", cm_start, cmo, gbo, len(gbs), len(self._columns),
                                          major, minor) + MAGIC)
            sink = await self._ensure_sink()
            await sink.close()
            self._state = "closed"
            return self._rows
        except BaseException:
            await self.abort()
            raise

    async def abort(self) -> None:
        """Discard the file (nothing appears at the destination)."""
        if self._state == "open":
            self._state = "aborted"
        if self._sink is not None:
            await self._sink.abort()

    async def __aenter__(self) -> "AsyncLanceFileWriter":
        return self

    async def __aexit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            if self._state == "open":
                await self.close()
        else:
            await self.abort()


class LanceFileWriter:
    """Synchronous writer (same arguments as :class:`AsyncLanceFileWriter`), usable as a
    context manager: ``with LanceFileWriter(path, schema) as w: w.write_batch(batch)``."""

    def __init__(self, uri: str, schema: pa.Schema | None = None, version: str | None = "2.2",
                 storage_options: dict[str, Any] | None = None,
                 max_page_bytes: int | None = None,
                 encoding_options: dict[str, str] | None = None,
                 lance_schema: LanceSchema | None = None, *, data_cache_bytes: int | None = None,
                 **kwargs: Any) -> None:
        self._inner = AsyncLanceFileWriter(os.fspath(uri), schema, version, storage_options, max_page_bytes,
                                           encoding_options, lance_schema=lance_schema)

    @property
    def closed(self) -> bool:
        return self._inner._state == "closed"

    @property
    def size_bytes(self) -> int | None:
        """The file's size in bytes once closed (None before)."""
        return self._inner.bytes_written if self.closed else None

    @property
    def num_columns(self) -> int:
        """Physical columns of the file (0 until the schema is known)."""
        return self._inner.num_columns

    @property
    def bytes_written(self) -> int:
        """Bytes handed to the destination so far (the file size once :meth:`close` returned)."""
        return self._inner.bytes_written

    @property
    def field_ids(self) -> list[int]:
        """Field ids of the file schema, pre-order."""
        return self._inner.field_ids

    @property
    def rows_written(self) -> int:
        """Rows accepted so far."""
        return self._inner.rows_written

    def write_batch(self, batch: pa.RecordBatch | pa.Table) -> None:
        run_sync(self._inner.write_batch(batch))

    def add_schema_metadata(self, key: str, value: str | bytes) -> None:
        self._inner.add_schema_metadata(key, value)

    def add_global_buffer(self, data: bytes) -> int:
        return run_sync(self._inner.add_global_buffer(data))

    def close(self) -> int | None:
        """Publish the file; returns its rows (None on a second call, which does nothing)."""
        return run_sync(self._inner.close())

    def abort(self) -> None:
        run_sync(self._inner.abort())

    def __enter__(self) -> "LanceFileWriter":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            if self._inner._state == "open":
                self.close()
        else:
            self.abort()


__all__ = ["AsyncLanceFileWriter", "LanceFileWriter", "parse_version"]
