"""Numba kernels of the array take path (:mod:`lancejit.encoding.v21.take_index`).

A take over ``c`` columns of ``k`` rows is planned as ``c * k`` *items* (item ``j * k + i`` is
row ``rows[i]`` of column ``j``) over one table of *segments*: a mini-block chunk (its whole
byte range is read) or a full-zip page of fixed-width rows (one row's bytes are read).
Segment ``g`` covers keys ``[seg_key[g], seg_key[g + 1])`` where a column's keys are its rows
shifted by the column's ``col_base``.  Byte ranges are half-open.

Every kernel fills preallocated arrays and returns an error code (0 = ok) or a count; the
callers check shapes in Python.  NumPy references: ``tests/v21/test_take_index.py``.
"""

from __future__ import annotations

import numpy as np

from lancejit.encoding.kernels.bitpack import unpack_blocks
from lancejit.encoding.kernels.fsst import _decode_value
from lancejit.encoding.kernels.jit import njit
from lancejit.encoding.kernels.layouts import TAKE_BAD_CHUNK, TAKE_BAD_OFFSETS, TAKE_BAD_WIDTH, TAKE_OK


@njit(cache=True, nogil=True, inline="always")
def _segment_of(seg_key, lo, hi, key):  # pragma: no cover - compiled
    """The last segment ``g`` in ``[lo, hi)`` with ``seg_key[g] <= key`` (binary search)."""
    while lo < hi:
        mid = (lo + hi) >> 1
        if seg_key[mid] <= key:
            lo = mid + 1
        else:
            hi = mid
    return lo - 1


@njit(cache=True, nogil=True, specs=(
    "i8[::1], i8[::1], i8[::1], i8[::1], i8[::1], i8[::1], i8[::1], i8[::1], i8[::1], i8[:, ::1]",
))
def plan_take(seg_key, seg_b0, seg_stride, seg_len, col_base, rows, item_seg, item_in, item_pos,
              ranges):  # pragma: no cover - compiled
    """Map every item to its segment and byte range; dedupe the ranges.

    Fills, per item ``t``: ``item_seg`` (segment), ``item_in`` (row inside the segment) and
    ``item_pos`` (where the item's range starts in the concatenation of the returned ranges);
    and the unique ranges ``ranges[:, 0]``/``ranges[:, 1]`` sorted by start (capacity ``c * k``).
    Returns the number of ranges.  Callers check ``0 <= rows < num_rows``.
    """
    ncols = col_base.shape[0]
    k = rows.shape[0]
    n = ncols * k
    nseg = seg_key.shape[0]
    starts = np.empty(n, dtype=np.int64)
    for j in range(ncols):
        base = col_base[j]
        for i in range(k):
            key = base + rows[i]
            g = _segment_of(seg_key, 0, nseg, key)
            t = j * k + i
            r = key - seg_key[g]
            item_seg[t] = g
            item_in[t] = r
            starts[t] = seg_b0[g] + r * seg_stride[g]
    order = np.argsort(starts, kind="mergesort")
    nr = 0
    pos = 0
    cur = 0
    prev = -1
    for q in range(n):
        t = order[q]
        s = starts[t]
        if s != prev:
            e = s + seg_len[item_seg[t]]
            ranges[nr, 0] = s
            ranges[nr, 1] = e
            cur = pos
            pos += e - s
            nr += 1
            prev = s
        item_pos[t] = cur
    return nr


