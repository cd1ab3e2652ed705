"""``spark.read.format("lancejit")`` against pylance 14's ``to_table`` on the same datasets."""

from __future__ import annotations

import datetime as dt
import decimal

import numpy as np
import pyarrow as pa
import pytest

import lance

from pyspark.sql.pandas.types import to_arrow_schema

from lancejit.spark.partitions import default_min_partitions


def _table(start: int, n: int, seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    ids = np.arange(start, start + n, dtype=np.int64)
    null = (ids % 5) == 2
    st_type = pa.struct([("x", pa.int32()), ("y", pa.string())])
    return pa.table({
        "id": ids,
        "i8": pa.array((ids % 100 - 50).astype(np.int8)),
        "u32": pa.array((ids * 7).astype(np.uint32)),
        "u64": pa.array((ids.astype(np.uint64) + np.uint64(2**63))),
        "f": pa.array(rng.normal(size=n).astype(np.float32), mask=(ids % 11) == 0),
        "d": rng.normal(size=n),
        "b": pa.array((ids % 3) == 0),
        "s": pa.array([None if z else f"s{i}" for i, z in zip(ids, null)], pa.string()),
        "ls": pa.array([f"long-{i}" * (i % 3) for i in ids], pa.large_string()),
        "bin": pa.array([bytes([i % 256]) * (i % 4) for i in ids], pa.binary()),
        "vec": pa.FixedSizeListArray.from_arrays(pa.array(rng.normal(size=n * 4).astype(np.float32)), 4),
        "lst": pa.array([None if i % 7 == 1 else list(range(i % 4)) for i in ids], pa.list_(pa.int32())),
        "st": pa.array([None if i % 9 == 4 else {"x": int(i), "y": None if i % 2 else f"y{i}"} for i in ids],
                       st_type),
        "m": pa.array([[("k", int(i)), ("j", None)] if i % 2 else [] for i in ids],
                      pa.map_(pa.string(), pa.int32())),
        "dec": pa.array([decimal.Decimal(int(i) * 3 - 7) / 100 for i in ids], pa.decimal128(12, 2)),
        "ts": pa.array([dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc) + dt.timedelta(seconds=int(i), microseconds=int(i))
                        for i in ids], pa.timestamp("us", tz="UTC")),
        "ntz": pa.array([None if i % 4 == 0 else dt.datetime(2020, 5, 17) + dt.timedelta(minutes=int(i)) for i in ids],
                        pa.timestamp("us")),
        "day": pa.array([dt.date(2021, 1, 1) + dt.timedelta(days=int(i)) for i in ids], pa.date32()),
    })


@pytest.fixture(scope="module")
def rich(tmp_path_factory):
    """A dataset with versions: 1 = 3 fragments, 2 = an append (tag ``appended``), 3 = deletions,
    4 = an added column ``c2`` (computed, stored in new data files)."""
    uri = str(tmp_path_factory.mktemp("spark-read") / "rich.lance")
    lance.write_dataset(_table(0, 250, 1), uri, max_rows_per_file=100)
    ds = lance.write_dataset(_table(250, 120, 2), uri, mode="append", max_rows_per_file=100)
    ds.tags.create("appended", ds.version)
    ds.delete("id % 13 = 5 OR (id >= 100 AND id < 130)")
    ds = lance.dataset(uri)
    ds.add_columns({"c2": "id * 2 + 1"})
    assert lance.dataset(uri).version == 4
    return uri


def _collect(df) -> pa.Table:
    return df.toArrow()


def _expected(spark_df, table: pa.Table) -> pa.Table:
    """pylance's table converted (plain pyarrow casts) to the Spark schema's Arrow types."""
    target = to_arrow_schema(spark_df.schema, timezone="UTC")
    cols = []
    for f in target:
        col = table.column(f.name)
        cols.append(col.cast(f.type))
    return pa.Table.from_arrays(cols, schema=target)


def _assert_same(actual: pa.Table, expected: pa.Table) -> None:
    assert actual.column_names == expected.column_names
    assert actual.num_rows == expected.num_rows
    for name in actual.column_names:
        a = actual.column(name).cast(expected.column(name).type).to_pylist()
        assert a == expected.column(name).to_pylist(), name


def test_schema_maps_every_type(spark, rich):
    from pyspark.sql import types as T

    df = spark.read.format("lancejit").load(rich)
    got = {f.name: f.dataType for f in df.schema.fields}
    assert got["i8"] == T.ByteType()
    assert got["u32"] == T.LongType()
    assert got["u64"] == T.DecimalType(20, 0)
    assert got["f"] == T.FloatType() and got["d"] == T.DoubleType()
    assert got["ls"] == T.StringType() and got["bin"] == T.BinaryType()
    assert got["vec"] == T.ArrayType(T.FloatType(), True)
    assert got["lst"] == T.ArrayType(T.IntegerType(), True)
    assert got["st"] == T.StructType([T.StructField("x", T.IntegerType()), T.StructField("y", T.StringType())])
    assert got["m"] == T.MapType(T.StringType(), T.IntegerType(), True)
    assert got["dec"] == T.DecimalType(12, 2)
    assert got["ts"] == T.TimestampType() and got["ntz"] == T.TimestampNTZType()
    assert got["day"] == T.DateType() and got["c2"] == T.LongType()


