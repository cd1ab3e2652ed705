"""Arrow -> Spark type mapping and the exact casts to Spark's Arrow schema (no Spark session)."""

from __future__ import annotations

import datetime as dt
import decimal

import pyarrow as pa
import pytest
from pyspark.sql import types as T
from pyspark.sql.pandas.types import to_arrow_schema

from lancejit.core.errors import NotSupportedError, SchemaMismatchError
from lancejit.spark.types import arrow_to_spark_schema, arrow_to_spark_type, cast_batch

CASES = [
    (pa.uint8(), T.ShortType(), [0, 255, None]),
    (pa.uint16(), T.IntegerType(), [0, 65535, None]),
    (pa.uint32(), T.LongType(), [0, 2**32 - 1, None]),
    (pa.uint64(), T.DecimalType(20, 0), [0, 2**64 - 1, None]),
    (pa.float16(), T.FloatType(), [1.5, None, -2.0]),
    (pa.large_string(), T.StringType(), ["a", None, "ccc"]),
    (pa.large_binary(), T.BinaryType(), [b"a", None, b""]),
    (pa.binary(3), T.BinaryType(), [b"abc", None, b"xyz"]),
    (pa.date64(), T.DateType(), [dt.date(2020, 1, 2), None, dt.date(1969, 12, 31)]),
    (pa.timestamp("ms"), T.TimestampNTZType(), [dt.datetime(2020, 1, 1, 1, 2, 3), None, dt.datetime(1900, 1, 1)]),
    (pa.timestamp("s", tz="America/New_York"), T.TimestampType(), [0, 10**9, None]),
    (pa.duration("us"), T.DayTimeIntervalType(), [dt.timedelta(seconds=5), None, dt.timedelta(days=-1)]),
    (pa.decimal256(30, 4), T.DecimalType(30, 4), [decimal.Decimal("1.2345"), None, decimal.Decimal("-7")]),
    (pa.large_list(pa.int16()), T.ArrayType(T.ShortType(), True), [[1, None], None, []]),
    (pa.list_(pa.field("v", pa.float64(), nullable=False), 2), T.ArrayType(T.DoubleType(), False),
     [[1.0, 2.0], None, [3.0, 4.0]]),
    (pa.dictionary(pa.int8(), pa.string()), T.StringType(), ["x", None, "y"]),
    (pa.null(), T.NullType(), [None, None, None]),
]


@pytest.mark.parametrize("arrow_type,spark_type,values", CASES, ids=[str(c[0]) for c in CASES])
def test_type_and_exact_cast(arrow_type, spark_type, values):
    assert arrow_to_spark_type(arrow_type) == spark_type
    arr = pa.array(values, arrow_type) if not pa.types.is_dictionary(arrow_type) else \
        pa.array(values).dictionary_encode().cast(arrow_type)
    batch = pa.RecordBatch.from_arrays([arr], names=["c"])
    target = to_arrow_schema(T.StructType([T.StructField("c", spark_type)]), timezone="UTC")
    out = cast_batch(batch, target)
    assert out.schema == target
    expected = arr.cast(arr.type.value_type) if pa.types.is_dictionary(arrow_type) else arr
    assert out.column(0).to_pylist() == expected.cast(target.field(0).type).to_pylist()
    assert out.column(0).null_count == arr.null_count


def test_nanoseconds_truncate_to_microseconds():
    arr = pa.array([1_500, None, 2_000_999], pa.timestamp("ns", tz="UTC"))
    out = cast_batch(pa.RecordBatch.from_arrays([arr], names=["t"]),
                     pa.schema([("t", pa.timestamp("us", tz="UTC"))]))
    assert out.column(0).cast(pa.int64()).to_pylist() == [1, None, 2000]


def test_json_extension_is_a_string():
    ext = pa.json_(pa.string()) if hasattr(pa, "json_") else None
    if ext is None:
        pytest.skip("pyarrow without the json extension type")
    assert arrow_to_spark_type(ext) == T.StringType()
    arr = pa.ExtensionArray.from_storage(ext, pa.array(['{"a": 1}', None]))
    out = cast_batch(pa.RecordBatch.from_arrays([arr], names=["j"]), pa.schema([("j", pa.string())]))
    assert out.column(0).to_pylist() == ['{"a": 1}', None]


def test_nested_struct_map_list_cast():
    t = pa.struct([("m", pa.map_(pa.string(), pa.large_list(pa.uint32()))), ("v", pa.list_(pa.float32(), 2))])
    arr = pa.array([{"m": [("k", [1, 2])], "v": [1.0, 2.0]}, None, {"m": [], "v": None}], t)
    spark_t = arrow_to_spark_type(t)
    assert spark_t == T.StructType([
        T.StructField("m", T.MapType(T.StringType(), T.ArrayType(T.LongType(), True), True)),
        T.StructField("v", T.ArrayType(T.FloatType(), True)),
    ])
    target = to_arrow_schema(T.StructType([T.StructField("s", spark_t)]), timezone="UTC")
    out = cast_batch(pa.RecordBatch.from_arrays([arr], names=["s"]), target)
    assert out.schema == target
    assert out.column(0).to_pylist() == [{"m": [("k", [1, 2])], "v": [1.0, 2.0]}, None, {"m": [], "v": None}]


def test_unrepresentable_types_raise():
    with pytest.raises(NotSupportedError):
        arrow_to_spark_type(pa.decimal256(40, 2))
    with pytest.raises(NotSupportedError):
        arrow_to_spark_type(pa.time64("us"))
    schema = arrow_to_spark_schema(pa.schema([pa.field("a", pa.int32(), nullable=False)]))
    assert schema == T.StructType([T.StructField("a", T.IntegerType(), False)])
    with pytest.raises(SchemaMismatchError):
        cast_batch(pa.RecordBatch.from_pydict({"a": [1]}), pa.schema([("b", pa.int64())]))
    with pytest.raises(SchemaMismatchError):
        cast_batch(pa.RecordBatch.from_pydict({"a": ["x"]}), pa.schema([("a", pa.int64())]))
