"""The Lance file container: footer, offset tables, schema and column metadata.

:func:`open_file_metadata` turns one file (seen through a :class:`RangeReader`) into a
:class:`FileMetadata` in one read request when the metadata lies in the last
``FOOTER_PREFETCH_BYTES`` (64 KiB) of the file, and in exactly two otherwise.

Byte ranges are half-open ``(start, end)`` absolute file positions; sizes are in bytes.

Layout of a v2 file's tail (see the Lance file format specification)::

    [global buffer 0 = FileDescriptor][ColumnMetadata 0..N-1][CMO table][GBO table][footer, 40 B]

The 40-byte footer: u64 column-metadata start, u64 CMO table position, u64 GBO table position,
u32 number of global buffers, u32 number of columns, u16 major, u16 minor, ``b"LANC"``.
Legacy (0.1) files end with a 16-byte footer (``i64 metadata position, u16 0, u16 <=2, LANC``)
and are parsed by :mod:`lancejit.file.legacy`.
"""

from __future__ import annotations

import asyncio
import importlib
import struct
from dataclasses import dataclass, field, replace
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Iterator, Mapping

from google.protobuf import any_pb2
from google.protobuf.message import DecodeError, Message

from lancejit.core.config import FOOTER_PREFETCH_BYTES
from lancejit.core.errors import CorruptFileError, LanceJitError, NotSupportedError
from lancejit.core.ranges import RangeReader
from lancejit.encoding.pages import ColumnInfo, PageInfo
from lancejit.file.region import MetadataRegion
from lancejit.file.encodings import (
    _COLUMN_ENCODINGS,
    _LAYOUTS,
    _LAYOUTS_MAX,
    COLUMN_ENCODING_URL,
    PAGE_ENCODING_URL_V20,
    PAGE_LAYOUT_URL_V21,
)

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow as pa

    from lancejit.file.cache import FileCache


MAGIC = b"LANC"
#: Length of the v2 footer in bytes.
FOOTER_LEN = 40
#: Length of the legacy (0.1) footer in bytes.
LEGACY_FOOTER_LEN = 16
_FOOTER = struct.Struct("<QQQIIHH4s")
_U64_PAIRS_DTYPE = "<u8"


#: Metadata regions at least this large (bytes) are decoded on a worker thread.
PARSE_IN_THREAD_BYTES = 512 * 1024

_V2_VERSIONS = {(0, 3): "2.0", (2, 0): "2.0", (2, 1): "2.1", (2, 2): "2.2"}


def version_string(major: int, minor: int) -> str:
    """The user-facing version ("0.1", "2.0", "2.1", "2.2") of footer numbers ``major.minor``.

    Raises :class:`NotSupportedError` for versions lancejit cannot read (2.3+, unknown majors).
    """
    if major == 0 and minor <= 2:
        return "0.1"
    try:
        return _V2_VERSIONS[(major, minor)]
    except KeyError:
        raise NotSupportedError(
            f"Lance file version {major}.{minor} is not supported "
            "(lancejit reads 0.1, 2.0 (footer 0.3), 2.1 and 2.2)"
        ) from None


@dataclass(frozen=True, slots=True)
class Footer:
    """The 40-byte v2 footer; positions are absolute byte offsets in the file."""

    column_meta_start: int
    cmo_table_position: int
    gbo_table_position: int
    num_global_buffers: int
    num_columns: int
    major: int
    minor: int

    @classmethod
    def parse(cls, data: bytes | memoryview) -> "Footer":
        """Parse the last 40 bytes of ``data`` (caller checks the length and magic)."""
        a, b, c, ngb, ncol, major, minor, _magic = _FOOTER.unpack_from(data, len(data) - FOOTER_LEN)
        return cls(a, b, c, ngb, ncol, major, minor)


