"""Filters Spark pushes: translated only when lancejit applies them exactly; never accepted by
default on pyspark versions that replay stale pushed filters (4.1 - 4.3)."""

from __future__ import annotations

import pyarrow as pa
import pytest

import lance
from pyspark.sql import datasource as d

from lancejit.spark.filters import accept_pushed_filters, combine, pyspark_version, to_sql
from lancejit.table.filter.compile import compile_filter, evaluate_filter

SCHEMA = pa.schema([("i", pa.int32()), ("s", pa.string()), ("b", pa.bool_()), ("f", pa.float64()),
                    ("ts", pa.timestamp("us", tz="UTC")), ("u", pa.uint64()),
                    ("st", pa.struct([("x", pa.int32())]))])

TABLE = pa.table({
    "i": pa.array([1, 2, None, 4, 5], pa.int32()),
    "s": pa.array(["a", "it's", None, "b", "a"]),
    "b": pa.array([True, False, None, True, False]),
    "f": pa.array([1.0, float("nan"), None, 2.0, 3.0]),
    "ts": pa.array([0, 1, 2, 3, None], pa.timestamp("us", tz="UTC")),
    "u": pa.array([1, 2, 3, 4, 5], pa.uint64()),
    "st": pa.array([{"x": 1}] * 5, pa.struct([("x", pa.int32())])),
})


def _python_eval(flt, row):
    """Spark's semantics for one filter on one row (None = unknown, i.e. not selected)."""
    if isinstance(flt, d.Not):
        v = _python_eval(flt.child, row)
        return None if v is None else not v
    v = row[flt.attribute[0]]
    if isinstance(flt, d.IsNull):
        return v is None
    if isinstance(flt, d.IsNotNull):
        return v is not None
    if isinstance(flt, d.EqualNullSafe):
        return v == flt.value
    if v is None:
        return None
    if isinstance(flt, d.In):
        return v in flt.value
    ops = {d.EqualTo: lambda a, b: a == b, d.GreaterThan: lambda a, b: a > b,
           d.GreaterThanOrEqual: lambda a, b: a >= b, d.LessThan: lambda a, b: a < b,
           d.LessThanOrEqual: lambda a, b: a <= b}
    return ops[type(flt)](v, flt.value)


EXACT = [
    d.EqualTo(("i",), 2), d.GreaterThan(("i",), 1), d.GreaterThanOrEqual(("i",), 4),
    d.LessThan(("i",), 4), d.LessThanOrEqual(("i",), 2), d.In(("i",), (1, 5, 7)),
    d.IsNull(("i",)), d.IsNotNull(("s",)), d.EqualTo(("s",), "it's"), d.LessThan(("s",), "b"),
    d.EqualNullSafe(("s",), "a"), d.EqualNullSafe(("i",), None), d.EqualTo(("b",), True),
    d.Not(d.EqualTo(("i",), 2)), d.Not(d.EqualNullSafe(("s",), "a")), d.Not(d.In(("s",), ("a",))),
    d.Not(d.IsNull(("b",))),
]

LEFT_TO_SPARK = [
    d.EqualTo(("f",), float("nan")), d.GreaterThan(("f",), 1.0), d.EqualTo(("ts",), 0),
    d.EqualTo(("u",), 1), d.EqualTo(("st", "x"), 1), d.EqualTo(("i",), "2"), d.EqualTo(("s",), 1),
    d.EqualTo(("s",), "a\\b"), d.EqualTo(("s",), "x'\"y"), d.StringStartsWith(("s",), "a"), d.StringContains(("s",), "t"),
    d.In(("i",), (1, None)), d.EqualTo(("nope",), 1), d.Not(d.EqualTo(("f",), 1.0)),
    d.EqualTo(("i",), True),
]


