"""Issue 24 item 9: a lancejit dataset used as a ``pyarrow.dataset.Dataset`` by the real engines
(DuckDB, polars' ``scan_pyarrow_dataset``, pyarrow's own scanner), with the same answers as the
same queries on the reference's dataset, and projections and filters pushed into lancejit's scan
(bytes read, from ``io_stats``, with and without them).

A dataset is a genuine ``pyarrow.dataset`` instance (setting ``pyarrow_dataset_class`` "on", or
"auto" once ``pyarrow.dataset`` is imported, as here) or a view through ``__class__`` ("off", the
cold-start default of a process that has not imported ``pyarrow.dataset``): both are tested."""

from __future__ import annotations

import datetime
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
from lancejit.core.errors import NotSupportedError

duckdb = pytest.importorskip("duckdb")
pl = pytest.importorskip("polars")

N = 60_000
MODES = ["on", "off"]


def _data() -> pa.Table:
    rng = np.random.default_rng(3)
    a = np.arange(N, dtype=np.int64)
    return pa.table({
        "a": a,
        "x": rng.random(N),
        "i": pa.array((a % 100).astype(np.int32)),
        "s": pa.array([None if i % 11 == 0 else f"w{i % 50}" for i in range(N)]),
        "flag": pa.array(a % 3 == 0),
        "day": pa.array([datetime.date(2020, 1, 1) + datetime.timedelta(days=int(i % 400)) for i in range(N)]),
        "ts": pa.array((1_600_000_000_000_000 + a * 1_000_000).astype("datetime64[us]")),
    })


@pytest.fixture(scope="module")
def uri(tmp_path_factory):
    """The reference's dataset: 6 fragments of 10,000 rows."""
    path = str(tmp_path_factory.mktemp("arrow") / "ds")
    ref_lance.write_dataset(_data(), path, max_rows_per_file=10_000)
    return path


@pytest.fixture(params=MODES)
def mode(request, knobs):
    knobs(pyarrow_dataset_class=request.param)
    return request.param


def _genuine(ds) -> bool:
    return issubclass(type(ds), pds.Dataset)


def test_isinstance_schema_and_class(uri, mode):
    ds = lancejit.dataset(uri)
    assert _genuine(ds) == (mode == "on")
    assert isinstance(ds, pds.Dataset) and isinstance(ds, lancejit.LanceDataset)
    assert isinstance(ds.scanner(), pds.Scanner)
    assert ds.schema == ref_lance.dataset(uri).schema
    for other in (ds.checkout_version(1), pickle.loads(pickle.dumps(ds)), ds.__copy__()):
        assert _genuine(other) == (mode == "on") and other.count_rows() == N
    with pytest.raises(AttributeError):
        ds.files  # noqa: B018 - pyarrow's FileSystemDataset attribute: absent


DUCKDB_QUERIES = [
    "select x, s from {t} where a > 59000 and s is not null order by a",
    "select count(*) as n, sum(x) as sx from {t} where a >= 59000",
    "select s, count(*) as n from {t} where x < 0.5 group by s order by s",
    "select a from {t} where s = 'w7' and a between 100 and 2000 order by a",
    "select a, s from {t} where s like 'w1%' and i < 20 order by a limit 7",
    "select a from {t} where a in (1, 5, 9, 59999) order by a",
    "select a from {t} where s is null and a < 200 order by a",
    "select a, day from {t} where day >= DATE '2020-12-01' and a < 1000 order by a",
    "select a from {t} where ts > TIMESTAMP '2020-09-13 12:40:00' and a < 2000 order by a",
    "select a from {t} where flag and (a < 30 or a > 59970) order by a",
    "select i, max(a) as m from {t} where not flag and i between 3 and 5 group by i order by i",
    "select * from {t} order by a limit 5",
]


@pytest.mark.parametrize("query", DUCKDB_QUERIES)
def test_duckdb_answers_as_on_the_reference(uri, mode, query):
    ds, ref = lancejit.dataset(uri), ref_lance.dataset(uri)  # noqa: F841 - DuckDB finds them by name
    got = duckdb.sql(query.format(t="ds")).to_arrow_table()
    want = duckdb.sql(query.format(t="ref")).to_arrow_table()
    assert got.equals(want) and got.num_rows > 0


