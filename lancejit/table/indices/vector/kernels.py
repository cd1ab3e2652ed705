"""Numba kernels of vector search and index building.

Distances (the reference's definitions, float32 results): ``l2`` the squared Euclidean
distance, ``cosine`` ``1 - x.q / (|x| |q|)``, ``dot`` ``1 - x.q``, ``hamming`` the number of
differing bits of uint8 vectors.  Metric codes: :data:`L2`, :data:`COSINE`, :data:`DOT`,
:data:`HAMMING`.

Top-k: every search kernel keeps, per query, a bounded max-heap of the ``k`` best
``(distance, row id)`` pairs seen so far (ordered by distance, then row id: the reference's
``ORDER BY _distance, _rowid``), so a block of ``n`` rows costs ``n`` comparisons plus
``O(log k)`` per row that enters; NaN distances never enter.  Heaps live in caller arrays
(``heap_d`` float32 ``(nq, k)``, ``heap_id`` uint64 ``(nq, k)``, ``heap_n`` int64 ``(nq,)``), so
a search over many blocks (or threads, one heap set each) calls a kernel per block and merges
at the end.  ``keep`` (uint8, one per row, or empty = every row) drops rows (deleted, filtered
out, null vectors).

Rows are scored in float32 for float16/float32 columns (float16 blocks are cast once per block
by the caller) and in float64 for float64 columns; callers pass C-contiguous 2-D blocks.
NumPy references: ``tests/vector/test_kernels.py``.
"""

from __future__ import annotations

import numpy as np

from lancejit.encoding.kernels.jit import njit

#: Floating-point flags of the scoring kernels: sums may be reassociated (vectorized), as the
#: reference's SIMD kernels do; NaN and infinity keep their meaning.
FAST = {"reassoc", "contract", "nsz", "arcp"}

#: Rows a scoring kernel takes at a time (every query scores them while they are in cache).
CHUNK = 512

L2 = 0
COSINE = 1
DOT = 2
HAMMING = 3


@njit(cache=True, nogil=True)
def heap_push(hd, hi, n, k, d, rid):  # pragma: no cover - compiled
    """Offer ``(d, rid)`` to the max-heap ``hd``/``hi`` holding ``n`` of at most ``k`` entries;
    returns the new count."""
    if n < k:
        j = n
        n += 1
        while j > 0:
            p = (j - 1) >> 1
            if hd[p] > d or (hd[p] == d and hi[p] > rid):
                break
            hd[j] = hd[p]
            hi[j] = hi[p]
            j = p
        hd[j] = d
        hi[j] = rid
        return n
    if d > hd[0] or (d == hd[0] and rid >= hi[0]):
        return n
    j = 0
    while True:
        c = 2 * j + 1
        if c >= n:
            break
        if c + 1 < n and (hd[c + 1] > hd[c] or (hd[c + 1] == hd[c] and hi[c + 1] > hi[c])):
            c += 1
        if hd[c] < d or (hd[c] == d and hi[c] < rid):
            break
        hd[j] = hd[c]
        hi[j] = hi[c]
        j = c
    hd[j] = d
    hi[j] = rid
    return n


@njit(cache=True, nogil=True, fastmath=FAST, specs=("{f4[:, ::1]|ro(f4[:, ::1])}, f4[:, ::1], f4[::1], {u8[::1]|ro(u8[::1])}, u1[::1], i8, f4[:, ::1], u8[:, ::1], i8[::1]",
           "{f8[:, ::1]|ro(f8[:, ::1])}, f8[:, ::1], f8[::1], {u8[::1]|ro(u8[::1])}, u1[::1], i8, f4[:, ::1], u8[:, ::1], i8[::1]"))