@dataclass(frozen=True, slots=True, repr=False)
class FileMetadata:
    """Everything known about one Lance file after opening it; shared with the decoders.

    This is the ``metadata`` argument of every ``make_field_decoders(reader, metadata,
    field_names)``.  Fields (all immutable except :attr:`cache`):

    ``path``: the file's URI/path (for error messages).  ``file_size``: bytes.
    ``major``/``minor``: footer version numbers (2.0 files say 0.3).
    ``version``: "0.1", "2.0", "2.1" or "2.2".  ``num_rows``: rows in the file.
    ``schema``: :class:`lancejit.core.schema.LanceSchema` (Lance field tree with ids).
    ``arrow_schema``: the same as a ``pyarrow.Schema`` (with field and schema metadata).
    ``schema_metadata``: the schema-level metadata map (``str -> bytes``).
    ``columns``: one :class:`ColumnInfo` per physical column, in column order (empty for 0.1): a
    tuple, or for files opened with ``lazy_columns`` a :class:`LazyColumns` sequence.
    Page ``encoding`` is the decoded ``lance.encodings.ArrayEncoding`` (2.0) or
    ``lance.encodings21.PageLayout`` (2.1/2.2); column ``encoding`` the decoded
    ``lance.encodings.ColumnEncoding`` (or ``None``).
    ``global_buffers``: ``(position, size)`` of every global buffer (0 = the schema).
    ``legacy``: for 0.1 files whatever :func:`lancejit.file.legacy.parse_legacy_metadata`
    returned (page table, batch offsets...), else ``None``.
    ``num_data_bytes`` / ``num_column_metadata_bytes`` / ``num_global_buffer_bytes``: byte
    accounting as the reference reports it.  ``metadata_nbytes``: bytes of file metadata parsed
    (used to size cache entries).
    ``cache``: a :class:`lancejit.file.cache.FileCache` private to this file's contents, where
    decoders keep decoded page metadata (chunk words, dictionaries, repetition indexes...):
    ``cache.get(key)``, ``cache.put(key, value, nbytes)``, ``await cache.get_or_load(key, loader)``.
    Entries survive across readers of the same unchanged file.
    """

    path: str
    file_size: int
    major: int
    minor: int
    version: str
    num_rows: int
    schema: Any
    arrow_schema: "pa.Schema"
    columns: "Sequence[ColumnInfo]"
    global_buffers: tuple[tuple[int, int], ...]
    schema_metadata: Mapping[str, bytes]
    legacy: Any = None
    num_data_bytes: int = 0
    num_column_metadata_bytes: int = 0
    num_global_buffer_bytes: int = 0
    metadata_nbytes: int = 0
    cache: "FileCache | None" = field(default=None, compare=False, repr=False)

    def __repr__(self) -> str:  # short: the page lists can hold 100 000s of messages
        return (
            f"FileMetadata(path={self.path!r}, version={self.version!r}, num_rows={self.num_rows}, "
            f"num_columns={self.num_columns}, num_pages={self.num_pages}, file_size={self.file_size})"
        )

    @property
    def num_columns(self) -> int:
        """Physical columns in the file (for 0.1: top-level fields of the schema)."""
        if self.legacy is not None and not self.columns:
            return len(self.arrow_schema)
        return len(self.columns)

    @property
    def num_global_buffers(self) -> int:
        return len(self.global_buffers)

    @property
    def num_pages(self) -> int:
        return sum(len(c.pages) for c in self.columns)


# --------------------------------------------------------------------------------------------
# Opening


async def open_file_metadata(reader: RangeReader) -> FileMetadata:
    """Read and parse the metadata of the file behind ``reader``.

    Costs one ``read_tail`` request of ``FOOTER_PREFETCH_BYTES``, plus exactly one
    ``read_ranges`` request when the metadata does not fit in that tail (plus, only for files
    with more than ~4 000 columns whose offset tables alone exceed the tail, one more).
    """
    file_size, tail = await reader.read_tail(FOOTER_PREFETCH_BYTES)
    return await parse_file_metadata(reader, file_size, tail)


async def parse_file_metadata(
    reader: RangeReader, file_size: int, tail: bytes | memoryview, *, cache: "FileCache | None" = None,
    lazy_columns: bool = False,
) -> FileMetadata:
    """Parse a file's metadata given its size and its last ``len(tail)`` bytes.

    Reads more of the file through ``reader`` only when the metadata lies before the tail.
    Every inconsistency raises :class:`CorruptFileError` naming the file.  ``cache``: the
    result's :attr:`FileMetadata.cache`.  ``lazy_columns``: a 2.1/2.2 file's columns are a
    :class:`LazyColumns` (each column's metadata decoded, and checked, on first access).
    """
    path = _name_of(reader)
    tail, major, minor, version = _check_tail(path, file_size, tail)
    if version == "0.1":
        legacy = await _open_legacy(reader, file_size, tail, major, minor)
        return legacy if cache is None else replace(legacy, cache=cache)
    try:
        return await _parse_v2(reader, file_size, tail, major, minor, version, cache, lazy_columns)
    except LanceJitError:
        raise
    except (DecodeError, struct.error, IndexError, ValueError, OverflowError, TypeError) as exc:
        raise CorruptFileError(f"unparsable metadata ({type(exc).__name__}: {exc})", path=path) from exc


