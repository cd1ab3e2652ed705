"""Legacy (0.1) file decoders: PLAIN, VAR_BINARY and DICTIONARY pages, per-batch lists and
structs.  Entry point: :func:`make_field_decoders` ``(reader, metadata, field_names)``; the
file container is parsed by :mod:`lancejit.file.legacy` (``metadata.legacy``)."""

from lancejit.encoding.legacy.fields import LegacyFieldDecoder, make_field_decoders
from lancejit.encoding.v20.steps import run_plans

__all__ = ["LegacyFieldDecoder", "make_field_decoders", "run_plans"]
