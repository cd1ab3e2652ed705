"""Decoded value buffers produced by the 2.1/2.2 compressive decoders.

These are the hand-off between the compression decoders (``compression.py``) and the structural
layouts (mini-block, full-zip, ...).  All arrays are NumPy arrays owned by the value (never views
into a file buffer that may be reused).  Counts are numbers of values; byte ranges are half-open.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Union

import numpy as np

if TYPE_CHECKING:
    import numpy.typing as npt


@dataclass(frozen=True, slots=True)
class FixedWidth:
    """``num_values`` fixed-width values, little endian, packed back to back.

    ``data``: contiguous uint8 array.  ``bits_per_value`` is a multiple of 8, or 1 for an
    LSB-first bitmap (booleans); then ``len(data) >= ceil(num_values / 8)``.  Otherwise
    ``len(data) >= num_values * bits_per_value // 8`` (extra trailing bytes may exist).
    """

    data: np.ndarray
    bits_per_value: int
    num_values: int

    @property
    def bytes_per_value(self) -> int:
        """Width of one value in bytes (only meaningful when ``bits_per_value % 8 == 0``)."""
        return self.bits_per_value // 8

    def view(self, dtype: npt.DTypeLike) -> np.ndarray:
        """The first ``num_values`` values reinterpreted as ``dtype`` (whose size must match)."""
        dt = np.dtype(dtype)
        nbytes = self.num_values * dt.itemsize
        return self.data[:nbytes].view(dt)


@dataclass(frozen=True, slots=True)
class VariableWidth:
    """``num_values`` variable-width values: value i is ``data[offsets[i]:offsets[i+1]]``
    (half-open, offsets index ``data`` directly).

    ``offsets``: int64, ``num_values + 1`` entries, non-decreasing, ``offsets[-1] <= len(data)``;
    ``offsets[0]`` may be nonzero (bytes before it are unused; Arrow builders rebase).
    ``data``: uint8.  The decoders in ``compression.py`` always return ``offsets[0] == 0``.
    """

    offsets: np.ndarray
    data: np.ndarray
    num_values: int


@dataclass(frozen=True, slots=True)
class FixedSizeListValues:
    """``num_values`` fixed-size lists of ``dimension`` items each (``items.num_values ==
    num_values * dimension``).  ``validity``: uint8 LSB-first bitmap over the items (1 = valid),
    or None when every item is valid."""

    items: "DecodedValues"
    dimension: int
    validity: np.ndarray | None
    num_values: int


@dataclass(frozen=True, slots=True)
class StructValues:
    """A packed struct (fixed children) or variable packed struct: one decoded child per field,
    each holding ``num_values`` values."""

    children: tuple["DecodedValues", ...]
    num_values: int


DecodedValues = Union[FixedWidth, VariableWidth, FixedSizeListValues, StructValues]

__all__ = ["DecodedValues", "FixedSizeListValues", "FixedWidth", "StructValues", "VariableWidth"]
