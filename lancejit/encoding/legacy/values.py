"""Page decoders of legacy (0.1) files, as step generators (see :mod:`lancejit.encoding.v20.steps`).

* PLAIN: fixed-width little-endian values back to back (booleans bit-packed LSB first,
  fixed-size lists flattened); the page length counts rows (list offsets pages: ``n + 1``).
* VAR_BINARY: the value bytes, then ``n + 1`` i64 *absolute file positions*; the page position
  points at the positions.  For a nullable field an empty value reads back as null.
* DICTIONARY: PLAIN keys; the values are stored once per file at ``Field.dictionary``.

Row ranges are half-open ``[start, end)`` within one page (one batch).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from lancejit.core.errors import CorruptFileError, NotSupportedError
from lancejit.encoding import arrow_build as AB
from lancejit.encoding.v20.steps import Ranges, Steps

_LARGE = (pa.types.is_large_string, pa.types.is_large_binary)


def is_binary_like(t: pa.DataType) -> bool:
    return pa.types.is_string(t) or pa.types.is_binary(t) or pa.types.is_large_string(t) or pa.types.is_large_binary(t)


def _leaf(typ: pa.DataType) -> tuple[pa.DataType, list[pa.DataType]]:
    """The innermost type of a chain of fixed-size lists and the chain (outermost first)."""
    chain = []
    t = typ
    while pa.types.is_fixed_size_list(t):
        chain.append(t)
        t = t.value_type
    return t, chain


def is_fixed_stride(typ: pa.DataType) -> bool:
    """True for types stored PLAIN (fixed-width values, booleans, FSB, FSLs of those)."""
    leaf, _ = _leaf(typ)
    if isinstance(leaf, pa.ExtensionType):
        leaf = leaf.storage_type
    return pa.types.is_boolean(leaf) or AB.byte_width(leaf) is not None


def _concat(bufs) -> np.ndarray:
    if not bufs:
        return np.zeros(0, np.uint8)
    if len(bufs) == 1:
        return np.frombuffer(bufs[0], np.uint8)
    return np.concatenate([np.frombuffer(b, np.uint8) for b in bufs])


def read_plain(typ: pa.DataType, position: int, length: int, ranges: Ranges, path: str) -> Steps:
    """Rows ``ranges`` of a PLAIN page of ``length`` rows at ``position`` as an Arrow array."""
    leaf, chain = _leaf(typ)
    storage = leaf.storage_type if isinstance(leaf, pa.ExtensionType) else leaf
    mult = 1
    for t in chain:
        mult *= t.list_size
    n = sum(e - s for s, e in ranges)
    for _, e in ranges:
        if e > length:
            raise CorruptFileError(f"rows up to {e} requested from a page of {length}", path=path)
    leaf_ranges = [(s * mult, e * mult) for s, e in ranges]
    nleaf = n * mult
    if pa.types.is_boolean(storage):
        byte_ranges = [(position + s // 8, position + (e + 7) // 8) for s, e in leaf_ranges]
        bufs = (yield byte_ranges) if byte_ranges else []
        parts = [
            np.unpackbits(np.frombuffer(b, np.uint8), bitorder="little")[s % 8 : s % 8 + (e - s)]
            for b, (s, e) in zip(bufs, leaf_ranges)
        ]
        for p, (s, e) in zip(parts, leaf_ranges):
            if len(p) != e - s:
                raise CorruptFileError("boolean page shorter than its rows", path=path)
        bools = np.concatenate(parts).astype(np.bool_) if parts else np.zeros(0, np.bool_)
        arr = AB.bool_array(np.packbits(bools, bitorder="little"), nleaf)
    else:
        w = AB.byte_width(storage)
        if w is None:
            raise NotSupportedError(f"legacy PLAIN values of type {leaf}")
        byte_ranges = [(position + s * w, position + e * w) for s, e in leaf_ranges]
        bufs = (yield byte_ranges) if byte_ranges else []
        data = _concat(bufs)
        arr = AB.fixed_width_array(storage, data, nleaf)
    if isinstance(leaf, pa.ExtensionType):
        arr = pa.ExtensionArray.from_storage(leaf, arr)
    for t in reversed(chain):
        arr = AB.fixed_size_list_array(t, arr, len(arr) // t.list_size)
    return arr


def read_offsets(position: int, length: int, width: int, ranges: Ranges, path: str) -> Steps:
    """For each row range ``[s, e)`` the ``e - s + 1`` integers at ``[s, e]`` of a PLAIN page of
    ``length`` i32/i64 values; returns a list of int64 arrays."""
    reqs = []
    for s, e in ranges:
        if e + 1 > length:
            raise CorruptFileError(f"offsets up to {e + 1} requested from a page of {length}", path=path)
        reqs.append((position + s * width, position + (e + 1) * width))
    bufs = (yield reqs) if reqs else []
    dt = "<i4" if width == 4 else "<i8"
    out = [np.frombuffer(b, dtype=dt).astype(np.int64) for b in bufs]
    for o in out:
        if len(o) > 1 and np.any(np.diff(o) < 0):
            raise CorruptFileError("offsets decrease", path=path)
    return out


def read_var_binary(typ: pa.DataType, nullable: bool, position: int, length: int, ranges: Ranges, path: str, file_size: int | None = None) -> Steps:
    """Rows ``ranges`` of a VAR_BINARY page (``length`` values, positions at ``position``)."""
    positions = yield from read_offsets(position, length + 1, 8, ranges, path)
    byte_ranges = []
    lengths = []
    for p in positions:
        if len(p) and p[0] < 0:
            raise CorruptFileError("negative value position", path=path)
        if file_size is not None and len(p) and p[-1] > file_size:
            raise CorruptFileError("value position past the end of the file", path=path)
        lengths.append(np.diff(p))
        if len(p) and p[-1] > p[0]:
            byte_ranges.append((int(p[0]), int(p[-1])))
    bufs = (yield byte_ranges) if byte_ranges else []
    data = _concat(bufs)
    lens = np.concatenate(lengths) if lengths else np.zeros(0, np.int64)
    offsets = np.zeros(len(lens) + 1, dtype=np.int64)
    np.cumsum(lens, out=offsets[1:])
    if offsets[-1] != len(data):
        raise CorruptFileError("value bytes do not match their positions", path=path)
    valid = (lens != 0) if nullable else None
    storage = typ.storage_type if isinstance(typ, pa.ExtensionType) else typ
    arr = AB.binary_array(storage, offsets, data, valid)
    return pa.ExtensionArray.from_storage(typ, arr) if isinstance(typ, pa.ExtensionType) else arr


def read_dictionary_values(value_type: pa.DataType, offset: int, length: int, path: str) -> Steps:
    """The ``length`` dictionary values stored at ``offset`` (PLAIN, or VAR_BINARY positions)."""
    if length == 0:
        return pa.array([], type=value_type)
    if is_binary_like(value_type):
        return (yield from read_var_binary(value_type, False, offset, length, [(0, length)], path))
    if is_fixed_stride(value_type):
        return (yield from read_plain(value_type, offset, length, [(0, length)], path))
    raise NotSupportedError(f"legacy dictionary values of type {value_type}")
