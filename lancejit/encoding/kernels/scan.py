"""Numba kernel planning a scan of many files' columns at once (:mod:`lancejit.file.multi_decode`).

The segment tables of several files (each file's :class:`~lancejit.file.take_plan.TakeTable`,
concatenated) are walked once: for every file ``f`` and column ``j`` (a *block*), the rows
``rows[rows_off[f]:rows_off[f + 1]]`` (ascending) are mapped to their segments by a merge walk
(no binary search, no sort), and each item gets the position of its segment's bytes in ONE
data buffer: the whole files first (``whole[f]``: the file's bytes sit at ``wbase[f]``), then
the byte ranges read from the other files, in the order this kernel returns them (a range is
extended while the next segment starts where it ends, and shared while items stay in one
chunk).  Items are written column-major (item ``j * K + i``, ``K = rows_off[-1]``), so each
column's items are one slice for the take decode kernels (:mod:`.take`).

Byte ranges are half-open.  NumPy reference: ``tests/file/test_multi_decode.py``.
"""

from __future__ import annotations

import numpy as np

from lancejit.encoding.kernels.fsst import _decode_value
from lancejit.encoding.kernels.jit import njit, uint64
from lancejit.encoding.kernels.take import (TAKE_BAD_CHUNK, TAKE_BAD_OFFSETS, TAKE_OK, _read_le, _value_buffer,
                                            def_header, def_level, unpack_chunk)

#: Error codes returned (negated) by :func:`plan_scan`.
SCAN_BAD_ROW = 1


@njit(cache=True, nogil=True, specs=(
    "i8[::1], i8[::1], i8[::1], i8[::1], i8[::1], i8[::1], i8[::1], i8[::1], i8[::1], i8[::1], i8, b1[::1], i8[::1], i8, i8[::1], i8[::1], i8[::1], i8[::1], i8[::1], i8[:, ::1], i8[::1]",
))
def plan_runs(seg_key, seg_b0, seg_stride, seg_len, blk_g0, blk_g1, blk_kbase, rows, rows_off, row_lo, ncols,
              whole, wbase, cursor0, run_seg, run_in, run_len, run_pos, nrun, ranges,
              range_file):  # pragma: no cover - compiled
    """Map every selected row of every file and column to *runs* (consecutive rows of one
    segment) and the byte ranges to read.

    Column ``j``'s runs are ``[j * K, j * K + nrun[j])`` of ``run_seg`` (segment), ``run_in``
    (first row inside it), ``run_len`` (rows) and ``run_pos`` (where the segment's bytes start
    in the data buffer: a chunk's start, or a full-zip run's first row), in output order.
    Block ``b = f * ncols + j`` owns segments ``[blk_g0[b], blk_g1[b])`` keyed
    ``blk_kbase[b] + first row``.  Files not ``whole`` get ranges (file-major, ``range_file``:
    their file) whose bytes follow ``cursor0`` in the data buffer: a range grows while the next
    segment (or full-zip row) starts where it ends, and a chunk read once serves every run in
    it.  Returns the number of ranges, or ``-SCAN_BAD_ROW`` when a row precedes its block's
    first segment (callers check rows against each file's rows).

    ``rows`` empty: every file's rows are the range ``[row_lo[f], row_lo[f] + rows_off[f + 1]
    - rows_off[f])`` (no row array built for a plain scan)."""
    nfiles = rows_off.shape[0] - 1
    ranged = rows.shape[0] == 0
    k_all = rows_off[nfiles]
    nr = 0
    cursor = cursor0
    for j in range(ncols):
        nrun[j] = 0
    for f in range(nfiles):
        r0 = rows_off[f]
        r1 = rows_off[f + 1]
        wf = whole[f]
        dense = r1 > r0 and (ranged or rows[r1 - 1] - rows[r0] == r1 - r0 - 1)  # a row range: runs per segment
        shift = row_lo[f] - r0
        last_s = np.int64(-1)
        last_e = np.int64(-1)
        last_pos = np.int64(0)
        for j in range(ncols):
            b = f * ncols + j
            g = blk_g0[b]
            g1 = blk_g1[b]
            kb = blk_kbase[b]
            if g >= g1:
                if r1 > r0:
                    return -SCAN_BAD_ROW
                continue
            q = -1
            cur_g = -1
            prev_row = np.int64(-2)
            i = r0
            while i < r1:
                row = shift + i if ranged else rows[i]
                key = kb + row
                while g + 1 < g1 and seg_key[g + 1] <= key:
                    g += 1
                if key < seg_key[g]:
                    return -SCAN_BAD_ROW
                n = 1
                if dense and g + 1 < g1:  # a row range: the rest of the segment at once
                    n = min(r1 - i, seg_key[g + 1] - key)
                elif dense:
                    n = r1 - i
                stride = seg_stride[g]
                if g == cur_g and row == prev_row + 1:
                    run_len[q] += n
                    prev_row = row + n - 1
                    i += n
                    if stride > 0 and not wf:  # full-zip rows: the range grows by n rows
                        ranges[nr - 1, 1] += n * stride
                        cursor += n * stride
                        last_e += n * stride
                    continue
                q = j * k_all + nrun[j]
                nrun[j] += 1
                r = key - seg_key[g]
                run_seg[q] = g
                run_in[q] = r
                run_len[q] = n
                cur_g = g
                prev_row = row + n - 1
                i += n
                s = seg_b0[g] + r * stride
                e = s + seg_len[g] + (n - 1) * stride
                if wf:
                    run_pos[q] = wbase[f] + s
                    continue
                if s == last_s and e <= last_e:
                    run_pos[q] = last_pos
                    continue
                if nr > 0 and range_file[nr - 1] == f and s == ranges[nr - 1, 1]:
                    ranges[nr - 1, 1] = e
                else:
                    ranges[nr, 0] = s
                    ranges[nr, 1] = e
                    range_file[nr] = f
                    nr += 1
                run_pos[q] = cursor
                last_s = s
                last_e = e
                last_pos = cursor
                cursor += e - s
    return nr


