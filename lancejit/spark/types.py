"""Arrow (as lancejit reads a dataset) <-> Spark SQL types, and casting record batches to the
exact Arrow schema Spark expects from a Python data source.

Spark checks every batch a reader yields against ``to_arrow_schema(schema, timezone="UTC")``
(names, order, widths, ``string`` vs ``large_string``, nullability, timestamp unit and zone), so
:func:`cast_batch` converts each column to that target.  Mapping (Arrow -> Spark):

* int8/16/32/64 -> Byte/Short/Integer/Long; uint8 -> Short, uint16 -> Integer, uint32 -> Long,
  uint64 -> Decimal(20, 0) (Spark has no unsigned types); float16/32 -> Float, float64 -> Double
* bool -> Boolean; (large_)string, json -> String; (large_/fixed_size_)binary -> Binary
* decimal128/256 with precision <= 38 -> Decimal(p, s)
* date32/date64 -> Date; timestamp with zone -> Timestamp, without -> TimestampNTZ
  (microseconds: finer units are truncated); duration -> DayTimeInterval (microseconds)
* (large_/fixed_size_)list (vectors) -> Array; struct -> Struct; map -> Map;
  dictionary -> its value type; null -> Null

Anything else (e.g. time of day, bfloat16 extension) raises :class:`NotSupportedError`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc

from lancejit.core.errors import NotSupportedError, SchemaMismatchError

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql.types import DataType, StructType

#: Cast options: nanosecond timestamps/durations become microseconds (truncating), nothing else
#: may lose data.
_CAST = dict(allow_time_truncate=True)


def _storage(t: pa.DataType) -> pa.DataType:
    return t.storage_type if isinstance(t, pa.BaseExtensionType) else t


def arrow_to_spark_type(t: pa.DataType, *, name: str = "?") -> "DataType":
    """The Spark type holding Arrow type ``t`` (see the module docstring)."""
    from pyspark.sql import types as st

    ext = t.extension_name if isinstance(t, pa.BaseExtensionType) else ""
    t = _storage(t)
    if ext in ("arrow.json", "lance.json"):
        return st.StringType()
    if ext:
        raise NotSupportedError(f"column {name!r}: extension type {ext!r} has no Spark type")
    if pa.types.is_boolean(t):
        return st.BooleanType()
    if pa.types.is_int8(t):
        return st.ByteType()
    if pa.types.is_int16(t) or pa.types.is_uint8(t):
        return st.ShortType()
    if pa.types.is_int32(t) or pa.types.is_uint16(t):
        return st.IntegerType()
    if pa.types.is_int64(t) or pa.types.is_uint32(t):
        return st.LongType()
    if pa.types.is_uint64(t):
        return st.DecimalType(20, 0)
    if pa.types.is_float16(t) or pa.types.is_float32(t):
        return st.FloatType()
    if pa.types.is_float64(t):
        return st.DoubleType()
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return st.StringType()
    if (pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t)
            or pa.types.is_binary_view(t)):
        return st.BinaryType()
    if pa.types.is_decimal(t):
        if t.precision > 38:
            raise NotSupportedError(f"column {name!r}: {t} exceeds Spark's decimal precision (38)")
        return st.DecimalType(t.precision, t.scale)
    if pa.types.is_date(t):
        return st.DateType()
    if pa.types.is_timestamp(t):
        return st.TimestampType() if t.tz is not None else st.TimestampNTZType()
    if pa.types.is_duration(t):
        return st.DayTimeIntervalType()
    if pa.types.is_null(t):
        return st.NullType()
    if pa.types.is_dictionary(t):
        return arrow_to_spark_type(t.value_type, name=name)
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t) \
            or pa.types.is_list_view(t) or pa.types.is_large_list_view(t):
        vf = t.value_field
        return st.ArrayType(arrow_to_spark_type(vf.type, name=f"{name}.{vf.name}"), vf.nullable)
    if pa.types.is_map(t):
        return st.MapType(
            arrow_to_spark_type(t.key_type, name=f"{name}.key"),
            arrow_to_spark_type(t.item_type, name=f"{name}.value"),
            t.item_field.nullable,
        )
    if pa.types.is_struct(t):
        return st.StructType([
            st.StructField(f.name, arrow_to_spark_type(f.type, name=f"{name}.{f.name}"), f.nullable)
            for f in t
        ])
    raise NotSupportedError(f"column {name!r}: Arrow type {t} has no Spark type")


def arrow_to_spark_schema(schema: pa.Schema) -> "StructType":
    """The Spark schema of a dataset's Arrow schema (top-level nullability kept)."""
    from pyspark.sql.types import StructField, StructType

    return StructType([StructField(f.name, arrow_to_spark_type(f.type, name=f.name), f.nullable)
                       for f in schema])


