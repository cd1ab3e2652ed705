"""A dropped dataset is freed by reference counting (no reference cycle through its index,
fragment readers or caches), so that opening many datasets does not pile up garbage for the
cyclic collector.  The tests run with the collector disabled."""

from __future__ import annotations

import gc
import weakref

import numpy as np
import pyarrow as pa
import pytest

import lancejit

lance = pytest.importorskip("lance")


@pytest.fixture(params=["2.2", "legacy"])
def path(request, tmp_path):
    n = 2_500
    t = pa.table({"a": np.arange(n, dtype=np.int64), "s": [f"s{i}" for i in range(n)]})
    p = str(tmp_path / f"ds_{request.param}.lance")
    lance.write_dataset(t, p, max_rows_per_file=700, data_storage_version=request.param)
    lance.dataset(p).delete("a % 97 = 3")  # deletion files: readers load them
    return p


@pytest.fixture
def no_gc():
    was = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _use(ds) -> tuple[pa.Table, pa.Table]:
    return ds.to_table(), ds.take([0, 700, 1399, 2200], columns=["a", "s"])


def _expected(p: str) -> tuple[pa.Table, pa.Table]:
    ref = lance.dataset(p)
    return ref.to_table(), ref.take([0, 700, 1399, 2200], columns=["a", "s"])


def test_dropped_dataset_freed_without_gc(path, no_gc):
    ds = lancejit.dataset(path)
    got = _use(ds)
    assert ds.count_rows() == got[0].num_rows
    assert ds.count_rows("a > 10") == got[0].num_rows - 11 + sum(1 for i in range(11) if i % 97 == 3)
    wr = weakref.ref(ds.context)
    del ds
    assert wr() is None
    exp = _expected(path)
    assert got[0].equals(exp[0]) and got[1].equals(exp[1])


def test_shared_index_outlives_first_checkout(path, no_gc):
    """Two checkouts of one version share the index: dropping the one it was built for while
    the other uses it keeps the other working; dropping both frees both; a later checkout
    gets the index once the earlier ones are gone."""
    exp = _expected(path)
    a = lancejit.dataset(path)
    _use(a)
    b = a.checkout_version(a.version)
    _use(b)
    wa, wb = weakref.ref(a.context), weakref.ref(b.context)
    del a
    got = _use(b)
    assert got[0].equals(exp[0]) and got[1].equals(exp[1])
    c = b.checkout_version(b.version)
    del b
    assert wa() is None and wb() is None
    got = _use(c)
    assert got[0].equals(exp[0]) and got[1].equals(exp[1])
    wc = weakref.ref(c.context)
    del c
    assert wc() is None
