"""Page decoders of legacy (0.1) files, as step generators (see :mod:`lancejit.encoding.v20.steps`).

* PLAIN: fixed-width little-endian values back to back (booleans bit-packed LSB first,
  fixed-size lists flattened); the page length counts rows (list offsets pages: ``n + 1``).
* VAR_BINARY: the value bytes, then ``n + 1`` i64 *absolute file positions*; the page position
  points at the positions.  For a nullable field an empty value reads back as null.
* DICTIONARY: PLAIN keys; the values are stored once per file at ``Field.dictionary``.

Row ranges are ``(k, 2)`` int64 arrays of half-open ``[start, end)`` rows within one page.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from lancejit.core.errors import CorruptFileError, NotSupportedError
from lancejit.encoding import arrow_build as AB
from lancejit.encoding.v20.rowranges import bits_from_ranges, read_gathered, segment_ends, total
from lancejit.encoding.v20.steps import Steps

Ranges = np.ndarray


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
    return np.frombuffer(b"".join(bufs), np.uint8)


def _check_rows(ranges: Ranges, length: int, path: str) -> None:
    if len(ranges) and int(ranges[-1, 1]) > length:
        raise CorruptFileError(f"rows up to {int(ranges[-1, 1])} requested from a page of {length}", path=path)


def read_plain(typ: pa.DataType, position: int, length: int, ranges: Ranges, path: str) -> Steps:
    """Rows ``ranges`` of a PLAIN page of ``length`` rows at ``position`` as an Arrow array."""
    leaf, chain = _leaf(typ)
    storage = leaf.storage_type if isinstance(leaf, pa.ExtensionType) else leaf
    mult = 1
    for t in chain:
        mult *= t.list_size
    _check_rows(ranges, length, path)
    ls, le = ranges[:, 0] * mult, ranges[:, 1] * mult
    nleaf = total(ranges) * mult
    if pa.types.is_boolean(storage):
        bs, be = ls // 8, (le + 7) // 8
        data = yield from read_gathered(bs + position, be + position)
        if len(data) != int((be - bs).sum()):
            raise CorruptFileError("boolean page shorter than its rows", path=path)
        starts = np.cumsum(be - bs) - (be - bs)
        bools = bits_from_ranges(data, starts, ls % 8, le - ls)
        arr = AB.bool_array(np.packbits(bools, bitorder="little"), nleaf)
    else:
        w = AB.byte_width(storage)
        if w is None:
            raise NotSupportedError(f"legacy PLAIN values of type {leaf}")
        data = yield from read_gathered(ls * w + position, le * w + position)
        arr = AB.fixed_width_array(storage, data, nleaf)
    if isinstance(leaf, pa.ExtensionType):
        arr = pa.ExtensionArray.from_storage(leaf, arr)
    for t in reversed(chain):
        arr = AB.fixed_size_list_array(t, arr, len(arr) // t.list_size)
    return arr


def read_offsets(position: int, length: int, width: int, ranges: Ranges, path: str) -> Steps:
    """For each row range ``[s, e)`` the ``e - s + 1`` integers at ``[s, e]`` of a PLAIN page of
    ``length`` i32/i64 values.  Returns ``(lengths, firsts, lasts)``: per-row differences and
    each range's first/last value (int64)."""
    if len(ranges) and int(ranges[-1, 1]) + 1 > length:
        raise CorruptFileError(f"offsets up to {int(ranges[-1, 1]) + 1} requested from a page of {length}", path=path)
    s, e = ranges[:, 0], ranges[:, 1] + 1
    raw = yield from read_gathered(s * width + position, e * width + position)
    vals = raw.view("<i4" if width == 4 else "<i8").astype(np.int64)
    if len(vals) != int((e - s).sum()):
        raise CorruptFileError("offsets page shorter than its rows", path=path)
    lengths, firsts, lasts = segment_ends(vals, e - s)
    if len(lengths) and lengths.min() < 0:
        raise CorruptFileError("offsets decrease", path=path)
    return lengths, firsts, lasts


def read_var_binary(typ: pa.DataType, nullable: bool, position: int, length: int, ranges: Ranges, path: str) -> Steps:
    """Rows ``ranges`` of a VAR_BINARY page (``length`` values, positions at ``position``)."""
    lengths, firsts, lasts = yield from read_offsets(position, length + 1, 8, ranges, path)
    if len(firsts) and firsts.min() < 0:
        raise CorruptFileError("negative value position", path=path)
    sel = lasts > firsts
    data = yield from read_gathered(firsts[sel], lasts[sel])
    offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    if offsets[-1] != len(data):
        raise CorruptFileError("value bytes do not match their positions", path=path)
    valid = (lengths != 0) if nullable else None
    storage = typ.storage_type if isinstance(typ, pa.ExtensionType) else typ
    arr = AB.binary_array(storage, offsets, data, valid)
    return pa.ExtensionArray.from_storage(typ, arr) if isinstance(typ, pa.ExtensionType) else arr


def read_dictionary_values(value_type: pa.DataType, offset: int, length: int, path: str) -> Steps:
    """The ``length`` dictionary values stored at ``offset`` (PLAIN, or VAR_BINARY positions)."""
    if length == 0:
        return pa.array([], type=value_type)
    whole = np.array([[0, length]], dtype=np.int64)
    if is_binary_like(value_type):
        return (yield from read_var_binary(value_type, False, offset, length, whole, path))
    if is_fixed_stride(value_type):
        return (yield from read_plain(value_type, offset, length, whole, path))
    raise NotSupportedError(f"legacy dictionary values of type {value_type}")
