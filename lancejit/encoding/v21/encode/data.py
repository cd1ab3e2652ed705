"""Leaf value blocks: the untyped buffers compressors work on, built from Arrow arrays.

``FixedBlock``: ``bits_per_value`` bits per value.  ``data`` is a NumPy array of unsigned words
when the width is 8/16/32/64 bits, else raw ``uint8`` bytes (bools: LSB-first bitmap).
``VarBlock``: ``offsets`` (int32 or int64, ``num_values + 1`` entries starting at 0) into ``data``.
``FslBlock``: a fixed-size list of a fixed-width child (vectors); ``validity`` is the optional
per-item bitmap (bool array over all items) when items inside vectors are null.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from lancejit.core.errors import NotSupportedError

_UINT = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}


@dataclass
class FixedBlock:
    data: np.ndarray
    bits_per_value: int
    num_values: int

    def nbytes(self) -> int:
        return (self.bits_per_value * self.num_values + 7) // 8

    def raw_bytes(self) -> bytes:
        if self.bits_per_value == 1:
            return self.data[: (self.num_values + 7) // 8].tobytes()
        return self.data.view(np.uint8)[: self.nbytes()].tobytes()


@dataclass
class VarBlock:
    offsets: np.ndarray
    data: np.ndarray
    num_values: int

    @property
    def bits_per_offset(self) -> int:
        return self.offsets.dtype.itemsize * 8

    def nbytes(self) -> int:
        return int(self.data.size)

    def lengths(self) -> np.ndarray:
        return np.diff(self.offsets)

    def max_length(self) -> int:
        """The longest value's bytes (computed once: a page's encoding choice asks several times)."""
        got = self.__dict__.get("_max_length")
        if got is None:
            got = self.__dict__["_max_length"] = int(self.lengths().max()) if self.num_values else 0
        return got


@dataclass
class FslBlock:
    dimension: int
    child: "FixedBlock | FslBlock"
    num_values: int
    validity: np.ndarray | None = None  # bool over the child's items, True = valid

    @property
    def bits_per_value(self) -> int:
        return self.dimension * self.child.bits_per_value

    def nbytes(self) -> int:
        return (self.bits_per_value * self.num_values + 7) // 8


@dataclass
class PackedBlock:
    """A packed struct of fixed-width children: row-major ``rows`` (num_values x row bytes)."""

    rows: np.ndarray
    child_bits: list[int]
    num_values: int

    @property
    def bits_per_value(self) -> int:
        return sum(self.child_bits)

    def nbytes(self) -> int:
        return int(self.rows.size)


Block = FixedBlock | VarBlock | FslBlock | PackedBlock


@dataclass
class VarPackedBlock:
    """A packed struct with variable-width children (2.2): one variable-width row per value,
    children in order, fixed ones as raw bytes, variable ones as u32/u64 length + bytes.
    ``fields``: per child ``("fixed", bits)`` or ``("variable", length_bits)``."""

    rows: VarBlock
    fields: list[tuple[str, int]]
    num_values: int


def _var_packed(arr: pa.Array, children: list) -> VarPackedBlock:
    n = len(arr)
    sizes = np.zeros(n, dtype=np.int64)
    fields: list[tuple[str, int]] = []
    for b in children:
        if isinstance(b, VarBlock):
            w = b.offsets.dtype.itemsize
            sizes += w + b.lengths().astype(np.int64)
            fields.append(("variable", 8 * w))
        else:
            sizes += b.bits_per_value // 8
            fields.append(("fixed", b.bits_per_value))
    ends = np.cumsum(sizes)
    starts = ends - sizes
    out = np.zeros(int(ends[-1]) if n else 0, dtype=np.uint8)
    cursor = starts.copy()
    for b in children:
        if isinstance(b, VarBlock):
            w = b.offsets.dtype.itemsize
            lens = b.lengths().astype(np.int64)
            lb = lens.astype(f"<u{w}").view(np.uint8).reshape(n, w)
            out[cursor[:, None] + np.arange(w)[None, :]] = lb
            cursor += w
            total = int(lens.sum())
            if total:
                rel = np.arange(total) - np.repeat(np.cumsum(lens) - lens, lens)
                dst = np.repeat(cursor, lens) + rel
                src = np.repeat(b.offsets[:-1].astype(np.int64), lens) + rel
                out[dst] = b.data[src]
            cursor += lens
        else:
            k = b.bits_per_value // 8
            raw = b.data.view(np.uint8)[: n * k].reshape(n, k)
            out[cursor[:, None] + np.arange(k)[None, :]] = raw
            cursor += k
    offs = np.concatenate([[0], ends]).astype(np.int32 if out.size < (1 << 31) else np.int64)
    return VarPackedBlock(VarBlock(offs, out, n), fields, n)


def packed_from_arrow(arr: pa.Array, allow_variable: bool = False):
    """Row-major bytes of a packed struct: :class:`PackedBlock` when every child is fixed-width
    and byte-aligned, else (``allow_variable``, 2.2) a :class:`VarPackedBlock`."""
    t = arr.type
    n = len(arr)
    children = []
    for i in range(t.num_fields):
        child = arr.field(i)
        if child.null_count:
            raise NotSupportedError(
                f"packed struct child {t.field(i).name!r} has nulls; packed structs cannot store them")
        children.append(block_from_arrow(child))
    if allow_variable and any(isinstance(b, VarBlock) for b in children):
        for i, b in enumerate(children):
            if isinstance(b, (PackedBlock, FslBlock)) or (not isinstance(b, VarBlock) and b.bits_per_value % 8):
                raise NotSupportedError(f"packed struct child {t.field(i).name!r} ({t.field(i).type}) unsupported")
        return _var_packed(arr, children)
    mats, bits = [], []
    for i in range(t.num_fields):
        b = children[i]
        if isinstance(b, VarBlock) or isinstance(b, PackedBlock) or b.bits_per_value % 8:
            raise NotSupportedError(
                f"packed struct child {t.field(i).name!r} ({t.field(i).type}) is not fixed-width")
        if isinstance(b, FslBlock):
            inner: FixedBlock | FslBlock = b
            while isinstance(inner, FslBlock):
                inner = inner.child
            raw = inner.data.view(np.uint8)
        else:
            raw = b.data.view(np.uint8)
        k = b.bits_per_value // 8
        mats.append(raw[: n * k].reshape(n, k))
        bits.append(b.bits_per_value)
    rows = np.ascontiguousarray(np.concatenate(mats, axis=1)) if mats else np.zeros((n, 0), np.uint8)
    return PackedBlock(rows, bits, n)


def _fixed_width_bits(t: pa.DataType) -> int | None:
    if pa.types.is_boolean(t):
        return 1
    if pa.types.is_fixed_size_binary(t):
        return t.byte_width * 8
    if pa.types.is_decimal(t) or pa.types.is_primitive(t) and not pa.types.is_null(t):
        return t.bit_width
    return None


def _buffer_view(arr: pa.Array, itemsize: int) -> np.ndarray:
    buf = arr.buffers()[1]
    raw = np.frombuffer(buf, dtype=np.uint8) if buf is not None else np.zeros(0, np.uint8)
    start = arr.offset * itemsize
    return raw[start : start + len(arr) * itemsize]


def block_from_arrow(arr: pa.Array) -> FixedBlock | VarBlock | FslBlock:
    """Convert a leaf Arrow array (nulls keep their placeholder bytes) to a block."""
    t = arr.type
    n = len(arr)
    if pa.types.is_dictionary(t):
        arr = arr.dictionary_decode()
        t = arr.type
    if pa.types.is_boolean(t):
        vals = np.asarray(arr.fill_null(False)) if arr.null_count else np.asarray(arr)
        return FixedBlock(np.packbits(vals, bitorder="little"), 1, n)
    if pa.types.is_fixed_size_list(t):
        dim = t.list_size
        child = arr.values
        child = child.slice(arr.offset * dim, n * dim) if (arr.offset or len(child) != n * dim) else child
        cb = block_from_arrow(child)
        if isinstance(cb, VarBlock):
            raise NotSupportedError("fixed-size lists of variable-width values are not supported")
        validity = None
        if child.null_count:
            validity = np.asarray(child.is_valid())
        return FslBlock(dim, cb, n, validity)
    if (
        pa.types.is_string(t)
        or pa.types.is_binary(t)
        or pa.types.is_large_string(t)
        or pa.types.is_large_binary(t)
    ):
        large = pa.types.is_large_string(t) or pa.types.is_large_binary(t)
        odt = np.int64 if large else np.int32
        ob = arr.buffers()[1]
        offs = np.frombuffer(ob, dtype=odt)[arr.offset : arr.offset + n + 1] if n else np.zeros(1, odt)
        db = arr.buffers()[2]
        data = np.frombuffer(db, dtype=np.uint8) if db is not None else np.zeros(0, np.uint8)
        if n:
            data = data[int(offs[0]) : int(offs[-1])]
            offs = offs - offs[0]
        return VarBlock(offs.astype(odt, copy=False), data, n)
    bits = _fixed_width_bits(t)
    if bits is None:
        raise NotSupportedError(f"cannot encode values of type {t}")
    nbytes = bits // 8
    raw = _buffer_view(arr, nbytes)
    if bits in _UINT:
        data = raw.view(_UINT[bits]) if raw.size else np.zeros(0, _UINT[bits])
    else:
        data = raw
    return FixedBlock(data, bits, n)


def uint_dtype(bits: int):
    return _UINT[bits]
