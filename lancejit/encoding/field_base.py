"""The attributes every :class:`~lancejit.encoding.protocol.FieldDecoder` implementation
(2.1/2.2 structural, 2.0, legacy 0.1) stores the same way."""

from __future__ import annotations

import pyarrow as pa


class FieldDecoderBase:
    """Serves :attr:`field` and :attr:`num_rows` from ``_field`` and ``_num_rows``, which the
    subclass sets in its constructor."""

    _field: pa.Field
    _num_rows: int

    @property
    def field(self) -> pa.Field:
        """The Arrow field returned, identical to the reference's."""
        return self._field

    @property
    def num_rows(self) -> int:
        """Rows of this field in the file."""
        return self._num_rows


__all__ = ["FieldDecoderBase"]
