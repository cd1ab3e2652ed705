"""Version 2.0 encodings (``lance.encodings.ArrayEncoding`` pages; footer says 0.3).

Entry point: :func:`make_field_decoders` ``(reader, metadata, field_names)`` returning one
:class:`~lancejit.encoding.protocol.FieldDecoder` per requested top-level field.  Modules:
``steps`` (read plans as generators), ``blocks`` (decoded page data -> Arrow), ``arrays``
(one decoder per ArrayEncoding), ``columns`` (field-level nodes), ``field`` (the FieldDecoder),
``compression`` (zstd/lz4 buffers, FSST).
"""

from lancejit.encoding.v20.field import V20FieldDecoder, make_field_decoders
from lancejit.encoding.v20.rowranges import indices_to_ranges
from lancejit.encoding.v20.steps import run_plans

__all__ = ["V20FieldDecoder", "indices_to_ranges", "make_field_decoders", "run_plans"]
