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
from lancejit.encoding.kernels.jit import njit

from lancejit.encoding.kernels.enc_hll import fmix64

BUCKETS = 1024


@njit(cache=True, nogil=True)
def _bucket(prefix3):  # pragma: no cover - compiled
    h = prefix3 * np.uint64(2971215073)
    return np.int64((h ^ (h >> np.uint64(15))) & np.uint64(1023))


@njit(cache=True, nogil=True, specs=("u8[::1], i8[::1], i8, i8[::1], i8[::1], i8[::1], i8[::1]",))
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


@njit(cache=True, nogil=True, specs=(
    "u1[::1], i8[::1], u8[::1], i8[::1], i8[::1], i8[::1], i8[::1], i8[::1], i8[::1], i8[:, ::1], b1",
))
def compress_count(data, offsets, sym_val, sym_len, byte_code, short_code, bucket_start, bucket_syms,
                   count1, count2, count_pairs):  # pragma: no cover - compiled
    """Compress the sample, counting code (count1) and code-pair (count2) frequencies.

    Training codes: escaped byte b -> b, symbol i -> 256 + i.  After a symbol longer than one
    byte, its first byte is counted too (in count1, and as a follower in count2 when
    ``count_pairs``).  Returns the gain (bytes saved, an escape costing one).  One loop, the
    matching written out as in :func:`compress_bulk` (kept inline on purpose: a shared
    ``inline="always"`` match helper made both kernels several times slower).
    """
    tab2 = np.empty(65536, np.int32)
    short_table(byte_code, short_code, tab2)
    has_long = bucket_start[BUCKETS] > 0
    gain = 0
    n = offsets.shape[0] - 1
    for s in range(n):
        start = offsets[s]
        end = offsets[s + 1]
        cur = start
        prev = -1
        while cur < end:
            avail = end - cur
            if avail > 8:
                avail = 8
            word = np.uint64(0)
            for k in range(avail):
                word |= np.uint64(data[cur + k]) << np.uint64(8 * k)
            code = -1
            ln = 1
            if has_long and avail >= 3:
                b = _bucket(word & np.uint64(0xFFFFFF))
                for j in range(bucket_start[b], bucket_start[b + 1]):
                    i = bucket_syms[j]
                    sl = sym_len[i]
                    if sl <= avail:
                        if sl == 8:
                            m = word
                        else:
                            m = word & ((np.uint64(1) << np.uint64(8 * sl)) - np.uint64(1))
                        if m == sym_val[i]:
                            code = i
                            ln = sl
                            break
            if code < 0:
                if avail >= 2:
                    t = tab2[np.int64(word & np.uint64(0xFFFF))]
                    if t >= 0:
                        code = t & 0xFFFF
                        ln = t >> 16
                else:
                    code = byte_code[np.int64(word & np.uint64(0xFF))]
            b0 = np.int64(word & np.uint64(0xFF))
            if code < 0:
                tcode = b0
                gain -= 1
            else:
                tcode = 256 + code
                gain += ln - 1
            if prev >= 0:
                count1[prev] += 1
                if prev >= 256 and sym_len[prev - 256] != 1:
                    count1[b0] += 1
                if count_pairs:
                    count2[prev, tcode] += 1
                    if ln > 1:
                        count2[prev, b0] += 1
            cur += ln
            prev = tcode
        if prev >= 0:
            count1[prev] += 1
    return gain


@njit(cache=True, nogil=True)
def short_table(byte_code, short_code, tab2):  # pragma: no cover - compiled
    """Fill ``tab2[65536]`` (int32): for a 2-byte little-endian prefix, the longest symbol of
    length <= 2 matching it as ``code | length << 16``, or -1 (escape)."""
    for p in range(65536):
        c = short_code[p]
        if c >= 0:
            tab2[p] = np.int32(c | (2 << 16))
        else:
            c1 = byte_code[p & 255]
            if c1 >= 0:
                tab2[p] = np.int32(c1 | (1 << 16))
            else:
                tab2[p] = np.int32(-1)


@njit(cache=True, nogil=True)
def load_word(words, pos):  # pragma: no cover - compiled
    """The 8 bytes at byte position ``pos`` of ``words`` (little endian, unaligned): two aligned
    loads, no branch (``words`` needs one word past the last byte read)."""
    q = pos >> 3
    r = np.uint64(8 * (pos & 7))
    lo = words[q]
    hi = words[q + 1]
    return (lo >> r) | ((hi << np.uint64(1)) << (np.uint64(63) - r))