def spark_arrow_schema(schema: "StructType") -> pa.Schema:
    """The exact Arrow schema Spark expects batches of ``schema`` to have."""
    from pyspark.sql.pandas.types import to_arrow_schema

    return to_arrow_schema(schema, timezone="UTC")


def _unwrap(arr: pa.Array | pa.ChunkedArray) -> pa.Array | pa.ChunkedArray:
    """Extension arrays as their storage (recursively through the top level only)."""
    if isinstance(arr.type, pa.BaseExtensionType):
        if isinstance(arr, pa.ChunkedArray):
            return pa.chunked_array([c.storage for c in arr.chunks], arr.type.storage_type)
        return arr.storage
    return arr


def _needs_unwrap(t: pa.DataType) -> bool:
    if isinstance(t, pa.BaseExtensionType):
        return True
    return any(_needs_unwrap(t.field(i).type) for i in range(t.num_fields))


def _strip_extensions(arr: pa.Array) -> pa.Array:
    """``arr`` with extension types replaced by their storage at every depth."""
    arr = _unwrap(arr)
    t = arr.type
    if not _needs_unwrap(t):
        return arr
    if pa.types.is_struct(t):
        kids = [_strip_extensions(arr.field(i)) for i in range(t.num_fields)]
        fields = [t.field(i).with_type(k.type) for i, k in enumerate(kids)]
        mask = arr.is_null() if arr.null_count else None
        return pa.StructArray.from_arrays(kids, fields=fields, mask=mask)
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        values = _strip_extensions(arr.values)
        cls = pa.ListArray if pa.types.is_list(t) else pa.LargeListArray
        mask = arr.is_null() if arr.null_count else None
        return cls.from_arrays(arr.offsets, values, pa.list_(t.value_field.with_type(values.type))
                               if pa.types.is_list(t) else pa.large_list(t.value_field.with_type(values.type)),
                               mask=mask)
    if pa.types.is_fixed_size_list(t):
        values = _strip_extensions(arr.values)
        mask = arr.is_null() if arr.null_count else None
        return pa.FixedSizeListArray.from_arrays(values, type=pa.list_(t.value_field.with_type(values.type),
                                                                        t.list_size), mask=mask)
    raise NotSupportedError(f"extension types inside {t} are not supported")


def cast_array(arr: pa.Array, target: pa.DataType, *, name: str = "?") -> pa.Array:
    """``arr`` converted to ``target`` without loss except sub-microsecond time truncation."""
    arr = _strip_extensions(arr)
    if arr.type.equals(target):
        return arr
    try:
        return pc.cast(arr, options=pc.CastOptions(target, **_CAST))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        raise SchemaMismatchError(f"column {name!r}: cannot convert {arr.type} to {target}: {exc}") from exc


def cast_batch(batch: pa.RecordBatch, target: pa.Schema) -> pa.RecordBatch:
    """``batch`` with columns (picked by name) cast to ``target`` exactly."""
    cols = []
    for f in target:
        idx = batch.schema.get_field_index(f.name)
        if idx < 0:
            raise SchemaMismatchError(f"batch has no column {f.name!r} (has {batch.schema.names})")
        cols.append(cast_array(batch.column(idx), f.type, name=f.name))
    if not cols:
        return pa.RecordBatch.from_pydict({}, schema=target) if batch.num_rows == 0 else \
            pa.RecordBatch.from_struct_array(pa.array([{}] * batch.num_rows, type=pa.struct([])))
    return pa.RecordBatch.from_arrays(cols, schema=target)


__all__ = [
    "arrow_to_spark_schema",
    "arrow_to_spark_type",
    "cast_array",
    "cast_batch",
    "spark_arrow_schema",
]