@njit(cache=True, nogil=True, specs=(
    "i8[::1], i8[::1], i8[::1], i8[::1], i8[::1], i8[::1], i8[::1], i8[::1], i8[::1], i8, i8, i8[::1], i8[::1], i8[::1], i8[:, ::1]",
))
def plan_take_files(seg_key, seg_b0, seg_stride, seg_len, slot_lo, slot_hi, slot_span, row_slot, rows, ncols,
                    block, item_seg, item_in, item_pos, reads):  # pragma: no cover - compiled
    """:func:`plan_take` over the segment tables of several files at once, and the coalesced
    physical reads.

    The segments of file *slot* ``s`` are ``[slot_lo[s], slot_hi[s])`` of the ``seg_*`` arrays,
    keyed like one :class:`~lancejit.file.take_plan.TakeTable` (column ``j``'s keys are its rows
    plus ``j * slot_span[s]``).  Row ``i`` is row ``rows[i]`` of file ``row_slot[i]``; item
    ``t = j * k + i`` is that row of column ``j``.  Fills ``item_seg`` (index into the ``seg_*``
    arrays), ``item_in`` (row inside the segment) and ``item_pos`` (where the item's bytes start
    in the concatenation of the reads), and ``reads[:nr]`` = ``(slot, start, end, position)``:
    the items' byte ranges merged per file while the gap is at most ``block`` bytes (the
    scheduler's coalescing rule), sorted by slot then start, and where each read's bytes start
    in that concatenation.  Returns ``nr``.  Callers check
    ``0 <= rows[i] < rows of file row_slot[i]``."""
    k = rows.shape[0]
    n = ncols * k
    starts = np.empty(n, dtype=np.int64)
    slots = np.empty(n, dtype=np.int64)
    for j in range(ncols):
        for i in range(k):
            s = row_slot[i]
            key = j * slot_span[s] + rows[i]
            g = _segment_of(seg_key, slot_lo[s], slot_hi[s], key)
            t = j * k + i
            r = key - seg_key[g]
            item_seg[t] = g
            item_in[t] = r
            starts[t] = seg_b0[g] + r * seg_stride[g]
            slots[t] = s
    order = np.argsort(starts, kind="mergesort")
    order = order[np.argsort(slots[order], kind="mergesort")]
    nr = 0
    total = 0
    cur = -1
    run_s = 0
    run_e = 0
    base = 0
    for q in range(n):
        t = order[q]
        s = slots[t]
        st = starts[t]
        e = st + seg_len[item_seg[t]]
        if s == cur and st <= run_e + block:
            if e > run_e:
                run_e = e
        else:
            if cur >= 0:
                reads[nr, 0] = cur
                reads[nr, 1] = run_s
                reads[nr, 2] = run_e
                reads[nr, 3] = base
                nr += 1
                total += run_e - run_s
            cur = s
            run_s = st
            run_e = e
            base = total
        item_pos[t] = base + st - run_s
    if cur >= 0:
        reads[nr, 0] = cur
        reads[nr, 1] = run_s
        reads[nr, 2] = run_e
        reads[nr, 3] = base
        nr += 1
    return nr


@njit(cache=True, nogil=True, inline="always")
def _read_le(data, p, width):  # pragma: no cover - compiled
    v = np.int64(0)
    for b in range(width):
        v |= np.int64(data[p + b]) << (8 * b)
    return v


@njit(cache=True, nogil=True, inline="always")
def _value_buffer(data, p, length, szw, hdef):  # pragma: no cover - compiled
    """``(start, size)`` of the single value buffer of the chunk at ``data[p:p+length]``
    (no repetition: a u16 level count, a u16 def-buffer size when ``hdef``, one ``szw``-byte
    value-buffer size, padding to 8, the def buffer padded to 8, then the values), or
    ``(-1, 0)`` when the header does not fit."""
    head = 2 + 2 * hdef + szw
    voff = (head + 7) // 8 * 8
    if length < voff or p + length > data.shape[0]:
        return np.int64(-1), np.int64(0)
    if hdef:
        voff += (_read_le(data, p + 2, 2) + 7) // 8 * 8
    size = _read_le(data, p + 2 + 2 * hdef, szw)
    if voff + size > length:
        return np.int64(-1), np.int64(0)
    return p + voff, size


