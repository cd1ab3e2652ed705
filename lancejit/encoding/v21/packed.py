"""Packed structs (2.1 fixed-width ``PackedStruct``, 2.2 ``VariablePackedStruct``).

* ``PackedStruct``: each row is the children's values back to back (row-major), child ``i``
  taking ``bits_per_value[i] / 8`` bytes; stored as one fixed-width value of the summed width.
* ``VariablePackedStruct`` (full-zip payloads): each row is its fields in order, a fixed field as
  raw bytes, a variable field as a little-endian u32/u64 length followed by the bytes.  The
  collected field values then go through the field's own per-value decoder.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from lancejit.core.errors import CorruptFileError, NotSupportedError
from lancejit.encoding.kernels import readonly
from lancejit.encoding.kernels.gather import copy_slices
from lancejit.encoding.kernels.varpacked import KIND_FIXED, KIND_LEN32, KIND_LEN64, scan_rows
from lancejit.encoding.v21.values import DecodedValues, FixedWidth, StructValues, VariableWidth


def split_packed_rows(rows: DecodedValues, bits_per_value: list[int], *, path: str) -> StructValues:
    """Split row-major packed rows into one :class:`FixedWidth` child per field."""
    if not isinstance(rows, FixedWidth):
        raise CorruptFileError("packed struct rows are not fixed width", path=path)
    widths = [int(b) for b in bits_per_value]
    if rows.bits_per_value != sum(widths):
        raise CorruptFileError(
            f"packed struct row of {rows.bits_per_value} bits but children sum to {sum(widths)}",
            path=path,
        )
    if not widths or any(b <= 0 or b % 8 for b in widths):
        raise NotSupportedError(f"{path}: packed struct child widths {widths} (must be whole bytes)")
    row_bytes = sum(widths) // 8
    n = rows.num_values
    table = rows.data[: n * row_bytes].reshape(n, row_bytes)
    children, col = [], 0
    for bits in widths:
        w = bits // 8
        children.append(FixedWidth(np.ascontiguousarray(table[:, col : col + w]).reshape(-1), bits, n))
        col += w
    return StructValues(tuple(children), n)


def decode_variable_packed(
    vps,
    values: VariableWidth,
    decode_fixed: Callable[..., DecodedValues],
    decode_variable: Callable[..., DecodedValues],
    *,
    path: str,
) -> StructValues:
    """Decode variable packed struct rows (``values``: one payload per row, offsets validated).

    ``decode_fixed(enc, data, n, path=)`` / ``decode_variable(enc, VariableWidth, path=)`` are the
    full-zip decoders applied to each field's collected values.
    """
    fields = list(vps.fields)
    if not fields:
        raise CorruptFileError("variable packed struct without fields", path=path)
    kinds = np.empty(len(fields), dtype=np.int64)
    widths = np.zeros(len(fields), dtype=np.int64)
    for i, f in enumerate(fields):
        which = f.WhichOneof("layout")
        if which == "bits_per_value":
            if f.bits_per_value % 8:
                raise NotSupportedError(f"{path}: packed field of {f.bits_per_value} bits")
            kinds[i], widths[i] = KIND_FIXED, f.bits_per_value // 8
        elif which == "bits_per_length":
            if f.bits_per_length not in (32, 64):
                raise CorruptFileError(f"packed field length prefix of {f.bits_per_length} bits", path=path)
            kinds[i] = KIND_LEN32 if f.bits_per_length == 32 else KIND_LEN64
        else:
            raise CorruptFileError(f"packed field {i} has no layout", path=path)
    n = values.num_values
    data = readonly(values.data, np.uint8)
    offsets = readonly(values.offsets, np.int64)
    starts = np.empty((n, len(fields)), dtype=np.int64)
    lengths = np.empty((n, len(fields)), dtype=np.int64)
    bad = scan_rows(data, offsets, n, readonly(kinds), readonly(widths), starts, lengths)
    if bad >= 0:
        raise CorruptFileError(f"variable packed struct row {bad} is malformed", path=path)
    children = []
    for i, f in enumerate(fields):
        lens = readonly(lengths[:, i])
        out_offsets = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(lens, out=out_offsets[1:])
        out = np.empty(int(out_offsets[-1]), dtype=np.uint8)
        copy_slices(data, readonly(starts[:, i]), lens, n, readonly(out_offsets), out)
        if kinds[i] == KIND_FIXED:
            children.append(decode_fixed(f.value, out, n, path=path))
        else:
            children.append(decode_variable(f.value, VariableWidth(out_offsets, out, n), path=path))
    return StructValues(tuple(children), n)
