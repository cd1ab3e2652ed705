"""What the 2.1/2.2 structural page readers (mini-block, full-zip, constant) hold in common."""

from __future__ import annotations

from typing import Any

import numpy as np

from lancejit.encoding.pages import PageInfo
from lancejit.encoding.v21.context import ColumnContext


class LayoutPage:
    """One page of a leaf column with its layout message and def-level translation table.

    ``num_rows``: the page's top-level rows; ``def_table``: page def level -> canonical level.
    """

    def __init__(self, ctx: ColumnContext, page: PageInfo, layout: Any, page_index: int, def_table: np.ndarray) -> None:
        self.ctx = ctx
        self.page = page
        self.layout = layout
        self.page_index = page_index
        self.num_rows = page.num_rows
        self.def_table = def_table


__all__ = ["LayoutPage"]
