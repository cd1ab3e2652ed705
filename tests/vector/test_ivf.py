"""Searching the reference's IVF indices (and indices lancejit builds, searched by both):
partition choice (nprobes), PQ / SQ / FLAT distances, refine, deletions, prefilter, fragments
appended after the index was built."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import make_dataset, vectors_table
from helpers import assert_same, ours, overlap, theirs

import lancejit
from lancejit.io.sync import run_sync
from lancejit.table.vector.build import create_index_async

INDEXES = {
    "pq8_l2": dict(index_type="IVF_PQ", num_partitions=6, num_sub_vectors=4),
    "pq4_cos": dict(index_type="IVF_PQ", num_partitions=4, num_sub_vectors=4, num_bits=4, metric="cosine"),
    "pq_dot": dict(index_type="IVF_PQ", num_partitions=4, num_sub_vectors=8, metric="dot"),
    "flat_dot": dict(index_type="IVF_FLAT", num_partitions=5, metric="dot"),
    "flat_cos": dict(index_type="IVF_FLAT", num_partitions=5, metric="cosine"),
    "sq_l2": dict(index_type="IVF_SQ", num_partitions=5),
    "sq_cos": dict(index_type="IVF_SQ", num_partitions=3, metric="cosine"),
}


@pytest.fixture(scope="module")
def ivf_paths(vec_root):
    out = {}
    for name, ix in INDEXES.items():
        out[name] = make_dataset(vec_root, f"ivf_{name}", vectors_table(1200, 16, seed=11), index=ix,
                                 delete="id % 9 = 4", append=vectors_table(250, 16, seed=12, start=1200))
    return out


@pytest.mark.parametrize("name", sorted(INDEXES))
def test_index_search_matches_reference(ivf_paths, name):
    rng = np.random.default_rng(len(name))
    for nprobes, refine in ((None, None), (1, None), (2, 3), (None, 2)):
        q = rng.standard_normal(16)
        nn = {"column": "vec", "q": q, "k": 10}
        if nprobes:
            nn["nprobes"] = nprobes
        if refine:
            nn["refine_factor"] = refine
        a, b = ours(ivf_paths[name], nn, columns=["id"]), theirs(ivf_paths[name], nn, columns=["id"])
        assert_same(a, b, rtol=1e-3, atol=1e-4)


@pytest.mark.parametrize("name", ["pq8_l2", "sq_l2", "flat_cos"])
@pytest.mark.parametrize("prefilter", [False, True])
def test_index_search_with_filter(ivf_paths, name, prefilter):
    q = np.random.default_rng(3).standard_normal(16)
    nn = {"column": "vec", "q": q, "k": 10, "nprobes": 2}
    kw = dict(columns=["id", "cat"], filter="cat = 1", prefilter=prefilter)
    assert_same(ours(ivf_paths[name], nn, **kw), theirs(ivf_paths[name], nn, **kw), rtol=1e-3, atol=1e-4)


def test_use_index_false_is_exact(ivf_paths):
    q = np.random.default_rng(4).standard_normal(16)
    nn = {"column": "vec", "q": q, "k": 10, "use_index": False}
    assert_same(ours(ivf_paths["pq8_l2"], nn), theirs(ivf_paths["pq8_l2"], nn))


def test_batched_index_queries(ivf_paths):
    q = np.random.default_rng(5).standard_normal((3, 16))
    nn = {"column": "vec", "q": q, "k": 5, "nprobes": 2}
    assert_same(ours(ivf_paths["sq_l2"], nn, columns=["id"]), theirs(ivf_paths["sq_l2"], nn, columns=["id"]),
                rtol=1e-3, atol=1e-4)


@pytest.mark.parametrize("ix", [
    dict(index_type="IVF_PQ", num_partitions=8, num_sub_vectors=8),
    dict(index_type="IVF_PQ", num_partitions=4, num_sub_vectors=4, num_bits=4, metric="cosine"),
    dict(index_type="IVF_FLAT", num_partitions=6, metric="dot"),
    dict(index_type="IVF_SQ", num_partitions=6),
])
def test_built_index_read_by_reference(vec_root, ix):
    """lancejit builds the index; pylance lists and searches it and answers as lancejit does;
    recall against exact search stays near that of pylance's own index."""
    import lance

    kind = ix["index_type"]
    tag = "_".join(str(v) for v in ix.values())
    table = vectors_table(3000, 32, seed=21)
    path = make_dataset(vec_root, f"built_{tag}", table, rows_per_file=1000)
    ref_path = make_dataset(vec_root, f"refbuilt_{tag}", table, rows_per_file=1000, index=ix)
    ds = run_sync(create_index_async(lancejit.dataset(path), "vec", kind,
                                     **{k: v for k, v in ix.items() if k != "index_type"}, seed=0))
    assert [i.num_rows_indexed for i in lance.dataset(path).describe_indices()] == [3000]
    assert ds.version == 2
    rng = np.random.default_rng(22)
    ours_recall, ref_recall = [], []
    metric = ix.get("metric", "l2")
    for _ in range(16):
        q = rng.standard_normal(32)
        nn = {"column": "vec", "q": q, "k": 10, "nprobes": 2}
        a, b = ours(path, nn, columns=["id"]), theirs(path, nn, columns=["id"])
        assert_same(a, b, rtol=1e-3, atol=1e-4)
        exact = theirs(path, {**nn, "use_index": False, "metric": metric}, columns=["id"])
        ours_recall.append(overlap(exact, a))
        ref_recall.append(overlap(exact, theirs(ref_path, nn, columns=["id"])))
    assert np.mean(ours_recall) >= np.mean(ref_recall) - 0.15, (ours_recall, ref_recall)


