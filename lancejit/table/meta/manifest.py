"""Manifest files (``_versions/*.manifest``): framing and parsing into frozen values.

Framing of a manifest file (byte positions are absolute, little endian)::

    [optional IndexSection:  u32 len + protobuf]
    [optional Transaction:   u32 len + protobuf]   (inline copy of the transaction)
    [Manifest:               u32 len + protobuf]
    [i64 manifest_position][u16 major][u16 minor]["LANC"]   16-byte footer

``manifest_position`` points at the manifest's u32 length prefix; the length must equal the
bytes between the prefix and the footer.  Readers prefetch the last 64 KiB, which normally
holds the whole manifest; otherwise one more range read fetches the rest.
"""

from __future__ import annotations

import functools
import struct
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from google.protobuf.message import DecodeError

from lancejit.core.errors import CorruptFileError
from lancejit.pb import table_pb2, transaction_pb2

from .fragment_list import FragmentList
from .manifest_scan import ScannedManifest, scan_manifest

MAGIC = b"LANC"
FOOTER_LEN = 16
#: Bytes read from a manifest's end in the first request.
MANIFEST_PREFETCH_BYTES = 64 * 1024

ARROW_ARRAY = 0
BITMAP = 1


@dataclass(frozen=True, slots=True)
class DataFile:
    """One data file of a fragment.  ``path`` is relative to ``data/`` (or to the base path
    ``base_id`` names).  ``fields[i]`` is stored in top-level column ``column_indices[i]``
    (empty for legacy files); field id -2 marks a tombstoned slot."""

    path: str
    fields: tuple[int, ...]
    column_indices: tuple[int, ...]
    file_major_version: int
    file_minor_version: int
    file_size_bytes: int | None
    base_id: int | None

    @property
    def is_legacy(self) -> bool:
        """True for 0.1/0.2 files (major and minor both 0)."""
        return self.file_major_version == 0 and self.file_minor_version in (0, 1, 2)

    @property
    def version_string(self) -> str:
        """``"0.1"``, ``"2.0"``, ``"2.1"``, ``"2.2"``..."""
        if self.is_legacy:
            return "0.1"
        if self.file_major_version == 0 and self.file_minor_version == 3:
            return "2.0"
        return f"{self.file_major_version}.{self.file_minor_version}"


@dataclass(frozen=True, slots=True)
class DeletionFile:
    """A fragment's deletion file: ``_deletions/{fragment_id}-{read_version}-{id}.{arrow|bin}``."""

    file_type: int  # ARROW_ARRAY (0, ".arrow") or BITMAP (1, ".bin")
    read_version: int
    id: int
    num_deleted_rows: int | None
    base_id: int | None

    @property
    def suffix(self) -> str:
        return "arrow" if self.file_type == ARROW_ARRAY else "bin"

    def relative_path(self, fragment_id: int) -> str:
        """Path relative to the dataset root."""
        return f"_deletions/{fragment_id}-{self.read_version}-{self.id}.{self.suffix}"


@dataclass(frozen=True, slots=True)
class ExternalFile:
    """Byte range ``[offset, offset + size)`` of a file relative to the dataset root."""

    path: str
    offset: int
    size: int


@dataclass(frozen=True, slots=True)
class Fragment:
    """One fragment: rows ``[0, physical_rows)`` spread over ``files`` (columns), minus deletions.

    ``physical_rows == 0`` with data files means "unknown" (old writers, or a manifest without
    a writer version, whose statistics the reference does not trust either): the row count is
    then read from a data file's footer.  ``num_deleted_rows`` None means "count the deletion
    file".

    ``row_ids`` is the serialized ``RowIdSequence`` (bytes) or an :class:`ExternalFile`
    holding it; None when the dataset has no stable row ids.
    """

    id: int
    files: tuple[DataFile, ...]
    deletion_file: DeletionFile | None
    physical_rows: int
    row_ids: bytes | ExternalFile | None

    @property
    def num_deleted_rows(self) -> int | None:
        if self.deletion_file is None:
            return 0
        return self.deletion_file.num_deleted_rows


