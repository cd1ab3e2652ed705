"""Issue 24 item 9: a lancejit dataset used as a ``pyarrow.dataset.Dataset`` by engines, the way
DuckDB and polars use one (their calls reproduced here; the real engines when installed), with
projections and filters pushed down into lancejit's scan (fewer bytes read with the filter)."""

from __future__ import annotations

import functools
import pickle
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as pds
import pytest

import lance as ref_lance
import lancejit

N = 60_000


def _data() -> pa.Table:
    rng = np.random.default_rng(3)
    return pa.table({"a": np.arange(N, dtype=np.int64), "x": rng.random(N), "s": [f"w{i % 50}" for i in range(N)]})


@pytest.fixture(scope="module")
def uri(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("arrow") / "ds")
    lancejit.write_dataset(_data(), path, max_rows_per_file=10_000)
    return path


def _duckdb_like(ds, columns, expression):
    """What DuckDB does with a pyarrow Dataset: the class's ``scanner`` with the projected
    columns and a ``pyarrow.dataset`` filter expression, then a C stream of its reader."""
    assert isinstance(ds, pds.Dataset)
    scanner = type(ds).scanner(ds, columns=columns, filter=expression)
    return pa.RecordBatchReader.from_stream(scanner.to_reader()).read_all()


def _polars_like(ds, with_columns, predicate, n_rows=None):
    """What polars' ``scan_pyarrow_dataset`` does: the dataset pickled with the scan function,
    ``to_table`` / ``head`` with ``columns`` and a ``pyarrow.compute`` predicate."""
    fn = pickle.loads(pickle.dumps(functools.partial(_polars_scan, ds)))
    return fn(with_columns, predicate, n_rows)


def _polars_scan(ds, with_columns, predicate, n_rows):
    params = {"columns": with_columns, "filter": predicate}
    return ds.head(n_rows, **params) if n_rows else ds.to_table(**params)


def test_isinstance_and_schema(uri):
    ds = lancejit.dataset(uri)
    assert isinstance(ds, pds.Dataset) and isinstance(ds, lancejit.LanceDataset)
    assert isinstance(ds.scanner(), pds.Scanner)
    assert ds.schema == ref_lance.dataset(uri).schema


def test_duckdb_calls(uri):
    ds, ref = lancejit.dataset(uri), ref_lance.dataset(uri)
    expr = (pds.field(("a",)) > pds.scalar(59_000)) & pds.field(("s",)).is_valid()
    got = _duckdb_like(ds, ["x", "s"], expr)
    want = _duckdb_like(ref, ["x", "s"], expr)
    assert got.equals(want) and got.num_rows == 999


def test_polars_calls(uri):
    ds, ref = lancejit.dataset(uri), ref_lance.dataset(uri)
    pred = (pc.field("a") >= 100) & (pc.field("s") == "w7")
    assert _polars_like(ds, ["a"], pred).equals(_polars_like(ref, ["a"], pred))
    assert _polars_like(ds, ["a", "x"], None, 5).equals(_polars_like(ref, ["a", "x"], None, 5))


def test_filter_pushdown_reads_fewer_bytes(uri):
    ds = lancejit.dataset(uri)
    ds.io_stats()
    _duckdb_like(ds, ["x"], None)
    full = ds.io_stats().read_bytes
    _duckdb_like(ds, ["x"], pds.field(("a",)) > pds.scalar(N - 500))
    filtered = ds.io_stats().read_bytes
    assert filtered < full / 2, (filtered, full)


def test_pyarrow_scanner_from_dataset_refuses_cleanly(uri):
    """pyarrow's C++ scanner cannot call into Python: a TypeError (the reference crashes)."""
    ds = lancejit.dataset(uri)
    with pytest.raises(TypeError):
        pds.Scanner.from_dataset(ds, columns=["a"])


def test_fresh_process_open_imports_no_pyarrow_dataset(uri):
    code = ("import sys, lancejit; ds = lancejit.dataset(sys.argv[1]); ds.take([0]); ds.count_rows();"
            "print('pyarrow.dataset' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code, uri], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "False"


def test_real_engines(uri):
    duckdb = pytest.importorskip("duckdb")
    pl = pytest.importorskip("polars")
    ds = lancejit.dataset(uri)
    assert duckdb.sql("select count(*) from ds where a >= 59000").fetchall() == [(1000,)]
    out = pl.scan_pyarrow_dataset(ds).filter(pl.col("a") > N - 3).select("a").collect()
    assert out["a"].to_list() == [N - 2, N - 1]
