"""Vectorised half-open row ranges: ``(k, 2)`` int64 NumPy arrays of ``[start, end)`` rows,
sorted and non-overlapping.  Shared by the 2.0 and legacy decoders."""

from __future__ import annotations

from typing import Sequence

import numpy as np

EMPTY = np.zeros((0, 2), dtype=np.int64)


def as_ranges(ranges) -> np.ndarray:
    """A ``(k, 2)`` int64 array from pairs (list of tuples or array)."""
    arr = np.asarray(ranges, dtype=np.int64)
    if arr.size == 0:
        return EMPTY
    return arr.reshape(-1, 2)


def to_pairs(starts: np.ndarray, ends: np.ndarray) -> list[tuple[int, int]]:
    """Byte ranges as the list of tuples ``RangeReader.read_ranges`` takes."""
    return list(zip(starts.tolist(), ends.tolist()))


def total(ranges: np.ndarray) -> int:
    """Rows covered by ``ranges``."""
    return int((ranges[:, 1] - ranges[:, 0]).sum()) if len(ranges) else 0


def indices_to_ranges(indices: np.ndarray) -> np.ndarray:
    """Sorted unique row indices as runs ``[start, end)`` of consecutive rows."""
    idx = np.asarray(indices, dtype=np.int64)
    if len(idx) == 0:
        return EMPTY
    breaks = np.nonzero(np.diff(idx) != 1)[0] + 1
    starts = np.concatenate([idx[:1], idx[breaks]])
    ends = np.concatenate([idx[breaks - 1] + 1, idx[-1:] + 1])
    return np.stack([starts, ends], axis=1)


def merge_touching(ranges: np.ndarray) -> np.ndarray:
    """Drop empty ranges and join ranges where one ends where the next starts."""
    r = ranges[ranges[:, 1] > ranges[:, 0]] if len(ranges) else ranges
    if len(r) <= 1:
        return r
    new_run = np.ones(len(r), dtype=np.bool_)
    new_run[1:] = r[1:, 0] != r[:-1, 1]
    run_id = np.cumsum(new_run) - 1
    starts = r[new_run, 0]
    ends = np.zeros(len(starts), dtype=np.int64)
    np.maximum.at(ends, run_id, r[:, 1])
    return np.stack([starts, ends], axis=1)


def split_by_pages(ranges: np.ndarray, starts: np.ndarray) -> list[tuple[int, np.ndarray]]:
    """Split row ranges at page boundaries; ``starts``: first row of every page plus the total.

    Returns ``(page_index, page_local_ranges)`` for every page touched, in row order.
    """
    if len(ranges) == 0:
        return []
    npages = len(starts) - 1
    s, e = ranges[:, 0], ranges[:, 1]
    p0 = np.searchsorted(starts, s, side="right") - 1
    p1 = np.searchsorted(starts, e - 1, side="right") - 1
    if np.any(p1 != p0):
        # Ranges crossing page boundaries: cut them (rare: at most one per boundary).
        reps = p1 - p0 + 1
        page = np.repeat(p0, reps) + (np.arange(reps.sum()) - np.repeat(np.cumsum(reps) - reps, reps))
        rs = np.maximum(np.repeat(s, reps), starts[page])
        re = np.minimum(np.repeat(e, reps), starts[page + 1])
        keep = re > rs
        page, rs, re = page[keep], rs[keep], re[keep]
    else:
        page, rs, re = p0, s, e
    if len(page) and (page.min() < 0 or page.max() >= npages):
        raise IndexError("row range outside the pages")
    bounds = np.nonzero(np.diff(page))[0] + 1
    cuts = np.concatenate([[0], bounds, [len(page)]])
    out = []
    for a, b in zip(cuts[:-1].tolist(), cuts[1:].tolist()):
        p = int(page[a])
        base = starts[p]
        out.append((p, np.stack([rs[a:b] - base, re[a:b] - base], axis=1)))
    return out