@pytest.mark.parametrize("flt", EXACT, ids=repr)
def test_translated_filters_match_spark_semantics(flt):
    sql = to_sql(flt, SCHEMA)
    assert sql is not None
    got = evaluate_filter(compile_filter(sql, SCHEMA), TABLE).to_pylist()
    rows = TABLE.to_pylist()
    want = [k for k, row in enumerate(rows) if _python_eval(flt, row) is True]
    assert got == want, sql


@pytest.mark.parametrize("flt", LEFT_TO_SPARK, ids=repr)
def test_inexact_filters_are_not_translated(flt):
    assert to_sql(flt, SCHEMA) is None


def test_combine_and_modes():
    assert combine([]) is None
    assert combine(["a > 1", "b"]) == "(a > 1) AND (b)"
    assert accept_pushed_filters("true") and not accept_pushed_filters("false")
    assert accept_pushed_filters("auto") == (pyspark_version() >= (5, 0))


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    uri = str(tmp_path_factory.mktemp("spark-push") / "small.lance")
    t = pa.table({"i": pa.array(range(60), pa.int32()),
                  "s": [None if k % 6 == 0 else f"v{k % 4}" for k in range(60)]})
    lance.write_dataset(t, uri, max_rows_per_file=25)
    return uri


@pytest.fixture
def pushdown_on(spark):
    spark.conf.set("spark.sql.python.filterPushdown.enabled", "true")
    yield
    spark.conf.set("spark.sql.python.filterPushdown.enabled", "false")


def test_reused_dataframe_stays_right_with_pushdown_enabled(spark, small, pushdown_on):
    """Default ``auto``: on pyspark 4.x nothing is accepted, so a DataFrame reused for several
    queries (the 4.3.0 stale-filter bug) still counts right."""
    df = spark.read.format("lancejit").load(small)
    assert df.where("i < 10").count() == 10
    assert df.where("i >= 50").count() == 10
    assert df.where("s = 'v1'").count() == len(lance.dataset(small).to_table(filter="s = 'v1'"))
    assert df.count() == 60


def test_accepted_filters_are_applied_by_lancejit(spark, small, pushdown_on):
    """``pushdown=true``: translated filters are accepted and applied by lancejit (fresh load
    per query, as the pyspark 4.x bug requires)."""
    def load():
        return spark.read.format("lancejit").option("pushdown", "true").load(small)

    got = load().where("i > 20 AND s IS NOT NULL AND s <> 'v2'").toArrow()
    want = lance.dataset(small).to_table(filter="i > 20 AND s IS NOT NULL AND s <> 'v2'")
    assert got.to_pylist() == want.to_pylist()
    assert load().where("i IN (1, 2, 3) OR s = 'v3'").count() == len(
        lance.dataset(small).to_table(filter="i IN (1, 2, 3) OR s = 'v3'"))


def test_pushdown_reader_accepts_and_applies(small):
    """The reader's own contract, without Spark: accepted filters leave the returned list and
    are applied in ``read``; the others come back unchanged (the same objects)."""
    from pyspark.sql.types import IntegerType, StringType, StructField, StructType

    from lancejit.spark.options import ReadOptions
    from lancejit.spark.reader import LancePushdownReader, LanceReader, make_reader

    schema = StructType([StructField("i", IntegerType()), StructField("s", StringType())])
    opts = ReadOptions.parse({"path": small, "pushdown": "true"})
    reader = make_reader(opts, schema)
    assert isinstance(reader, LancePushdownReader)
    keep = d.StringStartsWith(("s",), "v")
    flts = [d.GreaterThan(("i",), 20), keep, d.Not(d.EqualTo(("s",), "v2"))]
    assert list(reader.pushFilters(flts)) == [keep]
    assert reader.pushed == ["`i` > 20", "NOT (`s` = 'v2')"]
    rows = [r for p in reader.partitions() for b in reader.read(p) for r in b.to_pylist()]
    assert rows == lance.dataset(small).to_table(filter="i > 20 AND NOT (s = 'v2')").to_pylist()
    assert type(make_reader(ReadOptions.parse({"path": small, "pushdown": "false"}), schema)) is LanceReader
