"""Version 2.1 / 2.2 encodings: compressive decoders and structural layouts.

Public entry point: :func:`make_field_decoders` (used by ``lancejit.file.reader``).
"""

from lancejit.encoding.v21.field import StructuralFieldDecoder, make_field_decoders

__all__ = ["StructuralFieldDecoder", "make_field_decoders"]
