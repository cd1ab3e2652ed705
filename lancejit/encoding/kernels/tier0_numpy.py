"""NumPy versions of hot kernels for tier 0 (:mod:`.tier0`): what an interpreted kernel calls
instead of interpreting them element by element (bit unpacking, byte copies).

Each has its kernel's arguments, outputs and return value (``tests/kernels/test_tier0.py``
compares them with the compiled kernels); arrays are the kernel's arrays, scalars Python or
NumPy integers.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from lancejit.encoding.kernels.layouts import FL_ORDER


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


#: module.qualname of a kernel -> its NumPy version.
VERSIONS: dict[str, Callable[..., Any]] = {
    "lancejit.encoding.kernels.bitpack.unpack_blocks": unpack_blocks,
    "lancejit.encoding.kernels.scan.copy_range": copy_range,
    "lancejit.encoding.kernels.gather.copy_slices": copy_slices,
    "lancejit.encoding.v21.repdef_kernels.gather_slices": gather_slices,
}
