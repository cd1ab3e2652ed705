"""Test helpers: pull the raw protobuf messages out of Lance files and manifests.

Independent of lancejit's own file reader (which other engineers build), so the protobuf
modules and the schema converter can be checked against pylance-written bytes directly.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path

from google.protobuf import any_pb2, message, unknown_fields

from lancejit.pb import (
    encodings_v2_0_pb2,
    encodings_v2_1_pb2,
    file2_pb2,
    file_pb2,
    table_pb2,
    transaction_pb2,
)

ANY_TYPES = {
    "/lance.encodings.ColumnEncoding": encodings_v2_0_pb2.ColumnEncoding,
    "/lance.encodings.ArrayEncoding": encodings_v2_0_pb2.ArrayEncoding,
    "/lance.encodings21.PageLayout": encodings_v2_1_pb2.PageLayout,
}


def unknown_field_paths(msg: message.Message, where: str = "") -> list[str]:
    """Dotted paths of every unknown field in ``msg`` and its sub-messages (recursive)."""
    found = [f"{where}#{u.field_number}" for u in unknown_fields.UnknownFieldSet(msg)]
    for fd, value in msg.ListFields():
        name = f"{where}.{fd.name}" if where else fd.name
        if fd.message_type is None:
            continue
        if fd.message_type.GetOptions().map_entry:
            value_fd = fd.message_type.fields_by_name["value"]
            if value_fd.message_type is not None:
                for k, v in value.items():
                    found += unknown_field_paths(v, f"{name}[{k}]")
        elif fd.is_repeated:
            for i, item in enumerate(value):
                found += unknown_field_paths(item, f"{name}[{i}]")
        else:
            found += unknown_field_paths(value, name)
    return found


def parse_exact(cls, data: bytes, what: str = ""):
    """Parse ``data`` as ``cls`` and assert every field on the wire is known to our protos."""
    msg = cls()
    msg.ParseFromString(bytes(data))
    unknown = unknown_field_paths(msg)
    assert not unknown, f"{what or cls.__name__}: unknown fields {unknown}"
    return msg


def unwrap_any(data: bytes, what: str = ""):
    """Parse a serialized ``google.protobuf.Any`` holding one of the Lance encodings."""
    wrapper = parse_exact(any_pb2.Any, data, what)
    cls = ANY_TYPES[wrapper.type_url]
    return wrapper.type_url, parse_exact(cls, wrapper.value, f"{what} {wrapper.type_url}")


@dataclass
class RawFile:
    """One v2 Lance file taken apart (positions in bytes from the file start)."""

    data: bytes
    major: int
    minor: int
    num_columns: int
    global_buffers: list[tuple[int, int]]
    descriptor: file_pb2.FileDescriptor
    columns: list[file2_pb2.ColumnMetadata]
    column_encodings: list[object]
    page_encodings: list[list[tuple[str, object]]]


def read_raw_file(path: str | Path) -> RawFile:
    data = Path(path).read_bytes()
    assert data[-4:] == b"LANC"
    cm_start, cmo, gbo, n_gb, n_col, major, minor = struct.unpack_from("<QQQIIHH", data, len(data) - 40)
    gbs = [struct.unpack_from("<QQ", data, gbo + 16 * i) for i in range(n_gb)]
    pos, size = gbs[0]
    descriptor = parse_exact(file_pb2.FileDescriptor, data[pos : pos + size], "FileDescriptor")
    columns, col_enc, page_enc = [], [], []
    for c in range(n_col):
        pos, size = struct.unpack_from("<QQ", data, cmo + 16 * c)
        assert pos >= cm_start
        cm = parse_exact(file2_pb2.ColumnMetadata, data[pos : pos + size], f"column {c}")
        columns.append(cm)
        url, enc = unwrap_any(cm.encoding.direct.encoding, f"column {c}")
        assert url == "/lance.encodings.ColumnEncoding"
        col_enc.append(enc)
        page_enc.append([unwrap_any(p.encoding.direct.encoding, f"column {c} page {i}")
                         for i, p in enumerate(cm.pages)])
    return RawFile(data, major, minor, n_col, gbs, descriptor, columns, col_enc, page_enc)


def read_manifest(path: str | Path):
    """(Manifest, IndexSection | None, inline Transaction | None, raw bytes) of a manifest file."""
    data = Path(path).read_bytes()
    assert data[-4:] == b"LANC"
    pos = struct.unpack_from("<q", data, len(data) - 16)[0]

    def section(at: int) -> bytes:
        length = struct.unpack_from("<I", data, at)[0]
        return data[at + 4 : at + 4 + length]

    body = section(pos)
    assert pos + 4 + len(body) == len(data) - 16
    manifest = parse_exact(table_pb2.Manifest, body, f"manifest {path}")
    index = None
    if manifest.HasField("index_section"):
        index = parse_exact(table_pb2.IndexSection, section(manifest.index_section), "IndexSection")
    txn = None
    if manifest.HasField("transaction_section"):
        txn = parse_exact(transaction_pb2.Transaction, section(manifest.transaction_section),
                          "inline transaction")
    return manifest, index, txn, data


def latest_manifest_path(uri: str | Path) -> Path:
    """The newest version's manifest (V2 naming: smallest name = newest version)."""
    paths = sorted(Path(uri, "_versions").glob("*.manifest"))
    assert paths
    return paths[0]
