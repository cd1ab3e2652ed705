"""HyperLogLog kernels: distinct-count estimates for the writer's dictionary decision (as the
reference, which also estimates cardinality with HyperLogLog).

Registers: ``2**p`` u8 values; a value's 64-bit hash picks register ``h >> (64 - p)`` and the
register keeps the maximum rank (1 + leading zeros of the remaining bits).  Hashes: the value itself
(fixed width) or an 8-bytes-at-a-time multiply/xor-shift fold of the bytes (variable width,
:func:`hash_bytes`), finished with the murmur3 ``fmix64`` mixer.
"""

from __future__ import annotations

import numpy as np
from lancejit.encoding.kernels.jit import njit


@njit(cache=True, nogil=True)
def fmix64(k):  # pragma: no cover - compiled
    """murmur3's 64-bit finaliser (also hashes the FSST trainer's candidates)."""
    k ^= k >> np.uint64(33)
    k *= np.uint64(0xFF51AFD7ED558CCD)
    k ^= k >> np.uint64(33)
    k *= np.uint64(0xC4CEB9FE1A85EC53)
    k ^= k >> np.uint64(33)
    return k


@njit(cache=True, nogil=True)
def _update(regs, h, p):  # pragma: no cover - compiled
    idx = np.int64(h >> np.uint64(64 - p))
    w = h << np.uint64(p)
    rank = 1
    limit = 64 - p + 1
    while rank < limit and (w & np.uint64(0x8000000000000000)) == 0:
        w = w << np.uint64(1)
        rank += 1
    if rank > regs[idx]:
        regs[idx] = rank


@njit(cache=True, nogil=True, specs=(
    "u1[::1], i8, u1[::1]",
    "u2[::1], i8, u1[::1]",
    "u4[::1], i8, u1[::1]",
    "u8[::1], i8, u1[::1]",
))
def hll_fixed(words, p, regs):  # pragma: no cover - compiled
    """Add unsigned integer ``words`` to the ``2**p`` registers ``regs`` (u8, zeroed)."""
    for i in range(words.shape[0]):
        _update(regs, fmix64(np.uint64(words[i])), p)


@njit(cache=True, nogil=True)
def hash_bytes(data, start, end):  # pragma: no cover - compiled
    """64-bit hash of ``data[start:end]`` (half-open): the bytes taken 8 at a time as
    little-endian words (the last word zero-padded), each folded in with ``h = (h ^ w) * P;
    h ^= h >> 29`` from the FNV offset basis; then the length xored in and ``fmix64``."""
    h = np.uint64(0xCBF29CE484222325)
    j = start
    while j < end:
        w = np.uint64(0)
        k = end - j
        if k > 8:
            k = 8
        for b in range(k):
            w |= np.uint64(data[j + b]) << np.uint64(8 * b)
        h = (h ^ w) * np.uint64(0x100000001B3)
        h ^= h >> np.uint64(29)
        j += 8
    h ^= np.uint64(end - start)
    return fmix64(h)


@njit(cache=True, nogil=True, specs=("u1[::1], i8[::1], i8, u1[::1]",))
def hll_bytes(data, offsets, p, regs):  # pragma: no cover - compiled
    """Add the byte strings ``data[offsets[i]:offsets[i+1]]`` to the registers."""
    for i in range(offsets.shape[0] - 1):
        _update(regs, hash_bytes(data, offsets[i], offsets[i + 1]), p)


@njit(cache=True, nogil=True, specs=("u1[::1], i8[::1], i8[::1]",))
def distinct_bytes(data, offsets, slots):  # pragma: no cover - compiled
    """Exact number of distinct byte strings ``data[offsets[i]:offsets[i+1]]`` (half-open):
    open addressing on :func:`hash_bytes` over ``slots`` (a power of two at least twice the
    values, -1 filled; a slot holds the index of the first value seen with its bytes), the
    bytes compared on equal hashes."""
    mask = slots.shape[0] - 1
    hashes = np.empty(offsets.shape[0] - 1, dtype=np.uint64)
    count = 0
    for i in range(offsets.shape[0] - 1):
        a = offsets[i]
        b = offsets[i + 1]
        h = hash_bytes(data, a, b)
        hashes[i] = h
        k = np.int64(h & np.uint64(mask))
        while True:
            j = slots[k]
            if j < 0:
                slots[k] = i
                count += 1
                break
            if hashes[j] == h and offsets[j + 1] - offsets[j] == b - a:
                c = offsets[j]
                same = True
                for t in range(b - a):
                    if data[c + t] != data[a + t]:
                        same = False
                        break
                if same:
                    break
            k = (k + 1) & mask
    return count


def estimate(regs: np.ndarray) -> float:
    """The HyperLogLog estimate (with linear counting for small cardinalities)."""
    m = regs.shape[0]
    alpha = 0.7213 / (1.0 + 1.079 / m)
    e = alpha * m * m / float(np.sum(np.ldexp(1.0, -regs.astype(np.int64))))
    zeros = int(np.count_nonzero(regs == 0))
    if e <= 2.5 * m and zeros:
        return m * float(np.log(m / zeros))
    return e