@njit(cache=True, nogil=True, inline="always")
def def_header(data, p, length, szw, width):  # pragma: no cover - compiled
    """``(start, u16 words)`` of the out-of-line def levels of the chunk at ``data[p:p+length]``
    (``szw``: its buffer-size width; ``width``: the levels' bit width), or ``(-1, 0)`` when the
    chunk is malformed."""
    head = (2 + 2 + szw + 7) // 8 * 8
    if length < head or p + length > data.shape[0] or width > 16:
        return np.int64(-1), np.int64(0)
    dsize = _read_le(data, p + 2, 2)
    if head + dsize > length:
        return np.int64(-1), np.int64(0)
    return p + head, dsize // 2


@njit(cache=True, nogil=True, inline="always")
def def_level(data, db, words, width, count, r, tmpw, tmpb, tmp, loaded):  # pragma: no cover - compiled
    """``(def level of value r, block now in tmp)`` of a chunk of ``count`` values whose levels
    (bit width ``width``) start at ``db`` (``words`` u16 words): whole 1024-level blocks, then a
    tail packed as a block or stored raw; ``loaded``: the block ``tmp`` holds (-1: none).
    ``tmpw`` (u16 words, ``64 * 16``) and ``tmpb`` (its bytes) stage a block.  The level is -1
    when the levels are too short."""
    wpb = 64 * width
    full = count // 1024
    tail = count - full * 1024
    b = r // 1024
    if tail > 0 and words == full * wpb + tail and b == full:
        return _read_le(data, db + 2 * (full * wpb + r - full * 1024), 2), loaded
    if b != loaded:
        if (b + 1) * wpb > words:
            return np.int64(-1), loaded
        src = db + 2 * b * wpb
        tmpb[:2 * wpb] = data[src:src + 2 * wpb]
        unpack_blocks(tmpw[:wpb], width, 1, tmp)
    return np.int64(tmp[r - b * 1024]), b


@njit(cache=True, nogil=True, specs=(
    "ro(u1[::1]), i8[::1], i8[::1], i8[::1], i8[::1], i8[::1], i8[::1], i8[::1], u2[::1], u1[::1], u2[::1], u1[::1]",
))
def take_valid(data, item_pos, item_in, item_seg, seg_szw, seg_len, seg_count, seg_def, tmpw, tmpb, tmp,
               out):  # pragma: no cover - compiled
    """Validity of every item (``out[t]`` 1 = valid) from its chunk's def levels: out-of-line
    bit-packed u16 levels of width ``seg_def[g]`` (0 = the chunk stores none: valid; read by
    :func:`def_header` / :func:`def_level`); level 0 is a valid item.  ``tmpw`` (u16 words,
    ``64 * 16``) and ``tmpb`` (its bytes) stage one block, ``tmp`` (1024 u16) receives it.
    Returns the number of nulls, or -1 for a malformed chunk."""
    nulls = 0
    for t in range(item_pos.shape[0]):
        g = item_seg[t]
        width = seg_def[g]
        if width == 0:
            out[t] = 1
            continue
        db, words = def_header(data, item_pos[t], seg_len[g], seg_szw[g], width)
        r = item_in[t]
        if db < 0 or r >= seg_count[g]:
            return -1
        level, _ = def_level(data, db, words, width, seg_count[g], r, tmpw, tmpb, tmp, -1)
        if level < 0:
            return -1
        if level == 0:
            out[t] = 1
        else:
            out[t] = 0
            nulls += 1
    return nulls


