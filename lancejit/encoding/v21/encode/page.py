"""An encoded page: its buffers (in order) and its ``PageLayout`` message."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence


@dataclass
class EncodedPage:
    """``buffers``: page buffers written in order (each 64-byte aligned by the file writer).
    ``num_rows``: top-level rows in the page.  ``layout``: the page's ``PageLayout`` (2.1+) or
    ``ArrayEncoding`` (2.0).

    ``external``: buffers the writer must write *before* the page (blob values); the writer then
    calls ``finish(positions)`` with their absolute file offsets to get the final page (None:
    the buffers were all there was to write, their page comes later).
    """

    buffers: Sequence[bytes | memoryview]
    layout: Any
    num_rows: int
    external: list[bytes] | None = None
    finish: Callable[[list[int]], "EncodedPage | None"] | None = None
