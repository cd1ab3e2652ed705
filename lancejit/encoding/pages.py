"""Values describing where a column's pages are, shared by ``file`` (which parses them) and
``encoding`` (which decodes them).  All offsets are absolute byte positions in the file."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class PageInfo:
    """One disk page of one column.

    ``buffer_offsets[i]``/``buffer_sizes[i]``: absolute byte position and length of page buffer i.
    ``num_rows``: rows in the page (for 2.0 list-item columns: items).
    ``priority``: first top-level row of the page.
    ``encoding``: the decoded page message (``encodings21.PageLayout`` for 2.1/2.2,
    ``encodings.ArrayEncoding`` for 2.0), already unwrapped from its ``Any`` envelope.
    """

    buffer_offsets: tuple[int, ...]
    buffer_sizes: tuple[int, ...]
    num_rows: int
    priority: int
    encoding: Any


@dataclass(frozen=True, slots=True)
class ColumnInfo:
    """One column of a v2 file: its pages in row order and its column-level buffers."""

    index: int
    pages: tuple[PageInfo, ...]
    buffer_offsets: tuple[int, ...]
    buffer_sizes: tuple[int, ...]
    encoding: Any  # decoded column-level encoding message (ColumnEncoding) or None

    @property
    def num_rows(self) -> int:
        return sum(p.num_rows for p in self.pages)