def parse_tail_metadata(path: str, file_size: int, tail: bytes | memoryview, *, cache: "FileCache | None" = None,
                        lazy_columns: bool = False) -> FileMetadata | None:
    """:func:`parse_file_metadata` without I/O: the metadata of a v2 file whose last
    ``len(tail)`` bytes hold all of it (the usual case with a 64 KiB tail), else None (a legacy
    file, or metadata starting before the tail: use :func:`parse_file_metadata`).  Raises
    :class:`CorruptFileError` naming ``path`` like :func:`parse_file_metadata`."""
    tail, major, minor, version = _check_tail(path, file_size, tail)
    if version == "0.1":
        return None
    try:
        footer, gbo, need_start = _v2_layout(path, file_size, tail)
        tail_start = file_size - len(tail)
        if need_start < tail_start or len(tail) - (need_start - tail_start) >= PARSE_IN_THREAD_BYTES:
            return None
        region = MetadataRegion(tail_start, tail, path)
        return _decode_v2(region, footer, gbo, file_size, major, minor, version, path, need_start, cache,
                          lazy_columns)
    except LanceJitError:
        raise
    except (DecodeError, struct.error, IndexError, ValueError, OverflowError, TypeError) as exc:
        raise CorruptFileError(f"unparsable metadata ({type(exc).__name__}: {exc})", path=path) from exc


def _check_tail(path: str, file_size: int, tail: bytes | memoryview) -> tuple[memoryview, int, int, str]:
    """``(tail as bytes, major, minor, version)`` after the checks every file's tail passes."""
    tail = memoryview(tail)
    if tail.format != "B" or tail.ndim != 1:
        tail = tail.cast("B")
    if file_size == 0:
        raise CorruptFileError("empty file (0 bytes), not a Lance file", path=path)
    if len(tail) > file_size:
        raise CorruptFileError(f"tail of {len(tail)} bytes exceeds file size {file_size}", path=path)
    if len(tail) < 8:
        raise CorruptFileError(
            f"file of {file_size} bytes is too small to be a Lance file", path=path
        )
    if bytes(tail[-4:]) != MAGIC:
        raise CorruptFileError(
            f"not a Lance file: last 4 bytes are {bytes(tail[-4:])!r}, expected {MAGIC!r}",
            path=path,
        )
    major, minor = struct.unpack_from("<HH", tail, len(tail) - 8)
    return tail, major, minor, version_string(major, minor)


def _name_of(reader: RangeReader) -> str:
    """The file's URI when the reader knows it (for error messages), else its path."""
    uri = getattr(reader, "uri", None)
    return uri if isinstance(uri, str) and uri else reader.path


async def _open_legacy(
    reader: RangeReader, file_size: int, tail: memoryview, major: int, minor: int
) -> FileMetadata:
    try:
        legacy = importlib.import_module("lancejit.file.legacy")
    except ModuleNotFoundError as exc:
        if exc.name != "lancejit.file.legacy":
            raise
        raise NotSupportedError(
            f"{_name_of(reader)}: legacy Lance files (version 0.1) are not supported by this build"
        ) from None
    if len(tail) < LEGACY_FOOTER_LEN:
        raise CorruptFileError(
            f"file of {file_size} bytes is too small for a legacy footer", path=_name_of(reader)
        )
    try:
        parsed = await legacy.parse_legacy_metadata(reader, file_size, tail)
    except LanceJitError:
        raise
    except (DecodeError, struct.error, IndexError, ValueError, OverflowError, TypeError) as exc:
        raise CorruptFileError(
            f"unparsable legacy metadata ({type(exc).__name__}: {exc})", path=_name_of(reader)
        ) from exc
    schema = parsed.schema
    arrow_schema = getattr(parsed, "arrow_schema", None) or schema.to_arrow()
    schema_metadata = dict(getattr(parsed, "schema_metadata", None) or getattr(schema, "metadata", {}) or {})
    return FileMetadata(
        path=_name_of(reader),
        file_size=file_size,
        major=major,
        minor=minor,
        version="0.1",
        num_rows=int(parsed.num_rows),
        schema=schema,
        arrow_schema=arrow_schema,
        columns=(),
        global_buffers=(),
        schema_metadata=schema_metadata,
        legacy=parsed,
        metadata_nbytes=int(getattr(parsed, "metadata_nbytes", 0) or min(file_size, len(tail))),
    )