def flat_topk(data, queries, qnorm2, rowids, keep, metric, heap_d, heap_id, heap_n):  # pragma: no cover
    """Score every row of ``data`` (``(n, dim)``) against each query (``queries`` ``(nq, dim)``,
    same dtype; ``qnorm2[j]`` = ``|q_j|^2``, used by cosine) with ``metric`` and offer it to
    query ``j``'s heap.  ``rowids`` (uint64, ``n``) names the rows.  Rows are taken in chunks of
    :data:`CHUNK` (every query scores a chunk while it is in cache).  Returns rows scored."""
    n = data.shape[0]
    dim = data.shape[1]
    nq = queries.shape[0]
    k = heap_d.shape[1]
    use_keep = keep.shape[0] > 0
    scored = 0
    for c0 in range(0, n, CHUNK):
        c1 = min(n, c0 + CHUNK)
        for j in range(nq):
            q = queries[j]
            hd = heap_d[j]
            hi = heap_id[j]
            cnt = heap_n[j]
            worst = hd[0] if cnt == k else np.float32(np.inf)
            for i in range(c0, c1):
                if use_keep and keep[i] == 0:
                    continue
                if metric == 0:
                    acc = data.dtype.type(0)
                    for t in range(dim):
                        e = data[i, t] - q[t]
                        acc += e * e
                    d = np.float32(acc)
                elif metric == 2:
                    acc = data.dtype.type(0)
                    for t in range(dim):
                        acc += data[i, t] * q[t]
                    d = np.float32(1.0 - acc)
                else:
                    acc = data.dtype.type(0)
                    xx = data.dtype.type(0)
                    for t in range(dim):
                        acc += data[i, t] * q[t]
                        xx += data[i, t] * data[i, t]
                    d = np.float32(1.0 - acc / (np.sqrt(xx) * np.sqrt(qnorm2[j])))
                if d <= worst:
                    if d != d:
                        continue
                    cnt = heap_push(hd, hi, cnt, k, d, rowids[i])
                    if cnt == k:
                        worst = hd[0]
            heap_n[j] = cnt
        if use_keep:
            for i in range(c0, c1):
                scored += keep[i] != 0
        else:
            scored += c1 - c0
    return scored


@njit(cache=True, nogil=True, specs=("{ro(u1[:, ::1]), u1[:, ::1], ro(u8[::1])|u1[:, ::1], u1[:, ::1], u8[::1]}, u1[::1], f4[:, ::1], u8[:, ::1], i8[::1]",))
def hamming_topk(data, queries, rowids, keep, heap_d, heap_id, heap_n):  # pragma: no cover - compiled
    """:func:`flat_topk` for uint8 vectors under the hamming distance (set bits of ``x ^ q``)."""
    n = data.shape[0]
    dim = data.shape[1]
    nq = queries.shape[0]
    k = heap_d.shape[1]
    use_keep = keep.shape[0] > 0
    for j in range(nq):
        hd = heap_d[j]
        hi = heap_id[j]
        cnt = heap_n[j]
        worst = hd[0] if cnt == k else np.float32(np.inf)
        for i in range(n):
            if use_keep and keep[i] == 0:
                continue
            c = 0
            for t in range(dim):
                v = np.uint32(data[i, t] ^ queries[j, t])
                v = v - ((v >> 1) & 0x55)
                v = (v & 0x33) + ((v >> 2) & 0x33)
                c += (v + (v >> 4)) & 0x0F
            d = np.float32(c)
            if d <= worst:
                cnt = heap_push(hd, hi, cnt, k, d, rowids[i])
                if cnt == k:
                    worst = hd[0]
        heap_n[j] = cnt
    return n


