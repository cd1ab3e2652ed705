"""``ArrayEncoding`` page builders for 2.0 (the Lance file format specification).

Every builder returns ``(encoding, buffers)``; buffer indices inside the encoding start at
``first`` (the page buffer index of the first buffer returned).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lancejit.core.errors import NotSupportedError
from lancejit.encoding.v21.encode import general
from lancejit.pb import encodings_v2_0_pb2 as pb20

AE = pb20.ArrayEncoding

DICT_MAX_ITEMS = 100
DICT_MIN_ROWS = 100


def _flat(bits: int, index: int) -> AE:
    e = AE()
    e.flat.bits_per_value = bits
    e.flat.buffer.SetInParent()
    if index:
        e.flat.buffer.buffer_index = index
    return e


def _bitmap(valid: np.ndarray) -> bytes:
    return np.packbits(valid.astype(bool), bitorder="little").tobytes()


def _fixed_bytes(arr: pa.Array) -> tuple[int, bytes]:
    """(bits per value, value bytes) of a fixed-width leaf array (nulls keep placeholders)."""
    t = arr.type
    n = len(arr)
    if pa.types.is_boolean(t):
        vals = np.asarray(arr.fill_null(False)) if arr.null_count else np.asarray(arr)
        return 1, np.packbits(vals, bitorder="little").tobytes()
    if pa.types.is_fixed_size_binary(t):
        k = t.byte_width
    elif pa.types.is_decimal(t) or (pa.types.is_primitive(t) and not pa.types.is_null(t)):
        k = t.bit_width // 8
    else:
        raise NotSupportedError(f"2.0 writer cannot encode values of type {t}")
    buf = arr.buffers()[1]
    raw = np.frombuffer(buf, dtype=np.uint8)[arr.offset * k : (arr.offset + n) * k] if buf is not None else b""
    return k * 8, bytes(raw)


def nullable(arr: pa.Array, first: int) -> tuple[AE, list[bytes]]:
    """A fixed-width (or fixed-size-list) array with its validity."""
    n = len(arr)
    e = AE()
    if pa.types.is_null(arr.type) or (n and arr.null_count == n):
        e.nullable.all_nulls.SetInParent()
        return e, []
    if arr.null_count:
        valid = np.asarray(arr.is_valid())
        e.nullable.some_nulls.validity.CopyFrom(_flat(1, first))
        inner, bufs = _values(arr, first + 1)
        e.nullable.some_nulls.values.CopyFrom(inner)
        return e, [_bitmap(valid)] + bufs
    inner, bufs = _values(arr, first)
    e.nullable.no_nulls.values.CopyFrom(inner)
    return e, bufs


def _values(arr: pa.Array, first: int) -> tuple[AE, list[bytes]]:
    t = arr.type
    if pa.types.is_fixed_size_list(t):
        dim = t.list_size
        child = arr.values.slice(arr.offset * dim, len(arr) * dim)
        items, bufs = nullable(child, first)
        e = AE()
        e.fixed_size_list.dimension = dim
        e.fixed_size_list.items.CopyFrom(items)
        return e, bufs
    bits, data = _fixed_bytes(arr)
    return _flat(bits, first), [data]


def _end_offsets(arr: pa.Array) -> tuple[np.ndarray, np.ndarray, int]:
    """(u64 end offsets relative to the first value, value bytes, total bytes) of a binary array."""
    large = pa.types.is_large_string(arr.type) or pa.types.is_large_binary(arr.type)
    odt = np.int64 if large else np.int32
    n = len(arr)
    offs = np.frombuffer(arr.buffers()[1], dtype=odt)[arr.offset : arr.offset + n + 1].astype(np.int64)
    db = arr.buffers()[2]
    data = np.frombuffer(db, dtype=np.uint8) if db is not None else np.zeros(0, np.uint8)
    data = data[offs[0] : offs[-1]]
    ends = (offs[1:] - offs[0]).astype(np.uint64)
    return ends, data, int(offs[-1] - offs[0])


def binary(arr: pa.Array, first: int, compression: tuple[str, int | None] | None = None
           ) -> tuple[AE, list[bytes]]:
    """Strings / binaries: u64 end offsets (null rows: end + null_adjustment) and the bytes.

    ``compression``: ``(scheme, level)`` applied to the bytes buffer (``lance-encoding:compression``).
    """
    ends, data, total = _end_offsets(arr)
    adj = total + 1
    if arr.null_count:
        valid = np.asarray(arr.is_valid())
        # a null row repeats the previous end, plus the adjustment
        ends = ends.copy()
        ends[~valid] += np.uint64(adj)
    e = AE()
    e.binary.indices.nullable.no_nulls.values.CopyFrom(_flat(64, first))
    e.binary.bytes.CopyFrom(_flat(8, first + 1))
    e.binary.null_adjustment = adj
    raw = data.tobytes()
    if compression is not None:
        scheme, level = compression
        e.binary.bytes.flat.compression.scheme = scheme
        if level is not None:
            e.binary.bytes.flat.compression.level = level
        raw = general.compress(raw, scheme, level)
    return e, [ends.tobytes(), raw]


def should_dictionary(arr: pa.Array) -> bool:
    """Low-cardinality ``utf8`` pages (as the reference: not binary, not large types)."""
    if not pa.types.is_string(arr.type) or len(arr) < DICT_MIN_ROWS:
        return False
    # exact, but cheap on high-cardinality pages: a prefix with too many distinct values
    # already decides (distinct values of a prefix never exceed those of the whole)
    prefix = 16 * DICT_MAX_ITEMS
    if len(arr) > prefix and pc.count_distinct(arr.slice(0, prefix)).as_py() >= DICT_MAX_ITEMS:
        return False
    return pc.count_distinct(arr).as_py() < DICT_MAX_ITEMS


def dictionary(arr: pa.Array, first: int) -> tuple[AE, list[bytes]]:
    """Low-cardinality strings: u8 indices, 1-based (0 = null), items as a Binary encoding."""
    enc = pc.dictionary_encode(arr)
    items = enc.dictionary
    if len(items) == 0:
        items = pa.array([None], type=arr.type)  # as the reference: one null item
    idx = np.asarray(enc.indices.fill_null(-1)).astype(np.int64) + 1
    e = AE()
    e.dictionary.indices.nullable.no_nulls.values.CopyFrom(_flat(8, first))
    items_enc, items_bufs = binary(items, first + 1)
    e.dictionary.items.CopyFrom(items_enc)
    e.dictionary.num_dictionary_items = len(items)
    return e, [idx.astype(np.uint8).tobytes()] + items_bufs


def list_offsets(arr: pa.Array) -> tuple[AE, list[bytes], int]:
    """List offsets page: u64 end offsets relative to the page's first item; null rows + adj."""
    offs = np.asarray(arr.offsets).astype(np.int64)
    num_items = int(offs[-1] - offs[0])
    ends = (offs[1:] - offs[0]).astype(np.uint64)
    adj = num_items + 1
    if arr.null_count:
        valid = np.asarray(arr.is_valid())
        ends[~valid] += np.uint64(adj)
    e = AE()
    e.list.offsets.nullable.no_nulls.values.CopyFrom(_flat(64, 0))
    e.list.null_offset_adjustment = adj
    e.list.num_items = num_items
    return e, [ends.tobytes()], num_items


