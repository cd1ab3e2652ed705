"""The row-range / take half of the 2.0 and legacy (0.1) field decoders, written once over
step generators (see :mod:`lancejit.encoding.v20.steps`)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from lancejit.core.errors import InvalidInputError, RowIndexError
from lancejit.core.ranges import RangeReader
from lancejit.encoding.field_base import FieldDecoderBase
from lancejit.encoding.v20.rowranges import indices_to_ranges
from lancejit.encoding.v20.steps import Steps, done, run_plans


class StepFieldDecoder(FieldDecoderBase):
    """Base of a field decoder whose reads are step generators.

    Subclasses set ``_reader``, ``_field`` and ``_num_rows`` and implement :meth:`_read_rows`;
    this class validates row ranges and take indices and runs the plans on the reader.
    """

    _reader: RangeReader

    def _read_rows(self, ranges: np.ndarray) -> Steps:
        """Step generator reading the sorted, disjoint, non-empty row ranges ``ranges``
        (``(n, 2)`` int64, half-open ``[start, end)``, within the field)."""
        raise NotImplementedError

    def range_steps(self, start: int, end: int) -> Steps:
        """Step generator reading rows ``[start, end)`` (see :func:`run_plans`)."""
        if not (0 <= start <= end <= self._num_rows):
            raise RowIndexError(f"row range [{start}, {end}) outside a file of {self._num_rows} rows")
        if start == end:
            return done(pa.array([], type=self._field.type))
        return self._read_rows(np.array([[start, end]], dtype=np.int64))

    def take_steps(self, indices: np.ndarray) -> Steps:
        """Step generator reading the rows at sorted unique ``indices`` (see :func:`run_plans`)."""
        idx = np.asarray(indices, dtype=np.int64)
        if len(idx) == 0:
            return done(pa.array([], type=self._field.type))
        if idx[0] < 0 or idx[-1] >= self._num_rows:
            raise RowIndexError(f"row index outside a file of {self._num_rows} rows")
        if len(idx) > 1 and np.any(np.diff(idx) <= 0):
            raise InvalidInputError("take indices must be sorted and unique")
        return self._read_rows(indices_to_ranges(idx))

    async def read_range(self, start: int, end: int) -> pa.Array:
        """Rows ``[start, end)``."""
        (out,) = await run_plans(self._reader, [self.range_steps(start, end)], priority=start,
                                 what=f"field {self._field.name!r}")
        return out

    async def take(self, indices: np.ndarray) -> pa.Array:
        """Rows at sorted unique ``indices``."""
        idx = np.asarray(indices, dtype=np.int64)
        (out,) = await run_plans(self._reader, [self.take_steps(idx)], priority=int(idx[0]) if len(idx) else 0,
                                 what=f"field {self._field.name!r}")
        return out


__all__ = ["StepFieldDecoder"]
