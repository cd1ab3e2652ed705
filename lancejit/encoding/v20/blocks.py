"""Decoded page data of 2.0 (and legacy) pages, before it becomes Arrow.

Blocks are small NumPy-backed values that nest like the encodings that produced them.  Counts
are numbers of values (rows of the block); offsets are int64 and start at 0.  :func:`to_arrow`
turns a block into an Arrow array of a given type (validity becomes the Arrow null bitmap).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Union

import numpy as np
import pyarrow as pa

from lancejit.core.errors import CorruptFileError
from lancejit.encoding import arrow_build as AB


@dataclass(frozen=True, slots=True)
class Fixed:
    """``n`` fixed-width values.  ``bits == 1``: ``data`` is a bool array of ``n`` values;
    otherwise ``data`` is uint8 holding ``n * bits // 8`` bytes, little endian."""

    data: np.ndarray
    bits: int
    n: int


@dataclass(frozen=True, slots=True)
class Var:
    """``n`` variable-width values: value i is ``data[offsets[i]:offsets[i+1]]``; offsets start at 0."""

    offsets: np.ndarray
    data: np.ndarray

    @property
    def n(self) -> int:
        return len(self.offsets) - 1


@dataclass(frozen=True, slots=True)
class Nullable:
    """``inner`` with a validity array (bool, True = valid); ``validity`` None = all valid."""

    validity: np.ndarray | None
    inner: "Block"

    @property
    def n(self) -> int:
        return self.inner.n


@dataclass(frozen=True, slots=True)
class AllNull:
    """``n`` null values (no buffers)."""

    n: int


@dataclass(frozen=True, slots=True)
class Fsl:
    """``n`` fixed-size lists of ``dim`` items each, items in ``child`` (``n * dim`` values)."""

    child: "Block"
    dim: int
    n: int


@dataclass(frozen=True, slots=True)
class Struct:
    """``n`` structs whose fields are ``children`` (each of ``n`` values)."""

    children: tuple["Block", ...]
    n: int


@dataclass(frozen=True, slots=True)
class ArrowBlock:
    """An already-built Arrow array."""

    array: pa.Array

    @property
    def n(self) -> int:
        return len(self.array)


Block = Union[Fixed, Var, Nullable, AllNull, Fsl, Struct, ArrowBlock]


def validity_buffer(validity: np.ndarray | None) -> pa.Buffer | None:
    """Arrow LSB-first null bitmap for a bool array; None when every value is valid."""
    if validity is None or bool(validity.all()):
        return None
    return pa.py_buffer(np.packbits(validity.astype(np.bool_, copy=False), bitorder="little"))


def fixed_byte_width(typ: pa.DataType) -> int | None:
    """Bytes per value of a fixed-width (non-bool) Arrow type, nested FSLs included; None if variable."""
    if pa.types.is_fixed_size_list(typ):
        inner = fixed_byte_width(typ.value_type)
        return None if inner is None else inner * typ.list_size
    if pa.types.is_fixed_size_binary(typ):
        return typ.byte_width
    if pa.types.is_boolean(typ) or pa.types.is_null(typ):
        return None
    try:
        bits = typ.bit_width
    except ValueError:
        return None
    return bits // 8 if bits % 8 == 0 else None


def to_arrow(block: Block, typ: pa.DataType, *, path: str | None = None) -> pa.Array:
    """Build an Arrow array of type ``typ`` from ``block``."""
    return _build(block, typ, None, path)


def _combine(a: np.ndarray | None, b: np.ndarray | None) -> np.ndarray | None:
    if a is None:
        return b
    if b is None:
        return a
    return a & b


def _build(block: Block, typ: pa.DataType, validity: np.ndarray | None, path: str | None) -> pa.Array:
    try:
        return _build_inner(block, typ, validity, path)
    except CorruptFileError as exc:
        if exc.path is None and path is not None:
            raise CorruptFileError(str(exc), path=path) from None
        raise


