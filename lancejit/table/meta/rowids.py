"""Row ids and row addresses.

* Row address: ``(fragment_id << 32) | local_offset`` (u64).
* Stable row ids (feature flag 2): each fragment stores a ``RowIdSequence`` -- the row id of
  each physical row, in row order -- as segments (ranges, ranges with holes or with a
  presence bitmap, sorted or unsorted arrays).  Deleted rows keep their slot in the sequence;
  deletion files mask them.
* :class:`RowIdIndex` maps row ids to addresses for one dataset version.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from google.protobuf.message import DecodeError

from lancejit.core.bounds import claim
from lancejit.core.errors import CorruptFileError
from lancejit.pb import rowids_pb2

#: Largest number of ids one segment may expand to (fragments hold fewer than 2**32 rows).
_MAX_SEGMENT_LEN = 1 << 32


def row_addresses(fragment_id: int, offsets: np.ndarray) -> np.ndarray:
    """Row addresses (uint64) of local ``offsets`` in fragment ``fragment_id``."""
    return (np.uint64(fragment_id) << np.uint64(32)) | offsets.astype(np.uint64, copy=False)


def split_addresses(addresses: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(fragment_ids, local_offsets)`` (both int64) of uint64 row addresses."""
    a = np.asarray(addresses, dtype=np.uint64)
    return (a >> np.uint64(32)).astype(np.int64), (a & np.uint64(0xFFFFFFFF)).astype(np.int64)


def _le_array(raw: bytes, dtype: str, what: str, path: str) -> np.ndarray:
    width = np.dtype(dtype).itemsize
    if len(raw) % width:
        raise CorruptFileError(f"{what}: {len(raw)} bytes is not a multiple of {width}", path=path)
    return np.frombuffer(raw, dtype=dtype).astype(np.uint64)


def decode_encoded_array(msg: rowids_pb2.EncodedU64Array, path: str) -> np.ndarray:
    """Values (uint64) of an ``EncodedU64Array``: ``base + offsets`` or raw u64 values."""
    which = msg.WhichOneof("array")
    if which == "u16_array":
        return np.uint64(msg.u16_array.base) + _le_array(msg.u16_array.offsets, "<u2", "u16 array", path)
    if which == "u32_array":
        return np.uint64(msg.u32_array.base) + _le_array(msg.u32_array.offsets, "<u4", "u32 array", path)
    if which == "u64_array":
        return _le_array(msg.u64_array.values, "<u8", "u64 array", path)
    raise CorruptFileError("row id array has no representation", path=path)


def _range_len(start: int, end: int, limit: int, path: str) -> int:
    """Ids in ``[start, end)``, checked against ``limit`` before anything is expanded."""
    if end < start:
        raise CorruptFileError(f"invalid row id range [{start}, {end})", path=path)
    return claim(end - start, limit, f"row ids of the range [{start}, {end})", path)


def _encoded_len(msg: rowids_pb2.EncodedU64Array) -> int:
    """Values an ``EncodedU64Array`` holds (from its byte length, nothing decoded)."""
    which = msg.WhichOneof("array")
    if which == "u16_array":
        return len(msg.u16_array.offsets) // 2
    if which == "u32_array":
        return len(msg.u32_array.offsets) // 4
    if which == "u64_array":
        return len(msg.u64_array.values) // 8
    return 0


def decode_segment(seg: rowids_pb2.U64Segment, path: str, limit: int = _MAX_SEGMENT_LEN) -> np.ndarray:
    """Row ids (uint64) of one segment; a segment that would expand to more than ``limit``
    ids is refused before it is expanded."""
    which = seg.WhichOneof("segment")
    if which == "range":
        n = _range_len(seg.range.start, seg.range.end, limit, path)
        return np.arange(seg.range.start, seg.range.start + n, dtype=np.uint64)
    if which == "range_with_holes":
        r = seg.range_with_holes
        n = _range_len(r.start, r.end, limit + _encoded_len(r.holes), path)
        ids = np.arange(r.start, r.start + n, dtype=np.uint64)
        holes = decode_encoded_array(r.holes, path)
        return ids[~np.isin(ids, holes, assume_unique=False)]
    if which == "range_with_bitmap":
        r = seg.range_with_bitmap
        bits = np.frombuffer(r.bitmap, dtype=np.uint8)
        if r.end < r.start or r.end - r.start > len(bits) * 8:
            raise CorruptFileError(
                f"row id bitmap has {len(bits) * 8} bits for the range [{r.start}, {r.end})", path=path
            )
        present = np.flatnonzero(np.unpackbits(bits, bitorder="little")[: r.end - r.start])
        claim(len(present), limit, "row ids of a range with a bitmap", path)
        return np.uint64(r.start) + present.astype(np.uint64)
    if which in ("sorted_array", "array"):
        return decode_encoded_array(getattr(seg, which), path)
    raise CorruptFileError("row id segment has no representation", path=path)


def decode_row_id_sequence(data: bytes | memoryview, path: str, physical_rows: int | None = None) -> np.ndarray:
    """The row ids (uint64, one per physical row, in row order) of a serialized
    ``RowIdSequence``; with ``physical_rows``, segments claiming more ids than the fragment's
    rows are refused before they are expanded."""
    msg = rowids_pb2.RowIdSequence()
    try:
        msg.ParseFromString(bytes(data))
    except (DecodeError, ValueError) as exc:
        raise CorruptFileError(f"row id sequence does not decode: {exc}", path=path) from None
    remaining = _MAX_SEGMENT_LEN if physical_rows is None else int(physical_rows)
    parts = []
    for s in msg.segments:
        part = decode_segment(s, path, remaining)
        remaining -= len(part)
        if remaining < 0:
            raise CorruptFileError(f"row id sequence holds more ids than the fragment's {physical_rows} rows",
                                   path=path)
        parts.append(part)
    if not parts:
        return np.empty(0, dtype=np.uint64)
    return np.concatenate(parts)


@dataclass(frozen=True, slots=True)
class RowIdIndex:
    """Sorted row ids of the live rows of one version and their addresses (both uint64)."""

    ids: np.ndarray
    addresses: np.ndarray

    @classmethod
    def build(cls, per_fragment: list[tuple[int, np.ndarray, np.ndarray]]) -> "RowIdIndex":
        """From ``(fragment_id, row_ids_of_live_rows, live_local_offsets)`` per fragment."""
        if not per_fragment:
            empty = np.empty(0, dtype=np.uint64)
            return cls(empty, empty)
        ids = np.concatenate([ids for _, ids, _ in per_fragment])
        addrs = np.concatenate([row_addresses(fid, offs) for fid, _, offs in per_fragment])
        order = np.argsort(ids, kind="stable")
        return cls(ids[order], addrs[order])

    def lookup(self, row_ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(addresses, found)`` for ``row_ids``: found[i] is False for unknown/deleted ids."""
        q = np.asarray(row_ids, dtype=np.uint64)
        if len(self.ids) == 0:
            return np.zeros(len(q), dtype=np.uint64), np.zeros(len(q), dtype=bool)
        pos = np.searchsorted(self.ids, q)
        pos_c = np.minimum(pos, len(self.ids) - 1)
        found = self.ids[pos_c] == q
        return np.where(found, self.addresses[pos_c], np.uint64(0)), found