@dataclass(frozen=True, slots=True)
class BasePath:
    """An extra root that data files may live under (multi-base / shallow-clone datasets)."""

    id: int
    name: str | None
    is_dataset_root: bool
    path: str


@dataclass(frozen=True, slots=True)
class Manifest:
    """One version of a dataset, as stored in its manifest file.

    ``fields`` are the ``lance.file.Field`` messages of the schema (flattened, pre-order);
    ``timestamp_ns`` is nanoseconds since the Unix epoch (UTC).
    """

    version: int
    fields: tuple[Any, ...]
    schema_metadata: Mapping[str, bytes]
    fragments: Sequence[Fragment]
    timestamp_ns: int
    tag: str
    reader_feature_flags: int
    writer_feature_flags: int
    max_fragment_id: int | None
    transaction_file: str
    transaction_section: int | None
    index_section: int | None
    writer_library: str
    writer_version: str
    next_row_id: int
    data_storage_format: str
    data_storage_version: str
    config: Mapping[str, str]
    table_metadata: Mapping[str, str]
    base_paths: tuple[BasePath, ...]
    branch: str | None
    file_size: int = field(default=0)
    #: The manifest's schema fields as stored (bytes; None when not known): equal keys give
    #: equal schemas (see :func:`.open.make_context`).
    schema_key: bytes | None = field(default=None, compare=False)
    #: The whole manifest file (bytes) when it was read or written whole, else None: a commit
    #: on this version rebuilds from it instead of reading the file again.
    file_bytes: bytes | memoryview | None = field(default=None, compare=False, repr=False)

    def fragment(self, fragment_id: int) -> Fragment | None:
        for frag in self.fragments:
            if frag.id == fragment_id:
                return frag
        return None


def _opt(msg: Any, name: str) -> Any:
    return getattr(msg, name) if msg.HasField(name) else None


def _data_file(pb: Any) -> DataFile:
    return DataFile(
        path=pb.path,
        fields=tuple(pb.fields),
        column_indices=tuple(pb.column_indices),
        file_major_version=pb.file_major_version,
        file_minor_version=pb.file_minor_version,
        file_size_bytes=pb.file_size_bytes or None,
        base_id=_opt(pb, "base_id"),
    )


#: Rows a fragment can hold: row addresses keep the offset in 32 bits.
MAX_FRAGMENT_ROWS = 1 << 32


def _check_counts(pb: Any) -> None:
    """Refuse fragments no writer makes (the manifest is corrupt or hostile): more rows than a
    row address can hold, rows without data files, column indices past the file's columns."""
    if pb.physical_rows > MAX_FRAGMENT_ROWS:
        raise CorruptFileError(
            f"fragment {pb.id} records {pb.physical_rows} physical rows, more than a fragment "
            f"can address ({MAX_FRAGMENT_ROWS})"
        )
    if not len(pb.files):
        raise CorruptFileError(f"fragment {pb.id} has no data files")
    for f in pb.files:
        # a file has at most one column per field (2.1+ structs have none: index -1)
        if any(c < -1 or c >= len(f.fields) for c in f.column_indices):
            raise CorruptFileError(
                f"fragment {pb.id} data file {f.path!r}: column indices {list(f.column_indices)} "
                f"outside the file's {len(f.fields)} fields"
            )


