"""FSST decoding kernels: a size pass (decoded length of every value, with validation) and a
fill pass (write decoded bytes into a preallocated buffer).

Code stream rule: byte ``c != 255`` emits symbol ``c`` (``sym_lens[c]`` bytes, taken from
``sym_bytes[c, :len]``); ``255`` (escape) emits the following byte literally.
Value ``i`` of the input is ``codes[offsets[i]:offsets[i+1]]`` (half-open, offsets int64).
Callers validate ``offsets`` (monotonic, within ``codes``) before calling.
"""

from __future__ import annotations

import numpy as np
from lancejit.encoding.kernels.jit import njit, uint64

#: The escape code: the next byte is a literal.
FSST_ESCAPE = 255


@njit(cache=True, nogil=True)
def _length_tables(sym_lens, n_symbols):  # pragma: no cover
    """Per code: the decoded length it adds (uint64) and whether it is a valid symbol code."""
    adv = np.zeros(256, np.uint64)
    ok = np.zeros(256, np.bool_)
    for c in range(min(n_symbols, 255)):
        adv[c] = sym_lens[c]
        ok[c] = True
    return adv, ok


@njit(cache=True, nogil=True, inline="always")
def _value_length(codes, pos, end, adv, ok):  # pragma: no cover
    """Decoded byte length of ``codes[pos:end]`` (uint64 positions) and whether it is well formed
    (no code outside the table, no dangling escape).  (Unsigned positions and a 256-entry table
    of valid codes keep the inner loop to one predictable branch.)"""
    one = uint64(1)
    total = uint64(0)
    while pos < end:
        c = codes[pos]
        if ok[c]:
            total += adv[c]
            pos += one
        elif c == 255 and pos + one < end:
            total += one
            pos += uint64(2)
        else:
            return total, False
    return total, True


@njit(cache=True, nogil=True, inline="always")
def _store8(out_data, o, w):  # pragma: no cover
    """Write the 8 little-endian bytes of uint64 ``w`` at ``out_data[o:o+8]``."""
    mask = uint64(0xFF)
    out_data[o] = w & mask
    out_data[o + uint64(1)] = (w >> uint64(8)) & mask
    out_data[o + uint64(2)] = (w >> uint64(16)) & mask
    out_data[o + uint64(3)] = (w >> uint64(24)) & mask
    out_data[o + uint64(4)] = (w >> uint64(32)) & mask
    out_data[o + uint64(5)] = (w >> uint64(40)) & mask
    out_data[o + uint64(6)] = (w >> uint64(48)) & mask
    out_data[o + uint64(7)] = (w >> uint64(56)) & mask


@njit(cache=True, nogil=True)
def _all_symbol_words(sym_bytes, sym_lens):  # pragma: no cover
    """Every table row as one little-endian 64-bit word and its length (no validity check)."""
    words = np.zeros(256, np.uint64)
    lens = np.zeros(256, np.uint64)
    for c in range(min(sym_bytes.shape[0], 256)):
        w = uint64(0)
        for k in range(min(sym_bytes.shape[1], 8)):
            w |= uint64(sym_bytes[c, k]) << uint64(8 * k)
        words[c] = w
        lens[c] = sym_lens[c]
    return words, lens


@njit(cache=True, nogil=True, inline="always")
def _decode_checked_value(codes, pos, end, words, lens, out_data, o, cap):  # pragma: no cover
    """Decode the validated ``codes[pos:end]`` (uint64 positions) at ``out_data[o]``; returns the
    new output position.  Each symbol is one 8-byte store while ``o + 8 <= cap``, byte by byte
    near the end of ``out_data``."""
    one = uint64(1)
    two = uint64(2)
    eight = uint64(8)
    mask = uint64(0xFF)
    while pos < end:
        c = codes[pos]
        if c == 255:
            out_data[o] = codes[pos + one]
            o += one
            pos += two
        else:
            n = lens[c]
            w = words[c]
            if o + eight <= cap:
                _store8(out_data, o, w)
            else:
                k = uint64(0)
                while k < n:
                    out_data[o + k] = (w >> (eight * k)) & mask
                    k += one
            o += n
            pos += one
    return o


