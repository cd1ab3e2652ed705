"""Build Arrow arrays from NumPy offsets / validity / values (shared by every format version).

Conventions
* ``valid``: a NumPy bool array, one entry per slot (True = valid), or ``None`` = all valid.
* ``offsets``: NumPy integer array of ``length + 1`` entries, starting anywhere (they are rebased
  to 0 where the Arrow type needs it); list ``i`` is ``values[offsets[i]:offsets[i+1]]`` (half-open).
* Fixed-width values are raw little-endian bytes (NumPy uint8) or a typed NumPy array.
* Every function returns an array with offset 0 and no shared validity with its inputs.

Nothing here reads a file: callers validate sizes first; the helpers raise
:class:`lancejit.core.errors.CorruptFileError` only when lengths disagree.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import pyarrow as pa

from lancejit.core.errors import CorruptFileError, NotSupportedError

__all__ = [
    "bitmap_from_bools",
    "bools_from_bitmap",
    "with_validity",
    "fixed_width_array",
    "bool_array",
    "binary_array",
    "list_array",
    "fixed_size_list_array",
    "struct_array",
    "empty_array",
    "byte_width",
    "index_array",
]


def bitmap_from_bools(valid: np.ndarray) -> pa.Buffer:
    """An LSB-first Arrow bitmap buffer for a bool array (1 bit per entry, padded to bytes)."""
    return pa.py_buffer(np.packbits(np.asarray(valid, dtype=bool), bitorder="little"))


def bools_from_bitmap(bitmap: np.ndarray, count: int, bit_offset: int = 0) -> np.ndarray:
    """``count`` booleans from an LSB-first bitmap (uint8 array), starting at ``bit_offset`` bits."""
    bits = np.unpackbits(np.asarray(bitmap, dtype=np.uint8), bitorder="little")
    if bits.size < bit_offset + count:
        raise CorruptFileError(f"bitmap holds {bits.size} bits, {bit_offset + count} needed")
    return bits[bit_offset : bit_offset + count].astype(bool)


def _validity_buffer(valid: np.ndarray | None, length: int) -> tuple[pa.Buffer | None, int]:
    if valid is None:
        return None, 0
    valid = np.asarray(valid, dtype=bool)
    if valid.size != length:
        raise CorruptFileError(f"validity has {valid.size} entries for {length} slots")
    nulls = int(length - np.count_nonzero(valid))
    if nulls == 0:
        return None, 0
    return bitmap_from_bools(valid), nulls


def byte_width(arrow_type: pa.DataType) -> int | None:
    """Bytes per value of a fixed-width Arrow type (None for variable/nested/bool/null)."""
    if pa.types.is_boolean(arrow_type) or pa.types.is_null(arrow_type):
        return None
    try:
        bw = arrow_type.bit_width
    except ValueError:
        return None
    if bw % 8:
        return None
    return bw // 8


def fixed_width_array(
    arrow_type: pa.DataType, data: np.ndarray, length: int, valid: np.ndarray | None = None, *, copy: bool = True
) -> pa.Array:
    """An array of a fixed-width type (ints, floats, float16, decimals, temporal,
    fixed_size_binary) from ``length * width`` little-endian bytes in ``data`` (uint8).

    ``copy=False`` lets the array share ``data`` (the caller must own it and not modify it)."""
    width = byte_width(arrow_type)
    if width is None:
        raise NotSupportedError(f"{arrow_type} is not a fixed-width type")
    raw = np.ascontiguousarray(data).view(np.uint8).reshape(-1)
    need = length * width
    if raw.size < need:
        raise CorruptFileError(f"{length} values of {width} bytes need {need} bytes, have {raw.size}")
    vbuf, nulls = _validity_buffer(valid, length)
    body = raw[:need].copy() if copy else raw[:need]
    return pa.Array.from_buffers(arrow_type, length, [vbuf, pa.py_buffer(body)], null_count=nulls)


def bool_array(bits: np.ndarray, length: int, valid: np.ndarray | None = None, bit_offset: int = 0) -> pa.Array:
    """A boolean array from an LSB-first bitmap (uint8 array) starting at ``bit_offset`` bits."""
    bits = np.ascontiguousarray(bits).view(np.uint8).reshape(-1)
    if bit_offset:
        bools = bools_from_bitmap(bits, length, bit_offset)
        bits = np.packbits(bools, bitorder="little")
    if bits.size * 8 < length:
        raise CorruptFileError(f"boolean bitmap of {bits.size} bytes for {length} values")
    vbuf, nulls = _validity_buffer(valid, length)
    return pa.Array.from_buffers(pa.bool_(), length, [vbuf, pa.py_buffer(bits[: (length + 7) // 8].copy())], null_count=nulls)


def _is_large(arrow_type: pa.DataType) -> bool:
    return pa.types.is_large_string(arrow_type) or pa.types.is_large_binary(arrow_type) or pa.types.is_large_list(arrow_type)


def binary_array(
    arrow_type: pa.DataType, offsets: np.ndarray, data: np.ndarray, valid: np.ndarray | None = None, *, copy: bool = True
) -> pa.Array:
    """A string/binary (or large) array; ``offsets`` (``n + 1`` entries) index into ``data``.

    ``copy=False`` lets the array share ``data`` (the caller must own it and not modify it)."""
    offsets = np.asarray(offsets, dtype=np.int64)
    n = offsets.size - 1
    if n < 0:
        raise CorruptFileError("binary offsets are empty")
    start, end = int(offsets[0]), int(offsets[-1])
    if n and (np.any(np.diff(offsets) < 0) or start < 0 or end > data.size):
        raise CorruptFileError(f"binary offsets out of bounds (data has {data.size} bytes)")
    rebased = offsets - start
    if _is_large(arrow_type):
        obuf = rebased.astype(np.int64)
    else:
        if end - start > np.iinfo(np.int32).max:
            raise NotSupportedError(f"{end - start} bytes do not fit 32-bit offsets of {arrow_type}")
        obuf = rebased.astype(np.int32)
    payload = np.ascontiguousarray(np.asarray(data, dtype=np.uint8)[start:end])
    if copy:
        payload = payload.copy()
    vbuf, nulls = _validity_buffer(valid, n)
    return pa.Array.from_buffers(arrow_type, n, [vbuf, pa.py_buffer(obuf), pa.py_buffer(payload)], null_count=nulls)


def list_array(
    arrow_type: pa.DataType, offsets: np.ndarray, values: pa.Array, valid: np.ndarray | None = None
) -> pa.Array:
    """A list / large_list / map array over ``values`` (offsets index ``values``)."""
    offsets = np.asarray(offsets, dtype=np.int64)
    n = offsets.size - 1
    if n < 0:
        raise CorruptFileError("list offsets are empty")
    if n and (offsets[0] < 0 or offsets[-1] > len(values) or np.any(np.diff(offsets) < 0)):
        raise CorruptFileError("list offsets out of bounds")
    start, end = (int(offsets[0]), int(offsets[-1])) if n else (0, 0)
    child = values.slice(start, end - start)
    rebased = offsets - start
    if pa.types.is_large_list(arrow_type):
        obuf = pa.py_buffer(rebased.astype(np.int64))
    else:
        if end - start > np.iinfo(np.int32).max:
            raise NotSupportedError(f"{end - start} items do not fit 32-bit offsets of {arrow_type}")
        obuf = pa.py_buffer(rebased.astype(np.int32))
    vbuf, nulls = _validity_buffer(valid, n)
    return pa.Array.from_buffers(arrow_type, n, [vbuf, obuf], null_count=nulls, children=[child])


def fixed_size_list_array(
    arrow_type: pa.DataType, values: pa.Array, length: int, valid: np.ndarray | None = None
) -> pa.Array:
    """A fixed_size_list array of ``length`` lists over ``values`` (``length * list_size`` items)."""
    size = arrow_type.list_size
    if len(values) < length * size:
        raise CorruptFileError(f"{length} lists of {size} need {length * size} items, have {len(values)}")
    vbuf, nulls = _validity_buffer(valid, length)
    return pa.Array.from_buffers(
        arrow_type, length, [vbuf], null_count=nulls, children=[values.slice(0, length * size)]
    )


def struct_array(
    arrow_type: pa.DataType, children: Sequence[pa.Array], length: int, valid: np.ndarray | None = None
) -> pa.Array:
    """A struct array of ``length`` rows from one child array per field (each >= ``length`` long)."""
    if len(children) != arrow_type.num_fields:
        raise CorruptFileError(f"struct {arrow_type} built from {len(children)} children")
    kids = []
    for i, c in enumerate(children):
        if len(c) < length:
            raise CorruptFileError(f"struct child {i} has {len(c)} rows, {length} needed")
        kids.append(c.slice(0, length) if len(c) != length else c)
    vbuf, nulls = _validity_buffer(valid, length)
    return pa.Array.from_buffers(arrow_type, length, [vbuf], null_count=nulls, children=kids)


def with_validity(arr: pa.Array, valid: np.ndarray | None) -> pa.Array:
    """``arr`` with its validity replaced by ``valid`` (None = keep ``arr`` as is).

    Works for every type: nested arrays keep their children, dictionary arrays their dictionary.
    """
    if valid is None:
        return arr
    valid = np.asarray(valid, dtype=bool)
    if valid.size != len(arr):
        raise CorruptFileError(f"validity has {valid.size} entries for {len(arr)} slots")
    if valid.all():
        return arr
    t = arr.type
    if pa.types.is_null(t):
        return arr
    if arr.null_count:
        # Combine with existing validity.
        valid = valid & ~np.asarray(arr.is_null().to_numpy(zero_copy_only=False), dtype=bool)
    if pa.types.is_dictionary(t):
        idx = with_validity(arr.indices, valid)
        return pa.DictionaryArray.from_arrays(idx, arr.dictionary)
    if arr.offset != 0:
        arr = pa.concat_arrays([arr])  # compacts to offset 0 where possible
    if arr.offset != 0:
        return _with_validity_slow(arr, valid)
    n = len(arr)
    vbuf, nulls = _validity_buffer(valid, n)
    if isinstance(arr, (pa.StructArray,)):
        kids = [arr.field(i) for i in range(t.num_fields)]
        return pa.Array.from_buffers(t, n, [vbuf], null_count=nulls, children=kids)
    if pa.types.is_fixed_size_list(t):
        return pa.Array.from_buffers(t, n, [vbuf], null_count=nulls, children=[arr.values])
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_map(t):
        # ``arr.offsets`` index the unsliced child ``arr.values`` directly.
        obuf = pa.py_buffer(arr.offsets.to_numpy(zero_copy_only=False).copy())
        return pa.Array.from_buffers(t, n, [vbuf, obuf], null_count=nulls, children=[arr.values])
    bufs = arr.buffers()
    return pa.Array.from_buffers(t, n, [vbuf] + bufs[1:], null_count=nulls)


def _with_validity_slow(arr: pa.Array, valid: np.ndarray) -> pa.Array:
    import pyarrow.compute as pc

    return pc.if_else(pa.array(valid), arr, pa.nulls(len(arr), arr.type))


def index_array(idx: np.ndarray) -> pa.Array:
    """Integer (take) indices as an Arrow array of the same dtype, zero-copy and without
    ``pa.array``, which imports pandas (when installed) on first use: tens of milliseconds of a
    fresh process."""
    idx = np.ascontiguousarray(idx)
    return pa.Array.from_buffers(pa.from_numpy_dtype(idx.dtype), int(idx.size), [None, pa.py_buffer(idx)])


def empty_array(arrow_type: pa.DataType) -> pa.Array:
    """A zero-length array of ``arrow_type``."""
    return pa.array([], type=arrow_type)


def array_of(values: Sequence | np.ndarray, arrow_type: pa.DataType | None = None) -> pa.Array:
    """``pa.array(values, arrow_type)`` for Python ints, floats, bools, strings and bytes (None
    allowed) built from buffers: pyarrow's conversion of Python objects imports pandas
    (tenths of a second in a fresh process), which filters on plain literals do not need.  Other values
    and types go through ``pa.array``."""
    if isinstance(values, np.ndarray) and values.ndim == 1 and values.dtype.kind in "iuf" and arrow_type is None:
        arr = np.ascontiguousarray(values)
        t = pa.from_numpy_dtype(arr.dtype)
        return pa.Array.from_buffers(t, len(arr), [None, pa.py_buffer(arr)])
    if isinstance(values, np.ndarray):
        values = values.tolist()
    kinds = {type(v) for v in values if v is not None}
    n = len(values)
    valid = np.array([v is not None for v in values], dtype=bool) if None in values else None
    if kinds <= {int} and kinds and (arrow_type is None or pa.types.is_integer(arrow_type)):
        t = arrow_type or pa.int64()
        ints = [0 if v is None else v for v in values]
        info = np.iinfo(t.to_pandas_dtype()) if arrow_type is not None else np.iinfo(np.int64)
        if min(ints) >= info.min and max(ints) <= info.max:
            arr = np.array(ints, dtype=np.dtype(info.dtype))
            return with_validity(pa.Array.from_buffers(t, n, [None, pa.py_buffer(arr)]), valid)
    elif kinds <= {float, int} and kinds and (arrow_type is None or arrow_type == pa.float64()):
        arr = np.array([0.0 if v is None else float(v) for v in values], dtype=np.float64)
        return with_validity(pa.Array.from_buffers(pa.float64(), n, [None, pa.py_buffer(arr)]), valid)
    elif kinds <= {str} and kinds and (arrow_type is None or arrow_type == pa.string()):
        data = [b"" if v is None else v.encode("utf-8") for v in values]
        offsets = np.zeros(n + 1, dtype=np.int32)
        np.cumsum([len(b) for b in data], out=offsets[1:])
        arr = pa.Array.from_buffers(pa.string(), n, [None, pa.py_buffer(offsets), pa.py_buffer(b"".join(data))])
        return with_validity(arr, valid)
    elif kinds <= {bool} and kinds and (arrow_type is None or arrow_type == pa.bool_()):
        return bool_array(np.array([bool(v) for v in values]), n, valid)
    return pa.array(values, arrow_type)


def scalar_of(value: object, arrow_type: pa.DataType | None = None) -> pa.Scalar:
    """``pa.scalar(value, arrow_type)`` without importing pandas for plain Python values (see
    :func:`array_of`)."""
    return array_of([value], arrow_type)[0]


def numbers_of(arr: pa.Array) -> np.ndarray:
    """The values of an integer or floating-point array without nulls as a read-only NumPy view
    of its buffer (``to_numpy`` imports pandas); other arrays through ``to_numpy``."""
    if arr.null_count == 0 and (pa.types.is_integer(arr.type) or pa.types.is_floating(arr.type)):
        dt = np.dtype(arr.type.to_pandas_dtype())
        buf = arr.buffers()[1]
        if buf is None or len(arr) == 0:
            return np.empty(0, dtype=dt)
        return np.frombuffer(buf, dtype=dt, count=len(arr), offset=arr.offset * dt.itemsize)
    return arr.to_numpy(zero_copy_only=False)
