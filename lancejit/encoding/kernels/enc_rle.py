"""Run-length encoding kernel for mini-block chunks (writer side).

A chunk's runs are ``(value, length)`` pairs with lengths stored as u8, so runs longer than 255
are split.  Chunks hold a power-of-two number of values (except the last), at most
``max_values``, and their encoded size ``runs * (itemsize + 1)`` stays <= ``max_bytes``.
"""

from __future__ import annotations

from lancejit.encoding.kernels.jit import njit


@njit(cache=True, nogil=True)
def _count_runs(values, start, end):  # pragma: no cover - compiled
    runs = 0
    i = start
    while i < end:
        v = values[i]
        j = i + 1
        while j < end and values[j] == v and j - i < 255:
            j += 1
        runs += 1
        i = j
    return runs


@njit(cache=True, nogil=True, specs=(
    "u1[::1], i8, i8, u1[::1], u1[::1], i8[::1], i8[::1]",
    "u2[::1], i8, i8, u2[::1], u1[::1], i8[::1], i8[::1]",
    "u4[::1], i8, i8, u4[::1], u1[::1], i8[::1], i8[::1]",
    "u8[::1], i8, i8, u8[::1], u1[::1], i8[::1], i8[::1]",
))
def rle_encode_chunks(
    values, max_values, max_bytes, out_values, out_lengths, chunk_values, chunk_runs
):  # pragma: no cover - compiled
    """Encode ``values`` (an unsigned integer array) into RLE chunks.

    Fills ``out_values``/``out_lengths`` (capacity >= len(values)) with the runs of all chunks in
    order and ``chunk_values``/``chunk_runs`` (capacity >= number of chunks, at most
    len(values)) with each chunk's value and run counts.  Returns the number of chunks.
    """
    n = values.shape[0]
    item = values.itemsize
    pos = 0
    nchunks = 0
    nruns_total = 0
    while pos < n:
        m = n - pos
        if m > max_values:
            m = max_values
        while True:
            r = _count_runs(values, pos, pos + m)
            if r * (item + 1) <= max_bytes or m == 1:
                break
            p = 1
            while p * 2 < m:
                p *= 2
            m = p
        # emit
        i = pos
        end = pos + m
        while i < end:
            v = values[i]
            j = i + 1
            while j < end and values[j] == v and j - i < 255:
                j += 1
            out_values[nruns_total] = v
            out_lengths[nruns_total] = j - i
            nruns_total += 1
            i = j
        chunk_values[nchunks] = m
        chunk_runs[nchunks] = r
        nchunks += 1
        pos = end
    return nchunks


@njit(cache=True, nogil=True, specs=(
    "u1[::1]",
    "u2[::1]",
    "u4[::1]",
    "u8[::1]",
))
def count_runs(values):  # pragma: no cover - compiled
    """Number of maximal runs of equal values (no 255 split): the reference's RunCount stat."""
    n = values.shape[0]
    if n == 0:
        return 0
    runs = 1
    for i in range(1, n):
        if values[i] != values[i - 1]:
            runs += 1
    return runs