def _read_pairs(buf: memoryview, count: int) -> list[tuple[int, int]]:
    """``count`` little-endian ``(u64 position, u64 size)`` pairs from ``buf``."""
    values = struct.unpack_from(f"<{2 * count}Q", buf, 0)
    return [(values[2 * i], values[2 * i + 1]) for i in range(count)]


async def _parse_v2(
    reader: RangeReader, file_size: int, tail: memoryview, major: int, minor: int, version: str,
    cache: "FileCache | None" = None,
    lazy: bool = False,
) -> FileMetadata:
    path = _name_of(reader)
    footer, gbo, need_start = _v2_layout(path, file_size, tail)
    cm_start = footer.column_meta_start
    tail_start = file_size - len(tail)
    region = MetadataRegion(tail_start, tail, path)
    if gbo is None:
        # The global buffer table starts before the tail (thousands of columns or buffers):
        # read from the column metadata to the tail, and (if the schema lies still earlier)
        # once more below.
        (extra,) = await reader.read_ranges([(cm_start, tail_start)])
        if len(extra) != tail_start - cm_start:
            raise CorruptFileError("short read of the file metadata", path=path)
        region = MetadataRegion(cm_start, memoryview(bytes(extra) + bytes(tail)), path)
        gbo, need_start = _v2_buffers(path, file_size, footer, region)
    if need_start < region.start:
        (extra,) = await reader.read_ranges([(need_start, region.start)])
        if len(extra) != region.start - need_start:
            raise CorruptFileError("short read of the file metadata", path=path)
        region = MetadataRegion(need_start, memoryview(bytes(extra) + bytes(region.data)), path)

    args = (region, footer, gbo, file_size, major, minor, version, path, need_start, cache, lazy)
    if len(region.data) >= PARSE_IN_THREAD_BYTES:
        # Large metadata: decode off the event loop so other readers' I/O keeps flowing.
        return await asyncio.to_thread(_decode_v2, *args)
    return _decode_v2(*args)


def _v2_layout(path: str, file_size: int, tail: memoryview) -> tuple[Footer, Any, int]:
    """``(footer, global buffer table, first metadata byte)`` of a v2 file from its tail
    (the table None when it starts before the tail), checked."""
    if len(tail) < FOOTER_LEN:
        raise CorruptFileError(
            f"file of {file_size} bytes is too small for the {FOOTER_LEN}-byte footer", path=path
        )
    footer = Footer.parse(tail)
    footer_start = file_size - FOOTER_LEN
    cm_start, cmo_pos, gbo_pos = footer.column_meta_start, footer.cmo_table_position, footer.gbo_table_position
    ncol, ngb = footer.num_columns, footer.num_global_buffers
    if ngb < 1:
        raise CorruptFileError("footer lists no global buffers (the schema is expected in buffer 0)", path=path)
    if not (cm_start <= cmo_pos and cmo_pos + 16 * ncol <= gbo_pos and gbo_pos + 16 * ngb <= footer_start):
        raise CorruptFileError(
            "footer offsets out of range: column metadata at "
            f"{cm_start}, column offset table at {cmo_pos} ({ncol} columns), global buffer table at "
            f"{gbo_pos} ({ngb} buffers), footer at {footer_start} (file size {file_size})",
            path=path,
        )

    tail_start = file_size - len(tail)
    if gbo_pos < tail_start:
        return footer, None, cm_start
    return (footer, *_v2_buffers(path, file_size, footer, MetadataRegion(tail_start, tail, path)))


