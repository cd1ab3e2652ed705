"""Small data files held whole in memory stay within the dataset's WholeFileBudget."""

from __future__ import annotations

import lance
import numpy as np
import pyarrow as pa
import pytest

import lancejit.table as lt
from lancejit.table.meta.context import WholeFileBudget


def _table(n: int, seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    return pa.table({"id": np.arange(n, dtype=np.int64), "x": rng.random(n),
                     "s": pa.array([f"user-{i}" for i in range(n)])})


def test_budget_reserves_until_the_limit() -> None:
    b = WholeFileBudget(limit=100)
    assert b.take(60) and b.used == 60
    assert not b.take(41) and b.used == 60
    assert b.take(40) and b.used == 100


@pytest.mark.parametrize("seed,limit_files", [(0, 0), (1, 2), (2, 100)])
def test_small_files_held_within_budget(tmp_path, seed: int, limit_files: int) -> None:
    path = str(tmp_path / "ds")
    data = _table(800, seed)
    lance.write_dataset(data, path, max_rows_per_file=100)
    ds = lt.dataset(path)
    sizes = [f.data_files()[0].file_size_bytes for f in lance.dataset(path).get_fragments()]
    assert len(sizes) == 8 and max(sizes) <= 64 * 1024
    budget = ds._ctx.caches.whole_files
    budget.limit = int(np.sort(sizes)[:limit_files].sum()) if limit_files <= len(sizes) else sum(sizes)
    got = ds.to_table(columns=["id", "x", "s"])
    assert got.equals(lance.dataset(path).to_table(columns=["id", "x", "s"]))
    assert budget.used <= budget.limit
    if limit_files >= len(sizes):
        assert budget.used == sum(sizes)  # every file held whole
    rows = np.random.default_rng(seed).choice(800, 50, replace=False)
    assert ds.take(rows, columns=["id", "s"]).equals(lance.dataset(path).take(rows, columns=["id", "s"]))
    assert budget.used <= budget.limit
