"""Numba kernels for 2.1/2.2 structural decoding (full-zip unzipping, slice gathering).

Each kernel fills preallocated output arrays and returns counts; callers check inputs and
output sizes in Python first.  Plain-NumPy references live in ``tests/v21/test_repdef_kernels.py``.
"""

from __future__ import annotations

import numpy as np
from lancejit.encoding.kernels.jit import njit

from lancejit.encoding.kernels.bitpack import unpack_blocks
from lancejit.encoding.kernels.scan import copy_range

#: Error codes returned by :func:`fullzip_unzip` (0 = ok).
UNZIP_OK = 0
UNZIP_TRUNCATED = 1
UNZIP_OVERFLOW = 2


@njit(cache=True, nogil=True, specs=(
    "{ro(u1[::1])|u1[::1]}, i8, i8, i8, i8, i8, u2[::1], u2[::1], i8[::1], i8[::1]",
))
def fullzip_unzip(
    data,  # uint8[:]  zipped bytes of whole rows
    cw_bytes,  # 0, 1, 2 or 4: control word width
    bits_def,  # def bits inside the control word (rep in the bits above)
    fixed_bytes,  # >= 0: bytes per visible value; -1: variable width
    len_bytes,  # 4 or 8: width of the length prefix (variable width)
    max_visible,  # page def levels <= this store a value
    out_rep,  # uint16[:] capacity >= levels
    out_def,  # uint16[:]
    out_start,  # int64[:] capacity >= values: byte start of each stored value in data
    out_len,  # int64[:] byte length of each stored value
):
    """Walk full-zip data: per level a control word, then (if stored) the value bytes.

    Variable width: a value is stored for def == 0 as ``len_bytes`` length + bytes; other
    visible levels get a zero-length placeholder.  Returns ``(levels, values, error_code)``.
    """
    n = data.shape[0]
    pos = 0
    nl = 0
    nv = 0
    def_mask = (1 << bits_def) - 1
    while pos < n:
        if nl >= out_rep.shape[0]:
            return nl, nv, UNZIP_OVERFLOW
        word = 0
        if cw_bytes > 0:
            if pos + cw_bytes > n:
                return nl, nv, UNZIP_TRUNCATED
            for b in range(cw_bytes):
                word |= np.int64(data[pos + b]) << (8 * b)
            pos += cw_bytes
        rep = word >> bits_def
        d = word & def_mask
        out_rep[nl] = rep
        out_def[nl] = d
        nl += 1
        if d <= max_visible:
            if nv >= out_start.shape[0]:
                return nl, nv, UNZIP_OVERFLOW
            if fixed_bytes >= 0:
                if pos + fixed_bytes > n:
                    return nl, nv, UNZIP_TRUNCATED
                out_start[nv] = pos
                out_len[nv] = fixed_bytes
                pos += fixed_bytes
            elif d == 0:
                if pos + len_bytes > n:
                    return nl, nv, UNZIP_TRUNCATED
                length = np.int64(0)
                for b in range(len_bytes):
                    length |= np.int64(data[pos + b]) << (8 * b)
                pos += len_bytes
                if length < 0 or length > n - pos:
                    return nl, nv, UNZIP_TRUNCATED
                out_start[nv] = pos
                out_len[nv] = length
                pos += length
            else:
                out_start[nv] = pos
                out_len[nv] = 0
            nv += 1
    return nl, nv, UNZIP_OK


@njit(cache=True, nogil=True, specs=("{ro(u1[::1])|u1[::1]}, i8[::1], i8[::1], u1[::1]",))
def gather_slices(src, starts, lens, out):
    """Concatenate ``src[starts[i]:starts[i]+lens[i]]`` into ``out`` (sized ``lens.sum()``).
    Returns the bytes written, or -1 (nothing more copied) at the first slice outside ``src``
    or past the end of ``out``."""
    pos = 0
    for i in range(starts.shape[0]):
        s = starts[i]
        ln = lens[i]
        if s < 0 or ln < 0 or s + ln > src.shape[0] or pos + ln > out.shape[0]:
            return -1
        copy_range(out, pos, src, s, ln)  # (a slice assignment copies an order of magnitude slower)
        pos += ln
    return pos


