"""NumPy versions of hot kernels for tier 0 (:mod:`.tier0`): what an interpreted kernel calls
instead of interpreting them element by element (bit unpacking, byte copies), and a take of
bit-packed values reading only the items' bits.

Each has its kernel's arguments, outputs and return value (``tests/kernels/test_tier0.py``
compares them with the compiled kernels); arrays are the kernel's arrays, scalars Python or
NumPy integers.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from lancejit.encoding.kernels.layouts import FL_ORDER, TAKE_BAD_CHUNK, TAKE_BAD_WIDTH, TAKE_OK


def unpack_blocks(packed: np.ndarray, width: Any, num_blocks: Any, out: np.ndarray) -> None:
    """:func:`lancejit.encoding.kernels.bitpack.unpack_blocks`, one vectorized step per row."""
    t = packed.itemsize * 8
    lanes = 1024 // t
    width = int(width)
    nb = int(num_blocks)
    res = out[: nb * 1024].reshape(nb, 1024)
    if width == 0:
        res[:] = 0
        return None
    words = packed[: nb * lanes * width].reshape(nb, width, lanes).astype(np.uint64)
    mask = np.uint64(0xFFFFFFFFFFFFFFFF) >> np.uint64(64 - width)
    for row in range(t):
        bit = row * width
        word = bit // t
        shift = bit - word * t
        v = words[:, word, :] >> np.uint64(shift)
        if shift + width > t:
            v |= words[:, word + 1, :] << np.uint64(t - shift)
        v &= mask
        start = int(FL_ORDER[row >> 3]) * 16 + (row & 7) * 128
        res[:, start:start + lanes] = v
    return None


def copy_range(dst: np.ndarray, d: Any, src: np.ndarray, s: Any, n: Any) -> None:
    """:func:`lancejit.encoding.kernels.scan.copy_range`: one slice assignment."""
    d, s, n = int(d), int(s), int(n)
    if n > 0:
        dst[d:d + n] = src[s:s + n]
    return None


def _spread(starts: np.ndarray, lens: np.ndarray) -> np.ndarray:
    """``concat(arange(starts[i], starts[i] + lens[i]))`` (int64)."""
    total = int(lens.sum())
    before = np.cumsum(lens) - lens
    return np.repeat(starts - before, lens) + np.arange(total, dtype=np.int64)


def copy_slices(data: np.ndarray, starts: np.ndarray, lengths: np.ndarray, num_slices: Any,
                out_offsets: np.ndarray, out: np.ndarray) -> None:
    """:func:`lancejit.encoding.kernels.gather.copy_slices`: two index arrays, one gather."""
    n = int(num_slices)
    lens = np.asarray(lengths[:n], dtype=np.int64)
    if n == 0 or not lens.any():
        return None
    out[_spread(np.asarray(out_offsets[:n], dtype=np.int64), lens)] = data[
        _spread(np.asarray(starts[:n], dtype=np.int64), lens)]
    return None


def gather_slices(src: np.ndarray, starts: np.ndarray, lens: np.ndarray, out: np.ndarray) -> int:
    """:func:`lancejit.encoding.v21.repdef_kernels.gather_slices`: the slices before the first
    bad one copied at once (the kernel's outputs), -1 if there is a bad one."""
    s = np.asarray(starts, dtype=np.int64)
    ln = np.asarray(lens, dtype=np.int64)
    ends = np.cumsum(ln)
    bad = (s < 0) | (ln < 0) | (s + ln > src.shape[0]) | (ends > out.shape[0])
    first_bad = int(np.argmax(bad)) if bad.any() else s.shape[0]
    if first_bad:
        good = ln[:first_bad]
        if good.any():
            out[: int(ends[first_bad - 1])] = src[_spread(s[:first_bad], good)]
    return -1 if first_bad < s.shape[0] else int(ends[-1]) if s.shape[0] else 0


def _le(data: np.ndarray, p: int, width: int) -> int:
    """The ``width``-byte little-endian unsigned integer at ``data[p]``."""
    return int.from_bytes(data[p:p + width].tobytes(), "little")


def _value_buffer(data: np.ndarray, p: int, length: int, szw: int, hdef: int) -> tuple[int, int]:
    """:func:`lancejit.encoding.kernels.take._value_buffer` (same checks, same answers)."""
    voff = (2 + 2 * hdef + szw + 7) // 8 * 8
    if length < voff or p + length > data.shape[0]:
        return -1, 0
    if hdef:
        voff += (_le(data, p + 2, 2) + 7) // 8 * 8
    size = _le(data, p + 2 + 2 * hdef, szw)
    if voff + size > length:
        return -1, 0
    return p + voff, size


_FL_SLOTS: dict[int, tuple[list[int], list[int]]] = {}


def _fl_slots(t: int) -> tuple[list[int], list[int]]:
    """``(row, lane)`` of each of the 1024 values of a FastLanes block of ``t``-bit words (the
    inverse of :func:`unpack_blocks`' placement)."""
    got = _FL_SLOTS.get(t)
    if got is None:
        lanes = 1024 // t
        rows, lane_of = [0] * 1024, [0] * 1024
        for row in range(t):
            start = int(FL_ORDER[row >> 3]) * 16 + (row & 7) * 128
            for lane in range(lanes):
                rows[start + lane] = row
                lane_of[start + lane] = lane
        got = _FL_SLOTS[t] = (rows, lane_of)
    return got


def take_bitpacked(data: np.ndarray, item_pos: np.ndarray, item_in: np.ndarray, item_seg: np.ndarray,
                   seg_szw: np.ndarray, seg_len: np.ndarray, seg_count: np.ndarray, seg_def: np.ndarray,
                   tmpw: np.ndarray, tmpb: np.ndarray, tmp: np.ndarray, out: np.ndarray) -> int:
    """:func:`lancejit.encoding.kernels.take.take_bitpacked` reading each item's bits straight
    from its chunk (the kernel unpacks every touched chunk whole, slow in NumPy), the
    same checks in the same order; the scratch buffers end as the kernel leaves them (each
    chunk's bytes staged, the last one unpacked once)."""
    ws = tmpw.itemsize
    t_bits = ws * 8
    lanes = 1024 // t_bits
    rows, lane_of = _fl_slots(t_bits)
    last = -1
    staged = None  # (bytes, width) of the last chunk checked
    width = wbase = 0
    code = TAKE_OK
    for t in range(item_pos.shape[0]):
        g = int(item_seg[t])
        p = int(item_pos[t])
        if p != last:
            vb, size = _value_buffer(data, p, int(seg_len[g]), int(seg_szw[g]), min(int(seg_def[g]), 1))
            if vb < 0 or size < ws or int(seg_count[g]) > 1024:
                code = TAKE_BAD_CHUNK
                break
            width = _le(data, vb, ws)
            if width > t_bits:
                code = TAKE_BAD_WIDTH
                break
            nbytes = (1 + lanes * width) * ws
            if nbytes > size:
                code = TAKE_BAD_CHUNK
                break
            tmpb[:nbytes] = data[vb:vb + nbytes]  # (the scratch as the kernel leaves it)
            staged = (nbytes, width)
            wbase = vb + ws
            last = p
        r = int(item_in[t])
        if r >= int(seg_count[g]):
            code = TAKE_BAD_CHUNK
            break
        value = 0
        if width:
            row, lane = rows[r], lane_of[r]
            bit = row * width
            word = bit // t_bits
            shift = bit - word * t_bits
            value = _le(data, wbase + (word * lanes + lane) * ws, ws) >> shift
            if shift + width > t_bits:
                value |= _le(data, wbase + ((word + 1) * lanes + lane) * ws, ws) << (t_bits - shift)
            value &= (1 << width) - 1
        out[t] = value
    if staged is not None:
        unpack_blocks(tmpw[1: 1 + lanes * staged[1]], staged[1], 1, tmp)
    return code


#: module.qualname of a kernel -> its NumPy version.
VERSIONS: dict[str, Callable[..., Any]] = {
    "lancejit.encoding.kernels.bitpack.unpack_blocks": unpack_blocks,
    "lancejit.encoding.kernels.scan.copy_range": copy_range,
    "lancejit.encoding.kernels.gather.copy_slices": copy_slices,
    "lancejit.encoding.v21.repdef_kernels.gather_slices": gather_slices,
    "lancejit.encoding.kernels.take.take_bitpacked": take_bitpacked,
}
