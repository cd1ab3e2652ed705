"""Decoded encoding messages shared by every reader of column metadata: the encodings' type URLs
and the caches of decoded page and column encodings (by the bytes of their ``Any`` envelope)."""

from __future__ import annotations

from google.protobuf.message import Message

#: Any type URLs of the encodings found in v2 files (bare leading slash, no domain).
COLUMN_ENCODING_URL = "/lance.encodings.ColumnEncoding"
PAGE_ENCODING_URL_V20 = "/lance.encodings.ArrayEncoding"
PAGE_LAYOUT_URL_V21 = "/lance.encodings21.PageLayout"

#: Decoded page encodings by encoding type URL, then by the bytes of their ``Any`` envelope.
#: The messages are shared by every page with those bytes (readers never modify them).
_LAYOUTS: dict[str, dict[bytes, Message]] = {PAGE_ENCODING_URL_V20: {}, PAGE_LAYOUT_URL_V21: {}}
_LAYOUTS_MAX = 4096


#: Decoded column-level encodings (``ColumnEncoding``) by the bytes of their ``Any`` envelope.
_COLUMN_ENCODINGS: dict[bytes, Message] = {}


__all__ = ["COLUMN_ENCODING_URL", "PAGE_ENCODING_URL_V20", "PAGE_LAYOUT_URL_V21"]
