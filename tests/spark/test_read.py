"""``spark.read.format("lancejit")`` against pylance 14's ``to_table`` on the same datasets."""

from __future__ import annotations

import datetime as dt
import decimal

import numpy as np
import pyarrow as pa
import pytest

import lance

from pyspark.sql.pandas.types import to_arrow_schema


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
    # one partition per fragment (5 fragments, none above the default partition size)
    assert df.rdd.getNumPartitions() == len(lance.dataset(rich).get_fragments())
    _assert_same(_collect(df), _expected(df, expected))


def test_split_fragments_projection_and_batch_size(spark, rich):
    df = (spark.read.format("lancejit").option("rows_per_partition", 33).option("batch_size", 7)
          .option("columns", "st,id,vec,m").load(rich))
    assert df.columns == ["st", "id", "vec", "m"]
    frags = lance.dataset(rich).get_fragments()
    assert df.rdd.getNumPartitions() == sum(-(-f.metadata.physical_rows // 33) for f in frags)
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
        spark.read.format("lancejit").option("columns", "id,nope").load(rich).schema
    with pytest.raises(Exception, match="no version 99"):
        spark.read.format("lancejit").option("version", "99").load(rich).schema