def _v2_buffers(path: str, file_size: int, footer: Footer, region: MetadataRegion) -> tuple[list, int]:
    """``(global buffer table, first metadata byte)`` read from ``region``, checked."""
    footer_start = file_size - FOOTER_LEN
    cm_start, gbo_pos, ngb = footer.column_meta_start, footer.gbo_table_position, footer.num_global_buffers
    gbo = _read_pairs(region.slice(gbo_pos, gbo_pos + 16 * ngb, "global buffer table"), ngb)
    for i, (pos, size) in enumerate(gbo):
        if pos + size > file_size:
            raise CorruptFileError(
                f"global buffer {i} [{pos}, {pos + size}) extends past the end of the file ({file_size})",
                path=path,
            )
    schema_pos, schema_size = gbo[0]
    if schema_pos + schema_size > footer_start:
        raise CorruptFileError(
            f"schema buffer [{schema_pos}, {schema_pos + schema_size}) overlaps the footer", path=path
        )
    return gbo, min(schema_pos, cm_start)


def _decode_v2(
    region: MetadataRegion,
    footer: Footer,
    gbo: list[tuple[int, int]],
    file_size: int,
    major: int,
    minor: int,
    version: str,
    path: str,
    need_start: int,
    cache: "FileCache | None" = None,
    lazy: bool = False,
) -> FileMetadata:
    """Decode schema and column metadata from ``region`` (pure CPU, no I/O)."""
    try:
        return _decode_v2_unchecked(region, footer, gbo, file_size, major, minor, version, path, need_start,
                                    cache, lazy)
    except LanceJitError:
        raise
    except (DecodeError, struct.error, IndexError, ValueError, OverflowError, TypeError) as exc:
        raise CorruptFileError(f"unparsable metadata ({type(exc).__name__}: {exc})", path=path) from exc


def _decode_v2_unchecked(region, footer, gbo, file_size, major, minor, version, path, need_start,
                         cache=None, lazy=False) -> FileMetadata:
    cm_start, cmo_pos, gbo_pos = footer.column_meta_start, footer.cmo_table_position, footer.gbo_table_position
    ncol = footer.num_columns
    schema_pos, schema_size = gbo[0]
    # Schema (global buffer 0 = FileDescriptor)
    schema, arrow_schema, schema_metadata, num_rows = _decode_descriptor(
        region.slice(schema_pos, schema_pos + schema_size, "schema"), path)

    # Column metadata
    cmo = _read_pairs(region.slice(cmo_pos, cmo_pos + 16 * ncol, "column metadata offset table"), ncol)
    for index, (pos, size) in enumerate(cmo):
        if pos < cm_start or pos + size > cmo_pos:
            raise CorruptFileError(
                f"column {index} metadata [{pos}, {pos + size}) lies outside the column metadata "
                f"section [{cm_start}, {cmo_pos})",
                path=path,
            )
    section = region.get(cm_start, cmo_pos)  # holds every column's metadata (checked above)
    if lazy and version != "2.0":
        columns: Any = LazyColumns(bytes(section), cm_start, cmo, version, file_size, path, num_rows)
    else:
        columns = tuple(_decode_column(i, section[pos - cm_start:pos - cm_start + size], version, file_size, path,
                                       num_rows) for i, (pos, size) in enumerate(cmo))

    num_gb_bytes = sum(size for _, size in gbo)
    return FileMetadata(
        path=path,
        file_size=file_size,
        major=major,
        minor=minor,
        version=version,
        num_rows=num_rows,
        schema=schema,
        arrow_schema=arrow_schema,
        columns=columns,
        global_buffers=tuple(gbo),
        schema_metadata=schema_metadata,
        legacy=None,
        num_data_bytes=max(0, cm_start - num_gb_bytes),
        num_column_metadata_bytes=gbo_pos - cm_start,
        num_global_buffer_bytes=num_gb_bytes,
        metadata_nbytes=file_size - need_start,
        cache=cache,
    )


#: ``lancejit.pb.file2_pb2.ColumnMetadata`` once imported (by the first column decoded).
_COLUMN_METADATA: Any = None


def _decode_column(index: int, data: memoryview, version: str, file_size: int, path: str,
                   num_rows: int) -> ColumnInfo:
    """The :class:`ColumnInfo` of column ``index`` from its ``ColumnMetadata`` bytes ``data``."""
    global _COLUMN_METADATA
    if _COLUMN_METADATA is None:
        from lancejit.pb.file2_pb2 import ColumnMetadata as _COLUMN_METADATA
    pb = _COLUMN_METADATA()
    _parse_message(pb, data, path, f"column {index} metadata")
    info, rows = _column_info(index, pb, version, file_size, path)
    # 2.0 list children count items; 2.2 columns under a fixed-size list of structs count
    # rows x dimension: elsewhere a column's pages hold exactly the file's rows.
    if version != "2.0" and rows != num_rows and (num_rows == 0 or rows % num_rows != 0):
        raise CorruptFileError(f"column {index} pages hold {rows} rows but the file has {num_rows}", path=path)
    return info