def _build_inner(block: Block, typ: pa.DataType, validity: np.ndarray | None, path: str | None) -> pa.Array:
    if isinstance(typ, pa.ExtensionType):
        storage = _build(block, typ.storage_type, validity, path)
        return pa.ExtensionArray.from_storage(typ, storage)
    if isinstance(block, Nullable):
        if block.validity is not None and len(block.validity) != block.n:
            raise CorruptFileError("validity length does not match values", path=path)
        return _build(block.inner, typ, _combine(validity, block.validity), path)
    n = block.n
    if isinstance(block, AllNull):
        return pa.nulls(n, typ)
    if isinstance(block, ArrowBlock):
        arr = block.array
        if arr.type != typ:
            arr = arr.cast(typ)
        return AB.with_validity(arr, validity)
    if pa.types.is_null(typ):
        return pa.nulls(n)
    if isinstance(block, Fixed):
        if pa.types.is_boolean(typ):
            if block.bits != 1:
                raise CorruptFileError(f"bool values with {block.bits} bits per value", path=path)
            return AB.bool_array(np.packbits(block.data, bitorder="little"), n, validity)
        if pa.types.is_fixed_size_list(typ):
            dim = typ.list_size
            inner = Fixed(block.data, block.bits // max(dim, 1), n * dim)
            child = _build(inner, typ.value_type, None, path)
            return AB.fixed_size_list_array(typ, child, n, validity)
        width = fixed_byte_width(typ)
        if width is None or block.bits != width * 8:
            raise CorruptFileError(f"{block.bits}-bit values for Arrow type {typ}", path=path)
        # zero-copy: block data is freshly decoded or a read-only view of a read buffer
        return AB.fixed_width_array(typ, block.data, n, validity, copy=False)
    if isinstance(block, Var):
        if not (pa.types.is_string(typ) or pa.types.is_binary(typ)
                or pa.types.is_large_string(typ) or pa.types.is_large_binary(typ)):
            raise CorruptFileError(f"variable-width data for Arrow type {typ}", path=path)
        return AB.binary_array(typ, block.offsets, block.data, validity, copy=False)
    if isinstance(block, Fsl):
        if not pa.types.is_fixed_size_list(typ) or typ.list_size != block.dim:
            raise CorruptFileError(f"fixed-size list of {block.dim} for Arrow type {typ}", path=path)
        child = _build(block.child, typ.value_type, None, path)
        if len(child) != n * block.dim:
            raise CorruptFileError("fixed-size list items do not match its rows", path=path)
        return AB.fixed_size_list_array(typ, child, n, validity)
    if isinstance(block, Struct):
        if not pa.types.is_struct(typ) or typ.num_fields != len(block.children):
            raise CorruptFileError(f"struct of {len(block.children)} fields for Arrow type {typ}", path=path)
        children = [_build(c, typ.field(i).type, None, path) for i, c in enumerate(block.children)]
        return AB.struct_array(typ, children, n, validity)
    raise CorruptFileError(f"cannot build {typ} from {type(block).__name__}", path=path)


def concat(arrays: list[pa.Array], typ: pa.DataType) -> pa.Array:
    """Concatenate arrays of type ``typ``; dictionary arrays keep every page's dictionary
    (dictionaries are appended, indices shifted), like the reference's 2.0 reader."""
    if not arrays:
        return pa.array([], type=typ)
    if len(arrays) == 1:
        return arrays[0]
    if pa.types.is_dictionary(typ):
        dicts = []
        indices = []
        base = 0
        for a in arrays:
            idx = a.indices.cast(pa.int64())
            import pyarrow.compute as pc

            indices.append(pc.add(idx, base))
            dicts.append(a.dictionary)
            base += len(a.dictionary)
        all_idx = pa.concat_arrays(indices).cast(typ.index_type)
        return pa.DictionaryArray.from_arrays(all_idx, pa.concat_arrays(dicts))
    return pa.concat_arrays(arrays)