@njit(cache=True, nogil=True, specs=(
    "ro(u1[::1]), i8[::1], i8[::1], i8[::1], i8[::1], i8[::1], i8[::1], i8, u1[::1]",
))
def take_fixed(data, item_pos, item_in, item_seg, seg_szw, seg_len, seg_def, width, out):  # pragma: no cover
    """Copy the ``width``-byte value of every item to ``out[t * width:]``.

    Mini-block segments (``seg_szw > 0``): value ``item_in`` of the chunk's value buffer;
    full-zip segments (``seg_szw == 0``): the item's range is the value.
    """
    for t in range(item_pos.shape[0]):
        g = item_seg[t]
        p = item_pos[t]
        szw = seg_szw[g]
        if szw == 0:
            if p + width > data.shape[0]:
                return TAKE_BAD_CHUNK
            src = p
        else:
            vb, size = _value_buffer(data, p, seg_len[g], szw, min(seg_def[g], 1))
            off = item_in[t] * width
            if vb < 0 or off + width > size:
                return TAKE_BAD_CHUNK
            src = vb + off
        o = t * width
        for b in range(width):
            out[o + b] = data[src + b]
    return TAKE_OK


@njit(cache=True, nogil=True, inline="always")
def unpack_chunk(data, p, length, szw, hdef, count, tmpw, tmpb, tmp):  # pragma: no cover - compiled
    """Unpack the inline bit-packed chunk at ``data[p:p+length]`` (``count`` values) into
    ``tmp``: ``tmpw`` (T-bit words, 1025 of them) and ``tmpb`` (its bytes) stage its value
    buffer, one word holding the bit width W, then ``(1024 // T) * W`` packed words.  Returns
    an error code."""
    t_bits = tmpw.itemsize * 8
    ws = tmpw.itemsize
    lanes = 1024 // t_bits
    vb, size = _value_buffer(data, p, length, szw, hdef)
    if vb < 0 or size < ws or count > 1024:
        return TAKE_BAD_CHUNK
    width = _read_le(data, vb, ws)
    if width > t_bits:
        return TAKE_BAD_WIDTH
    nbytes = (1 + lanes * width) * ws
    if nbytes > size:
        return TAKE_BAD_CHUNK
    tmpb[:nbytes] = data[vb:vb + nbytes]
    unpack_blocks(tmpw[1: 1 + lanes * width], width, 1, tmp)
    return TAKE_OK


@njit(cache=True, nogil=True, specs=(
    "ro(u1[::1]), i8[::1], i8[::1], i8[::1], i8[::1], i8[::1], i8[::1], i8[::1], u2[::1], u1[::1], u2[::1], u2[::1]",
    "ro(u1[::1]), i8[::1], i8[::1], i8[::1], i8[::1], i8[::1], i8[::1], i8[::1], u4[::1], u1[::1], u4[::1], u4[::1]",
    "ro(u1[::1]), i8[::1], i8[::1], i8[::1], i8[::1], i8[::1], i8[::1], i8[::1], u8[::1], u1[::1], u8[::1], u8[::1]",
))
def take_bitpacked(data, item_pos, item_in, item_seg, seg_szw, seg_len, seg_count, seg_def,
                   tmpw, tmpb, tmp, out):  # pragma: no cover - compiled
    """Inline bit-packed chunks: value ``item_in`` of each item's chunk into ``out[t]``
    (each chunk unpacked by :func:`unpack_chunk` into ``tmp``, reused while items stay in it)."""
    last = np.int64(-1)
    for t in range(item_pos.shape[0]):
        g = item_seg[t]
        p = item_pos[t]
        if p != last:
            err = unpack_chunk(data, p, seg_len[g], seg_szw[g], min(seg_def[g], 1), seg_count[g], tmpw, tmpb, tmp)
            if err:
                return err
            last = p
        r = item_in[t]
        if r >= seg_count[g]:
            return TAKE_BAD_CHUNK
        out[t] = tmp[r]
    return TAKE_OK