def struct_page() -> AE:
    e = AE()
    e.struct.SetInParent()
    return e


def arrow_dictionary(arr: pa.DictionaryArray, first: int) -> tuple[AE, list[bytes]]:
    """Arrow dictionary input (as the reference): a null item is appended to the dictionary and
    null rows index it; indices keep their width and are 0-based."""
    items = arr.dictionary
    n_items = len(items)
    items = pa.concat_arrays([items, pa.array([None], type=items.type)])
    idx = arr.indices
    bits = idx.type.bit_width
    vals = np.asarray(idx.fill_null(n_items)).astype(f"<u{bits // 8}")
    e = AE()
    e.dictionary.indices.nullable.no_nulls.values.CopyFrom(_flat(bits, first))
    t = items.type
    if (pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t)
            or pa.types.is_large_binary(t)):
        items_enc, items_bufs = binary(items, first + 1)
    else:
        items_enc, items_bufs = nullable(items, first + 1)
    e.dictionary.items.CopyFrom(items_enc)
    e.dictionary.num_dictionary_items = len(items)
    return e, [vals.tobytes()] + items_bufs


def packed_struct(arr: pa.Array) -> tuple[AE, list[bytes]]:
    """Packed struct (fixed-width children): one buffer of row-major child values."""
    from lancejit.encoding.v21.encode.data import packed_from_arrow

    if arr.null_count:
        raise NotSupportedError("2.0 files cannot store null structs (use version 2.1+)")
    block = packed_from_arrow(arr)
    e = AE()
    for bits in block.child_bits:
        inner = e.packed_struct.inner.add()
        inner.nullable.no_nulls.values.CopyFrom(_flat(bits, 0))
    e.packed_struct.buffer.SetInParent()
    return e, [block.rows.tobytes()]


def blob_descriptors(positions: np.ndarray, sizes: np.ndarray) -> tuple[AE, list[bytes]]:
    """Blob descriptors ``{position u64, size u64}`` as a packed struct (null: position 1)."""
    e = AE()
    for _ in range(2):
        inner = e.packed_struct.inner.add()
        inner.nullable.no_nulls.values.CopyFrom(_flat(64, 0))
    e.packed_struct.buffer.SetInParent()
    rows = np.stack([positions.astype("<u8"), sizes.astype("<u8")], axis=1)
    return e, [rows.tobytes()]