@njit(cache=True, nogil=True, fastmath=FAST, specs=("{ro(u1[::1])|u1[::1]}, i8, f4[:, :, ::1], f4[::1], i8, i8, {ro(u8[::1])|u8[::1]}, u1[::1], f4, f4[:, ::1], u8[:, ::1], i8[::1]",))
def pq_topk(codes, n, book, r, metric, nbits, rowids, keep, bias, heap_d, heap_id, heap_n):  # pragma: no cover
    """Asymmetric PQ distances of one partition's ``n`` rows and top-k for one query.

    ``codes``: the partition's codes transposed (byte ``b`` of row ``i`` at ``codes[b * n + i]``;
    4-bit codes two per byte, sub-vector ``2b`` in the low nibble); ``book`` float32
    ``(m, 2**nbits, sub_dim)`` the codebooks; ``r`` float32 ``(m * sub_dim,)`` the query (its
    residual to the partition's centroid for l2).  Per sub-vector distances: l2 ``|r_s - c|^2``,
    dot (``metric`` 2) ``1 - r_s.c``; a row's distance is their sum + ``bias``."""
    m = book.shape[0]
    kc = book.shape[1]
    sw = book.shape[2]
    table = np.empty((m, kc), np.float32)
    for s in range(m):
        for j in range(kc):
            acc0 = np.float32(0)
            if metric == 2:
                for t in range(sw):
                    acc0 += r[s * sw + t] * book[s, j, t]
                table[s, j] = np.float32(1) - acc0
            else:
                for t in range(sw):
                    e = r[s * sw + t] - book[s, j, t]
                    acc0 += e * e
                table[s, j] = acc0
    k = heap_d.shape[1]
    use_keep = keep.shape[0] > 0
    acc = np.zeros(n, dtype=np.float32)
    if nbits == 8:
        for s in range(m):
            row = table[s]
            base = s * n
            for i in range(n):
                acc[i] += row[codes[base + i]]
    else:
        for b in range(m // 2):
            lo = table[2 * b]
            hi = table[2 * b + 1]
            base = b * n
            for i in range(n):
                c = codes[base + i]
                acc[i] += lo[c & 15] + hi[c >> 4]
    hd = heap_d[0]
    hi = heap_id[0]
    cnt = heap_n[0]
    worst = hd[0] if cnt == k else np.float32(np.inf)
    for i in range(n):
        if use_keep and keep[i] == 0:
            continue
        d = np.float32(acc[i] + bias)
        if d <= worst:
            cnt = heap_push(hd, hi, cnt, k, d, rowids[i])
            if cnt == k:
                worst = hd[0]
    heap_n[0] = cnt
    return n


@njit(cache=True, nogil=True, fastmath=FAST, specs=("{ro(u1[:, ::1])|u1[:, ::1]}, u1[::1], i8, f4, {ro(u8[::1])|u8[::1]}, u1[::1], f4[:, ::1], u8[:, ::1], i8[::1]",))
def sq_topk(codes, qcode, metric, scale, rowids, keep, heap_d, heap_id, heap_n):  # pragma: no cover
    """Scalar-quantized (uint8 ``codes`` ``(n, dim)``) distances to the quantized query
    ``qcode``: l2 (and cosine, on normalized vectors) ``sum((c - q)^2)``, dot ``1 - sum(c q)``,
    times ``scale / 255**2`` (``scale``: the quantization range squared); top-k for one query."""
    n = codes.shape[0]
    dim = codes.shape[1]
    k = heap_d.shape[1]
    use_keep = keep.shape[0] > 0
    hd = heap_d[0]
    hi = heap_id[0]
    cnt = heap_n[0]
    worst = hd[0] if cnt == k else np.float32(np.inf)
    for i in range(n):
        if use_keep and keep[i] == 0:
            continue
        if metric == 2:
            acc = np.float32(0)
            for t in range(dim):
                acc += np.float32(codes[i, t]) * np.float32(qcode[t])
            d = (np.float32(1) - acc) * scale / np.float32(65025)
        else:
            acc2 = np.uint32(0)
            for t in range(dim):
                e = np.int32(codes[i, t]) - np.int32(qcode[t])
                acc2 += np.uint32(e * e)
            d = np.float32(acc2) * scale / np.float32(65025)
        if d <= worst:
            cnt = heap_push(hd, hi, cnt, k, d, rowids[i])
            if cnt == k:
                worst = hd[0]
    heap_n[0] = cnt
    return n


@njit(cache=True, nogil=True, fastmath=FAST, specs=("f4[:, ::1], f4[:, ::1], f4[::1], i8, i4[::1], f4[::1]",))
def assign(data, centroids_t, cnorm2, metric, out_part, out_dist):  # pragma: no cover - compiled
    """Nearest centroid of each row: ``out_part[i]`` (int32) and its distance ``out_dist[i]``
    (float32; l2 squared, dot ``1 - x.c``; cosine on rows and centroids given normalized = l2).
    ``centroids_t``: the centroids transposed, ``(dim, nc)`` (every row is scored against all
    centroids at once, a contiguous loop over centroids); ``cnorm2[c]`` = ``|c|^2``: l2 is
    ``|x|^2 - 2 x.c + |c|^2``, clamped at 0.  Ties go to the lower centroid."""
    n = data.shape[0]
    dim = data.shape[1]
    nc = centroids_t.shape[1]
    acc = np.empty(nc, np.float32)
    for i in range(n):
        acc[:] = 0
        xx = np.float32(0)
        for t in range(dim):
            xt = data[i, t]
            xx += xt * xt
            row = centroids_t[t]
            for c in range(nc):
                acc[c] += xt * row[c]
        best = np.float32(np.inf)
        bi = 0
        if metric == 2:
            for c in range(nc):
                d = np.float32(1) - acc[c]
                if d < best:
                    best = d
                    bi = c
        else:
            for c in range(nc):
                d = xx - np.float32(2) * acc[c] + cnorm2[c]
                if d < best:
                    best = d
                    bi = c
            if best < 0:
                best = np.float32(0)
        out_part[i] = bi
        out_dist[i] = best
    return n


@njit(cache=True, nogil=True, specs=("f4[:, ::1], i4[::1], f8[:, ::1], i8[::1]",))
def accumulate(data, part, sums, counts):  # pragma: no cover - compiled
    """k-means update: ``sums[part[i]] += data[i]`` (float64) and ``counts[part[i]] += 1``."""
    n = data.shape[0]
    dim = data.shape[1]
    for i in range(n):
        p = part[i]
        counts[p] += 1
        for t in range(dim):
            sums[p, t] += data[i, t]
    return n
