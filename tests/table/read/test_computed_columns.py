"""Computed output columns (``columns={name: SQL expression}``): pylance's values, alone, with a
filter and with row ids, over several fragments with deleted rows."""

from __future__ import annotations

import lance
import numpy as np
import pyarrow as pa
import pytest

import lancejit

COLUMNS = [
    {"s": "a + b"},
    {"a": "a", "twice": "b * 2", "neg": "-a"},
    {"big": "a > 500", "s": "a + b"},
    {"y": "x * 10"},
]


@pytest.fixture(params=[(0, 700), (1, 2500)], ids=["700 rows", "2500 rows"])
def uri(request, tmp_path):
    """A dataset of 600-row fragments (written by pylance) with every 7th row deleted."""
    seed, n = request.param
    rng = np.random.default_rng(seed)
    table = pa.table({"a": np.arange(n, dtype=np.int64), "b": rng.integers(-1000, 1000, n), "x": rng.random(n)})
    uri = str(tmp_path / "ds")
    lance.write_dataset(table, uri, max_rows_per_file=600)
    lance.dataset(uri).delete("a % 7 = 3")
    return uri


@pytest.mark.parametrize("columns", COLUMNS, ids=lambda c: ",".join(c))
@pytest.mark.parametrize("filter", [None, "x < 0.5"])
@pytest.mark.parametrize("with_row_id", [False, True])
def test_computed_columns_equal_pylance(uri, columns, filter, with_row_id):
    want = lance.dataset(uri).to_table(columns=columns, filter=filter, with_row_id=with_row_id)
    got = lancejit.dataset(uri).to_table(columns=columns, filter=filter, with_row_id=with_row_id)
    assert got.equals(want)
