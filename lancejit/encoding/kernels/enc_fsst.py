"""FSST compression kernels (writer side): symbol lookup, training counts, bulk compression.

A symbol table holds up to 255 symbols of 1..8 bytes (``sym_val``: the bytes little-endian in a
u64, ``sym_len``).  Codes ``0..255`` in the training counters are pseudo-symbols (one escaped
byte); real symbol ``i`` has training code ``256 + i`` and output code ``i``.  Output: per input
byte run, greedy longest-match codes; a byte without a symbol is written as ``255, byte``.

Lookup uses an open-addressing table (``tab_val``, ``tab_len``, ``tab_code``; size a power of
two, ``tab_len == 0`` marks an empty slot) for symbols of 2..8 bytes plus ``byte_code[256]``
(-1 when no single-byte symbol) and ``prefix_max[65536]``: the longest symbol starting with each
2-byte prefix (0 when none).
"""

from __future__ import annotations

import numpy as np
from numba import njit

PRIME = np.uint64(2971215073)


@njit(cache=True, nogil=True)
def _hash(val, ln, mask):  # pragma: no cover - compiled
    h = (val * np.uint64(2971215073)) ^ (val >> np.uint64(15)) ^ np.uint64(ln * 0x9E3779B1)
    return np.int64(h & np.uint64(mask))


@njit(cache=True, nogil=True)
def build_lookup(sym_val, sym_len, n_sym, tab_val, tab_len, tab_code, byte_code, prefix_max):  # pragma: no cover
    """Fill the lookup structures for ``n_sym`` symbols (tables must be zeroed / -1 beforehand)."""
    mask = tab_val.shape[0] - 1
    for i in range(n_sym):
        ln = sym_len[i]
        v = sym_val[i]
        if ln == 1:
            byte_code[np.int64(v & np.uint64(0xFF))] = i
            continue
        p = np.int64(v & np.uint64(0xFFFF))
        if prefix_max[p] < ln:
            prefix_max[p] = ln
        h = _hash(v, ln, mask)
        while tab_len[h] != 0:
            if tab_len[h] == ln and tab_val[h] == v:
                break
            h = (h + 1) & mask
        tab_val[h] = v
        tab_len[h] = ln
        tab_code[h] = i


@njit(cache=True, nogil=True)
def _load(data, pos, end):  # pragma: no cover - compiled
    v = np.uint64(0)
    n = end - pos
    if n > 8:
        n = 8
    for k in range(n):
        v |= np.uint64(data[pos + k]) << np.uint64(8 * k)
    return v, n


@njit(cache=True, nogil=True)
def _longest(data, pos, end, tab_val, tab_len, tab_code, byte_code, prefix_max):  # pragma: no cover
    """(code, length) of the longest symbol at ``pos``; code -1 = escape (length 1)."""
    word, avail = _load(data, pos, end)
    mask = tab_val.shape[0] - 1
    if avail >= 2:
        maxl = prefix_max[np.int64(word & np.uint64(0xFFFF))]
        if maxl > avail:
            maxl = avail
        ln = maxl
        while ln >= 2:
            if ln == 8:
                v = word
            else:
                v = word & ((np.uint64(1) << np.uint64(8 * ln)) - np.uint64(1))
            h = _hash(v, ln, mask)
            while tab_len[h] != 0:
                if tab_len[h] == ln and tab_val[h] == v:
                    return tab_code[h], ln
                h = (h + 1) & mask
            ln -= 1
    c = byte_code[np.int64(word & np.uint64(0xFF))]
    return c, 1


@njit(cache=True, nogil=True)
def compress_count(data, offsets, sym_len, tab_val, tab_len, tab_code, byte_code, prefix_max,
                   count1, count2, count_pairs):  # pragma: no cover - compiled
    """Compress the sample, counting code (count1) and code-pair (count2) frequencies.

    Training codes: escaped byte b -> b, symbol i -> 256 + i.  Returns the gain (bytes saved).
    """
    gain = 0
    n = offsets.shape[0] - 1
    for s in range(n):
        start = offsets[s]
        end = offsets[s + 1]
        if start == end:
            continue
        cur = start
        c, ln = _longest(data, cur, end, tab_val, tab_len, tab_code, byte_code, prefix_max)
        prev = np.int64(data[cur]) if c < 0 else 256 + c
        gain += ln - 1 - (1 if c < 0 else 0)
        cur += ln
        while cur < end:
            count1[prev] += 1
            plen = 1 if prev < 256 else sym_len[prev - 256]
            if plen != 1:
                count1[np.int64(data[cur])] += 1
            c, ln = _longest(data, cur, end, tab_val, tab_len, tab_code, byte_code, prefix_max)
            code = np.int64(data[cur]) if c < 0 else 256 + c
            gain += ln - 1 - (1 if c < 0 else 0)
            if count_pairs:
                count2[prev, code] += 1
                if ln > 1:
                    count2[prev, np.int64(data[cur])] += 1
            cur += ln
            prev = code
        count1[prev] += 1
    return gain


@njit(cache=True, nogil=True)
def compress_bulk(data, offsets, tab_val, tab_len, tab_code, byte_code, prefix_max,
                  out, out_offsets):  # pragma: no cover - compiled
    """Compress every value; ``out`` needs ``2 * len(data)`` bytes.  Returns bytes written."""
    n = offsets.shape[0] - 1
    o = 0
    out_offsets[0] = 0
    for s in range(n):
        cur = offsets[s]
        end = offsets[s + 1]
        while cur < end:
            c, ln = _longest(data, cur, end, tab_val, tab_len, tab_code, byte_code, prefix_max)
            if c < 0:
                out[o] = 255
                out[o + 1] = data[cur]
                o += 2
            else:
                out[o] = c
                o += 1
            cur += ln
        out_offsets[s + 1] = o
    return o