POLARS_QUERIES = [
    (lambda: (pl.col("a") >= 100) & (pl.col("s") == "w7"), ["a", "x"]),
    (lambda: pl.col("x") < 0.001, ["s", "a"]),
    (lambda: pl.col("s").is_in(["w1", "w2"]) & (pl.col("a") < 500), ["a"]),
    (lambda: pl.col("s").is_null() & (pl.col("a") < 300), ["a", "i"]),
    (lambda: pl.col("day") >= datetime.date(2020, 12, 1), ["a", "day"]),
    (lambda: pl.col("ts") > datetime.datetime(2020, 9, 13, 12, 40), ["a"]),
    (lambda: ~pl.col("flag") & pl.col("a").is_between(10, 40), ["a", "flag"]),
    (lambda: pl.col("s").str.starts_with("w4") & (pl.col("i") == 42), ["a", "s"]),
]


@pytest.mark.parametrize("case", range(len(POLARS_QUERIES)))
def test_polars_answers_as_on_the_reference(uri, mode, case):
    predicate, columns = POLARS_QUERIES[case]
    ds, ref = lancejit.dataset(uri), ref_lance.dataset(uri)
    got = pl.scan_pyarrow_dataset(ds).filter(predicate()).select(columns).collect()
    want = pl.scan_pyarrow_dataset(ref).filter(predicate()).select(columns).collect()
    assert got.equals(want) and got.height > 0
    head = pl.scan_pyarrow_dataset(ds).select(columns).head(5).collect()
    assert head.equals(pl.scan_pyarrow_dataset(ref).select(columns).head(5).collect())


def test_pyarrow_scanner(uri, mode):
    """``ds.scanner(columns=, filter=)`` is a ``pyarrow.dataset.Scanner`` with the reference's
    answers.  pyarrow's C++ ``Scanner.from_dataset`` cannot call into Python: a genuine dataset
    refuses with NotSupportedError (a NotImplementedError), a view with TypeError; the
    reference's dataset crashes the process there."""
    ds, ref = lancejit.dataset(uri), ref_lance.dataset(uri)
    expr = (pds.field("a") > pds.scalar(59_000)) & pds.field("s").is_valid()
    got = ds.scanner(columns=["x", "s"], filter=expr)
    assert isinstance(got, pds.Scanner)
    assert got.to_table().equals(ref.scanner(columns=["x", "s"], filter=expr).to_table())
    assert got.to_reader().read_all().num_rows == sum(1 for a in range(59_001, N) if a % 11)
    with pytest.raises(NotSupportedError if mode == "on" else TypeError):
        pds.Scanner.from_dataset(ds, columns=["a"], filter=expr).to_table()
    with pytest.raises(NotSupportedError):  # (pyarrow's union asks replace_schema first)
        pds.dataset([ds]).to_table()


def test_reference_crashes_in_pyarrow_scanner_from_dataset(uri):
    code = ("import sys, lance, pyarrow.dataset as pds; ds = lance.dataset(sys.argv[1]);"
            "pds.Scanner.from_dataset(ds, columns=['a']).to_table()")
    out = subprocess.run([sys.executable, "-c", code, uri], capture_output=True, text=True, timeout=300)
    assert out.returncode < 0  # killed by a signal (SIGSEGV)