@njit(cache=True, nogil=True, inline="always")
def copy_range(dst, d, src, s, n):  # pragma: no cover - compiled
    """``dst[d:d + n] = src[s:s + n]`` (bounds checked by the caller): a loop over uint64
    indices, which LLVM vectorizes (a slice assignment, or signed indices, copy an order of
    magnitude slower)."""
    d = uint64(d)
    s = uint64(s)
    for i in range(uint64(n)):
        dst[d + i] = src[s + i]


@njit(cache=True, nogil=True, specs=(
    "ro(u1[::1]), i8[::1], i8[::1], i8[::1], i8[::1], i8[::1], i8[::1], i8[::1], i8, u1[::1]",
))
def runs_fixed(data, run_seg, run_in, run_len, run_pos, seg_szw, seg_len, seg_def, width,
               out):  # pragma: no cover - compiled
    """Fixed-width values of every run into ``out`` (``width`` bytes each, in order): one copy
    per run (a mini-block chunk's value buffer, or full-zip rows).  Returns an error code."""
    o = 0
    for q in range(run_seg.shape[0]):
        g = run_seg[q]
        p = run_pos[q]
        nbytes = run_len[q] * width
        if seg_szw[g] == 0:
            if p + nbytes > data.shape[0]:
                return TAKE_BAD_CHUNK
            src = p
        else:
            vb, size = _value_buffer(data, p, seg_len[g], seg_szw[g], min(seg_def[g], 1))
            a = run_in[q] * width
            if vb < 0 or a + nbytes > size:
                return TAKE_BAD_CHUNK
            src = vb + a
        copy_range(out, o, data, src, nbytes)
        o += nbytes
    return TAKE_OK