@pytest.mark.parametrize("kind", ["IVF_HNSW_SQ", "IVF_HNSW_PQ", "IVF_HNSW_FLAT"])
def test_hnsw_storage_searched_without_graph(vec_root, kind):
    """IVF_HNSW_* indices: their IVF storage is searched exhaustively per partition (no graph);
    the top-10 overlaps the reference's graph search by >= 0.9 on average."""
    ix = dict(index_type=kind, num_partitions=3)
    if kind == "IVF_HNSW_PQ":
        ix["num_sub_vectors"] = 4
    path = make_dataset(vec_root, f"hnsw_{kind}", vectors_table(1500, 16, seed=61), index=ix)
    rng = np.random.default_rng(62)
    ov = []
    for _ in range(10):
        nn = {"column": "vec", "q": rng.standard_normal(16), "k": 10, "nprobes": 3}
        ov.append(overlap(ours(path, nn, columns=["id"]), theirs(path, nn, columns=["id"])))
    assert np.mean(ov) >= 0.9, ov


def test_stable_row_ids_and_float64(vec_root):
    """Indices over datasets with stable row ids (the index stores those ids) and over float64
    vectors."""
    import lance

    path = str(vec_root / "stable_ids")
    table = vectors_table(1000, 16, seed=71, dtype=np.float64)
    ds = lance.write_dataset(table, path, max_rows_per_file=300, enable_stable_row_ids=True)
    ds.delete("id % 4 = 1")
    ds = lance.dataset(path)
    ds.create_index("vec", index_type="IVF_FLAT", num_partitions=4)
    lance.write_dataset(vectors_table(200, 16, seed=72, start=1000, dtype=np.float64), path, mode="append")
    lance.dataset(path).delete("id % 10 = 7")
    rng = np.random.default_rng(73)
    for extra in ({}, {"nprobes": 1}, {"use_index": False}, {"refine_factor": 2}):
        nn = {"column": "vec", "q": rng.standard_normal(16), "k": 15, **extra}
        for kw in (dict(columns=["id"], with_row_id=True), dict(columns=["id"], filter="cat = 2", prefilter=True)):
            assert_same(ours(path, nn, **kw), theirs(path, nn, **kw), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dtype", [np.float16, np.float64])
@pytest.mark.parametrize("kind", ["IVF_FLAT", "IVF_PQ"])
def test_built_index_other_float_types(vec_root, dtype, kind):
    """Indices lancejit builds over float16 / float64 columns are searched by the reference with
    lancejit's answers."""
    path = make_dataset(vec_root, f"built_{kind}_{np.dtype(dtype).name}", vectors_table(900, 16, seed=91, dtype=dtype))
    kw = {"num_sub_vectors": 4} if kind == "IVF_PQ" else {}
    ds = lancejit.dataset(path).create_index("vec", kind, num_partitions=3, seed=2, **kw)
    rng = np.random.default_rng(92)
    for _ in range(3):
        nn = {"column": "vec", "q": rng.standard_normal(16), "k": 10, "nprobes": 2}
        assert_same(ds.to_table(columns=["id"], nearest=nn), theirs(path, nn, columns=["id"]), rtol=2e-3, atol=1e-3)


@pytest.mark.parametrize("name", ["pq8_l2", "sq_l2"])
def test_minimum_maximum_nprobes_with_selective_prefilter(ivf_paths, name):
    """With few rows passing the prefilter, the search probes past ``minimum_nprobes`` until it
    has ``k`` rows or reaches ``maximum_nprobes``, as the reference does."""
    rng = np.random.default_rng(5)
    for lo, hi in ((1, 2), (1, 6), (2, None)):
        nn = {"column": "vec", "q": rng.standard_normal(16), "k": 10, "minimum_nprobes": lo}
        if hi is not None:
            nn["maximum_nprobes"] = hi
        kw = dict(columns=["id"], filter="id % 50 = 3", prefilter=True)
        assert_same(ours(ivf_paths[name], nn, **kw), theirs(ivf_paths[name], nn, **kw), rtol=1e-3, atol=1e-4)


def test_prefilter_matching_fewer_than_k_rows(ivf_paths):
    """A prefilter matching at most k rows: those the first partitions missed come back at an
    infinite distance when more partitions could be probed, not when nprobes fixes them."""
    rng = np.random.default_rng(8)
    for extra in ({"minimum_nprobes": 1}, {"nprobes": 1}, {}):
        nn = {"column": "vec", "q": rng.standard_normal(16), "k": 10, **extra}
        kw = dict(columns=["id"], filter="id IN (5, 100, 700, 1001, 1300)", prefilter=True)
        a, b = ours(ivf_paths["sq_l2"], nn, **kw), theirs(ivf_paths["sq_l2"], nn, **kw)
        assert_same(a, b, rtol=1e-3, atol=1e-4)