def test_expression_filters_keep_pyarrow_meaning(uri):
    """A pyarrow Expression means what pyarrow says (engines do not filter again what they
    pushed): lancejit equals pyarrow's own dataset where the reference, evaluating through
    SQL, differs (NULL in negated set lookups, NaN comparisons)."""
    table = pa.table({"a": pa.array(range(8), pa.int64()), "s": pa.array(["w1", None, "w2", "w1", None, "x", "w2", "y"]),
                      "x": pa.array([1.0, float("nan"), None, -1.0, 2.0, float("nan"), 0.0, 3.0])})
    path = uri + "-sem"
    lancejit.write_dataset(table, path)
    ours, pyarrows = lancejit.dataset(path), pds.dataset(table)
    for expr in (~pc.field("s").isin(["w1"]), pc.field("s").isin(["w1", None]), pc.field("x") > 0,
                 ~(pc.field("x") > 0), pc.field("x") == float("nan"), pc.field("x").is_null(nan_is_null=True)):
        assert ours.to_table(filter=expr, columns=["a"]).equals(pyarrows.to_table(filter=expr, columns=["a"])), expr


def _bytes(ds, run) -> int:
    ds.io_stats()
    run()
    return ds.io_stats().read_bytes


def test_projection_and_filter_pushdown_by_bytes(uri, mode):
    """Warm dataset (files open): the bytes each engine's query makes lancejit read, with and
    without projection and filter.  DuckDB pushes filters into genuine datasets only."""
    ds = lancejit.dataset(uri)
    ds.to_table()  # open every data file
    tail = N - 500
    con = duckdb.connect()
    con.register("t", ds)
    engines = {
        "duckdb": (lambda cols, where: con.sql(f"select {cols} from t {where}").fetchall(),
                   lambda: f"where a >= {tail}"),
        "polars": (lambda cols, where: (pl.scan_pyarrow_dataset(ds).filter(where) if where is not None
                                        else pl.scan_pyarrow_dataset(ds)).select(cols.split(", ")).collect(),
                   lambda: pl.col("a") >= tail),
        "pyarrow": (lambda cols, where: ds.scanner(columns=cols.split(", "), filter=where).to_table(),
                    lambda: pds.field("a") >= pds.scalar(tail)),
    }
    for name, (query, where) in engines.items():
        unfiltered = None if name != "duckdb" else ""
        everything = _bytes(ds, functools.partial(query, "a, x, i, s, flag, day, ts", unfiltered))
        column = _bytes(ds, functools.partial(query, "x", unfiltered))
        filtered = _bytes(ds, functools.partial(query, "x", where()))
        assert column < everything / 2, (name, column, everything)
        if name == "duckdb" and mode == "off":
            assert filtered >= column, (name, filtered, column)  # DuckDB filters a view's rows itself
        else:
            assert filtered < column / 3, (name, filtered, column)


def test_fresh_process_class_follows_the_setting(uri):
    """A fresh process opening a dataset imports no ``pyarrow.dataset`` (a view); after
    importing it, or with LANCEJIT_PYARROW_DATASET_CLASS=on, datasets are genuine."""
    code = ("import sys, lancejit; first = 'pyarrow.dataset' in sys.modules\n"
            "if sys.argv[2] == 'import': import pyarrow.dataset\n"
            "ds = lancejit.dataset(sys.argv[1]); ds.take([0]); ds.count_rows()\n"
            "import pyarrow.dataset as pds\n"
            "print(first, 'pyarrow.dataset' in sys.modules, issubclass(type(ds), pds.Dataset), isinstance(ds, pds.Dataset))")
    import os

    runs = {"plain": ({}, "no"), "import": ({}, "import"), "env": ({"LANCEJIT_PYARROW_DATASET_CLASS": "on"}, "no")}
    got = {}
    for name, (env, arg) in runs.items():
        code_here = code if name != "plain" else code.replace("import pyarrow.dataset as pds\n", "").replace(
            "issubclass(type(ds), pds.Dataset), isinstance(ds, pds.Dataset)", "'pyarrow.dataset' in sys.modules")
        base = {k: v for k, v in os.environ.items() if k != "LANCEJIT_PYARROW_DATASET_CLASS"}
        out = subprocess.run([sys.executable, "-c", code_here, uri, arg], capture_output=True, text=True,
                             timeout=300, env={**base, **env})
        assert out.returncode == 0, out.stderr[-2000:]
        got[name] = out.stdout.strip().splitlines()[-1]
    assert got == {"plain": "False False False", "import": "False True True True", "env": "False True True True"}