@njit(cache=True, nogil=True, specs=("ro(u1[::1]), ro(i8[::1]), i8, ro(u1[::1]), i8, i8[::1]",))
def fsst_decoded_lengths(codes, offsets, num_values, sym_lens, n_symbols, out_lengths):  # pragma: no cover
    """Fill ``out_lengths[i]`` with the decoded byte length of value i.

    Returns -1 if every value is well formed, else the index of the first value that uses a
    code ``>= n_symbols`` or ends with a dangling escape byte.  (Unsigned positions and a
    256-entry table of valid codes keep the inner loop to one predictable branch.)
    """
    return fsst_decoded_lengths_at(codes, offsets[:num_values], offsets[1 : num_values + 1], sym_lens, n_symbols,
                                   out_lengths)


@njit(cache=True, nogil=True, specs=(
    "ro(u1[::1]), ro(i8[::1]), i8, ro(u1[:, ::1]), ro(u1[::1]), ro(i8[::1]), u1[::1]",
))
def fsst_decode(codes, offsets, num_values, sym_bytes, sym_lens, out_offsets, out_data):  # pragma: no cover
    """Decode values into ``out_data`` at ``out_offsets`` (computed from the size pass;
    ``out_offsets[i]`` is where value i starts, non-decreasing).  The input must have passed
    :func:`fsst_decoded_lengths`.

    Each symbol is written as one 8-byte word while at least 8 bytes of ``out_data`` remain
    (the bytes past the symbol are overwritten by the values that follow), byte by byte near
    the end.  Indices are unsigned so no negative-index wraparound code is generated.
    """
    fsst_decode_at(codes, offsets[:num_values], offsets[1 : num_values + 1], sym_bytes, sym_lens, out_offsets, out_data)


@njit(cache=True, nogil=True)
def fsst_decoded_lengths_at(codes, starts, ends, sym_lens, n_symbols, out_lengths):  # pragma: no cover
    """:func:`fsst_decoded_lengths` for selected values: value i is ``codes[starts[i]:ends[i]]``
    (half-open; callers check ``0 <= starts[i] <= ends[i] <= len(codes)``).

    Lets a take decode only the values it returns instead of whole chunks.  Returns -1, or the
    index of the first malformed value.
    """
    adv, ok = _length_tables(sym_lens, n_symbols)
    for i in range(starts.shape[0]):
        total, good = _value_length(codes, uint64(starts[i]), uint64(ends[i]), adv, ok)
        if not good:
            return i
        out_lengths[i] = total
    return -1


@njit(cache=True, nogil=True)
def fsst_decode_at(codes, starts, ends, sym_bytes, sym_lens, out_offsets, out_data):  # pragma: no cover
    """:func:`fsst_decode` for selected values ``codes[starts[i]:ends[i]]``, written at
    ``out_offsets[i]`` (non-decreasing, from :func:`fsst_decoded_lengths_at`)."""
    words, lens = _all_symbol_words(sym_bytes, sym_lens)
    cap = uint64(out_data.shape[0])
    for i in range(starts.shape[0]):
        pos, end = uint64(starts[i]), uint64(ends[i])
        _decode_checked_value(codes, pos, end, words, lens, out_data, uint64(out_offsets[i]), cap)


# ---------------------------------------------------------------------------------------------
# Mini-block chunks: locate the selected values' codes, then decode them in one pass.

#: Error codes of :func:`variable_chunk_spans`.
SPANS_OK = 0
SPANS_BAD_OFFSETS = 1