@njit(cache=True, nogil=True, inline="always")
def _le4(data, p):  # pragma: no cover - compiled
    """The little-endian uint32 at ``data[p:p+4]`` (uint64 ``p``; one load once inlined)."""
    return (np.int64(data[p]) | (np.int64(data[p + uint64(1)]) << 8) | (np.int64(data[p + uint64(2)]) << 16)
            | (np.int64(data[p + uint64(3)]) << 24))


@njit(cache=True, nogil=True, inline="always")
def _offsets_run(data, p, w, n, prev, size, base, out_offsets, t):  # pragma: no cover - compiled
    """``out_offsets[t + 1 + i] = base + offset i + 1`` for the ``n`` offsets of ``w`` bytes
    after the one at ``data[p]`` (value ``prev``; uint64 positions): ``(last offset, all
    ascending and at most size)``.  (4-byte offsets get their own loop, which LLVM turns into
    one load per offset: several times faster than a loop over a runtime width.)"""
    bad = False
    t1 = t + uint64(1)
    if w == 4:
        for i in range(uint64(n)):
            p += uint64(4)
            b = _le4(data, p)
            bad |= (b < prev) | (b > size)
            out_offsets[t1 + i] = base + b
            prev = b
    else:
        for i in range(uint64(n)):
            p += w
            b = _read_le(data, p, w)
            bad |= (b < prev) | (b > size)
            out_offsets[t1 + i] = base + b
            prev = b
    return prev, not bad


@njit(cache=True, nogil=True, specs=(
    "ro(u1[::1]), i8[::1], i8[::1], i8[::1], i8[::1], i8[::1], i8[::1], i8[::1], i8[::1], i8, i8[::1]",
))
def runs_offsets(data, run_seg, run_in, run_len, run_pos, seg_szw, seg_len, seg_count, seg_def, owidth,
                 out_offsets):  # pragma: no cover - compiled
    """Output offsets (one per value plus one, from 0) of the plain variable-width values of
    every run: each chunk's value buffer starts with ``count + 1`` offsets of ``owidth`` bytes
    (positions inside the buffer).  Returns the total bytes, or minus an error code."""
    out_offsets[0] = 0
    o = np.int64(0)
    t = uint64(0)
    w = uint64(owidth)
    for q in range(run_seg.shape[0]):
        g = run_seg[q]
        vb, size = _value_buffer(data, run_pos[q], seg_len[g], seg_szw[g], min(seg_def[g], 1))
        c = seg_count[g]
        r = run_in[q]
        n = run_len[q]
        lo = (c + 1) * owidth
        if vb < 0 or lo > size or r + n > c:
            return -TAKE_BAD_CHUNK
        p = uint64(vb + r * owidth)
        first = _read_le(data, p, w)
        if first < lo or first > size:
            return -TAKE_BAD_OFFSETS
        last, ok = _offsets_run(data, p, w, n, first, size, o - first, out_offsets, t)
        if not ok:
            return -TAKE_BAD_OFFSETS
        o += last - first
        t += uint64(n)
    return o


@njit(cache=True, nogil=True, specs=(
    "ro(u1[::1]), i8[::1], i8[::1], i8[::1], i8[::1], i8[::1], i8[::1], i8[::1], i8, i8[::1], u1[::1]",
))
def runs_copy(data, run_seg, run_in, run_len, run_pos, seg_szw, seg_len, seg_def, owidth, out_offsets,
              out_data):  # pragma: no cover - compiled
    """Copy the values :func:`runs_offsets` measured into ``out_data``: one copy per run."""
    t = 0
    for q in range(run_seg.shape[0]):
        g = run_seg[q]
        vb, _ = _value_buffer(data, run_pos[q], seg_len[g], seg_szw[g], min(seg_def[g], 1))
        a = _read_le(data, vb + run_in[q] * owidth, owidth)
        o0 = out_offsets[t]
        t += run_len[q]
        o1 = out_offsets[t]
        copy_range(out_data, o0, data, vb + a, o1 - o0)
    return TAKE_OK