def test_full_read_equals_pylance(spark, rich):
    df = spark.read.format("lancejit").load(rich)
    expected = lance.dataset(rich).to_table()
    # small fragments are packed: one partition per core of the planning host (local[2] here)
    assert df.rdd.getNumPartitions() <= default_min_partitions()
    _assert_same(_collect(df), _expected(df, expected))


def test_split_fragments_projection_and_batch_size(spark, rich):
    df = (spark.read.format("lancejit").option("rows_per_partition", 33).option("batch_size", 7)
          .option("columns", "st,id,vec,m").load(rich))
    assert df.columns == ["st", "id", "vec", "m"]
    frags = lance.dataset(rich).get_fragments()
    # every fragment split into ranges of at most 33 rows, none packed over 33 rows
    assert df.rdd.getNumPartitions() >= sum(-(-f.metadata.physical_rows // 33) for f in frags)
    expected = lance.dataset(rich).to_table(columns=["st", "id", "vec", "m"])
    _assert_same(_collect(df), _expected(df, expected))


def test_user_schema_projects(spark, rich):
    df = spark.read.format("lancejit").schema("dec DECIMAL(12,2), s STRING").load(rich)
    expected = lance.dataset(rich).to_table(columns=["dec", "s"])
    _assert_same(_collect(df), _expected(df, expected))


@pytest.mark.parametrize("version", ["1", "appended", "3"])
def test_versions_and_tags(spark, rich, version):
    df = spark.read.format("lancejit").option("version", version).load(rich)
    v = int(version) if version.isdigit() else version
    expected = lance.dataset(rich, version=v).to_table()
    assert "c2" not in df.columns
    _assert_same(_collect(df), _expected(df, expected))


def test_filter_option_is_evaluated_by_lancejit(spark, rich):
    flt = "id > 40 AND (s IS NOT NULL OR st.x < 200) AND c2 < 601"
    df = spark.read.format("lancejit").option("filter", flt).option("columns", "id,s,st,dec,c2").load(rich)
    expected = lance.dataset(rich).to_table(columns=["id", "s", "st", "dec", "c2"], filter=flt)
    assert expected.num_rows > 0
    _assert_same(_collect(df), _expected(df, expected))


def test_spark_filters_and_aggregates(spark, rich):
    df = spark.read.format("lancejit").load(rich)
    got = df.where("id % 2 = 0 AND s IS NOT NULL AND u32 > 100").select("id", "s", "ts").toArrow()
    expected = lance.dataset(rich).to_table(columns=["id", "s", "ts"],
                                            filter="id % 2 = 0 AND s IS NOT NULL AND u32 > 100")
    _assert_same(got, _expected(spark.read.format("lancejit").option("columns", "id,s,ts").load(rich), expected))
    row = df.selectExpr("count(*) AS n", "sum(id) AS s", "sum(c2) AS c").collect()[0]
    full = lance.dataset(rich).to_table(columns=["id", "c2"])
    assert (row.n, row.s, row.c) == (full.num_rows, pa.compute.sum(full["id"]).as_py(),
                                     pa.compute.sum(full["c2"]).as_py())


def test_empty_result_and_bad_options(spark, rich):
    df = spark.read.format("lancejit").option("filter", "id < 0").load(rich)
    assert df.count() == 0
    with pytest.raises(Exception, match="no column"):
        _ = spark.read.format("lancejit").option("columns", "id,nope").load(rich).schema
    with pytest.raises(Exception, match="no version 99"):
        _ = spark.read.format("lancejit").option("version", "99").load(rich).schema
    # lancejit's message comes first, not a traceback
    for opt, val, text in [("version", "99", "no version 99"), ("colums", "id", "did you mean 'columns'"),
                           ("filter", "nope > 1", "no column 'nope'"), ("max_rows_per_file", "3", "applies to writes"),
                           ("maxPartitionBytes", "-1", "must be >= 1")]:
        with pytest.raises(Exception) as info:
            spark.read.format("lancejit").option(opt, val).load(rich).collect()
        first = str(info.value).splitlines()[0]
        assert text in first and "lancejit.core.errors." in first, first


@pytest.fixture(scope="module")
def many(tmp_path_factory):
    """57 small fragments (some with deletions, 3 deleted whole) and one big one."""
    uri = str(tmp_path_factory.mktemp("spark-many") / "many.lance")
    lance.write_dataset(_table(0, 600, 3), uri, max_rows_per_file=10)
    lance.write_dataset(_table(600, 3000, 4), uri, mode="append")
    lance.dataset(uri).delete("id % 17 = 3 OR (id >= 100 AND id < 130)")
    return uri


PACKINGS = [
    {},  # defaults: one partition per core
    {"minPartitionNum": "7"},
    {"maxPartitionBytes": "4096", "openCostInBytes": "0"},
    {"maxPartitionBytes": "20000", "openCostInBytes": "1000", "minPartitionNum": "1"},
    {"rows_per_partition": "37", "batch_size": "5"},
    {"minPartitionNum": "1", "maxPartitionBytes": str(1 << 30)},
]


@pytest.mark.parametrize("packing", PACKINGS, ids=lambda p: ",".join(f"{k}={v}" for k, v in p.items()) or "default")
def test_every_packing_reads_what_pylance_reads(spark, many, packing):
    cols = "id,s,vec,st,ts"
    r = spark.read.format("lancejit").option("columns", cols)
    for k, v in packing.items():
        r = r.option(k, v)
    df = r.load(many)
    n = df.rdd.getNumPartitions()
    if packing.get("minPartitionNum") == "7":
        assert n >= 7
    if "rows_per_partition" in packing:
        assert n >= 3600 // 37
    if packing.get("maxPartitionBytes") == str(1 << 30):
        assert n == 1
    expected = lance.dataset(many).to_table(columns=cols.split(","))
    # partitions in order give the dataset's scan order
    _assert_same(_collect(df), _expected(df, expected))
    flt = "id % 3 = 1 AND s IS NOT NULL"
    got = r.option("filter", flt).load(many).toArrow()
    _assert_same(got, _expected(df, lance.dataset(many).to_table(columns=cols.split(","), filter=flt)))


def test_small_fragments_make_few_tasks(spark, many):
    df = spark.read.format("lancejit").load(many)
    assert len(lance.dataset(many).get_fragments()) == 58
    assert df.rdd.getNumPartitions() <= 2 * default_min_partitions()


def test_meta_columns(spark, many):
    df = spark.read.format("lancejit").option("columns", "id,_rowaddr,_rowid").load(many)
    from pyspark.sql import types as T

    assert [f.dataType for f in df.schema.fields] == [T.LongType()] * 3
    want = lance.dataset(many).to_table(columns=["id"], with_row_address=True, with_row_id=True)
    got = df.toArrow()
    assert got["_rowaddr"].to_pylist() == want["_rowaddr"].to_pylist()
    assert got["_rowid"].to_pylist() == want["_rowid"].to_pylist()


def test_explain_says_what_lancejit_reads(spark, many):
    import lancejit.spark

    df = (spark.read.format("lancejit").option("columns", "id,s").option("filter", "id > 5")
          .option("minPartitionNum", 3).load(many).where("s IS NOT NULL"))
    text = lancejit.spark.explain(df)
    version = lance.dataset(many).version
    assert f"lancejit scan of {many} version {version}" in text
    assert "columns read: id, s" in text and "filter applied by lancejit: id > 5" in text
    assert "fragments: 58 (" in text and f"partitions (tasks): {df.rdd.getNumPartitions()}," in text
    plain = lancejit.spark.explain(spark.read.format("lancejit").load(many))
    assert "every column" in plain
    assert lancejit.spark.explain(spark.range(3)) == "(no lancejit scan)"


COLD_TASK = """
import pickle, sys, json
import pyarrow, pyspark.sql.datasource  # what a Spark Python worker has loaded before a task
import lancejit.table.filter.compile as f
def refuse(*a, **k):
    raise AssertionError("a task compiled a filter")
f.compile_filter = refuse
reader, part = pickle.loads(sys.stdin.buffer.read())
rows = sum(b.num_rows for b in reader.read(part))
print(json.dumps({"rows": rows, "pandas": "pandas" in sys.modules}))
"""


def test_cold_task_needs_no_sql_parse_nor_pandas(many):
    """A task gets its scan compiled at planning: a fresh worker process reads its partition
    without compiling the filter and without importing pandas."""
    import json
    import os
    import pickle
    import subprocess
    import sys

    from lancejit.spark.options import ReadOptions
    from lancejit.spark.reader import make_reader, open_dataset
    from lancejit.spark.source import read_arrow_schema
    from lancejit.spark.types import arrow_to_spark_schema

    opts = ReadOptions.parse({"path": many, "columns": "id,s", "filter": "id % 3 = 1 AND s IS NOT NULL"})
    reader = make_reader(opts, arrow_to_spark_schema(read_arrow_schema(opts, open_dataset(many, None, None))))
    parts = reader.partitions()
    want = sum(b.num_rows for p in parts for b in reader.read(p))
    got = [json.loads(subprocess.run([sys.executable, "-c", COLD_TASK], input=pickle.dumps((reader, p)),
                                     capture_output=True, env=dict(os.environ), check=True).stdout)
           for p in parts[:2]]
    assert not any(g["pandas"] for g in got)
    if len(parts) <= 2:
        assert sum(g["rows"] for g in got) == want