def _fragment(pb: Any, stats_trusted: bool = True) -> Fragment:
    _check_counts(pb)
    deletion = None
    if pb.HasField("deletion_file"):
        d = pb.deletion_file
        deletion = DeletionFile(
            file_type=int(d.file_type),
            read_version=d.read_version,
            id=d.id,
            # proto3: 0 is "unknown" for old writers; the file itself is then authoritative.
            # So is a count the manifest cannot vouch for (no writer version) or that exceeds
            # the fragment's rows.
            num_deleted_rows=(d.num_deleted_rows or None) if stats_trusted and (
                not pb.physical_rows or d.num_deleted_rows <= pb.physical_rows) else None,
            base_id=_opt(d, "base_id"),
        )
    which = pb.WhichOneof("row_id_sequence")
    row_ids: bytes | ExternalFile | None = None
    if which == "inline_row_ids":
        row_ids = bytes(pb.inline_row_ids)
    elif which == "external_row_ids":
        e = pb.external_row_ids
        row_ids = ExternalFile(e.path, e.offset, e.size)
    return Fragment(
        id=pb.id,
        files=tuple(_data_file(f) for f in pb.files),
        deletion_file=deletion,
        # 0 = unknown (writers before 0.8 never set it; manifests without a writer version may
        # hold wrong values, lance issue 1531): the data file's footer is then authoritative.
        physical_rows=pb.physical_rows if stats_trusted else 0,
        row_ids=row_ids,
    )


def _fragment_of(path: str, pb: Any, stats_trusted: bool = True) -> Fragment:
    """:func:`_fragment`, its errors naming the manifest file ``path``."""
    try:
        return _fragment(pb, stats_trusted)
    except CorruptFileError as exc:
        if exc.path is None:
            raise CorruptFileError(str(exc), path=path) from None
        raise


def manifest_from_pb(pb: Any, file_size: int = 0, scanned: ScannedManifest | None = None,
                     path: str | None = None, file_bytes: bytes | memoryview | None = None) -> Manifest:
    """Convert a decoded ``lance.table.Manifest`` message (with ``scanned``: the message
    without its fragments, which ``scanned`` holds; ``path``: the manifest file, named by the
    errors of fragments converted later)."""
    has = pb.HasField
    convert = _fragment if path is None else functools.partial(_fragment_of, path)
    txn = pb.transaction_section if has("transaction_section") else (
        pb.transaction_section_deprecated if has("transaction_section_deprecated") else None)
    ts = pb.timestamp
    writer = pb.writer_version
    data_format = pb.data_format
    metadata = pb.schema_metadata
    bases = pb.base_paths
    return Manifest(
        version=pb.version,
        fields=tuple(pb.fields),
        schema_metadata={k: bytes(v) for k, v in metadata.items()} if len(metadata) else {},
        # converted on first access (opening a dataset of many fragments builds none)
        fragments=FragmentList(pb.fragments, has("writer_version"), convert) if scanned is None
        else FragmentList(scanned.fragments, has("writer_version"), convert, scanned.arrays),
        timestamp_ns=ts.seconds * 1_000_000_000 + ts.nanos,
        tag=pb.tag,
        reader_feature_flags=pb.reader_feature_flags,
        writer_feature_flags=pb.writer_feature_flags,
        max_fragment_id=pb.max_fragment_id if has("max_fragment_id") else None,
        transaction_file=pb.transaction_file,
        transaction_section=txn,
        index_section=pb.index_section if has("index_section") else None,
        writer_library=writer.library,
        writer_version=writer.version,
        next_row_id=pb.next_row_id,
        data_storage_format=data_format.file_format or "lance",
        data_storage_version=data_format.version or "0.1",
        config=dict(pb.config),
        table_metadata=dict(pb.table_metadata),
        base_paths=tuple(
            BasePath(b.id, b.name if b.HasField("name") else None, b.is_dataset_root, b.path) for b in bases
        ) if len(bases) else (),
        branch=pb.branch if has("branch") else None,
        file_size=file_size,
        schema_key=None if scanned is None else scanned.schema,
        file_bytes=file_bytes,
    )