@njit(cache=True, nogil=True, specs=(
    "ro(u1[::1]), i8[::1], i8[::1], i8[::1], i8[::1], i8[::1], i8[::1], i8[::1], i8[::1], u2[::1], u1[::1], u2[::1], u2[::1]",
    "ro(u1[::1]), i8[::1], i8[::1], i8[::1], i8[::1], i8[::1], i8[::1], i8[::1], i8[::1], u4[::1], u1[::1], u4[::1], u4[::1]",
    "ro(u1[::1]), i8[::1], i8[::1], i8[::1], i8[::1], i8[::1], i8[::1], i8[::1], i8[::1], u8[::1], u1[::1], u8[::1], u8[::1]",
))
def runs_bitpacked(data, run_seg, run_in, run_len, run_pos, seg_szw, seg_len, seg_count, seg_def, tmpw, tmpb,
                   tmp, out):  # pragma: no cover - compiled
    """Inline bit-packed chunks (see :func:`~lancejit.encoding.kernels.take.take_bitpacked`):
    each run's chunk unpacked once into ``tmp``, its rows copied to ``out`` in order.  Returns
    an error code."""
    last = np.int64(-1)
    o = 0
    for q in range(run_seg.shape[0]):
        g = run_seg[q]
        p = run_pos[q]
        if p != last:
            err = unpack_chunk(data, p, seg_len[g], seg_szw[g], min(seg_def[g], 1), seg_count[g], tmpw, tmpb, tmp)
            if err:
                return err
            last = p
        r = run_in[q]
        n = run_len[q]
        if r + n > seg_count[g]:
            return TAKE_BAD_CHUNK
        copy_range(out, o, tmp, r, n)
        o += n
    return TAKE_OK


@njit(cache=True, nogil=True, specs=(
    "ro(u1[::1]), i8[::1], i8[::1], i8[::1], i8[::1], i8[::1], i8[::1], i8[::1], i8[::1], u2[::1], u1[::1], u2[::1], u1[::1]",
))
def runs_valid(data, run_seg, run_in, run_len, run_pos, seg_szw, seg_len, seg_count, seg_def, tmpw, tmpb, tmp,
               out):  # pragma: no cover - compiled
    """Validity of every run's rows (``out`` 1 = valid, in order) from their chunks' def levels
    (see :func:`~lancejit.encoding.kernels.take.take_valid`: out-of-line bit-packed u16 levels
    of width ``seg_def[g]``, 0 = none stored; whole 1024-level blocks, then a tail packed as a
    block or stored raw; level 0 = valid), each needed block unpacked once.  Returns the number
    of nulls, or -1 for a malformed chunk."""
    nulls = 0
    o = 0
    last_p = np.int64(-1)
    loaded = np.int64(-1)
    for q in range(run_seg.shape[0]):
        g = run_seg[q]
        n = run_len[q]
        width = seg_def[g]
        if width == 0:
            out[o:o + n] = 1
            o += n
            continue
        p = run_pos[q]
        db, words = def_header(data, p, seg_len[g], seg_szw[g], width)
        c = seg_count[g]
        if db < 0 or run_in[q] + n > c:
            return -1
        if p != last_p:
            loaded = np.int64(-1)
            last_p = p
        for r in range(run_in[q], run_in[q] + n):
            level, loaded = def_level(data, db, words, width, c, r, tmpw, tmpb, tmp, loaded)
            if level < 0:
                return -1
            if level == 0:
                out[o] = 1
            else:
                out[o] = 0
                nulls += 1
            o += 1
    return nulls


