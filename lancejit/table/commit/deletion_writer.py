"""Writing deletion files: the cumulative set of deleted row offsets of one fragment.

* up to :data:`BITMAP_THRESHOLD` (5 000) offsets: an Arrow IPC file (ZSTD-compressed buffers, one
  batch, one non-null ``uint32`` column ``row_id``) -> ``.arrow``, type ``ARROW_ARRAY``;
* more (or when the fragment's previous file already was a bitmap): a portable 32-bit Roaring
  bitmap -> ``.bin``, type ``BITMAP``.

Names follow the reference: ``_deletions/{fragment_id}-{read_version}-{random u64}.{arrow|bin}``.
A new file always holds the whole set (previous deletions included) and replaces the old one.
"""

from __future__ import annotations

import array
import secrets

import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc
from pyroaring import BitMap

from lancejit.core.errors import InvalidInputError
from lancejit.io.store import ObjectStore, join_path
from lancejit.pb import table_pb2

from ..meta.deletion import decode_deletion_file
from ..meta.manifest import DeletionFile as _ReadDeletionFile

BITMAP_THRESHOLD = 5_000
DELETIONS_DIR = "_deletions"
ARROW_ARRAY = table_pb2.DeletionFile.ARROW_ARRAY
BITMAP = table_pb2.DeletionFile.BITMAP

_SCHEMA = pa.schema([pa.field("row_id", pa.uint32(), nullable=False)])
#: One small buffer each: compressed on the calling thread (Arrow's pool would take the hand-off
#: of every file through a busy scheduler).
_WRITE_OPTIONS = ipc.IpcWriteOptions(compression="zstd", use_threads=False)


def deletion_file_path(root: str, fragment_id: int, deletion: table_pb2.DeletionFile) -> str:
    """Store path of a fragment's deletion file."""
    suffix = "arrow" if deletion.file_type == ARROW_ARRAY else "bin"
    return join_path(root, DELETIONS_DIR, f"{fragment_id}-{deletion.read_version}-{deletion.id}.{suffix}")


def encode_arrow_deletions(offsets: np.ndarray) -> bytes:
    """The bytes of an ``.arrow`` deletion file holding ``offsets`` (uint32)."""
    arr = pa.array(np.asarray(offsets, dtype=np.uint32), pa.uint32())
    batch = pa.record_batch([arr], schema=_SCHEMA)
    sink = pa.BufferOutputStream()
    with ipc.new_file(sink, _SCHEMA, options=_WRITE_OPTIONS) as writer:
        writer.write_batch(batch)
    return sink.getvalue().to_pybytes()


def encode_bitmap_deletions(offsets: np.ndarray) -> bytes:
    """The bytes of a ``.bin`` deletion file (portable Roaring serialization)."""
    values = array.array("I")
    values.frombytes(np.ascontiguousarray(offsets, dtype=np.uint32).tobytes())
    return BitMap(values).serialize()


def sorted_unique(values: np.ndarray) -> np.ndarray:
    """``values`` sorted without duplicates (returned as is when they already are)."""
    v = np.asarray(values)
    if len(v) < 2 or bool((v[1:] > v[:-1]).all()):
        return v
    v = np.sort(v)
    keep = np.empty(len(v), dtype=bool)
    keep[0] = True
    np.not_equal(v[1:], v[:-1], out=keep[1:])
    return v[keep]


def _check_offsets(offsets: np.ndarray, physical_rows: int | None) -> np.ndarray:
    o = sorted_unique(offsets)
    if len(o) and (int(o[0]) < 0 or int(o[-1]) > 0xFFFFFFFF):
        raise InvalidInputError("deleted row offsets must be in [0, 2**32)")
    if physical_rows is not None and len(o) and int(o[-1]) >= physical_rows:
        raise InvalidInputError(
            f"deleted row offset {int(o[-1])} is outside the fragment's {physical_rows} rows"
        )
    return o.astype(np.uint32)


async def write_deletion_file(
    store: ObjectStore,
    root: str,
    fragment_id: int,
    read_version: int,
    offsets: np.ndarray,
    *,
    physical_rows: int | None = None,
    force_bitmap: bool = False,
) -> table_pb2.DeletionFile | None:
    """Write the deletion file for the (cumulative) deleted ``offsets`` of a fragment.

    Returns the ``DeletionFile`` to put in the fragment, or None when ``offsets`` is empty.
    """
    o = _check_offsets(offsets, physical_rows)
    if len(o) == 0:
        return None
    bitmap = force_bitmap or len(o) > BITMAP_THRESHOLD
    deletion = table_pb2.DeletionFile(
        file_type=BITMAP if bitmap else ARROW_ARRAY,
        read_version=read_version,
        id=secrets.randbits(64),
        num_deleted_rows=len(o),
    )
    data = encode_bitmap_deletions(o) if bitmap else encode_arrow_deletions(o)
    await store.put(deletion_file_path(root, fragment_id, deletion), data)
    return deletion


async def read_deleted_offsets(store: ObjectStore, root: str, fragment: table_pb2.DataFragment) -> np.ndarray:
    """The deleted offsets (sorted unique uint32) of ``fragment`` (empty without a deletion file)."""
    if not fragment.HasField("deletion_file"):
        return np.empty(0, dtype=np.uint32)
    d = fragment.deletion_file
    path = deletion_file_path(root, fragment.id, d)
    data = await store.read_all(path)
    info = _ReadDeletionFile(int(d.file_type), d.read_version, d.id, d.num_deleted_rows or None, None)
    return decode_deletion_file(data, info, fragment.physical_rows, store.uri(path))


async def delete_rows(
    store: ObjectStore,
    root: str,
    fragment: table_pb2.DataFragment,
    read_version: int,
    offsets: np.ndarray,
    existing: np.ndarray | None = None,
) -> table_pb2.DataFragment | None:
    """``fragment`` with ``offsets`` (local row offsets) also deleted: a new cumulative deletion file
    is written.  Returns None when every row of the fragment is now deleted (drop the fragment:
    list its id in ``Delete.deleted_fragment_ids``).  ``existing``: the fragment's deleted
    offsets (sorted unique) when the caller holds them (else its deletion file is read)."""
    if existing is None:
        existing = await read_deleted_offsets(store, root, fragment)
    new = _check_offsets(offsets, fragment.physical_rows)
    if len(existing) == 0:
        merged = new
    elif len(new) == 0:
        merged = np.asarray(existing, dtype=np.uint32)
    else:
        merged = sorted_unique(np.concatenate([np.asarray(existing, dtype=np.uint32), new]))
    out = table_pb2.DataFragment()
    out.CopyFrom(fragment)
    if len(merged) == len(existing):
        return out
    if len(merged) >= fragment.physical_rows:
        return None
    was_bitmap = fragment.HasField("deletion_file") and fragment.deletion_file.file_type == BITMAP
    d = await write_deletion_file(
        store, root, fragment.id, read_version, merged, physical_rows=fragment.physical_rows,
        force_bitmap=was_bitmap,
    )
    out.deletion_file.CopyFrom(d)
    return out


__all__ = [
    "BITMAP_THRESHOLD",
    "delete_rows",
    "deletion_file_path",
    "encode_arrow_deletions",
    "encode_bitmap_deletions",
    "read_deleted_offsets",
    "sorted_unique",
    "write_deletion_file",
]