@njit(cache=True, nogil=True)
def _read_le(data, p, width):  # pragma: no cover
    """Little-endian unsigned ``width``-byte (4 or 8) integer at ``data[p]`` (``p`` uint64)."""
    v = uint64(0)
    for t in range(width):
        v |= uint64(data[p + uint64(t)]) << uint64(8 * t)
    return v


@njit(cache=True, nogil=True, specs=(
    "ro(u1[::1]), ro(i8[::1]), ro(i8[::1]), ro(i8[::1]), i8, ro(i8[::1]), b1, i8[::1], i8[::1]",
))
def variable_chunk_spans(data, offs, sizes, counts, width, pick, use_pick, out_starts, out_ends):  # pragma: no cover
    """Absolute byte spans of values stored as mini-block Variable buffers, without copying.

    Chunk ``k``'s buffer is ``data[offs[k]:offs[k]+sizes[k]]`` (callers check it lies in
    ``data``); it starts with ``counts[k]+1`` little-endian offsets of ``width`` (4 or 8) bytes,
    positions inside that buffer.  Value ``v`` counts across the chunks in order.  Fills
    ``out_starts[j]``/``out_ends[j]`` (half-open, positions in ``data``) for value ``pick[j]``
    (sorted, non-decreasing, ``< counts.sum()``) when ``use_pick``, else for every value ``j``
    (``out_starts`` sized ``counts.sum()``).  Returns :data:`SPANS_OK` or
    :data:`SPANS_BAD_OFFSETS` (an offset before the offsets table, past the buffer, or
    decreasing).
    """
    w = uint64(width)
    nchunks = offs.shape[0]
    if not use_pick:
        j = 0
        for k in range(nchunks):
            c = uint64(counts[k])
            size = uint64(sizes[k])
            base = uint64(offs[k])
            lo = (c + uint64(1)) * w
            if lo > size:
                return SPANS_BAD_OFFSETS
            p = base
            a = _read_le(data, p, width)
            if a < lo or a > size:
                return SPANS_BAD_OFFSETS
            for _ in range(c):
                p += w
                b = _read_le(data, p, width)
                if b < a or b > size:
                    return SPANS_BAD_OFFSETS
                out_starts[j] = base + a
                out_ends[j] = base + b
                a = b
                j += 1
        return SPANS_OK
    k = 0
    vbase = 0
    for j in range(pick.shape[0]):
        v = pick[j]
        while k < nchunks and v >= vbase + counts[k]:
            vbase += counts[k]
            k += 1
        if k >= nchunks or v < vbase:
            return SPANS_BAD_OFFSETS
        c = uint64(counts[k])
        size = uint64(sizes[k])
        base = uint64(offs[k])
        lo = (c + uint64(1)) * w
        if lo > size:
            return SPANS_BAD_OFFSETS
        p = base + uint64(v - vbase) * w
        a = _read_le(data, p, width)
        b = _read_le(data, p + w, width)
        if a < lo or b < a or b > size:
            return SPANS_BAD_OFFSETS
        out_starts[j] = base + a
        out_ends[j] = base + b
    return SPANS_OK


@njit(cache=True, nogil=True)
def _symbol_words(sym_bytes, sym_lens, n_symbols):  # pragma: no cover
    """Each code's symbol as one little-endian 64-bit word, and its length (0 = invalid)."""
    words = np.zeros(256, np.uint64)
    lens = np.zeros(256, np.uint64)
    for c in range(min(n_symbols, 255)):
        w = uint64(0)
        for k in range(8):
            w |= uint64(sym_bytes[c, k]) << uint64(8 * k)
        words[c] = w
        lens[c] = sym_lens[c]  # 1..8 (checked when the table is parsed); 0 = invalid code
    return words, lens


