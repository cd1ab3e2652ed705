"""Encoding row-id sequences (``RowIdSequence``) and row version sequences the way the reference does.

A fragment's row ids (one u64 per physical row, in row order) are stored as segments.  The writer
turns one array into ONE segment, chosen like the reference (``U64Segment::from_iter``):

* empty -> ``Range(0, 0)``; sorted and contiguous -> ``Range(min, max + 1)`` (end exclusive);
* sorted with holes -> the smallest of (ties resolved in this order)
  ``RangeWithHoles`` (24 + 4 * holes bytes), ``RangeWithBitmap`` (24 + ceil(span / 8) bytes),
  ``SortedArray`` (24 + 2 * n bytes);
* unsorted -> ``Array``.

Arrays (``EncodedU64Array``) use the narrowest form: u16 offsets from the minimum when
``max - min <= 65535``, u32 offsets when ``<= 2**32 - 1``, raw u64 otherwise.  Bitmaps are
least-significant-bit first (bit i = byte i // 8, bit i % 8), 1 = present.

``RowDatasetVersionSequence`` (created-at / last-updated-at versions per row) is written as runs
of equal versions, each spanning a ``Range`` of row offsets ``[start, end)``.
"""

from __future__ import annotations

import numpy as np

from lancejit.core.errors import InvalidInputError
from lancejit.pb import rowids_pb2

_U16_MAX = (1 << 16) - 1
_U32_MAX = (1 << 32) - 1


def encode_u64_array(values: np.ndarray) -> rowids_pb2.EncodedU64Array:
    """The narrowest ``EncodedU64Array`` holding ``values`` (uint64, in the given order)."""
    v = np.asarray(values, dtype=np.uint64)
    out = rowids_pb2.EncodedU64Array()
    if len(v) == 0:
        out.u64_array.values = b""
        return out
    lo, hi = int(v.min()), int(v.max())
    span = hi - lo
    if span <= _U16_MAX:
        out.u16_array.base = lo
        out.u16_array.offsets = (v - np.uint64(lo)).astype("<u2").tobytes()
    elif span <= _U32_MAX:
        out.u32_array.base = lo
        out.u32_array.offsets = (v - np.uint64(lo)).astype("<u4").tobytes()
    else:
        out.u64_array.values = v.astype("<u8").tobytes()
    return out


def _is_sorted(v: np.ndarray) -> bool:
    return bool(len(v) < 2 or np.all(v[1:] >= v[:-1]))


def encode_segment(values: np.ndarray) -> rowids_pb2.U64Segment:
    """One ``U64Segment`` for ``values`` (distinct uint64 ids, in row order)."""
    v = np.asarray(values, dtype=np.uint64)
    seg = rowids_pb2.U64Segment()
    n = len(v)
    if n == 0:
        seg.range.SetInParent()
        return seg
    if not _is_sorted(v):
        seg.array.CopyFrom(encode_u64_array(v))
        return seg
    lo, hi = int(v[0]), int(v[-1])
    slots = hi - lo + 1
    n_holes = slots - n
    if n_holes == 0:
        seg.range.start = lo
        seg.range.end = hi + 1
        return seg
    size_holes = 24 + 4 * n_holes
    size_bitmap = 24 + -(-slots // 8)
    size_sorted = 24 + 2 * n
    best = min(size_holes, size_bitmap, size_sorted)
    present = np.zeros(slots, dtype=bool)
    present[(v - np.uint64(lo)).astype(np.int64)] = True
    if best == size_holes:
        holes = np.flatnonzero(~present).astype(np.uint64) + np.uint64(lo)
        r = seg.range_with_holes
        r.start, r.end = lo, hi + 1
        r.holes.CopyFrom(encode_u64_array(holes))
    elif best == size_bitmap:
        r = seg.range_with_bitmap
        r.start, r.end = lo, hi + 1
        r.bitmap = np.packbits(present, bitorder="little").tobytes()
    else:
        seg.sorted_array.CopyFrom(encode_u64_array(v))
    return seg


def encode_row_id_sequence(row_ids: np.ndarray) -> bytes:
    """Serialized ``RowIdSequence`` (one segment) for a fragment's row ids in row order."""
    v = np.asarray(row_ids)
    if v.dtype.kind not in "ui" or (v.dtype.kind == "i" and len(v) and int(v.min()) < 0):
        raise InvalidInputError("row ids must be non-negative integers")
    if len(np.unique(v)) != len(v):
        raise InvalidInputError("row ids of a fragment must be distinct")
    msg = rowids_pb2.RowIdSequence()
    msg.segments.append(encode_segment(v.astype(np.uint64)))
    return msg.SerializeToString()


def encode_row_id_range(start: int, end: int) -> bytes:
    """Serialized ``RowIdSequence`` of the contiguous ids ``[start, end)``."""
    if not 0 <= start <= end:
        raise InvalidInputError(f"invalid row id range [{start}, {end})")
    msg = rowids_pb2.RowIdSequence()
    seg = msg.segments.add()
    seg.range.start = start
    seg.range.end = end
    if start == end == 0:
        seg.range.SetInParent()
    return msg.SerializeToString()


def encode_version_runs(versions: np.ndarray) -> bytes:
    """Serialized ``RowDatasetVersionSequence``: runs of equal ``versions`` (one per physical row)."""
    v = np.asarray(versions, dtype=np.uint64)
    msg = rowids_pb2.RowDatasetVersionSequence()
    if len(v) == 0:
        return msg.SerializeToString()
    cuts = np.flatnonzero(v[1:] != v[:-1]) + 1
    starts = np.concatenate([[0], cuts])
    ends = np.concatenate([cuts, [len(v)]])
    for s, e in zip(starts.tolist(), ends.tolist()):
        run = msg.runs.add()
        run.span.range.start = s
        run.span.range.end = e
        if s == 0:
            run.span.range.SetInParent()
        run.version = int(v[s])
    return msg.SerializeToString()


def uniform_versions(num_rows: int, version: int) -> bytes:
    """Serialized ``RowDatasetVersionSequence`` giving all ``num_rows`` rows ``version``."""
    return encode_version_runs(np.full(num_rows, version, dtype=np.uint64))


def decode_version_runs(data: bytes, num_rows: int) -> np.ndarray:
    """Versions (uint64, one per physical row) of a serialized ``RowDatasetVersionSequence``;
    rows no run covers get 0."""
    from lancejit.table.meta.rowids import decode_segment

    msg = rowids_pb2.RowDatasetVersionSequence()
    msg.ParseFromString(bytes(data))
    out = np.zeros(num_rows, dtype=np.uint64)
    for run in msg.runs:
        offs = decode_segment(run.span, "<version sequence>").astype(np.int64)
        offs = offs[offs < num_rows]
        out[offs] = run.version
    return out


__all__ = [
    "decode_version_runs",
    "encode_row_id_range",
    "encode_row_id_sequence",
    "encode_segment",
    "encode_u64_array",
    "encode_version_runs",
    "uniform_versions",
]
