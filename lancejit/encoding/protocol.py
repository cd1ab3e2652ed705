"""The contract between the file layer and the per-version decoders.

For every projected top-level field, a version-specific factory returns a
:class:`FieldDecoder`.  The file layer owns row bookkeeping (projection, batching,
sorting/deduplicating take indices and restoring request order); decoders only ever see
half-open row ranges ``[start, end)`` and *sorted, unique* row indices.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np
import pyarrow as pa


class FieldDecoder(Protocol):
    """Decodes one top-level field of one file (bound to that file's ``RangeReader``)."""

    @property
    def field(self) -> pa.Field:
        """The Arrow field returned, identical to the reference's."""
        ...

    @property
    def num_rows(self) -> int: ...

    async def read_range(self, start: int, end: int) -> pa.Array:
        """Rows ``[start, end)`` (end exclusive) as one Arrow array of ``end - start`` rows."""
        ...

    async def take(self, indices: np.ndarray) -> pa.Array:
        """Rows at ``indices`` (int64, sorted ascending, unique, in range), in that order.

        Reads only what those rows need (whole mini-block chunks, single full-zip ranges...).
        """
        ...

    def estimated_bytes_per_row(self) -> float:
        """Average encoded bytes per row, from page metadata (used to size scan reads)."""
        ...