@njit(cache=True, nogil=True, inline="always")
def _decode_value(codes, pos, end, words, lens, out_data, o):  # pragma: no cover
    """Decode ``codes[pos:end]`` (uint64 positions) at ``out_data[o]``; returns the new output
    position and whether the value was well formed.  Every symbol is one 8-byte store
    (callers leave 8 bytes of slack after the largest possible output)."""
    one = uint64(1)
    two = uint64(2)
    while pos < end:
        c = codes[pos]
        n = lens[c]
        if n != uint64(0):
            _store8(out_data, o, words[c])
            o += n
            pos += one
        elif c == 255 and pos + one < end:
            out_data[o] = codes[pos + one]
            o += one
            pos += two
        else:
            return o, False
    return o, True


@njit(cache=True, nogil=True, specs=(
    "ro(u1[::1]), ro(i8[::1]), ro(i8[::1]), ro(u1[:, ::1]), ro(u1[::1]), i8, i8[::1], u1[::1]",
))
def fsst_decode_spans(codes, starts, ends, sym_bytes, sym_lens, n_symbols, out_offsets, out_data):  # pragma: no cover
    """Validate and decode ``codes[starts[i]:ends[i]]`` for every i in ONE pass.

    ``out_data`` must hold ``max symbol length * sum(ends - starts) + 8`` bytes (each code
    byte expands to at most one symbol; 8 bytes of slack let every symbol be written as one
    overlapping 8-byte store).  Fills ``out_offsets`` (``len(starts) + 1`` entries from 0).
    Returns ``(bytes written, -1)`` or ``(0, i)`` for the first value using a code
    ``>= n_symbols`` or ending in a dangling escape.
    """
    words, lens = _symbol_words(sym_bytes, sym_lens, n_symbols)
    o = uint64(0)
    out_offsets[0] = 0
    for i in range(starts.shape[0]):
        o, ok = _decode_value(codes, uint64(starts[i]), uint64(ends[i]), words, lens, out_data, o)
        if not ok:
            return np.int64(0), np.int64(i)
        out_offsets[i + 1] = o
    return np.int64(o), np.int64(-1)


#: :func:`fsst_decode_chunks` result for chunk offsets out of order or out of bounds.
FSST_BAD_OFFSETS = -2


@njit(cache=True, nogil=True, specs=(
    "ro(u1[::1]), ro(i8[::1]), ro(i8[::1]), ro(i8[::1]), i8, ro(u1[:, ::1]), ro(u1[::1]), i8, i8[::1], u1[::1]",
))
def fsst_decode_chunks(data, offs, sizes, counts, width, sym_bytes, sym_lens, n_symbols, out_offsets, out_data):  # pragma: no cover
    """Validate and decode every FSST value stored in mini-block Variable chunks, in one pass.

    Chunk layout as in :func:`variable_chunk_spans` (callers check every chunk lies inside
    ``data``).  ``out_data`` must hold ``max symbol length * sum(sizes) + 8`` bytes;
    ``out_offsets`` gets ``counts.sum() + 1`` entries from 0.  Returns ``(bytes written, -1)``,
    ``(0, i)`` for the first malformed value i, or ``(0, FSST_BAD_OFFSETS)``.
    """
    words, lens = _symbol_words(sym_bytes, sym_lens, n_symbols)
    w = uint64(width)
    o = uint64(0)
    out_offsets[0] = 0
    j = 0
    for k in range(offs.shape[0]):
        c = uint64(counts[k])
        size = uint64(sizes[k])
        base = uint64(offs[k])
        lo = (c + uint64(1)) * w
        if lo > size:
            return np.int64(0), np.int64(FSST_BAD_OFFSETS)
        p = base
        a = _read_le(data, p, width)
        if a < lo or a > size:
            return np.int64(0), np.int64(FSST_BAD_OFFSETS)
        for _ in range(c):
            p += w
            b = _read_le(data, p, width)
            if b < a or b > size:
                return np.int64(0), np.int64(FSST_BAD_OFFSETS)
            o, ok = _decode_value(data, base + a, base + b, words, lens, out_data, o)
            if not ok:
                return np.int64(0), np.int64(j)
            j += 1
            out_offsets[j] = o
            a = b
    return np.int64(o), np.int64(-1)