@njit(cache=True, nogil=True, specs=(
    "{ro(u1[::1])|u1[::1]}, i8[::1], i8[::1], i8[::1], i8, i8[::1], u1[::1]",
))
def gather_variable_chunks(data, offs, sizes, counts, width, out_offsets, out_data):
    """Join mini-block Variable buffers (one per chunk) into one offsets/data pair.

    Chunk ``k``'s buffer is ``data[offs[k]:offs[k]+sizes[k]]`` and starts with ``counts[k]+1``
    little-endian offsets of ``width`` (4 or 8) bytes that are positions inside that buffer.
    Fills ``out_offsets`` (sum(counts)+1 entries, from 0) and ``out_data`` (capacity
    sum(sizes)).  Returns ``(bytes_written, error)``; error 1 = offsets out of order/bounds.
    """
    pos = 0
    vi = 0
    out_offsets[0] = 0
    for k in range(offs.shape[0]):
        base = offs[k]
        size = sizes[k]
        c = counts[k]
        if (c + 1) * width > size or base < 0 or base + size > data.shape[0]:
            return pos, 1
        prev = np.int64(-1)
        first = np.int64(0)
        for i in range(c + 1):
            o = np.int64(0)
            p = base + i * width
            for b in range(width):
                o |= np.int64(data[p + b]) << (8 * b)
            if o < (c + 1) * width or o > size or (prev >= 0 and o < prev) or o < 0:
                return pos, 1
            if i == 0:
                first = o
            else:
                out_offsets[vi + i] = pos + (o - first)
            prev = o
        ln = prev - first
        if pos + ln > out_data.shape[0]:
            return pos, 1
        copy_range(out_data, pos, data, base + first, ln)
        pos += ln
        vi += c
    return pos, 0


@njit(cache=True, nogil=True, specs=(
    "ro(u2[::1]), i8[::1], i8[::1], i8[::1], u2[::1], u2[::1]",
    "ro(u4[::1]), i8[::1], i8[::1], i8[::1], u4[::1], u4[::1]",
    "ro(u8[::1]), i8[::1], i8[::1], i8[::1], u8[::1], u8[::1]",
))
def unpack_inline_chunks(words, starts, ends, counts, out, tmp):
    """Inline-bitpacked mini-block chunks -> values, all chunks in one call.

    ``words``: the run's bytes viewed as T-bit words; chunk ``k``'s value buffer is
    ``words[starts[k]:ends[k]]`` (word indices): one word holding the bit width W, then
    ``(1024 // T) * W`` packed words.  ``counts[k]`` (<= 1024) values are written to ``out``
    back to back; ``tmp`` holds 1024 words.  Returns 0, or 1 when a width or size is invalid.
    """
    t = words.itemsize * 8
    lanes = 1024 // t
    pos = 0
    for k in range(starts.shape[0]):
        s = starts[k]
        if s >= ends[k] or counts[k] > 1024:
            return 1
        width = np.int64(words[s])
        if width > t:
            return 1
        nwords = lanes * width
        if s + 1 + nwords > ends[k]:
            return 1
        c = counts[k]
        if c == 1024:  # a full chunk goes straight to out
            unpack_blocks(words[s + 1 : s + 1 + nwords], width, 1, out[pos : pos + 1024])
        else:
            unpack_blocks(words[s + 1 : s + 1 + nwords], width, 1, tmp)
            out[pos : pos + c] = tmp[:c]
        pos += c
    return 0


@njit(cache=True, nogil=True, specs=(
    "ro(u2[::1]), i8[::1], i8[::1], i8[::1], i8, u2[::1], u2[::1]",
))
def unpack_ool_chunks(words, starts, ends, counts, width, out, tmp):
    """Out-of-line bit-packed level buffers (one per chunk, bit width ``width``) -> values.

    Chunk ``k``'s buffer is ``words[starts[k]:ends[k]]``: whole 1024-value blocks, then a
    partial tail packed as a padded block or stored raw (told apart by the buffer length).
    ``counts[k]`` values go to ``out`` back to back; ``tmp`` holds 1024 words.
    Returns 0, or 1 when a buffer is too short.
    """
    t = words.itemsize * 8
    wpb = (1024 // t) * width
    pos = 0
    for k in range(starts.shape[0]):
        n = counts[k]
        s = starts[k]
        total_words = ends[k] - s
        whole = n // 1024
        tail = n - whole * 1024
        raw_tail_words = whole * wpb + tail
        tail_raw = tail > 0 and total_words == raw_tail_words
        nblocks = whole + (1 if (tail > 0 and not tail_raw) else 0)
        need = raw_tail_words if tail_raw else nblocks * wpb
        if need > total_words:
            return 1
        if whole > 0:  # whole blocks go straight to out
            unpack_blocks(words[s : s + whole * wpb], width, whole, out[pos : pos + whole * 1024])
        if tail > 0:
            o = pos + whole * 1024
            if tail_raw:
                out[o : o + tail] = words[s + whole * wpb : s + whole * wpb + tail]
            else:
                unpack_blocks(words[s + whole * wpb : s + (whole + 1) * wpb], width, 1, tmp)
                out[o : o + tail] = tmp[:tail]
        pos += n
    return 0
