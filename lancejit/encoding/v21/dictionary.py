"""Dictionary lookups: replace decoded indices by the dictionary items they name.

Used by the structural mini-block layout (``MiniBlockLayout.dictionary``): items come from
:func:`~lancejit.encoding.v21.compression.decode_block`, indices (0-based) from the chunk's
values.
"""

from __future__ import annotations

import numpy as np

from lancejit.core.errors import CorruptFileError, NotSupportedError
from lancejit.encoding.kernels import readonly
from lancejit.encoding.kernels.gather import copy_slices
from lancejit.encoding.v21.values import (
    DecodedValues,
    FixedSizeListValues,
    FixedWidth,
    StructValues,
    VariableWidth,
)


def indices_of(values: DecodedValues, *, path: str) -> np.ndarray:
    """Decoded index values (any unsigned width) as an int64 array."""
    if not isinstance(values, FixedWidth) or values.bits_per_value not in (8, 16, 32, 64):
        raise CorruptFileError("dictionary indices are not 8/16/32/64-bit integers", path=path)
    dt = np.dtype(f"<u{values.bits_per_value // 8}")
    idx = values.view(dt)
    if dt.itemsize == 8 and len(idx) and idx.max() > np.iinfo(np.int64).max:
        raise CorruptFileError("dictionary index overflows int64", path=path)
    return idx.astype(np.int64)


def _bit_take(bitmap: np.ndarray, idx: np.ndarray) -> np.ndarray:
    bits = np.unpackbits(bitmap, bitorder="little")
    return np.packbits(bits[idx], bitorder="little")


def take(items: DecodedValues, indices: np.ndarray, *, path: str) -> DecodedValues:
    """``items[indices]`` for any decoded value kind; every index is checked first."""
    idx = np.asarray(indices, dtype=np.int64)
    n = len(idx)
    if n and (idx.min() < 0 or idx.max() >= items.num_values):
        raise CorruptFileError(
            f"dictionary index outside [0, {items.num_values})", path=path
        )
    if isinstance(items, FixedWidth):
        bits = items.bits_per_value
        if bits == 1:
            return FixedWidth(_bit_take(items.data, idx), 1, n)
        if bits == 0:
            return FixedWidth(np.zeros(0, np.uint8), 0, n)
        if bits % 8:
            raise NotSupportedError(f"{path}: dictionary of {bits}-bit items")
        w = bits // 8
        if len(items.data) < items.num_values * w:
            raise CorruptFileError("dictionary items buffer shorter than its item count", path=path)
        table = items.data[: items.num_values * w].reshape(items.num_values, w)
        return FixedWidth(np.ascontiguousarray(table[idx]).reshape(-1), bits, n)
    if isinstance(items, VariableWidth):
        offs = np.asarray(items.offsets, dtype=np.int64)
        if len(offs) != items.num_values + 1 or (
            len(offs) and (offs[0] < 0 or offs[-1] > len(items.data) or np.any(np.diff(offs) < 0))
        ):
            raise CorruptFileError("dictionary item offsets are malformed", path=path)
        starts = readonly(offs[idx])
        lens = readonly(offs[idx + 1] - starts)
        out_offsets = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(lens, out=out_offsets[1:])
        out = np.empty(int(out_offsets[-1]), dtype=np.uint8)
        copy_slices(readonly(items.data, np.uint8), starts, lens, n, readonly(out_offsets), out)
        return VariableWidth(out_offsets, out, n)
    if isinstance(items, FixedSizeListValues):
        d = items.dimension
        item_idx = (idx[:, None] * d + np.arange(d, dtype=np.int64)[None, :]).reshape(-1)
        validity = None if items.validity is None else _bit_take(items.validity, item_idx)
        return FixedSizeListValues(take(items.items, item_idx, path=path), d, validity, n)
    if isinstance(items, StructValues):
        return StructValues(tuple(take(c, idx, path=path) for c in items.children), n)
    raise NotSupportedError(f"{path}: dictionary items of type {type(items).__name__}")
