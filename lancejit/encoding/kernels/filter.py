"""Numba kernels of filter evaluation (:mod:`lancejit.table.filter.fast`): one pass over one
decoded column chunk per predicate leaf, straight on the Arrow buffers.

Every kernel fills ``out`` (uint8, as long as the chunk: 1 = the leaf is TRUE, 0 = FALSE),
``negate``-d (0 or 1); branch-free loops over contiguous slices, so LLVM vectorizes them.
NULLs are applied afterwards by :func:`and_validity` (a NULL value never selects its row: for a
predicate in a WHERE clause, SQL's NULL behaves as FALSE once NOTs are pushed to the leaves).
Callers check ``len(out)`` against the chunk before the call.

Comparisons are inclusive ranges ``lo <= key <= hi`` over int64 keys: integers are their own
keys; a float64 value's key is its bit pattern with the magnitude flipped when negative (the
reference's total order, ``-0.0`` folded into ``0.0``; see :mod:`lancejit.table.filter.floats`).
Integers compared with a float literal compare as doubles (``flo``/``fhi`` with strictness
flags).  NumPy references: ``tests/table/test_filter_fast.py``.
"""

from __future__ import annotations

import numpy as np

from lancejit.encoding.kernels.jit import njit

_MAGNITUDE = np.int64(0x7FFFFFFFFFFFFFFF)
_NEG_ZERO = np.int64(-0x8000000000000000)


@njit(cache=True, nogil=True, specs=("ro(u1[::1]), i8, u1[::1]",))
def and_validity(validity, voff, out):  # pragma: no cover - compiled
    """``out[i] &= bit voff + i`` of the Arrow validity bitmap ``validity`` (LSB first)."""
    for i in range(out.shape[0]):
        b = voff + i
        out[i] &= np.uint8((validity[b >> 3] >> (b & 7)) & 1)


@njit(cache=True, nogil=True, specs=("ro(i8[::1]), i8, i8, u1, u1[::1]",))
def range_int(values, lo, hi, negate, out):  # pragma: no cover - compiled
    """``lo <= values[i] <= hi`` (int64 values and bounds)."""
    for i in range(values.shape[0]):
        v = values[i]
        out[i] = np.uint8((v >= lo) & (v <= hi)) ^ negate


@njit(cache=True, nogil=True, specs=("ro(i8[::1]), i8, i8, u1, u1[::1]",))
def range_f64(bits, lo, hi, negate, out):  # pragma: no cover - compiled
    """``lo <= key(x) <= hi`` for float64 values given as their int64 ``bits``."""
    for i in range(bits.shape[0]):
        b = bits[i]
        k = b ^ ((b >> 63) & _MAGNITUDE)
        k = np.int64(0) if b == _NEG_ZERO else k
        out[i] = np.uint8((k >= lo) & (k <= hi)) ^ negate


@njit(cache=True, nogil=True, specs=("ro(i8[::1]), f8, b1, f8, b1, u1, u1[::1]",))
def range_int_as_double(values, flo, lo_strict, fhi, hi_strict, negate, out):  # pragma: no cover - compiled
    """``flo <(=) double(values[i]) <(=) fhi`` (int64 values; bounds never NaN)."""
    for i in range(values.shape[0]):
        d = np.float64(values[i])
        ok_lo = (d > flo) if lo_strict else (d >= flo)
        ok_hi = (d < fhi) if hi_strict else (d <= fhi)
        out[i] = np.uint8(ok_lo & ok_hi) ^ negate


#: Dividends below this magnitude take the floating-point quotient in :func:`mod_range`.
_FAST_DIVIDEND = np.int64(1 << 50)
#: Dividends and divisors below this magnitude take the 32-bit lanes of :func:`mod_range`.
_I32_DIVIDEND = np.int64(1 << 31)


