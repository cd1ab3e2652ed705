"""FastLanes bit-packing kernels (unpack and pack) for word widths T in {8, 16, 32, 64}.

Layout of one packed block of 1024 values with bit width ``W`` (0 <= W <= T) stored in T-bit
words: ``LANES = 1024 // T`` interleaved lanes; lane ``l`` holds a bit stream whose ``k``-th
T-bit word is ``packed[k * LANES + l]``.  For row ``r`` in ``[0, T)`` the value with logical index
``FL_ORDER[r // 8] * 16 + (r % 8) * 128 + l`` occupies bits ``[r*W, r*W + W)`` of lane ``l``'s
stream (a value may straddle two words).  A block therefore has exactly ``LANES * W`` words;
W = 0 means no words (all values zero).

The kernels take uint8/uint16/uint32/uint64 arrays; the dtype decides T (4 specializations).
They do no bounds checking: callers guarantee ``len(packed) >= num_blocks * LANES * W`` and
``len(out) >= num_blocks * 1024`` (see :func:`packed_words_per_block`).
"""

from __future__ import annotations

import numpy as np
from lancejit.encoding.kernels.jit import njit
from lancejit.encoding.kernels.layouts import FL_ORDER

#: Values per packed block.
BLOCK_VALUES = 1024


def packed_words_per_block(word_bits: int, width: int) -> int:
    """Number of T-bit words one packed block of 1024 values occupies (``1024 * W / T``)."""
    return (BLOCK_VALUES // word_bits) * width


@njit(cache=True, nogil=True, inline="always")
def _row_words(row, width, t, lanes, base):  # pragma: no cover - compiled
    """Where row ``row`` (0 <= row < T) of a block starting at word ``base`` lives: its first
    word index ``w0`` (uint64), the bit shift in that word, and the left shift of the next
    word's bits for a value straddling two words (0 when it does not)."""
    bit = row * width
    word = bit // t
    shift = bit - word * t
    back = np.uint64(t - shift) if shift + width > t else np.uint64(0)
    return base + np.uint64(word) * lanes, np.uint64(shift), back


@njit(cache=True, nogil=True, specs=(
    "ro(u1[::1]), i8, i8, u1[::1]",
    "ro(u2[::1]), i8, i8, u2[::1]",
    "ro(u4[::1]), i8, i8, u4[::1]",
    "ro(u8[::1]), i8, i8, u8[::1]",
))
def unpack_blocks(packed, width, num_blocks, out):  # pragma: no cover - compiled
    """Unpack ``num_blocks`` consecutive blocks of width ``width`` from ``packed`` into ``out``.

    ``packed`` and ``out`` have the same unsigned dtype (T bits).  ``out[b*1024:(b+1)*1024]``
    receives block ``b``; ``packed`` is read from word 0.
    """
    # Indices are uint64 on purpose: Numba wraps negative signed indices (a compare and a
    # select per access), which keeps LLVM from vectorizing the lane loops; unsigned ones
    # need no wrap.  Mixing int64 and uint64 would make floats: every index term is uint64.
    t = packed.itemsize * 8
    lanes = np.uint64(1024 // t)
    if width == 0:
        for i in range(num_blocks * 1024):
            out[i] = 0
        return
    words_per_block = lanes * np.uint64(width)
    for b in range(num_blocks):
        base = np.uint64(b) * words_per_block
        obase = np.uint64(b * 1024)
        if width == t:
            for row in range(t):
                rbase = obase + np.uint64(FL_ORDER[row >> 3] * 16 + (row & 7) * 128)
                w0 = base + np.uint64(row) * lanes
                for lane in range(lanes):
                    out[rbase + lane] = packed[w0 + lane]
            continue
        mask = (np.uint64(1) << np.uint64(width)) - np.uint64(1)
        for row in range(t):
            rbase = obase + np.uint64(FL_ORDER[row >> 3] * 16 + (row & 7) * 128)
            w0, ush, back = _row_words(row, width, t, lanes, base)
            # Two loops (the spill test is per row, not per lane) so LLVM vectorizes each.
            if back:
                w1 = w0 + lanes
                for lane in range(lanes):
                    lo = np.uint64(packed[w0 + lane]) >> ush
                    hi = np.uint64(packed[w1 + lane]) << back
                    out[rbase + lane] = (lo | hi) & mask
            else:
                for lane in range(lanes):
                    out[rbase + lane] = (np.uint64(packed[w0 + lane]) >> ush) & mask


@njit(cache=True, nogil=True, specs=(
    "u1[::1], i8, i8, u1[::1]",
    "u2[::1], i8, i8, u2[::1]",
    "u4[::1], i8, i8, u4[::1]",
    "u8[::1], i8, i8, u8[::1]",
))
def pack_blocks(values, width, num_blocks, out):  # pragma: no cover - compiled
    """Pack ``num_blocks * 1024`` values (bits above ``width`` are dropped) into ``out``.

    ``values`` and ``out`` have the same unsigned dtype; ``out`` receives
    ``num_blocks * (1024 // T) * width`` words, which this kernel overwrites.
    """
    # uint64 indices and per-row loops split by the spill test, as in unpack_blocks.
    t = values.itemsize * 8
    lanes = np.uint64(1024 // t)
    if width == 0:
        return
    words_per_block = lanes * np.uint64(width)
    ut = np.uint64(t)
    for i in range(np.uint64(num_blocks) * words_per_block):
        out[i] = 0
    mask = (np.uint64(1) << np.uint64(width)) - np.uint64(1)
    if t == 64:
        tmask = np.uint64(0xFFFFFFFFFFFFFFFF)
    else:
        tmask = (np.uint64(1) << ut) - np.uint64(1)
    for b in range(num_blocks):
        base = np.uint64(b) * words_per_block
        ibase = np.uint64(b * 1024)
        for row in range(t):
            rbase = ibase + np.uint64(FL_ORDER[row >> 3] * 16 + (row & 7) * 128)
            if width == t:
                w0 = base + np.uint64(row) * lanes
                for lane in range(lanes):
                    out[w0 + lane] = values[rbase + lane]
                continue
            w0, ush, back = _row_words(row, width, t, lanes, base)
            if back:
                w1 = w0 + lanes
                for lane in range(lanes):
                    v = np.uint64(values[rbase + lane]) & mask
                    out[w0 + lane] = np.uint64(out[w0 + lane]) | ((v << ush) & tmask)
                    out[w1 + lane] = np.uint64(out[w1 + lane]) | (v >> back)
            else:
                for lane in range(lanes):
                    v = np.uint64(values[rbase + lane]) & mask
                    out[w0 + lane] = np.uint64(out[w0 + lane]) | ((v << ush) & tmask)
