"""Equi-join of two int64 key columns by a hash table over one (build) side.

:func:`build` fills an open-addressing table (``slots`` entries, a power of two) of the build
side's valid keys, rows with equal keys chained in ascending row order (``chain``), and a bit
filter of the keys' hashes (a few bits per key: most probe keys that match nothing are rejected
by one lookup in it, which stays in cache where the table may not).  :func:`probe` looks every
valid probe key up and writes, for each probe row with a match, the probe row and the first
build row of its key; :func:`expand_count` / :func:`expand` turn those into every ``(build row,
probe row)`` pair when build keys repeat.  Pairs come ordered by probe row, then build row.
Keys are compared as int64 (other integer types are viewed or widened to it).
"""

from __future__ import annotations

import numpy as np

from lancejit.encoding.kernels import readonly
from lancejit.encoding.kernels.enc_hll import fmix64
from lancejit.encoding.kernels.jit import njit


@njit(cache=True, nogil=True)
def _bit(h, filter_mask):  # pragma: no cover - compiled
    return np.int64((h >> np.uint64(40)) & np.uint64(filter_mask))


@njit(cache=True, nogil=True)
def _slot_of(slot_key, slot_head, k, h, mask):  # pragma: no cover - compiled
    """The slot holding key ``k`` (hash ``h``), or the empty slot where it would go."""
    s = np.int64(h & mask)
    while slot_head[s] >= 0 and slot_key[s] != k:
        s = np.int64((np.uint64(s) + np.uint64(1)) & mask)
    return s


@njit(cache=True, nogil=True, specs=("ro(i8[::1]), ro(b1[::1]), i8[::1], i8[::1], i8[::1], u8[::1]",))
def build(keys, valid, slot_key, slot_head, chain, bits):  # pragma: no cover - compiled
    """Insert the valid ``keys`` (``valid[i]``): ``slot_head`` (-1 filled) gets the first row of
    each distinct key, ``chain[i]`` the next row with row ``i``'s key (-1: none), ``bits`` (0
    filled, a power-of-two number of words) the filter.  ``slot_key`` / ``slot_head`` have a
    power-of-two length above the number of keys.  Returns the rows whose key repeats an
    earlier row's."""
    mask = np.uint64(slot_key.shape[0] - 1)
    fmask = bits.shape[0] * 64 - 1
    repeats = 0
    for i in range(keys.shape[0] - 1, -1, -1):  # backwards: chains come out ascending
        chain[i] = -1
        if not valid[i]:
            continue
        k = keys[i]
        h = fmix64(np.uint64(k))
        b = _bit(h, fmask)
        bits[b >> 6] |= np.uint64(1) << np.uint64(b & 63)
        s = _slot_of(slot_key, slot_head, k, h, mask)
        head = slot_head[s]
        if head >= 0:
            chain[i] = head
            repeats += 1
        slot_key[s] = k
        slot_head[s] = i
    return repeats


@njit(cache=True, nogil=True, specs=(
    "ro(i8[::1]), ro(b1[::1]), i8[::1], i8[::1], u8[::1], i8[::1], i8[::1]",
))
def probe(keys, valid, slot_key, slot_head, bits, out_probe, out_head):  # pragma: no cover - compiled
    """For each valid probe key with a match, in order: the probe row (``out_probe``) and the
    first build row of the key (``out_head``); both need ``len(keys)`` entries.  Returns how
    many were written."""
    mask = np.uint64(slot_key.shape[0] - 1)
    fmask = bits.shape[0] * 64 - 1
    n = 0
    for t in range(keys.shape[0]):
        if not valid[t]:
            continue
        k = keys[t]
        h = fmix64(np.uint64(k))
        b = _bit(h, fmask)
        if not (bits[b >> 6] >> np.uint64(b & 63)) & np.uint64(1):
            continue
        head = slot_head[_slot_of(slot_key, slot_head, k, h, mask)]
        if head >= 0:
            out_probe[n] = t
            out_head[n] = head
            n += 1
    return n


@njit(cache=True, nogil=True, specs=("ro(i8[::1]), ro(i8[::1])",))
def expand_count(heads, chain):  # pragma: no cover - compiled
    """Pairs the probe matches ``heads`` stand for (each chain's length)."""
    n = 0
    for i in range(heads.shape[0]):
        h = heads[i]
        while h >= 0:
            n += 1
            h = chain[h]
    return n


@njit(cache=True, nogil=True, specs=("ro(i8[::1]), ro(i8[::1]), ro(i8[::1]), i8[::1], i8[::1]",))
def expand(probes, heads, chain, out_build, out_probe):  # pragma: no cover - compiled
    """Every ``(build row, probe row)`` pair of the probe matches (:func:`expand_count` entries)."""
    n = 0
    for i in range(heads.shape[0]):
        t = probes[i]
        h = heads[i]
        while h >= 0:
            out_build[n] = h
            out_probe[n] = t
            n += 1
            h = chain[h]
    return n


def join(build_keys: np.ndarray, build_valid: np.ndarray, probe_keys: np.ndarray,
         probe_valid: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(build rows, probe rows)`` (int64) of every pair of equal valid keys, ordered by probe
    row then build row; keys int64, validity bool."""
    m = build_keys.shape[0]
    if m == 0 or probe_keys.shape[0] == 0:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    size = 1 << max(4, (2 * m).bit_length())
    slot_key = np.empty(size, dtype=np.int64)
    slot_head = np.full(size, -1, dtype=np.int64)
    chain = np.empty(m, dtype=np.int64)
    bits = np.zeros(max(1, 1 << (8 * m).bit_length()) // 64 or 1, dtype=np.uint64)
    repeats = build(readonly(build_keys, np.int64), readonly(build_valid, np.bool_), slot_key, slot_head,
                    chain, bits)
    n = probe_keys.shape[0]
    probes = np.empty(n, dtype=np.int64)
    heads = np.empty(n, dtype=np.int64)
    k = probe(readonly(probe_keys, np.int64), readonly(probe_valid, np.bool_), slot_key, slot_head, bits,
              probes, heads)
    probes, heads = probes[:k], heads[:k]
    if not repeats:
        return heads, probes
    total = expand_count(readonly(heads), readonly(chain))
    out_b = np.empty(total, dtype=np.int64)
    out_p = np.empty(total, dtype=np.int64)
    expand(readonly(probes), readonly(heads), readonly(chain), out_b, out_p)
    return out_b, out_p
