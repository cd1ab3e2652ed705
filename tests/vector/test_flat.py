"""Flat (exact) nearest-neighbour search against pylance: metrics, value types, filters
(prefilter / postfilter), deletions, null vectors, offset / limit, projections, batched queries."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import make_dataset, vectors_table
from helpers import assert_same, ours, theirs

from lancejit.core.errors import InvalidInputError, InvalidTypeError


@pytest.fixture(scope="module")
def flat_paths(vec_root):
    out = {}
    for dt in (np.float16, np.float32, np.float64):
        name = np.dtype(dt).name
        out[name] = make_dataset(vec_root, f"flat_{name}", vectors_table(1000, 16, seed=1, dtype=dt),
                                 delete="id % 7 = 3")
    out["nulls"] = make_dataset(vec_root, "flat_nulls", vectors_table(700, 8, seed=2, null_every=10))
    out["u8"] = make_dataset(vec_root, "flat_u8", vectors_table(600, 8, seed=3, dtype=np.uint8))
    return out


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
@pytest.mark.parametrize("metric", ["l2", "cosine", "dot"])
@pytest.mark.parametrize("k", [1, 10, 57])
def test_flat_matches_reference(flat_paths, dtype, metric, k):
    rng = np.random.default_rng(k)
    for _ in range(2):
        q = rng.standard_normal(16)
        nn = {"column": "vec", "q": q, "k": k, "metric": metric}
        assert_same(ours(flat_paths[dtype], nn), theirs(flat_paths[dtype], nn),
                    rtol=2e-3 if dtype == "float16" else 1e-4)


@pytest.mark.parametrize("prefilter", [False, True])
def test_filters(flat_paths, prefilter):
    p = flat_paths["float32"]
    q = np.random.default_rng(5).standard_normal(16)
    for flt in ("cat = 2", "id > 500 AND cat <> 1", "id < 0"):
        nn = {"column": "vec", "q": q, "k": 15}
        kw = dict(filter=flt, prefilter=prefilter, columns=["id", "cat"])
        assert_same(ours(p, nn, **kw), theirs(p, nn, **kw))


def test_projection_offset_limit_rowid(flat_paths):
    p = flat_paths["float32"]
    q = np.random.default_rng(6).standard_normal(16)
    nn = {"column": "vec", "q": q, "k": 20}
    assert_same(ours(p, nn), theirs(p, nn))
    for kw in (dict(columns=["id"], limit=5, offset=3), dict(columns=["cat", "id"], with_row_id=True),
               dict(columns=["id"], offset=18), dict(columns=["id", "_distance"])):
        assert_same(ours(p, nn, **kw), theirs(p, nn, **kw))


def test_batched_queries(flat_paths):
    p = flat_paths["float32"]
    q = np.random.default_rng(7).standard_normal((3, 16))
    nn = {"column": "vec", "q": q, "k": 6}
    assert_same(ours(p, nn, columns=["id"]), theirs(p, nn, columns=["id"]))
    nn = {"column": "vec", "q": [list(x) for x in q], "k": 4}
    assert_same(ours(p, nn, columns=["id"]), theirs(p, nn, columns=["id"]))


def test_null_vectors_skipped(flat_paths):
    q = np.random.default_rng(8).standard_normal(8)
    nn = {"column": "vec", "q": q, "k": 700}
    a, b = ours(flat_paths["nulls"], nn, columns=["id"]), theirs(flat_paths["nulls"], nn, columns=["id"])
    assert_same(a, b)
    assert a.num_rows == 630


def test_hamming(flat_paths):
    q = np.random.default_rng(9).integers(0, 256, 8).astype(np.uint8)
    nn = {"column": "vec", "q": q, "k": 12, "metric": "hamming"}
    a, b = ours(flat_paths["u8"], nn, columns=["id"]), theirs(flat_paths["u8"], nn, columns=["id"])
    assert a["_distance"].to_pylist() == b["_distance"].to_pylist()
    assert_same(a, b)


def test_errors(flat_paths):
    p = flat_paths["float32"]
    with pytest.raises(InvalidInputError):
        ours(p, {"column": "nope", "q": np.zeros(16)})
    with pytest.raises(InvalidTypeError):
        ours(p, {"column": "id", "q": np.zeros(16)})
    with pytest.raises(TypeError):
        ours(p, {"column": "cat", "q": np.zeros(16)})
    with pytest.raises(ValueError):
        ours(p, {"column": "vec", "q": np.zeros(15)})
    with pytest.raises(ValueError):
        ours(p, {"column": "vec", "q": np.zeros(16), "k": 0})
    with pytest.raises(ValueError):
        ours(p, {"column": "vec", "q": np.zeros(16), "nprobes": 2, "minimum_nprobes": 1})
    with pytest.raises(ValueError):
        ours(p, {"column": "vec", "q": np.zeros(16), "metric": "manhattan"})


@pytest.mark.parametrize("cache_bytes", [0, None])
def test_cache_off_and_new_deletions(vec_root, cache_bytes):
    """Without the decoded-vector cache, and with it across versions: rows deleted after a
    search never come back, appended rows are found."""
    import lance

    from lancejit.table.indices.vector import cache

    path = make_dataset(vec_root, f"flat_versions_{cache_bytes}", vectors_table(900, 8, seed=31))
    cache.set_budget(cache_bytes)
    try:
        q = np.random.default_rng(32).standard_normal(8)
        for step in range(3):
            for flt in (None, "cat <> 3"):
                nn = {"column": "vec", "q": q, "k": 25}
                kw = dict(columns=["id"], filter=flt, prefilter=True)
                assert_same(ours(path, nn, **kw), theirs(path, nn, **kw))
            ds = lance.dataset(path)
            if step == 0:
                ds.delete("id < 450 AND id % 2 = 0")
            else:
                lance.write_dataset(vectors_table(100, 8, seed=33 + step, start=1000 * step), path, mode="append")
    finally:
        cache.set_budget(None)


@pytest.mark.parametrize("merge", [True, False])
def test_concurrent_searches_merged(knobs, flat_paths, merge, monkeypatch):
    """Concurrent async searches on one dataset (merged into one batched search, or not) answer
    as each search alone does."""
    import asyncio

    import lancejit
    from lancejit.table.vector.scanner import nearest_table

    knobs(vector_merge=merge)
    p = flat_paths["float32"]
    ds = lancejit.dataset(p)
    qs = np.random.default_rng(40).standard_normal((6, 16))
    calls = [({"column": "vec", "q": q, "k": 7}, dict(columns=["id"])) for q in qs]
    calls.append(({"column": "vec", "q": qs[:2], "k": 7}, dict(columns=["id"])))
    calls.append(({"column": "vec", "q": qs[0], "k": 7}, dict(columns=["id"], filter="cat = 1", prefilter=True)))

    async def run():
        return await asyncio.gather(*(nearest_table(ds, nn, **kw) for nn, kw in calls))

    from lancejit.table.vector import search as S

    searched = []
    real = S.search

    async def counting(ds_, query, **kw):
        searched.append(query.q.shape[0])
        return await real(ds_, query, **kw)

    monkeypatch.setattr(S, "search", counting)
    got = asyncio.run(run())
    assert sorted(searched) == ([1, 8] if merge else [1] * 7 + [2])
    for (nn, kw), t in zip(calls, got):
        assert_same(t, theirs(p, nn, **kw))


def test_k_beyond_the_rows(flat_paths):
    """k larger than the dataset returns every row (no allocation sized by k)."""
    p = flat_paths["float32"]
    q = np.random.default_rng(41).standard_normal(16)
    nn = {"column": "vec", "q": q, "k": 10**12}
    a = ours(p, nn, columns=["id"])
    assert a.num_rows == lancejit_rows(p)
    nn = {"column": "vec", "q": q, "k": 5000, "metric": "dot"}
    assert_same(ours(p, nn, columns=["id"]), theirs(p, nn, columns=["id"]))


def lancejit_rows(path: str) -> int:
    import lancejit

    return lancejit.dataset(path).count_rows()
