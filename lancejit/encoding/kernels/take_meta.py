"""Numba kernel building the segment table of a take from page metadata
(:mod:`lancejit.encoding.v21.take_template`).

One call turns the chunk metadata words of every mini-block page of several columns, and the
geometry of their full-zip pages, into the segment arrays of
:class:`~lancejit.file.take_plan.TakeTable`.  A chunk word is
``((chunk_bytes / 8 - 1) << 4) | log2(values)``; a page's last chunk holds the page's remaining
values.  NumPy reference: ``tests/v21/test_take_template.py``.
"""

from __future__ import annotations

import numpy as np

from lancejit.encoding.kernels.jit import njit

#: Columns of the page table given to :func:`page_segments`.
P_WSIZE, P_RAW, P_NSEG, P_ROWS, P_KEY0, P_DATA, P_DSIZE, P_DEFW, P_FIXED, P_MAXCOUNT = range(10)
PAGE_FIELDS = 10


@njit(cache=True, nogil=True, specs=("ro(u1[::1]), i8[:, ::1], i8[:, ::1]",))
def page_segments(raw, pages, out):  # pragma: no cover - compiled
    """Fill ``out`` (int64 ``(7, segments)``: key, byte start, stride, length, chunk-size width,
    values, def width) from ``pages`` (int64 ``(pages, PAGE_FIELDS)``, in table order).

    Per page: ``wsize`` (2 or 4: a mini-block page whose ``nseg`` chunk words of that many
    bytes start at ``raw[raw_pos]``; 0: a full-zip page, one segment of ``fixed`` bytes per
    row), ``rows``, ``key0`` (key of its first row), ``data``/``dsize`` (absolute position and
    size of the chunk or zipped data buffer), ``defw``, ``maxcount`` (largest value count a
    chunk may hold).  Returns 0, or the 1-based index of the first page whose metadata does not
    add up (a chunk word list that does not cover the page's values or data buffer, a bad value
    count, full-zip rows past the buffer).  Callers check ``raw`` and ``out`` sizes."""
    s = 0
    for p in range(pages.shape[0]):
        wsize = pages[p, 0]
        nseg = pages[p, 2]
        rows = pages[p, 3]
        key = pages[p, 4]
        data = pages[p, 5]
        dsize = pages[p, 6]
        if wsize == 0:
            fixed = pages[p, 8]
            if fixed <= 0 or fixed * rows > dsize:
                return p + 1
            out[0, s] = key
            out[1, s] = data
            out[2, s] = fixed
            out[3, s] = fixed
            out[4, s] = 0
            out[5, s] = 1
            out[6, s] = 0
            s += 1
            continue
        pos = pages[p, 1]
        defw = pages[p, 7]
        maxcount = pages[p, 9]
        done = 0
        off = 0
        for i in range(nseg):
            q = pos + i * wsize
            w = np.int64(raw[q]) | (np.int64(raw[q + 1]) << 8)
            if wsize == 4:
                w |= (np.int64(raw[q + 2]) << 16) | (np.int64(raw[q + 3]) << 24)
            size = ((w >> 4) + 1) * 8
            if i == nseg - 1:
                count = rows - done
            else:
                count = np.int64(1) << (w & 0xF)
            if count <= 0 or count > maxcount:
                return p + 1
            out[0, s] = key + done
            out[1, s] = data + off
            out[2, s] = 0
            out[3, s] = size
            out[4, s] = wsize
            out[5, s] = count
            out[6, s] = defw
            done += count
            off += size
            s += 1
        if off > dsize:
            return p + 1
    return 0


__all__ = ["PAGE_FIELDS", "page_segments"]