def manifest_position(tail: bytes | memoryview, file_size: int, path: str) -> int:
    """Absolute position of the manifest's length prefix, from the file's last bytes.

    ``tail`` must be the last ``len(tail)`` bytes of a file of ``file_size`` bytes.
    """
    if file_size < FOOTER_LEN + 4 or len(tail) < FOOTER_LEN:
        raise CorruptFileError(f"manifest file is too small ({file_size} bytes)", path=path)
    if bytes(tail[-4:]) != MAGIC:
        raise CorruptFileError("manifest magic 'LANC' not found at the end of the file", path=path)
    (pos,) = struct.unpack_from("<q", tail, len(tail) - FOOTER_LEN)
    if pos < 0 or pos > file_size - FOOTER_LEN - 4:
        raise CorruptFileError(
            f"manifest position {pos} is outside the file ({file_size} bytes)", path=path
        )
    return pos


def decode_manifest(section: bytes | memoryview, file_size: int, path: str,
                    file_bytes: bytes | memoryview | None = None) -> Manifest:
    """Decode a manifest from ``section`` = the file's bytes from the manifest position to EOF
    (length prefix, protobuf, 16-byte footer); ``file_bytes``: the whole file when known (kept
    on the manifest, see :attr:`Manifest.file_bytes`)."""
    section = memoryview(section)
    if len(section) < 4 + FOOTER_LEN:
        raise CorruptFileError("manifest section is truncated", path=path)
    (recorded,) = struct.unpack_from("<I", section, 0)
    actual = len(section) - 4 - FOOTER_LEN
    if recorded != actual:
        raise CorruptFileError(
            f"manifest length prefix says {recorded} bytes but {actual} bytes precede the footer",
            path=path,
        )
    view = section[4 : 4 + actual]
    # fragments decode from these bytes later: they must not change
    body: bytes | memoryview = view if view.readonly else view.tobytes()
    # the fragments as arrays from the bytes when the kernels vouch for them (None: protobuf
    # decodes everything, or raises)
    scanned = scan_manifest(body)
    pb = table_pb2.Manifest()
    try:
        pb.ParseFromString(body if scanned is None else scanned.rest)
    except (DecodeError, ValueError) as exc:
        raise CorruptFileError(f"manifest protobuf does not decode: {exc}", path=path) from None
    try:
        return manifest_from_pb(pb, file_size, scanned, path, file_bytes)
    except CorruptFileError as exc:
        if exc.path is None:
            raise CorruptFileError(str(exc), path=path) from None
        raise


def decode_manifest_file(data: bytes | memoryview, path: str) -> Manifest:
    """Decode a whole manifest file held in memory."""
    pos = manifest_position(data, len(data), path)
    return decode_manifest(memoryview(data)[pos:], len(data), path, data)


def _section(data: bytes | memoryview, pos: int, path: str, what: str) -> bytes:
    data = memoryview(data)
    if pos < 0 or pos + 4 > len(data):
        raise CorruptFileError(f"{what} position {pos} is outside the file", path=path)
    (length,) = struct.unpack_from("<I", data, pos)
    if pos + 4 + length > len(data):
        raise CorruptFileError(f"{what} at {pos} runs past the end of the file", path=path)
    return data[pos + 4 : pos + 4 + length].tobytes()


def decode_inline_transaction(data: bytes | memoryview, manifest: Manifest, path: str) -> Any | None:
    """The inline ``lance.Transaction`` of a manifest file held in memory, or None."""
    if manifest.transaction_section is None:
        return None
    raw = _section(data, manifest.transaction_section, path, "inline transaction")
    msg = transaction_pb2.Transaction()
    try:
        msg.ParseFromString(raw)
    except (DecodeError, ValueError) as exc:
        raise CorruptFileError(f"inline transaction does not decode: {exc}", path=path) from None
    return msg


def decode_index_section(data: bytes | memoryview, manifest: Manifest, path: str) -> Any | None:
    """The ``IndexSection`` of a manifest file held in memory, or None."""
    if manifest.index_section is None:
        return None
    raw = _section(data, manifest.index_section, path, "index section")
    msg = table_pb2.IndexSection()
    try:
        msg.ParseFromString(raw)
    except (DecodeError, ValueError) as exc:
        raise CorruptFileError(f"index section does not decode: {exc}", path=path) from None
    return msg