#: Slots of the exact-match table of the symbols of 3..8 bytes (at least 4x the 255 symbols).
LONG_BITS = 10
LONG_SLOTS = 1 << LONG_BITS


@njit(cache=True, nogil=True)
def _long_slot(v, ln):  # pragma: no cover - compiled
    """Slot of the symbol (value ``v``, ``ln`` bytes): the top bits of one multiplication (a
    symbol's bytes and length are all distinct, so any spread is enough for open addressing)."""
    return np.int64(((v ^ (np.uint64(ln) << np.uint64(59))) * np.uint64(0x9E3779B97F4A7C15))
                    >> np.uint64(64 - LONG_BITS))


@njit(cache=True, nogil=True, specs=("u8[::1], i8[::1], i8, u1[::1], u8[::1], i8[::1], i8[::1]",))
def build_long_table(sym_val, sym_len, n_sym, lens_mask, slot_val, slot_len, slot_code):  # pragma: no cover
    """Fill the exact-match table of the symbols of 3..8 bytes: ``slot_*`` (``LONG_SLOTS``
    entries, ``slot_len`` 0-filled: empty) by open addressing on (value, length), and
    ``lens_mask[BUCKETS]``: bit ``k - 1`` set when a symbol of ``k`` bytes has its 3-byte prefix
    in that bucket (:func:`_bucket`)."""
    for i in range(n_sym):
        ln = sym_len[i]
        if ln < 3:
            continue
        v = sym_val[i]
        lens_mask[_bucket(v & np.uint64(0xFFFFFF))] |= np.uint8(1 << (ln - 1))
        s = _long_slot(v, ln)
        while slot_len[s] != 0:
            s = (s + 1) & (LONG_SLOTS - 1)
        slot_val[s] = v
        slot_len[s] = ln
        slot_code[s] = i


@njit(cache=True, nogil=True, specs=(
    "u8[::1], i8[::1], i8[::1], i8[::1], u1[::1], u8[::1], i8[::1], i8[::1], u1[::1], i8[::1]",
))
def compress_bulk(words, offsets, byte_code, short_code, lens_mask, slot_val, slot_len, slot_code,
                  out, out_offsets):  # pragma: no cover - compiled
    """Compress every value (greedy longest match) of the bytes held by ``words`` (the data
    padded with at least 8 zero bytes, viewed as uint64: :func:`padded_words`); ``out`` needs
    ``2 * len(data)`` bytes and ``out_offsets`` ``len(offsets)`` entries.  Returns bytes written.

    Each step loads the next 8 bytes as one word (:func:`load_word`); the symbols of 3..8 bytes
    are looked up by exact match (:func:`build_long_table`), longest first, only for the lengths
    present under the word's 3-byte prefix (many symbols may share one: ``str-1``, ``str-2``...);
    the symbol of 1 or 2 bytes comes from one lookup in the combined 2-byte table
    (:func:`short_table`).
    """
    tab2 = np.empty(65536, np.int32)
    short_table(byte_code, short_code, tab2)
    n = offsets.shape[0] - 1
    o = 0
    out_offsets[0] = 0
    for s in range(n):
        cur = offsets[s]
        end = offsets[s + 1]
        while cur < end:
            avail = end - cur
            word = load_word(words, cur)
            if avail < 8:
                word &= (np.uint64(1) << np.uint64(8 * avail)) - np.uint64(1)
            code = -1
            ln = 1
            if avail >= 3:
                lens = np.int64(lens_mask[_bucket(word & np.uint64(0xFFFFFF))])
                if lens != 0:
                    top = 8 if avail > 8 else avail
                    for sl in range(top, 2, -1):
                        if (lens >> (sl - 1)) & 1:
                            if sl == 8:
                                m = word
                            else:
                                m = word & ((np.uint64(1) << np.uint64(8 * sl)) - np.uint64(1))
                            k = _long_slot(m, sl)
                            while slot_len[k] != 0:
                                if slot_len[k] == sl and slot_val[k] == m:
                                    code = slot_code[k]
                                    ln = sl
                                    break
                                k = (k + 1) & (LONG_SLOTS - 1)
                            if code >= 0:
                                break
            if code < 0:
                if avail >= 2:
                    t = tab2[np.int64(word & np.uint64(0xFFFF))]
                    if t >= 0:
                        code = t & 0xFFFF
                        ln = t >> 16
                else:
                    code = byte_code[np.int64(word & np.uint64(0xFF))]
            if code < 0:
                out[o] = 255
                out[o + 1] = np.uint8(word & np.uint64(0xFF))
                o += 2
            else:
                out[o] = code
                o += 1
            cur += ln
        out_offsets[s + 1] = o
    return o


