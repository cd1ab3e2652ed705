"""Test helper: parse a v2 Lance file's footer and column metadata with the pb modules.

Used to check which encodings a file's pages use (the writer's own tests and file-size studies).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from google.protobuf import any_pb2

from lancejit.pb import encodings_v2_0_pb2, encodings_v2_1_pb2, file2_pb2, file_pb2


@dataclass
class ParsedFile:
    data: bytes
    major: int
    minor: int
    columns: list  # file2_pb2.ColumnMetadata
    gbo: list  # (position, size)
    descriptor: file_pb2.FileDescriptor

    def page_layouts(self, col: int) -> list:
        """Decoded page messages (PageLayout for 2.1+, ArrayEncoding for 2.0) of one column."""
        out = []
        for page in self.columns[col].pages:
            any_msg = any_pb2.Any()
            any_msg.ParseFromString(page.encoding.direct.encoding)
            if any_msg.type_url.endswith("PageLayout"):
                msg = encodings_v2_1_pb2.PageLayout()
            else:
                msg = encodings_v2_0_pb2.ArrayEncoding()
            msg.ParseFromString(any_msg.value)
            out.append(msg)
        return out

    def page_buffers(self, col: int, page: int) -> list[bytes]:
        p = self.columns[col].pages[page]
        return [self.data[o : o + s] for o, s in zip(p.buffer_offsets, p.buffer_sizes)]


def parse_file(path: str) -> ParsedFile:
    with open(path, "rb") as f:
        data = f.read()
    cm0, cmo, gbo, n_gb, n_col, major, minor, magic = struct.unpack("<QQQIIHH4s", data[-40:])
    assert magic == b"LANC"
    cols = []
    for i in range(n_col):
        pos, size = struct.unpack_from("<QQ", data, cmo + 16 * i)
        cm = file2_pb2.ColumnMetadata()
        cm.ParseFromString(data[pos : pos + size])
        cols.append(cm)
    gbs = [struct.unpack_from("<QQ", data, gbo + 16 * i) for i in range(n_gb)]
    fd = file_pb2.FileDescriptor()
    fd.ParseFromString(data[gbs[0][0] : gbs[0][0] + gbs[0][1]])
    return ParsedFile(data, major, minor, cols, gbs, fd)


def compression_kinds(enc) -> list[str]:
    """Names of the CompressiveEncoding oneof cases, outermost first (e.g. ['general', 'variable'])."""
    out = []
    while enc is not None and enc.WhichOneof("compression"):
        kind = enc.WhichOneof("compression")
        out.append(kind)
        inner = getattr(enc, kind)
        nxt = None
        for name in ("values",):
            if hasattr(inner, name) and inner.DESCRIPTOR.fields_by_name[name].message_type is not None:
                if inner.DESCRIPTOR.fields_by_name[name].message_type.name == "CompressiveEncoding":
                    nxt = getattr(inner, name)
        enc = nxt
    return out