@njit(cache=True, nogil=True, specs=(
    "ro(u1[::1]), i8[::1], i8[::1], i8[::1], i8[::1], i8[::1], i8[::1], i8[::1], i8[::1], i8",
))
def runs_fsst_bound(data, run_seg, run_in, run_len, run_pos, seg_szw, seg_len, seg_count, seg_def,
                    owidth):  # pragma: no cover - compiled
    """Compressed bytes of every run's values (each run's last offset minus its first; one read
    of two offsets per run, no per-value work): :func:`runs_fsst` writes at most 8 output bytes
    per compressed byte.  Returns minus an error code when a run's chunk or end offsets are
    malformed (the offsets between them are checked by :func:`runs_fsst`)."""
    total = np.int64(0)
    for q in range(run_seg.shape[0]):
        g = run_seg[q]
        vb, size = _value_buffer(data, run_pos[q], seg_len[g], seg_szw[g], min(seg_def[g], 1))
        r = run_in[q]
        n = run_len[q]
        if vb < 0 or (seg_count[g] + 1) * owidth > size or r + n > seg_count[g]:
            return -TAKE_BAD_CHUNK
        a = _read_le(data, vb + r * owidth, owidth)
        b = _read_le(data, vb + (r + n) * owidth, owidth)
        if a < (seg_count[g] + 1) * owidth or b < a or b > size:
            return -TAKE_BAD_OFFSETS
        total += b - a
    return total


@njit(cache=True, nogil=True, specs=(
    "ro(u1[::1]), i8[::1], i8[::1], i8[::1], i8[::1], i8[::1], i8[::1], i8[::1], i8, i8[::1], u8[:, ::1], u8[:, ::1], b1[::1], u8[::1], u1[::1]",
))
def runs_fsst(data, run_seg, run_in, run_len, run_pos, seg_szw, seg_len, seg_def, owidth, seg_tab, words, lens,
              enabled, out_offsets, out_data):  # pragma: no cover - compiled
    """FSST-decode the values of every run (each chunk's value buffer: ``count + 1`` offsets of
    ``owidth`` bytes, then the compressed values; chunks and run ends checked by
    :func:`runs_fsst_bound` first, every offset inside a run checked here) with the symbol
    table of the run's segment (``seg_tab[g]``; ``words``/``lens``: ``(tables, 256)`` symbol
    words and lengths, 0 = escape/invalid; a table not ``enabled`` stores raw bytes), looked up
    once per run.  ``out_data`` holds ``8 * runs_fsst_bound + 8`` bytes.  Returns ``(bytes
    written, -1)``, ``(0, t)`` for the first malformed value ``t``, or ``(-TAKE_BAD_OFFSETS,
    t)`` when value ``t``'s offsets are out of order or out of bounds."""
    o = uint64(0)
    out_offsets[0] = 0
    t = 0
    for q in range(run_seg.shape[0]):
        g = run_seg[q]
        tab = seg_tab[g]
        vb, size = _value_buffer(data, run_pos[q], seg_len[g], seg_szw[g], min(seg_def[g], 1))
        tw = words[tab]
        tl = lens[tab]
        on = enabled[tab]
        r = run_in[q]
        a = _read_le(data, vb + r * owidth, owidth)
        for _ in range(run_len[q]):
            r += 1
            b = _read_le(data, vb + r * owidth, owidth)
            if b < a or b > size:
                return np.int64(-TAKE_BAD_OFFSETS), np.int64(t)
            # (_decode_value called here, raw values copied byte by byte: through fsst_value,
            # or with a slice copy in this loop, LLVM compiles a decode loop several times slower)
            if on:
                o, ok = _decode_value(data, uint64(vb + a), uint64(vb + b), tw, tl, out_data, o)
                if not ok:
                    return np.int64(0), np.int64(t)
            else:
                for p in range(vb + a, vb + b):
                    out_data[o] = data[p]
                    o += uint64(1)
            t += 1
            out_offsets[t] = o
            a = b
    return np.int64(o), np.int64(-1)


__all__ = ["SCAN_BAD_ROW", "runs_fsst", "runs_fsst_bound", "runs_valid", "plan_runs", "runs_bitpacked", "runs_copy", "runs_fixed", "runs_offsets"]