def padded_words(data: np.ndarray) -> np.ndarray:
    """``data`` (uint8) copied into a zero-padded buffer viewed as uint64 (at least 8 bytes past
    the end, whole words), as :func:`compress_bulk` reads it."""
    n = data.shape[0]
    words = np.empty(n // 8 + 2, dtype=np.uint64)
    words[-2:] = 0
    words.view(np.uint8)[:n] = data
    return words


@njit(cache=True, nogil=True, specs=(
    "i8[::1], i8[:, ::1], u8[::1], i8[::1], i8, i8, i8, b1, u8[::1], i8[::1], i8[::1]",
))
def gather_candidates(count1, count2, code_val, code_len, ncodes, terminator, min_count, pairs,
                      cand_val, cand_len, cand_gain):  # pragma: no cover - compiled
    """List the candidate symbols of one training round, with their gains.

    Codes ``0 .. ncodes`` (half-open) are described by ``code_val`` / ``code_len``.  A code with
    ``count1`` boosted (x8 for single bytes) at least ``min_count`` gives itself (gain boosted
    count x length); when ``pairs``, each following code with ``count2 >= max(min_count, 1)``
    gives the concatenation (cut at 8 bytes; gain count x length) -- unless either starts with
    the terminator byte, or the first is already 8 bytes long.  Candidates are written in that
    order (codes ascending, then followers ascending) to ``cand_*`` (``ncodes * (ncodes + 1)``
    entries); the same symbol may appear several times.  Returns the number written.
    """
    k = 0
    min2 = min_count if min_count > 1 else 1
    for p1 in range(ncodes):
        cnt1 = count1[p1]
        if cnt1 == 0:
            continue
        v1 = code_val[p1]
        l1 = code_len[p1]
        boosted = cnt1 * 8 if l1 == 1 else cnt1
        if boosted >= min_count:
            cand_val[k] = v1
            cand_len[k] = l1
            cand_gain[k] = boosted * l1
            k += 1
        if (v1 & np.uint64(0xFF)) == np.uint64(terminator) or not pairs or l1 == 8:
            continue
        for p2 in range(ncodes):
            c2 = count2[p1, p2]
            if c2 < min2:
                continue
            v2 = code_val[p2]
            if (v2 & np.uint64(0xFF)) == np.uint64(terminator):
                continue
            l2 = code_len[p2]
            l3 = l1 + l2
            if l3 > 8:
                l3 = 8
            v3 = v1 | (v2 << np.uint64(8 * l1))
            if l3 < 8:
                v3 = v3 & ((np.uint64(1) << np.uint64(8 * l3)) - np.uint64(1))
            cand_val[k] = v3
            cand_len[k] = l3
            cand_gain[k] = c2 * l3
            k += 1
    return k


@njit(cache=True, nogil=True, specs=("u8[::1], i8[::1], i8[::1], i8, u8[::1], i8[::1], i8[::1]",))
def merge_candidates(cand_val, cand_len, cand_gain, k, out_val, out_len, out_gain):  # pragma: no cover
    """Merge the first ``k`` candidates with equal (value, length): gains summed, each symbol
    kept at the position of its first occurrence.  Writes to ``out_*`` (``k`` entries); returns
    the number of distinct symbols."""
    size = 16
    while size < 2 * k:
        size *= 2
    mask = np.uint64(size - 1)
    slots = np.full(size, -1, dtype=np.int64)
    m = 0
    for i in range(k):
        v = cand_val[i]
        ln = cand_len[i]
        h = fmix64(v ^ (np.uint64(ln) << np.uint64(59)))
        s = np.int64(h & mask)
        while True:
            j = slots[s]
            if j < 0:
                slots[s] = m
                out_val[m] = v
                out_len[m] = ln
                out_gain[m] = cand_gain[i]
                m += 1
                break
            if out_val[j] == v and out_len[j] == ln:
                out_gain[j] += cand_gain[i]
                break
            s = (s + 1) & np.int64(size - 1)
    return m
