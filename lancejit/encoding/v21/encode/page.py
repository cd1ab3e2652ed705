"""An encoded page: its buffers (in order) and its ``PageLayout`` message."""

from __future__ import annotations

from dataclasses import dataclass

from lancejit.pb import encodings_v2_1_pb2 as pb21


@dataclass
class EncodedPage:
    """``buffers``: page buffers written in order (each 64-byte aligned by the file writer).
    ``num_rows``: top-level rows in the page.  ``layout``: the page's ``PageLayout``."""

    buffers: list[bytes]
    layout: pb21.PageLayout
    num_rows: int