class LazyColumns(Sequence):
    """:attr:`FileMetadata.columns` of a 2.1/2.2 file opened with ``lazy_columns``: a sequence
    of :class:`ColumnInfo` whose items are decoded from the column metadata bytes on first
    access (a take or scan decodes only the columns it reads).  Damaged metadata raises
    :class:`CorruptFileError` naming the file when its column is first accessed.  Equal to the
    tuple of its items; thread-safe (a column decoded twice at once gives equal items)."""

    __slots__ = ("_data", "_base", "_spans", "_items", "_version", "_file_size", "_path", "_num_rows")

    def __init__(self, data: bytes, base: int, spans: list[tuple[int, int]], version: str, file_size: int,
                 path: str, num_rows: int) -> None:
        self._data = data
        self._base = base
        self._spans = spans
        #: Decoded items (None until a column is kept: a file read only by takes from
        #: metadata keeps none, see :meth:`peek`).
        self._items: list[ColumnInfo | None] | None = None
        self._version = version
        self._file_size = file_size
        self._path = path
        self._num_rows = num_rows

    def __len__(self) -> int:
        return len(self._spans)

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return tuple(self[j] for j in range(*i.indices(len(self._spans))))
        items = self._items
        if items is None:
            items = self._items = [None] * len(self._spans)
        item = items[i]
        if item is None:
            j = i + len(items) if i < 0 else i
            item = items[j] = self._decode(j)
        return item

    def peek(self, i: int) -> ColumnInfo:
        """Column ``i`` (``0 <= i < len(self)``) as ``self[i]``, decoded without keeping it
        when not kept yet: for callers that derive what they keep from it (the take table of
        a newly opened file), so a file read only that way keeps no column objects."""
        items = self._items
        item = items[i] if items is not None else None
        return item if item is not None else self._decode(i)

    def peek_many(self, indexes: Sequence[int]) -> list[ColumnInfo]:
        """:meth:`peek` of columns ``indexes`` (each ``0 <= i < len(self)``), the ones not kept
        decoded together from their wire bytes with one kernel call when Numba is loaded
        (:func:`lancejit.file.column_wire.decode_columns`; protobuf for anything unusual)."""
        items = self._items
        if items is None or not any(items[i] is not None for i in indexes):
            from lancejit.file.column_wire import decode_columns

            got = decode_columns(self._data, self._base, self._spans, indexes, self._version, self._file_size,
                                 self._num_rows)
            if got is not None:
                return got
        return [self.peek(i) for i in indexes]

    def _decode(self, j: int) -> ColumnInfo:
        pos, size = self._spans[j]
        start = pos - self._base
        try:
            return _decode_column(j, memoryview(self._data)[start:start + size], self._version, self._file_size,
                                  self._path, self._num_rows)
        except LanceJitError:
            raise
        except (DecodeError, struct.error, IndexError, ValueError, OverflowError, TypeError) as exc:
            raise CorruptFileError(f"unparsable metadata ({type(exc).__name__}: {exc})", path=self._path) from exc

    def __iter__(self) -> Iterator[ColumnInfo]:
        for i in range(len(self._spans)):
            yield self[i]

    def __eq__(self, other: Any) -> bool:
        if isinstance(other, (LazyColumns, tuple, list)):
            return tuple(self) == tuple(other)
        return NotImplemented

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __repr__(self) -> str:
        return f"LazyColumns({len(self._spans)} columns)"


def _parse_message(msg: Message, data: memoryview, path: str, what: str) -> None:
    try:
        msg.ParseFromString(data)
    except DecodeError as exc:
        raise CorruptFileError(f"cannot decode {what} ({len(data)} bytes): {exc}", path=path) from exc


