"""``to_batches`` streams the scan pipeline and yields batches of exactly ``batch_size`` rows
(the last excepted), as the reference does: across unit, page and fragment edges, with
filters, deletions and row ranges; rows equal to pylance's; stopping early leaves nothing
running."""

from __future__ import annotations

import gc
import warnings

import numpy as np
import pyarrow as pa
import pytest

import lance

import lancejit


@pytest.fixture(scope="module")
def big(tmp_path_factory):
    """300,000 rows in one fragment (units and pages cut it at many places), a vector column."""
    uri = str(tmp_path_factory.mktemp("batches") / "big.lance")
    n = 300_000
    rng = np.random.default_rng(11)
    t = pa.table({"id": np.arange(n, dtype=np.int64), "x": rng.uniform(0, 1, n),
                  "label": pa.array([f"l{i % 13}" for i in range(n)]),
                  "vec": pa.FixedSizeListArray.from_arrays(pa.array(rng.standard_normal(n * 16, dtype=np.float32)), 16)})
    lance.write_dataset(t, uri)
    return uri


@pytest.fixture(scope="module")
def many(tmp_path_factory):
    """Small fragments of uneven sizes with deletions."""
    uri = str(tmp_path_factory.mktemp("batches") / "many.lance")
    n = 20_000
    t = pa.table({"id": np.arange(n, dtype=np.int64), "s": [f"s{i % 7}" for i in range(n)]})
    lance.write_dataset(t.slice(0, 7_000), uri, max_rows_per_file=333)
    lance.write_dataset(t.slice(7_000), uri, mode="append", max_rows_per_file=4_100)
    lance.dataset(uri).delete("id % 11 = 4")
    return uri


def _exact(sizes: list[int], size: int) -> bool:
    return all(s == size for s in sizes[:-1]) and (not sizes or 0 < sizes[-1] <= size)


@pytest.mark.parametrize("batch_size", [1000, 8192, 65_536, 100_003])
@pytest.mark.parametrize("columns", [["vec", "label"], ["id"], None])
def test_big_fragment_batches_are_exact(big, batch_size, columns):
    got = list(lancejit.dataset(big).to_batches(columns=columns, batch_size=batch_size))
    want = list(lance.dataset(big).to_batches(columns=columns, batch_size=batch_size))
    assert [b.num_rows for b in got] == [b.num_rows for b in want]
    assert _exact([b.num_rows for b in got], batch_size)
    assert pa.Table.from_batches(got).equals(pa.Table.from_batches(want))


@pytest.mark.parametrize("flt", [None, "id % 3 = 1", "x > 0.5 AND label <> 'l3'"])
@pytest.mark.parametrize("batch_size", [500, 8192])
def test_filtered_and_many_fragment_batches_are_exact(big, many, flt, batch_size):
    for uri in (big, many):
        if flt is not None and uri == many and "x" in flt:
            continue
        got = list(lancejit.dataset(uri).to_batches(filter=flt, batch_size=batch_size))
        assert _exact([b.num_rows for b in got], batch_size)
        want = lance.dataset(uri).to_table(filter=flt)
        assert pa.Table.from_batches(got, schema=want.schema).equals(want)


def test_stopping_early_leaves_nothing_running(big):
    ds = lancejit.dataset(big)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        it = ds.to_batches(columns=["vec"], batch_size=4096)
        first = next(it)
        assert first.num_rows == 4096
        it.close()
        del it
        gc.collect()
        again = ds.to_table(columns=["id"], limit=5)
    assert again["id"].to_pylist() == [0, 1, 2, 3, 4]
