"""The public face: ``Dataset.to_table / to_batches / scanner / to_table_async(nearest=...)`` and
``Dataset.create_index``."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest
from conftest import make_dataset, vectors_table
from helpers import assert_same, theirs

import lancejit


@pytest.fixture(scope="module")
def api_path(vec_root):
    return make_dataset(vec_root, "api", vectors_table(800, 8, seed=51), delete="id % 10 = 0")


def test_to_table_to_batches_scanner(api_path):
    ds = lancejit.dataset(api_path)
    q = np.random.default_rng(52).standard_normal(8)
    nn = {"column": "vec", "q": q, "k": 30}
    want = theirs(api_path, nn, columns=["id"], filter="cat < 3")
    assert_same(ds.to_table(columns=["id"], filter="cat < 3", nearest=nn), want)
    batches = list(ds.to_batches(columns=["id"], filter="cat < 3", nearest=nn, batch_size=7))
    assert max(b.num_rows for b in batches) == 7
    assert_same(ds.to_table(columns=["id"], filter="cat < 3", nearest=nn).from_batches(batches), want)
    assert_same(ds.scanner(nearest=nn, prefilter=True, filter="cat < 3").to_table(),
                theirs(api_path, nn, filter="cat < 3", prefilter=True))
    got = asyncio.run(ds.to_table_async(columns=["id"], nearest=nn, with_row_id=True))
    assert_same(got, theirs(api_path, nn, columns=["id"], with_row_id=True))


def test_create_index_then_search(vec_root):
    import lance

    path = make_dataset(vec_root, "api_index", vectors_table(1500, 16, seed=53), rows_per_file=500)
    ds = lancejit.dataset(path).create_index("vec", "IVF_PQ", num_partitions=4, num_sub_vectors=4, seed=1)
    assert ds.version == 2
    q = np.random.default_rng(54).standard_normal(16)
    nn = {"column": "vec", "q": q, "k": 10, "nprobes": 2}
    assert_same(ds.to_table(columns=["id"], nearest=nn), theirs(path, nn, columns=["id"]), rtol=1e-3, atol=1e-4)
    ds = ds.create_index("vec", "IVF_SQ", num_partitions=3)  # replaces the index of the same name
    assert len(lance.dataset(path).describe_indices()) == 1
    assert_same(ds.to_table(columns=["id"], nearest=nn), theirs(path, nn, columns=["id"]), rtol=1e-3, atol=1e-4)


def test_index_built_while_rows_were_appended(vec_root):
    """An append committed while the index was built (after its read version) stays uncovered:
    the index's bitmap names the fragments it read; searches merge the new rows flat."""
    import lance

    path = make_dataset(vec_root, "api_concurrent", vectors_table(900, 16, seed=55), rows_per_file=300)
    ds = lancejit.dataset(path)
    lance.write_dataset(vectors_table(120, 16, seed=56, start=900), path, mode="append")
    ds = ds.create_index("vec", "IVF_FLAT", num_partitions=3)
    assert ds.version == 3
    (ix,) = lance.dataset(path).list_indices()
    assert sorted(ix["fragment_ids"]) == [0, 1, 2]
    q = np.random.default_rng(57).standard_normal(16)
    nn = {"column": "vec", "q": q, "k": 12, "nprobes": 1}
    assert_same(ds.to_table(columns=["id"], nearest=nn), theirs(path, nn, columns=["id"]))