@njit(cache=True, nogil=True, specs=(
    "ro(u1[::1]), i8[::1], i8[::1], i8[::1], i8[::1], i8[::1], i8[::1], i8[::1], i8, i8[::1], i8[::1]",
))
def take_spans(data, item_pos, item_in, item_seg, seg_szw, seg_len, seg_count, seg_def, owidth,
               out_starts, out_ends):  # pragma: no cover - compiled
    """Byte spans (positions in ``data``) of variable-width values: each chunk's value buffer
    starts with ``count + 1`` little-endian offsets of ``owidth`` bytes (4 or 8), positions
    inside that buffer; item ``t`` is value ``item_in[t]``.  Returns the total bytes of the
    spans, or minus an error code."""
    total = 0
    for t in range(item_pos.shape[0]):
        g = item_seg[t]
        vb, size = _value_buffer(data, item_pos[t], seg_len[g], seg_szw[g], min(seg_def[g], 1))
        c = seg_count[g]
        r = item_in[t]
        lo = (c + 1) * owidth
        if vb < 0 or lo > size or r >= c:
            return -TAKE_BAD_CHUNK
        a = _read_le(data, vb + r * owidth, owidth)
        b = _read_le(data, vb + (r + 1) * owidth, owidth)
        if a < lo or b < a or b > size:
            return -TAKE_BAD_OFFSETS
        out_starts[t] = vb + a
        out_ends[t] = vb + b
        total += b - a
    return total


@njit(cache=True, nogil=True, specs=("ro(u1[::1]), i8[::1], i8[::1], i8[::1], u1[::1]",))
def copy_spans(data, starts, ends, out_offsets, out_data):  # pragma: no cover - compiled
    """Concatenate ``data[starts[t]:ends[t]]`` into ``out_data``; ``out_offsets`` (``n + 1``
    entries from 0) receives the boundaries.  Returns the bytes written."""
    o = 0
    out_offsets[0] = 0
    for t in range(starts.shape[0]):
        s = starts[t]
        n = ends[t] - s
        out_data[o: o + n] = data[s: s + n]
        o += n
        out_offsets[t + 1] = o
    return o


@njit(cache=True, nogil=True, inline="always")
def fsst_value(data, s, e, words, lens, enabled, out_data, o):  # pragma: no cover - compiled
    """Decode ``data[s:e]`` (uint64 positions) at ``out_data[o]`` with one symbol table
    (copied raw when the table is not ``enabled``): ``(new output position, well formed)``."""
    if enabled:
        return _decode_value(data, s, e, words, lens, out_data, o)
    while s < e:
        out_data[o] = data[s]
        o += np.uint64(1)
        s += np.uint64(1)
    return o, True


@njit(cache=True, nogil=True, specs=(
    "ro(u1[::1]), i8[::1], i8[::1], i8[::1], i8, i8[::1], u8[:, ::1], u8[:, ::1], b1[::1], i8[::1], u1[::1]",
))
def fsst_take(data, starts, ends, item_seg, seg0, seg_tab, words, lens, enabled, out_offsets,
              out_data):  # pragma: no cover - compiled
    """FSST-decode ``data[starts[t]:ends[t]]`` with the symbol table of the item's page
    (``seg_tab[item_seg[t] - seg0]``; ``words``/``lens``: ``(tables, 256)`` symbol words and
    lengths, 0 = escape/invalid; a table not ``enabled`` stores raw bytes).  ``out_data`` holds
    ``8 * sum(ends - starts) + 8`` bytes.  Returns ``(bytes written, -1)`` or ``(0, t)`` for
    the first malformed value."""
    o = np.uint64(0)
    out_offsets[0] = 0
    for t in range(starts.shape[0]):
        tab = seg_tab[item_seg[t] - seg0]
        o, ok = fsst_value(data, np.uint64(starts[t]), np.uint64(ends[t]), words[tab], lens[tab], enabled[tab],
                           out_data, o)
        if not ok:
            return np.int64(0), np.int64(t)
        out_offsets[t + 1] = o
    return np.int64(o), np.int64(-1)


__all__ = ["fsst_take", "take_valid", "TAKE_BAD_CHUNK", "TAKE_BAD_OFFSETS", "TAKE_BAD_WIDTH", "TAKE_OK", "copy_spans", "plan_take", "plan_take_files",
           "take_bitpacked", "take_fixed", "take_spans"]