#: Decoded schemas by their serialized bytes (the data files of one dataset share one schema).
_SCHEMAS: dict[bytes, tuple[Any, "pa.Schema", dict[str, bytes]]] = {}
_SCHEMAS_MAX = 64
#: Decoded file descriptors (global buffer 0: schema and row count) by their bytes: the data
#: files of one dataset written by one writer usually have identical ones.
_DESCRIPTORS: dict[bytes, tuple[Any, "pa.Schema", dict[str, bytes], int]] = {}
_DESCRIPTORS_MAX = 256


def _decode_descriptor(data: memoryview, path: str) -> tuple[Any, "pa.Schema", dict[str, bytes], int]:
    """``(LanceSchema, Arrow schema, schema metadata, rows)`` of a ``FileDescriptor``'s bytes;
    decoded once per distinct descriptor (immutable results shared by every file that has it)."""
    key = bytes(data)
    hit = _DESCRIPTORS.get(key)
    if hit is not None:
        return hit
    from lancejit.pb import file_pb2

    descriptor = file_pb2.FileDescriptor()
    _parse_message(descriptor, data, path, "file descriptor")
    if not descriptor.HasField("schema"):
        raise CorruptFileError("file descriptor (global buffer 0) has no schema", path=path)
    decoded = (*_decode_schema(descriptor.schema, path), int(descriptor.length))
    if len(_DESCRIPTORS) >= _DESCRIPTORS_MAX:
        _DESCRIPTORS.clear()
    _DESCRIPTORS[key] = decoded
    return decoded


def _decode_schema(pb_schema: Any, path: str) -> tuple[Any, "pa.Schema", dict[str, bytes]]:
    """``(LanceSchema, Arrow schema, schema metadata)`` of a schema message; decoded once per
    distinct schema (immutable results shared by every file that has it)."""
    key = pb_schema.SerializeToString()
    hit = _SCHEMAS.get(key)
    if hit is not None:
        return hit
    decoded = _decode_schema_uncached(pb_schema, path)
    if len(_SCHEMAS) >= _SCHEMAS_MAX:
        _SCHEMAS.clear()
    _SCHEMAS[key] = decoded
    return decoded


def _decode_schema_uncached(pb_schema: Any, path: str) -> tuple[Any, "pa.Schema", dict[str, bytes]]:
    from lancejit.core.schema import LanceSchema

    metadata = {k: bytes(v) for k, v in pb_schema.metadata.items()}
    try:
        schema = LanceSchema.from_pb(pb_schema.fields, metadata, path=path)
        arrow_schema = schema.to_arrow(path=path)
    except LanceJitError as exc:
        if path in str(exc):
            raise
        if isinstance(exc, NotSupportedError):
            raise NotSupportedError(f"{path}: {exc}") from exc
        raise CorruptFileError(f"invalid schema: {exc}", path=path) from exc
    except (ValueError, KeyError, IndexError, TypeError) as exc:
        raise CorruptFileError(f"invalid schema ({type(exc).__name__}: {exc})", path=path) from exc
    return schema, arrow_schema, metadata


def _page_message_class(version: str) -> tuple[str, type[Message]]:
    if version == "2.0":
        from lancejit.pb.encodings_v2_0_pb2 import ArrayEncoding

        return PAGE_ENCODING_URL_V20, ArrayEncoding
    from lancejit.pb.encodings_v2_1_pb2 import PageLayout

    return PAGE_LAYOUT_URL_V21, PageLayout


def unwrap_encoding(
    encoding: Any, url: str, cls: type[Message], path: str, what: str
) -> Message | None:
    """Decode a ``lance.file.v2.Encoding`` holding ``Any{type_url=url}`` into a ``cls``.

    Returns ``None`` for an unset or ``none`` encoding.  Indirect (deferred) encodings, which
    no writer emits, raise :class:`NotSupportedError`.
    """
    which = encoding.WhichOneof("location")
    if which is None or which == "none":
        return None
    if which == "indirect":
        raise NotSupportedError(f"{path}: {what} uses an indirect (deferred) encoding")
    envelope = any_pb2.Any()
    _parse_message(envelope, memoryview(encoding.direct.encoding), path, f"{what} encoding envelope")
    type_url = envelope.type_url
    if type_url != url and type_url.rsplit("/", 1)[-1] != url.lstrip("/"):
        raise CorruptFileError(f"{what} has encoding type {type_url!r}, expected {url!r}", path=path)
    msg = cls()
    _parse_message(msg, memoryview(envelope.value), path, f"{what} encoding")
    return msg