@njit(cache=True, nogil=True, specs=("ro(i8[::1]), i8, i8, i8, u1, u1[::1]",))
def mod_range(values, k, lo, hi, negate, out):  # pragma: no cover - compiled
    """``lo <= values[i] % k <= hi`` with SQL's truncated remainder (sign of the dividend);
    ``k`` is neither 0 nor -1 (checked by the caller).

    An integer division costs tens of cycles and does not vectorize: when every dividend is
    below 2**50 in magnitude, the quotient comes from a multiplication by ``1 / k`` in doubles
    (off by at most one, then corrected exactly); when dividends and divisor are below 2**31,
    the same in 32-bit lanes, whose conversions to and from doubles vectorize on AVX2.  One
    min/max pass picks the loop."""
    n = values.shape[0]
    ak = abs(k)  # negative only for k = -2**63: then every row takes the integer path
    vmin = np.int64(0)
    vmax = np.int64(0)
    for i in range(n):
        v = values[i]
        vmin = min(vmin, v)
        vmax = max(vmax, v)
    if ak > 0 and ak < _I32_DIVIDEND and -_I32_DIVIDEND < vmin and vmax < _I32_DIVIDEND:
        inv = 1.0 / np.float64(ak)
        k32 = np.int32(ak)
        # every remainder lies in (-2**31, 2**31): bounds clamped to int32 select the same rows
        lo32 = np.int32(max(min(lo, _I32_DIVIDEND - 1), -_I32_DIVIDEND))
        hi32 = np.int32(max(min(hi, _I32_DIVIDEND - 1), -_I32_DIVIDEND))
        for i in range(n):
            v32 = np.int32(values[i])
            av32 = abs(v32)
            m32 = av32 - np.int32(np.float64(av32) * inv) * k32  # up to one k off
            m32 = np.int32(m32 + k32) if m32 < 0 else m32
            m32 = np.int32(m32 - k32) if m32 >= k32 else m32
            m32 = np.int32(-m32) if v32 < 0 else m32
            out[i] = np.uint8((m32 >= lo32) & (m32 <= hi32)) ^ negate
    elif ak > 0 and -_FAST_DIVIDEND < vmin and vmax < _FAST_DIVIDEND:
        inv = 1.0 / np.float64(ak)
        for i in range(n):
            v = values[i]
            av = abs(v)
            m = av - np.int64(np.float64(av) * inv) * ak
            m = m + ak if m < 0 else m
            m = m - ak if m >= ak else m
            m = -m if v < 0 else m
            out[i] = np.uint8((m >= lo) & (m <= hi)) ^ negate
    else:
        for i in range(n):
            v = values[i]
            m = v % k  # floored (Python) remainder: sign of k
            if m != 0 and ((v < 0) != (k < 0)):
                m -= k
            out[i] = np.uint8((m >= lo) & (m <= hi)) ^ negate


@njit(cache=True, nogil=True, specs=("ro(i8[::1]), i8, ro(u1[::1]), u1, u1[::1]",))
def in_bitmap(values, base, bitmap, negate, out):  # pragma: no cover - compiled
    """``values[i]`` (int64) in the set whose members ``v`` have bit ``v - base`` of ``bitmap``."""
    span = np.int64(bitmap.shape[0]) * 8
    for i in range(values.shape[0]):
        d = values[i] - base
        r = np.uint8(0)
        if d >= 0 and d < span:
            r = np.uint8((bitmap[d >> 3] >> (d & 7)) & 1)
        out[i] = r ^ negate


@njit(cache=True, nogil=True, specs=(
    "ro(i8[::1]), b1, i8[::1], u1, u1[::1]",
    "ro(i8[::1]), b1, ro(i8[::1]), u1, u1[::1]",
))
def in_sorted(values, is_f64, members, negate, out):  # pragma: no cover - compiled
    """``key(values[i])`` in the sorted, unique int64 ``members`` (binary search); ``is_f64``:
    the values are float64 bits (keys as in :func:`range_f64`)."""
    m = members.shape[0]
    for i in range(values.shape[0]):
        k = values[i]
        if is_f64:
            b = k
            k = b ^ ((b >> 63) & _MAGNITUDE)
            if b == _NEG_ZERO:
                k = 0
        a = 0
        z = m
        while a < z:
            h = (a + z) >> 1
            if members[h] < k:
                a = h + 1
            else:
                z = h
        out[i] = np.uint8(a < m and members[a] == k) ^ negate


@njit(cache=True, nogil=True, specs=(
    "ro(i4[::1]), ro(u8[:]), ro(u1[::1]), ro(u8[::1]), ro(u8[::1]), ro(u1[::1]), b1, u1, u1[::1]",
    "ro(i8[::1]), ro(u8[:]), ro(u1[::1]), ro(u8[::1]), ro(u8[::1]), ro(u1[::1]), b1, u1, u1[::1]",
))
def prefix_match(offsets, words, data, pwords, pmasks, prefix, exact, negate, out):  # pragma: no cover - compiled
    """String ``i`` (bytes ``data[offsets[i]:offsets[i + 1]]``) starts with ``prefix``
    (``exact``: equals it).

    ``words[j]``: the 8 bytes ``data[j:j + 8]`` as a little-endian uint64 (a view of ``data``
    with a one-byte stride); ``pwords``/``pmasks``: the prefix as such words and the masks of
    their significant bytes.  Strings too close to the end of ``data`` compare byte by byte."""
    p = prefix.shape[0]
    q = pwords.shape[0]
    last = words.shape[0] - 8 * (q - 1)  # rows starting before this compare word by word
    for i in range(offsets.shape[0] - 1):
        s = offsets[i]
        size = offsets[i + 1] - s
        long_enough = (size == p) if exact else (size >= p)
        r = True
        if s < last:
            for w in range(q):
                r &= ((words[s + 8 * w] ^ pwords[w]) & pmasks[w]) == 0
        elif long_enough:
            for j in range(p):
                r &= data[s + j] == prefix[j]
        out[i] = np.uint8(long_enough & r) ^ negate


@njit(cache=True, nogil=True, specs=("u1[::1], i8[::1]",))
def mask_positions(mask, out):  # pragma: no cover - compiled
    """Fill ``out`` with the positions of the non-zero bytes of ``mask`` (0/1 values), in
    order; ``out`` has room for their count plus one (the branch-free loop writes one past).
    Returns the count."""
    j = 0
    for i in range(mask.shape[0]):
        out[j] = i
        j += np.int64(mask[i])
    return j
