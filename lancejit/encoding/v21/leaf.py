"""Decoded leaf values (:mod:`lancejit.encoding.v21.values`) -> Arrow arrays of the leaf type.

The arrays returned carry no validity of their own (def levels supply it later), except the item
validity inside fixed-size lists, which is part of the values.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from lancejit.core.arrow_compute import take as arrow_take
from lancejit.core.errors import CorruptFileError, NotSupportedError
from lancejit.encoding import arrow_build as ab
from lancejit.encoding.v21.values import (
    DecodedValues,
    FixedSizeListValues,
    FixedWidth,
    StructValues,
    VariableWidth,
)


def values_to_arrow(values: DecodedValues, arrow_type: pa.DataType, *, path: str) -> pa.Array:
    """Convert ``values`` (``values.num_values`` entries) to an Arrow array of ``arrow_type``."""
    n = values.num_values
    t = arrow_type
    if pa.types.is_null(t):
        return pa.nulls(n)
    if pa.types.is_dictionary(t):
        # Dictionary-typed columns are stored as their value type; re-encode.
        inner = values_to_arrow(values, t.value_type, path=path)
        return inner.dictionary_encode().cast(t) if len(inner) else pa.array([], type=t)
    if pa.types.is_fixed_size_list(t):
        return _fsl(values, t, path=path)
    if pa.types.is_struct(t):
        if not isinstance(values, StructValues):
            raise CorruptFileError(f"packed struct column decoded as {type(values).__name__}", path=path)
        if len(values.children) != t.num_fields:
            raise CorruptFileError(
                f"packed struct has {len(values.children)} children, schema has {t.num_fields}", path=path
            )
        kids = [values_to_arrow(c, t.field(i).type, path=path) for i, c in enumerate(values.children)]
        return ab.struct_array(t, kids, n)
    if pa.types.is_boolean(t):
        if not isinstance(values, FixedWidth) or values.bits_per_value != 1:
            raise CorruptFileError(f"boolean column decoded as {_describe(values)}", path=path)
        return ab.bool_array(values.data, n)
    if _is_binary_like(t):
        if not isinstance(values, VariableWidth):
            raise CorruptFileError(f"{t} column decoded as {_describe(values)}", path=path)
        if values.offsets.size != n + 1:
            raise CorruptFileError(f"{values.offsets.size} offsets for {n} values", path=path)
        try:
            return ab.binary_array(t, values.offsets, values.data, copy=False)
        except CorruptFileError as exc:
            raise CorruptFileError(str(exc), path=path) from None
    width = ab.byte_width(t)
    if width is None:
        raise NotSupportedError(f"cannot decode 2.1 values of type {t}")
    if not isinstance(values, FixedWidth):
        raise CorruptFileError(f"{t} column decoded as {_describe(values)}", path=path)
    if values.bits_per_value != width * 8:
        raise CorruptFileError(f"{t} needs {width * 8}-bit values, page has {values.bits_per_value}", path=path)
    if values.data.size < n * width:
        raise CorruptFileError(f"{n} values need {n * width} bytes, have {values.data.size}", path=path)
    return ab.fixed_width_array(t, values.data, n, copy=False)


def _fsl(values: DecodedValues, t: pa.DataType, *, path: str) -> pa.Array:
    n = values.num_values
    dim = t.list_size
    if isinstance(values, FixedSizeListValues):
        if values.dimension != dim:
            raise CorruptFileError(f"vector dimension {values.dimension}, schema says {dim}", path=path)
        items = values_to_arrow(values.items, t.value_type, path=path)
        if len(items) < n * dim:
            raise CorruptFileError(f"{n} vectors need {n * dim} items, have {len(items)}", path=path)
        if values.validity is not None:
            valid = ab.bools_from_bitmap(values.validity, n * dim)
            items = ab.with_validity(items.slice(0, n * dim), valid)
        return ab.fixed_size_list_array(t, items, n)
    if isinstance(values, FixedWidth):
        # flattened items (e.g. flat of dim * width bits)
        width = _flat_width_bits(t)
        if width is None or values.bits_per_value not in (width, width * 0 + values.bits_per_value):
            raise CorruptFileError(f"vector column decoded as {_describe(values)}", path=path)
        inner = t.value_type
        total = n * dim
        if pa.types.is_fixed_size_list(inner):
            items = _fsl(FixedWidth(values.data, values.bits_per_value // dim, total), inner, path=path)
        elif pa.types.is_boolean(inner):
            items = ab.bool_array(values.data, total)
        else:
            items = ab.fixed_width_array(inner, values.data, total, copy=False)
        return ab.fixed_size_list_array(t, items, n)
    raise CorruptFileError(f"vector column decoded as {_describe(values)}", path=path)


def _flat_width_bits(t: pa.DataType) -> int | None:
    if pa.types.is_fixed_size_list(t):
        w = _flat_width_bits(t.value_type)
        return None if w is None else w * t.list_size
    if pa.types.is_boolean(t):
        return 1
    w = ab.byte_width(t)
    return None if w is None else w * 8


def _is_binary_like(t: pa.DataType) -> bool:
    return (
        pa.types.is_string(t)
        or pa.types.is_large_string(t)
        or pa.types.is_binary(t)
        or pa.types.is_large_binary(t)
    )


def _describe(values: DecodedValues) -> str:
    if isinstance(values, FixedWidth):
        return f"{values.bits_per_value}-bit fixed values"
    return type(values).__name__


def placeholder(arrow_type: pa.DataType, n: int) -> pa.Array:
    """``n`` null values of ``arrow_type`` (stand-ins for values never stored)."""
    return pa.nulls(n, type=arrow_type)


def repeat_scalar(one: pa.Array, n: int) -> pa.Array:
    """An array of ``n`` copies of the single value in ``one``."""
    if n == 0:
        return one.slice(0, 0)
    return arrow_take(one, ab.index_array(np.zeros(n, dtype=np.int32)))


def take_dictionary(items: pa.Array, indices: DecodedValues, *, path: str) -> pa.Array:
    """Map 0-based dictionary ``indices`` (fixed-width unsigned) to ``items``."""
    if not isinstance(indices, FixedWidth) or indices.bits_per_value not in (8, 16, 32, 64):
        raise CorruptFileError(f"dictionary indices decoded as {_describe(indices)}", path=path)
    idx = indices.view(np.dtype(f"<u{indices.bits_per_value // 8}")).astype(np.int64)
    if idx.size and int(idx.max()) >= len(items):
        raise CorruptFileError(f"dictionary index {int(idx.max())} >= {len(items)} items", path=path)
    return arrow_take(items, ab.index_array(idx))


def dictionary_array(items: pa.Array, indices: DecodedValues, t: pa.DictionaryType, *, path: str) -> pa.Array:
    """A dictionary column's values: the page's dictionary as written (every item, in its order:
    the reference returns it so) with the decoded ``indices``."""
    if not isinstance(indices, FixedWidth) or indices.bits_per_value not in (8, 16, 32, 64):
        raise CorruptFileError(f"dictionary indices decoded as {_describe(indices)}", path=path)
    idx = indices.view(np.dtype(f"<u{indices.bits_per_value // 8}"))
    if idx.size and int(idx.max()) >= len(items):
        raise CorruptFileError(f"dictionary index {int(idx.max())} >= {len(items)} items", path=path)
    kind = "int" if pa.types.is_signed_integer(t.index_type) else "uint"
    dtype = np.dtype(f"{kind}{t.index_type.bit_width}")
    if len(items) and len(items) - 1 > np.iinfo(dtype).max:  # the schema's index type is too narrow
        return take_dictionary(items, indices, path=path).dictionary_encode().cast(t)
    if items.type != t.value_type:
        items = items.cast(t.value_type)
    return pa.DictionaryArray.from_arrays(pa.array(idx.astype(dtype)), items)