def segment_ends(vals: np.ndarray, seg_len: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per-value differences inside consecutive segments of ``vals``.

    ``vals`` holds segments of ``seg_len[j]`` values back to back (each ``>= 1``).  Returns
    ``(diffs, firsts, lasts)``: the differences between consecutive values within every segment
    (``sum(seg_len) - len(seg_len)`` values, segment order), and each segment's first/last value.
    """
    seg_start = np.zeros(len(seg_len), dtype=np.int64)
    if len(seg_len) > 1:
        np.cumsum(seg_len[:-1], out=seg_start[1:])
    seg_last = seg_start + seg_len - 1
    keep = np.ones(len(vals), dtype=np.bool_)
    keep[seg_start] = False
    diffs = np.diff(vals)[keep[1:]] if len(vals) > 1 else np.zeros(0, vals.dtype)
    return diffs, vals[seg_start], vals[seg_last]


def bits_from_ranges(data: np.ndarray, byte_starts: np.ndarray, bit_offsets: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Gather bits: for each range j, ``counts[j]`` LSB-first bits starting at bit
    ``bit_offsets[j]`` of the bytes that begin at ``byte_starts[j]`` in ``data``."""
    n = int(counts.sum())
    if n == 0:
        return np.zeros(0, dtype=np.bool_)
    bits = np.unpackbits(data, bitorder="little")
    first = byte_starts * 8 + bit_offsets
    if len(counts) == 1:
        a = int(first[0])
        if a + n > len(bits):
            raise IndexError("bit range past the data")
        return bits[a : a + n].view(np.bool_)
    out_start = np.cumsum(counts) - counts
    pos = np.repeat(first - out_start, counts) + np.arange(n)
    if pos.max() >= len(bits):
        raise IndexError("bit range past the data")
    return bits[pos].view(np.bool_)


def pairs_of(ranges: Sequence[tuple[int, int]] | np.ndarray) -> np.ndarray:
    """Alias of :func:`as_ranges` (reads better at call sites taking user pairs)."""
    return as_ranges(ranges)


#: Byte ranges closer than this are read as one range and cut apart locally (bytes).
GATHER_GAP = 4096

#: Fewer ranges than this are requested as they are.
GATHER_MIN = 16


def read_gathered(starts: np.ndarray, ends: np.ndarray):
    """Step generator: the absolute half-open byte ranges ``[starts[i], ends[i])`` back to back
    as one uint8 array.

    Many small ranges (a take reads one per row run) are first merged into runs whose gaps are
    at most :data:`GATHER_GAP` bytes, so the read asks for tens of ranges instead of thousands
    and the bytes are cut apart by one kernel call instead of one Python buffer per row.  The
    bytes read are the same the scheduler's coalescing would read.  Ranges must be sorted by
    start (they may touch or overlap); otherwise, or when there are few, they are asked for
    as they are.
    """
    from lancejit.core.errors import CorruptFileError
    from lancejit.encoding.kernels.gather import copy_slices

    s = np.asarray(starts, dtype=np.int64)
    e = np.asarray(ends, dtype=np.int64)
    n = len(s)
    if n == 0:
        return np.zeros(0, np.uint8)
    if n < GATHER_MIN or bool(np.any(s[1:] < s[:-1])) or bool(np.any(e < s)):
        bufs = yield to_pairs(s, e)
        return _join(bufs)
    reach = np.maximum.accumulate(e)
    brk = np.ones(n, dtype=np.bool_)
    np.greater(s[1:], reach[:-1] + GATHER_GAP, out=brk[1:])
    first = np.flatnonzero(brk)
    run_s = s[first]
    run_e = reach[np.append(first[1:], n) - 1]
    bufs = yield to_pairs(run_s, run_e)
    run_len = run_e - run_s
    if len(bufs) != len(run_s) or any(len(b) != k for b, k in zip(bufs, run_len.tolist())):
        raise CorruptFileError("short read of gathered byte ranges")
    data = _join(bufs)
    run_base = np.cumsum(run_len) - run_len
    run_of = np.cumsum(brk) - 1
    src = run_base[run_of] + (s - run_s[run_of])
    lens = e - s
    out_offsets = np.cumsum(lens) - lens
    out = np.empty(int(lens.sum()), dtype=np.uint8)
    copy_slices(data, src, lens, n, out_offsets, out)
    return out


def _join(bufs) -> np.ndarray:
    if not bufs:
        return np.zeros(0, np.uint8)
    if len(bufs) == 1:
        return np.frombuffer(bufs[0], np.uint8)
    return np.frombuffer(b"".join(bufs), np.uint8)
