"""The vector kernels against plain NumPy versions."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lancejit.table.indices.vector import kernels as K
from lancejit.table.indices.vector.topk import Heaps, merge


def _np_dist(x: np.ndarray, q: np.ndarray, metric: int) -> np.ndarray:
    x64, q64 = x.astype(np.float64), q.astype(np.float64)
    if metric == K.L2:
        return ((x64 - q64) ** 2).sum(1)
    if metric == K.DOT:
        return 1 - x64 @ q64
    return 1 - (x64 @ q64) / (np.linalg.norm(x64, axis=1) * np.linalg.norm(q64))


def _topk(d: np.ndarray, ids: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    order = np.lexsort((ids, d))[:k]
    return d[order], ids[order]


@settings(max_examples=40, deadline=None)
@given(n=st.integers(0, 1500), dim=st.integers(1, 40), k=st.integers(1, 30), nq=st.integers(1, 3),
       metric=st.sampled_from([K.L2, K.COSINE, K.DOT]), seed=st.integers(0, 1000),
       dtype=st.sampled_from([np.float32, np.float64]), with_keep=st.booleans())
def test_flat_topk_matches_numpy(n, dim, k, nq, metric, seed, dtype, with_keep):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, dim)).astype(dtype)
    q = rng.standard_normal((nq, dim)).astype(dtype)
    ids = rng.permutation(n).astype(np.uint64) + np.uint64(7)
    keep = (rng.random(n) < 0.7).astype(np.uint8) if with_keep else np.empty(0, np.uint8)
    h = Heaps.empty(nq, k)
    scored = K.flat_topk(x, q, np.einsum("ij,ij->i", q, q).astype(dtype), ids, keep, metric, h.d, h.ids, h.n)
    live = keep.astype(bool) if with_keep else np.ones(n, bool)
    assert scored == live.sum()
    for j, r in enumerate(merge([(h.d, h.ids, h.n)], nq, k)):
        d = _np_dist(x[live], q[j], metric).astype(np.float32)
        want_d, _ = _topk(d, ids[live], k)
        np.testing.assert_allclose(r.distances, want_d, rtol=1e-4, atol=1e-4)
        assert len(r.row_ids) == min(k, live.sum())


def test_heap_ties_by_row_id():
    x = np.ones((10, 4), np.float32)
    q = np.zeros((1, 4), np.float32)
    ids = np.array([9, 3, 7, 1, 5, 0, 8, 2, 6, 4], np.uint64)
    h = Heaps.empty(1, 4)
    K.flat_topk(x, q, np.zeros(1, np.float32), ids, np.empty(0, np.uint8), K.L2, h.d, h.ids, h.n)
    (r,) = merge([(h.d, h.ids, h.n)], 1, 4)
    assert r.row_ids.tolist() == [0, 1, 2, 3]


def test_nan_never_enters():
    x = np.array([[np.nan, 0.0], [1.0, 1.0]], np.float32)
    h = Heaps.empty(1, 5)
    K.flat_topk(x, np.zeros((1, 2), np.float32), np.zeros(1, np.float32), np.arange(2, dtype=np.uint64),
                np.empty(0, np.uint8), K.L2, h.d, h.ids, h.n)
    assert h.n[0] == 1 and h.ids[0, 0] == 1


@pytest.mark.parametrize("nbits", [4, 8])
@pytest.mark.parametrize("metric", [K.L2, K.DOT])
def test_pq_topk_matches_numpy(nbits, metric):
    rng = np.random.default_rng(nbits)
    n, m, sw, k = 333, 6, 3, 12
    kc = 1 << nbits
    book = rng.standard_normal((m, kc, sw)).astype(np.float32)
    r = rng.standard_normal(m * sw).astype(np.float32)
    codes = rng.integers(0, kc, (n, m)).astype(np.uint8)
    packed = codes[:, 0::2] | (codes[:, 1::2] << 4) if nbits == 4 else codes
    flat = np.ascontiguousarray(packed.T).reshape(-1)
    ids = np.arange(n, dtype=np.uint64)
    h = Heaps.empty(1, k)
    K.pq_topk(flat, n, book, r, metric, nbits, ids, np.empty(0, np.uint8), np.float32(-1.5), h.d, h.ids, h.n)
    rs = r.reshape(m, 1, sw).astype(np.float64)
    if metric == K.L2:
        table = ((book - rs) ** 2).sum(2)
    else:
        table = 1 - (book * rs).sum(2)
    want = table[np.arange(m)[None, :], codes].sum(1) - 1.5
    (got,) = merge([(h.d, h.ids, h.n)], 1, k)
    wd, wi = _topk(want.astype(np.float32), ids, k)
    np.testing.assert_allclose(got.distances, wd, rtol=1e-4, atol=1e-5)
    assert got.row_ids.tolist() == wi.tolist()


@pytest.mark.parametrize("metric", [K.L2, K.DOT])
def test_sq_topk_matches_numpy(metric):
    rng = np.random.default_rng(metric)
    n, dim, k = 250, 9, 10
    codes = rng.integers(0, 256, (n, dim)).astype(np.uint8)
    q = rng.integers(0, 256, dim).astype(np.uint8)
    scale = np.float32(3.7) ** 2
    h = Heaps.empty(1, k)
    K.sq_topk(codes, q, metric, np.float32(scale), np.arange(n, dtype=np.uint64), np.empty(0, np.uint8),
              h.d, h.ids, h.n)
    c, qq = codes.astype(np.float64), q.astype(np.float64)
    raw = ((c - qq) ** 2).sum(1) if metric == K.L2 else 1 - c @ qq
    want = (raw.astype(np.float32) * np.float32(scale) / np.float32(65025)).astype(np.float32)
    (r,) = merge([(h.d, h.ids, h.n)], 1, k)
    wd, wi = _topk(want, np.arange(n, dtype=np.uint64), k)
    np.testing.assert_allclose(r.distances, wd, rtol=1e-5)


def test_hamming_topk_matches_numpy():
    rng = np.random.default_rng(3)
    x = rng.integers(0, 256, (400, 8)).astype(np.uint8)
    q = rng.integers(0, 256, (2, 8)).astype(np.uint8)
    h = Heaps.empty(2, 7)
    ids = np.arange(400, dtype=np.uint64)
    K.hamming_topk(x, q, ids, np.empty(0, np.uint8), h.d, h.ids, h.n)
    for j, r in enumerate(merge([(h.d, h.ids, h.n)], 2, 7)):
        d = np.unpackbits(x ^ q[j], axis=1).sum(1).astype(np.float32)
        wd, wi = _topk(d, ids, 7)
        assert r.row_ids.tolist() == wi.tolist()
        assert r.distances.tolist() == wd.tolist()


def test_assign_and_accumulate_match_numpy():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((500, 12)).astype(np.float32)
    c = rng.standard_normal((7, 12)).astype(np.float32)
    part = np.empty(500, np.int32)
    dist = np.empty(500, np.float32)
    K.assign(x, np.ascontiguousarray(c.T), np.einsum("ij,ij->i", c, c).astype(np.float32), K.L2, part, dist)
    d = ((x[:, None, :].astype(np.float64) - c[None]) ** 2).sum(2)
    assert (d[np.arange(500), part] <= d.min(1) + 1e-4).all()
    np.testing.assert_allclose(dist, d.min(1), rtol=1e-3, atol=1e-3)
    K.assign(x, np.ascontiguousarray(c.T), np.zeros(7, np.float32), K.DOT, part, dist)
    assert (part == np.argmax(x @ c.T, axis=1)).all()
    sums = np.zeros((7, 12))
    counts = np.zeros(7, np.int64)
    K.accumulate(x, part, sums, counts)
    assert counts.tolist() == np.bincount(part, minlength=7).tolist()
    np.testing.assert_allclose(sums[part[0]], x[part == part[0]].sum(0), rtol=1e-5, atol=1e-5)
