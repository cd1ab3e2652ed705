"""FSST compression kernels (writer side): symbol lookup, training counts, bulk compression.

A symbol table holds up to 255 symbols of 1..8 bytes (``sym_val``: the bytes little-endian in a
u64, ``sym_len``).  Codes ``0..255`` in the training counters are pseudo-symbols (one escaped
byte); real symbol ``i`` has training code ``256 + i`` and output code ``i``.  Output: greedy
longest match; a byte without a symbol is written as ``255, byte``.

Lookup structures (filled by :func:`build_lookup`):
``byte_code[256]`` / ``short_code[65536]``: symbol of length 1 / 2 for a byte / 2-byte prefix
(-1 when none); ``bucket_start[BUCKETS + 1]`` and ``bucket_syms``: the symbols of length >= 3
grouped by a hash of their first 3 bytes, longest first within a bucket.
"""

from __future__ import annotations

import numpy as np
from numba import njit

BUCKETS = 1024


@njit(cache=True, nogil=True)
def _bucket(prefix3):  # pragma: no cover - compiled
    h = prefix3 * np.uint64(2971215073)
    return np.int64((h ^ (h >> np.uint64(15))) & np.uint64(1023))


@njit(cache=True, nogil=True)
def build_lookup(sym_val, sym_len, n_sym, byte_code, short_code, bucket_start, bucket_syms):  # pragma: no cover
    """Fill the lookup structures for ``n_sym`` symbols.

    ``byte_code`` / ``short_code`` must be -1 filled, ``bucket_start`` has 1025 entries,
    ``bucket_syms`` at least ``n_sym`` entries.
    """
    counts = np.zeros(1024, dtype=np.int64)
    for i in range(n_sym):
        ln = sym_len[i]
        v = sym_val[i]
        if ln == 1:
            byte_code[np.int64(v & np.uint64(0xFF))] = i
        elif ln == 2:
            short_code[np.int64(v & np.uint64(0xFFFF))] = i
        else:
            counts[_bucket(v & np.uint64(0xFFFFFF))] += 1
    bucket_start[0] = 0
    for b in range(1024):
        bucket_start[b + 1] = bucket_start[b] + counts[b]
    fill = bucket_start[:1024].copy()
    # insert longest first: iterate lengths 8..3
    for ln in range(8, 2, -1):
        for i in range(n_sym):
            if sym_len[i] == ln:
                b = _bucket(sym_val[i] & np.uint64(0xFFFFFF))
                bucket_syms[fill[b]] = i
                fill[b] += 1


@njit(cache=True, nogil=True)
def _match(word, avail, sym_val, sym_len, byte_code, short_code, bucket_start, bucket_syms):  # pragma: no cover
    """(code, length) of the longest symbol matching the ``avail`` (<= 8) bytes in ``word``;
    code -1 = escape (length 1)."""
    if avail >= 3:
        b = _bucket(word & np.uint64(0xFFFFFF))
        for j in range(bucket_start[b], bucket_start[b + 1]):
            i = bucket_syms[j]
            ln = sym_len[i]
            if ln <= avail:
                if ln == 8:
                    m = word
                else:
                    m = word & ((np.uint64(1) << np.uint64(8 * ln)) - np.uint64(1))
                if m == sym_val[i]:
                    return i, ln
    if avail >= 2:
        c = short_code[np.int64(word & np.uint64(0xFFFF))]
        if c >= 0:
            return c, 2
    return byte_code[np.int64(word & np.uint64(0xFF))], 1


@njit(cache=True, nogil=True)
def _load(data, pos, end):  # pragma: no cover - compiled
    """(little-endian u64 of the next <= 8 bytes, their count)."""
    avail = end - pos
    if avail > 8:
        avail = 8
    word = np.uint64(0)
    for k in range(avail):
        word |= np.uint64(data[pos + k]) << np.uint64(8 * k)
    return word, avail


@njit(cache=True, nogil=True)
def _advance(data, word, avail, cur, ln, end):  # pragma: no cover - compiled
    """Slide the window ``ln`` bytes: returns (word, avail) for position ``cur + ln``."""
    if ln >= 8:
        return _load(data, cur + ln, end)
    word = word >> np.uint64(8 * ln)
    avail -= ln
    nxt = cur + ln + avail  # first byte not yet in the window
    while avail < 8 and nxt < end:
        word |= np.uint64(data[nxt]) << np.uint64(8 * avail)
        avail += 1
        nxt += 1
    return word, avail


@njit(cache=True, nogil=True)
def _longest(data, pos, end, sym_val, sym_len, byte_code, short_code, bucket_start, bucket_syms):  # pragma: no cover
    """(code, length) of the longest symbol at ``pos``; code -1 = escape (length 1)."""
    word, avail = _load(data, pos, end)
    return _match(word, avail, sym_val, sym_len, byte_code, short_code, bucket_start, bucket_syms)


@njit(cache=True, nogil=True)
def compress_count(data, offsets, sym_val, sym_len, byte_code, short_code, bucket_start, bucket_syms,
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
        c, ln = _longest(data, cur, end, sym_val, sym_len, byte_code, short_code, bucket_start, bucket_syms)
        prev = np.int64(data[cur]) if c < 0 else 256 + c
        gain += ln - 1 - (1 if c < 0 else 0)
        cur += ln
        while cur < end:
            count1[prev] += 1
            plen = 1 if prev < 256 else sym_len[prev - 256]
            if plen != 1:
                count1[np.int64(data[cur])] += 1
            c, ln = _longest(data, cur, end, sym_val, sym_len, byte_code, short_code, bucket_start, bucket_syms)
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
def compress_bulk(data, offsets, sym_val, sym_len, byte_code, short_code, bucket_start, bucket_syms,
                  out, out_offsets):  # pragma: no cover - compiled
    """Compress every value; ``out`` needs ``2 * len(data)`` bytes.  Returns bytes written."""
    n = offsets.shape[0] - 1
    o = 0
    out_offsets[0] = 0
    for s in range(n):
        cur = offsets[s]
        end = offsets[s + 1]
        word, avail = _load(data, cur, end)
        while cur < end:
            c, ln = _match(word, avail, sym_val, sym_len, byte_code, short_code, bucket_start, bucket_syms)
            if c < 0:
                out[o] = 255
                out[o + 1] = np.uint8(word & np.uint64(0xFF))
                o += 2
            else:
                out[o] = c
                o += 1
            word, avail = _advance(data, word, avail, cur, ln, end)
            cur += ln
        out_offsets[s + 1] = o
    return o
