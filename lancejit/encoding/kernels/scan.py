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

from lancejit.encoding.kernels.jit import njit
from lancejit.encoding.kernels.take import TAKE_BAD_CHUNK, TAKE_BAD_OFFSETS, TAKE_OK, _read_le, _value_buffer

#: Error codes returned (negated) by :func:`plan_scan`.
SCAN_BAD_ROW = 1


@njit(cache=True, nogil=True)
def plan_scan(seg_key, seg_b0, seg_stride, seg_len, blk_g0, blk_g1, blk_kbase, rows, rows_off, ncols,
              whole, wbase, cursor0, item_seg, item_in, item_pos, ranges, range_file):  # pragma: no cover
    """Fill ``item_seg``/``item_in``/``item_pos`` (``ncols * K`` each) and the byte ranges of
    the files not ``whole`` (``ranges`` ``(cap, 2)``, ``range_file``: their file), file-major.

    Block ``b = f * ncols + j`` owns segments ``[blk_g0[b], blk_g1[b])`` whose keys are
    ``blk_kbase[b] + first row``.  ``cursor0``: where the ranges' bytes start in the data
    buffer (after the whole files).  Returns the number of ranges, or ``-SCAN_BAD_ROW`` when a
    row precedes its block's first segment (callers check rows against each file's rows)."""
    nfiles = rows_off.shape[0] - 1
    k_all = rows_off[nfiles]
    nr = 0
    cursor = cursor0
    for f in range(nfiles):
        r0 = rows_off[f]
        r1 = rows_off[f + 1]
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
            for i in range(r0, r1):
                key = kb + rows[i]
                while g + 1 < g1 and seg_key[g + 1] <= key:
                    g += 1
                if key < seg_key[g]:
                    return -SCAN_BAD_ROW
                r = key - seg_key[g]
                t = j * k_all + i
                item_seg[t] = g
                item_in[t] = r
                s = seg_b0[g] + r * seg_stride[g]
                e = s + seg_len[g]
                if whole[f]:
                    item_pos[t] = wbase[f] + s
                    continue
                if s == last_s and e <= last_e:
                    item_pos[t] = last_pos
                    continue
                if nr > 0 and range_file[nr - 1] == f and s == ranges[nr - 1, 1]:
                    ranges[nr - 1, 1] = e
                else:
                    ranges[nr, 0] = s
                    ranges[nr, 1] = e
                    range_file[nr] = f
                    nr += 1
                item_pos[t] = cursor
                last_s = s
                last_e = e
                last_pos = cursor
                cursor += e - s
    return nr


@njit(cache=True, nogil=True, inline="always")
def _run_end(item_pos, item_in, t, n):  # pragma: no cover - compiled
    """End of the run of items from ``t`` reading consecutive values of one chunk."""
    p = item_pos[t]
    u = t + 1
    while u < n and item_pos[u] == p and item_in[u] == item_in[u - 1] + 1:
        u += 1
    return u


@njit(cache=True, nogil=True)
def scan_fixed(data, item_pos, item_in, item_seg, seg_szw, seg_len, seg_def, width, out):  # pragma: no cover
    """:func:`~lancejit.encoding.kernels.take.take_fixed` for scans: each run of consecutive
    values of one chunk is one copy (its header parsed once).  Returns an error code."""
    n = item_pos.shape[0]
    t = 0
    while t < n:
        g = item_seg[t]
        p = item_pos[t]
        if seg_szw[g] == 0:  # full-zip row: the item's range is the value
            if p + width > data.shape[0]:
                return TAKE_BAD_CHUNK
            out[t * width:(t + 1) * width] = data[p:p + width]
            t += 1
            continue
        u = _run_end(item_pos, item_in, t, n)
        vb, size = _value_buffer(data, p, seg_len[g], seg_szw[g], min(seg_def[g], 1))
        a = item_in[t] * width
        b = a + (u - t) * width
        if vb < 0 or b > size:
            return TAKE_BAD_CHUNK
        out[t * width:u * width] = data[vb + a:vb + b]
        t = u
    return TAKE_OK


@njit(cache=True, nogil=True)
def scan_offsets(data, item_pos, item_in, item_seg, seg_szw, seg_len, seg_count, seg_def, owidth,
                 out_offsets):  # pragma: no cover - compiled
    """Output offsets (``n + 1``, from 0) of variable-width values (see
    :func:`~lancejit.encoding.kernels.take.take_spans`), a run of one chunk at a time.
    Returns the total bytes, or minus an error code."""
    n = item_pos.shape[0]
    out_offsets[0] = 0
    o = np.int64(0)
    t = 0
    while t < n:
        g = item_seg[t]
        u = _run_end(item_pos, item_in, t, n)
        vb, size = _value_buffer(data, item_pos[t], seg_len[g], seg_szw[g], min(seg_def[g], 1))
        c = seg_count[g]
        lo = (c + 1) * owidth
        if vb < 0 or lo > size or item_in[u - 1] >= c:
            return -TAKE_BAD_CHUNK
        r = item_in[t]
        prev = _read_le(data, vb + r * owidth, owidth)
        if prev < lo or prev > size:
            return -TAKE_BAD_OFFSETS
        for q in range(t, u):
            r += 1
            b = _read_le(data, vb + r * owidth, owidth)
            if b < prev or b > size:
                return -TAKE_BAD_OFFSETS
            o += b - prev
            out_offsets[q + 1] = o
            prev = b
        t = u
    return o


@njit(cache=True, nogil=True)
def scan_copy(data, item_pos, item_in, item_seg, seg_szw, seg_len, seg_def, owidth, out_offsets,
              out_data):  # pragma: no cover - compiled
    """Copy the values :func:`scan_offsets` measured into ``out_data``: one copy per run."""
    n = item_pos.shape[0]
    t = 0
    while t < n:
        g = item_seg[t]
        u = _run_end(item_pos, item_in, t, n)
        vb, _ = _value_buffer(data, item_pos[t], seg_len[g], seg_szw[g], min(seg_def[g], 1))
        a = _read_le(data, vb + item_in[t] * owidth, owidth)
        o0 = out_offsets[t]
        o1 = out_offsets[u]
        out_data[o0:o1] = data[vb + a:vb + a + (o1 - o0)]
        t = u
    return TAKE_OK


__all__ = ["SCAN_BAD_ROW", "plan_scan", "scan_copy", "scan_fixed", "scan_offsets"]
