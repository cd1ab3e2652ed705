"""Datasets of many fragments (~2,000): takes, take_rows and count_rows equal the reference's,
and the work per take (FragmentReader objects, data files opened) follows the fragments
touched, not the fragments in the dataset."""

from __future__ import annotations

import shutil

import numpy as np
import pyarrow as pa
import pytest

from lancejit.table import dataset
from lancejit.table.read import fragment as fragment_mod

lance = pytest.importorskip("lance")

N_FRAGMENTS = 2000
ROWS_PER_FRAGMENT = 3


@pytest.fixture(scope="module")
def many(tmp_path_factory):
    """~2,000 fragments of 3 rows with stable row ids; every 7th row deleted (deletion files
    in most fragments, some fragments fully deleted)."""
    path = str(tmp_path_factory.mktemp("many") / "ds")
    shutil.rmtree(path, ignore_errors=True)
    n = N_FRAGMENTS * ROWS_PER_FRAGMENT
    a = np.arange(n, dtype=np.int64)
    table = pa.table({"a": a, "s": pa.array([f"r{i}" for i in a])})
    lance.write_dataset(table, path, max_rows_per_file=ROWS_PER_FRAGMENT, data_storage_version="2.2",
                        enable_stable_row_ids=True)
    lance.dataset(path).delete("a % 7 = 3 OR (a >= 30 AND a < 36)")
    return path


def test_take_and_count_equal_reference(many):
    ref, ours = lance.dataset(many), dataset(many)
    assert len(ours.manifest.fragments) == len(ref.get_fragments()) > N_FRAGMENTS - 5  # fully deleted ones dropped
    n = ref.count_rows()
    assert ours.count_rows() == n
    for seed in (0, 1):
        rng = np.random.default_rng(seed)
        for k in (1, 50, 300):
            idx = rng.integers(0, n, k)
            assert ours.take(idx, columns=["s", "a"]).equals(ref.take(idx, columns=["s", "a"])), k
    idx = np.array([n - 1, 0, n - 1, n // 2])
    assert ours.take(idx).equals(ref.take(idx))


def test_take_rows_equal_reference(many):
    ref, ours = lance.dataset(many), dataset(many)
    ids = ref.to_table(columns=["a"], with_row_id=True)["_rowid"].to_numpy()
    sel = np.random.default_rng(5).choice(ids, 200)
    assert ours.take_rows(sel, columns=["a", "s"]).equals(ref._take_rows(sel.tolist(), columns=["a", "s"]))


def test_readers_per_take_follow_touched_fragments(many, monkeypatch):
    """A take creates FragmentReader objects for the fragments it touches only (once per
    version), however many fragments the dataset has (the multi-file take admits fragments of
    one data file without any)."""
    created: list[int] = []
    init = fragment_mod.FragmentReader.__init__

    def counting(self, ctx, fragment, physical_rows=None):
        created.append(fragment.id)
        init(self, ctx, fragment, physical_rows)

    monkeypatch.setattr(fragment_mod.FragmentReader, "__init__", counting)
    ours = dataset(many)
    assert ours.count_rows() > 0
    assert created == []  # counting rows builds no reader
    ours.take([0])
    assert len(created) <= 1
    first = len(created)
    ours.take([0])
    assert len(created) == first  # cached on the version index
    idx = np.array([5, 900, 3000, 5000])
    ours.take(idx)
    assert first <= len(created) <= first + len(idx)
    before = len(created)
    ours.take(idx)
    assert len(created) == before
