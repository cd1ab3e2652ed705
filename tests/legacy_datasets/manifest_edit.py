"""Edit manifests written by the reference, to make the old-style and hostile datasets of the
issue-14 corpus (cleared statistics, duplicate ids, old deletion formats, traversal paths).

Only the manifest protobuf is replaced; the sections before it (index section, inline
transaction) keep their absolute positions, so the 16-byte footer is reused unchanged.
"""

from __future__ import annotations

import os
import shutil
import struct
from typing import Callable

import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc
from pyroaring import BitMap

from lancejit.pb import table_pb2


def manifest_paths(ds_path: str) -> list[str]:
    """Manifest files of a local dataset, oldest version first (V1 or V2 names)."""
    vdir = os.path.join(ds_path, "_versions")
    out = []
    for name in os.listdir(vdir):
        if name.endswith(".manifest") and not name.startswith("d"):
            stem = int(name[: -len(".manifest")])
            version = stem if len(name) < 29 else (1 << 64) - 1 - stem
            out.append((version, os.path.join(vdir, name)))
    return [p for _, p in sorted(out)]


def read_pb(path: str) -> table_pb2.Manifest:
    data = open(path, "rb").read()
    (pos,) = struct.unpack_from("<q", data, len(data) - 16)
    (n,) = struct.unpack_from("<I", data, pos)
    pb = table_pb2.Manifest()
    pb.ParseFromString(data[pos + 4 : pos + 4 + n])
    return pb


def edit_bytes(data: bytes, fn: Callable[[table_pb2.Manifest], None]) -> bytes:
    """A manifest file's bytes with ``fn`` applied to its manifest protobuf."""
    (pos,) = struct.unpack_from("<q", data, len(data) - 16)
    (n,) = struct.unpack_from("<I", data, pos)
    pb = table_pb2.Manifest()
    pb.ParseFromString(data[pos + 4 : pos + 4 + n])
    fn(pb)
    body = pb.SerializeToString()
    return data[:pos] + struct.pack("<I", len(body)) + body + data[-16:]


def edit(path: str, fn: Callable[[table_pb2.Manifest], None]) -> None:
    """Apply ``fn`` to the manifest protobuf of the manifest file ``path`` and rewrite it."""
    data = edit_bytes(open(path, "rb").read(), fn)
    with open(path, "wb") as f:
        f.write(data)


def edit_all(ds_path: str, fn: Callable[[table_pb2.Manifest], None]) -> None:
    """Apply ``fn`` to every version's manifest."""
    for p in manifest_paths(ds_path):
        edit(p, fn)


def edit_latest(ds_path: str, fn: Callable[[table_pb2.Manifest], None]) -> None:
    edit(manifest_paths(ds_path)[-1], fn)


def copy_dataset(src: str, dst: str) -> str:
    shutil.rmtree(dst, ignore_errors=True)
    shutil.copytree(src, dst)
    return dst


def deleted_offsets(ds_path: str, frag: table_pb2.DataFragment) -> np.ndarray:
    """The deleted offsets a fragment's deletion file holds (either format)."""
    d = frag.deletion_file
    suffix = "arrow" if d.file_type == 0 else "bin"
    p = os.path.join(ds_path, "_deletions", f"{frag.id}-{d.read_version}-{d.id}.{suffix}")
    raw = open(p, "rb").read()
    if d.file_type == 0:
        t = ipc.open_file(pa.py_buffer(raw)).read_all()
        return np.sort(t.column(0).to_numpy())
    return np.array(list(BitMap.deserialize(raw)), dtype=np.uint32)


def rewrite_deletions(ds_path: str, frag: table_pb2.DataFragment, file_type: int, *,
                      compression: str | None = None, new_id: int | None = None) -> None:
    """Re-write ``frag``'s deletion file in ``file_type`` (0 Arrow IPC, 1 roaring) under a new
    id, as old writers did (Arrow files uncompressed or LZ4/ZSTD), and point ``frag`` at it."""
    offs = deleted_offsets(ds_path, frag)
    d = frag.deletion_file
    d.file_type = file_type
    d.id = new_id if new_id is not None else d.id + 1
    suffix = "arrow" if file_type == 0 else "bin"
    p = os.path.join(ds_path, "_deletions", f"{frag.id}-{d.read_version}-{d.id}.{suffix}")
    if file_type == 0:
        schema = pa.schema([pa.field("row_id", pa.uint32(), nullable=False)])
        batch = pa.record_batch([pa.array(offs, pa.uint32())], schema=schema)
        opts = ipc.IpcWriteOptions(compression=compression)
        sink = pa.BufferOutputStream()
        with ipc.new_file(sink, schema, options=opts) as w:
            w.write_batch(batch)
        data = sink.getvalue().to_pybytes()
    else:
        data = BitMap(offs.tolist()).serialize()
    with open(p, "wb") as f:
        f.write(data)


def add_index_section(path: str, index_section_bytes: bytes,
                      fn: Callable[[table_pb2.Manifest], None] | None = None) -> None:
    """Insert an ``IndexSection`` (serialized) before the manifest of ``path`` and point the
    manifest's ``index_section`` at it (the inline transaction keeps its position)."""
    data = open(path, "rb").read()
    (pos,) = struct.unpack_from("<q", data, len(data) - 16)
    pb = read_pb(path)
    pb.index_section = pos
    if fn is not None:
        fn(pb)
    body = pb.SerializeToString()
    section = struct.pack("<I", len(index_section_bytes)) + index_section_bytes
    new_pos = pos + len(section)
    footer = struct.pack("<q", new_pos) + data[-8:]
    with open(path, "wb") as f:
        f.write(data[:pos] + section + struct.pack("<I", len(body)) + body + footer)