#: Per file version: ``(page encoding URL, its message class, the URL without its slash)``.
_PAGE_CLASSES: dict[str, tuple[str, type[Message], str]] = {}


def _column_encoding(pb: Any, index: int, path: str) -> Message | None:
    """The decoded column-level encoding of column metadata ``pb`` (None when unset)."""
    raw = pb.encoding.direct.encoding
    msg = _COLUMN_ENCODINGS.get(raw) if raw else None
    if msg is None and pb.HasField("encoding"):
        from lancejit.pb.encodings_v2_0_pb2 import ColumnEncoding

        msg = unwrap_encoding(pb.encoding, COLUMN_ENCODING_URL, ColumnEncoding, path, f"column {index}")
        if raw and msg is not None and pb.encoding.WhichOneof("location") == "direct":
            if len(_COLUMN_ENCODINGS) >= _LAYOUTS_MAX:
                _COLUMN_ENCODINGS.clear()
            _COLUMN_ENCODINGS[raw] = msg
    return msg


def _column_info(index: int, pb: Any, version: str, file_size: int, path: str) -> tuple[ColumnInfo, int]:
    """``(ColumnInfo, rows its pages hold)`` of column metadata ``pb``."""
    classes = _PAGE_CLASSES.get(version)
    if classes is None:
        url, cls = _page_message_class(version)
        classes = _PAGE_CLASSES[version] = (url, cls, url.lstrip("/"))
    url, cls, short_url = classes
    col_offsets = tuple(pb.buffer_offsets)
    col_sizes = tuple(pb.buffer_sizes)
    if col_offsets or col_sizes:
        _check_buffers(col_offsets, col_sizes, file_size, path, f"column {index}")
    col_encoding = _column_encoding(pb, index, path)
    pages = []
    rows = 0
    envelope = any_pb2.Any()
    known = _LAYOUTS[url]
    # Hot loop (one iteration per page; files may hold 100 000s): fast path inline, the general
    # (slow) path in unwrap_encoding for anything unusual.
    for p, page in enumerate(pb.pages):
        offsets = tuple(page.buffer_offsets)
        sizes = tuple(page.buffer_sizes)
        if len(offsets) != len(sizes) or (offsets and max(map(int.__add__, offsets, sizes)) > file_size):
            _check_buffers(offsets, sizes, file_size, path, f"column {index} page {p}")
        encoding = page.encoding
        # the pages of files of one writer repeat a few encodings: one decoded message (shared,
        # never modified) per distinct encoding bytes
        raw = encoding.direct.encoding
        msg = known.get(raw) if raw else None
        if msg is None and encoding.WhichOneof("location") == "direct":
            try:
                envelope.ParseFromString(raw)
                if envelope.type_url == url or envelope.type_url.rsplit("/", 1)[-1] == short_url:
                    msg = cls()
                    msg.ParseFromString(envelope.value)
                    if len(known) >= _LAYOUTS_MAX:
                        known.clear()
                    known[raw] = msg
            except DecodeError:
                msg = None
        if msg is None:
            what = f"column {index} page {p}"
            if not page.HasField("encoding"):
                raise CorruptFileError(f"{what} has no encoding", path=path)
            msg = unwrap_encoding(encoding, url, cls, path, what)  # raises the precise error
        length = page.length
        rows += length
        pages.append(PageInfo(offsets, sizes, length, page.priority, msg))
    return ColumnInfo(index, tuple(pages), col_offsets, col_sizes, col_encoding), rows


def _check_buffers(
    offsets: tuple[int, ...], sizes: tuple[int, ...], file_size: int, path: str, what: str
) -> None:
    if len(offsets) != len(sizes):
        raise CorruptFileError(
            f"{what} lists {len(offsets)} buffer offsets but {len(sizes)} buffer sizes", path=path
        )
    for i, (off, size) in enumerate(zip(offsets, sizes)):
        if off + size > file_size:
            raise CorruptFileError(
                f"{what} buffer {i} [{off}, {off + size}) extends past the end of the file ({file_size})",
                path=path,
            )


__all__ = [
    "FOOTER_LEN",
    "FileMetadata",
    "Footer",
    "LazyColumns",
    "MAGIC",
    "open_file_metadata",
    "parse_file_metadata",
    "unwrap_encoding",
    "version_string",
]
