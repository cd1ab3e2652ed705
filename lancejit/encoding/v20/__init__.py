"""Version 2.0 encodings (``lance.encodings.ArrayEncoding`` pages; footer says 0.3).

Entry point: :func:`make_field_decoders` ``(reader, metadata, field_names)`` returning one
:class:`~lancejit.encoding.protocol.FieldDecoder` per requested top-level field.  Modules:
``steps`` (read plans as generators), ``blocks`` (decoded page data -> Arrow), ``arrays``
(one decoder per ArrayEncoding), ``columns`` (field-level nodes), ``field`` (the FieldDecoder),
``compression`` (zstd/lz4 buffers, FSST).
"""

from lancejit.core.lazy import lazy_exports

# The exported names are loaded on first access (PEP 562): the 2.1/2.2 decoders and the legacy
# ones import only ``steps`` / ``rowranges`` of this package, and a process that never meets a 2.0
# file should not load the 2.0 decoders (and, through them, zstandard / lz4).
_EXPORTS = {
    "V20FieldDecoder": "lancejit.encoding.v20.field",
    "make_field_decoders": "lancejit.encoding.v20.field",
    "indices_to_ranges": "lancejit.encoding.v20.rowranges",
    "run_plans": "lancejit.encoding.v20.steps",
}


__getattr__, __dir__ = lazy_exports(__name__, globals(), _EXPORTS)


__all__ = ["V20FieldDecoder", "indices_to_ranges", "make_field_decoders", "run_plans"]
