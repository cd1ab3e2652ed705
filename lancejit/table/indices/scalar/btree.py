"""BTREE scalar indices (``create_scalar_index(col, "BTREE")`` in the reference): reading, searching.

Files under ``_indices/<uuid>/``:

* ``page_data.lance``: every indexed row as ``values`` (the column's type) and ``ids`` (uint64
  row address, or row id with stable row ids), sorted by value, NULLs first; cut into *pages*
  of ``batch_size`` rows (page ``k`` = rows ``[k * batch_size, (k + 1) * batch_size)``);
* ``page_lookup.lance``: one row per page: ``min`` / ``max`` (its first and last value; ``min``
  NULL when the page starts with NULLs, both NULL for an all-NULL page), ``null_count``
  (uint32) and ``page_idx`` (uint32); schema metadata ``batch_size`` (default 4096) and
  ``range_partitioned``.

Releases before 0.21 wrote both as 0.1 files, the id column named ``row_ids``.

A search (:meth:`BTreeIndex.pages_for`, then :func:`search_page` on each page) finds the pages
whose ``[min, max]`` may hold the query's values by binary search over the lookup (pages in
value order; a lookup out of order is searched page by page), loads those pages (once: the
caller caches them) and binary-searches each page's sorted values.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from lancejit.core.errors import CorruptFileError

from .domain import Converted, Unusable, bottom, kind_of, nondecreasing, span, values_of
from .rowset import EMPTY

LOOKUP_FILE = "page_lookup.lance"
PAGES_FILE = "page_data.lance"
DEFAULT_BATCH_SIZE = 4096
VALUES = "values"
IDS = "ids"
#: The id column's name in files written before the current format (0.1 files).
LEGACY_IDS = "row_ids"


def _bounds(arr: pa.Array | pa.ChunkedArray, fill: object) -> np.ndarray:
    """Per page bound in the column's domain, NULL bounds replaced by ``fill``."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks() if arr.num_chunks != 1 else arr.chunk(0)
    valid = ~arr.is_null().to_numpy(zero_copy_only=False)
    vals = values_of(arr)
    if kind_of(arr.type) in ("str", "bytes"):
        out = np.empty(len(arr), dtype=object)
    else:
        out = np.empty(len(arr), dtype=vals.dtype)
    out[:] = fill
    out[valid] = vals
    return out


@dataclass(frozen=True, slots=True, eq=False)
class BTreeIndex:
    """The page lookup of one BTREE index: per page (in ``page_idx`` order as stored) its
    lower / upper bound in the domain (NULL -> the domain's bottom), null count and number;
    ``ordered`` when the pages are in value order (binary search applies)."""

    value_type: pa.DataType
    batch_size: int
    num_rows: int
    lows: np.ndarray
    highs: np.ndarray
    null_counts: np.ndarray
    page_idx: np.ndarray
    ordered: bool

    @classmethod
    def from_lookup(cls, table: pa.Table, value_type: pa.DataType, batch_size: int, num_rows: int,
                    where: str | None = None) -> "BTreeIndex":
        """The lookup from ``page_lookup.lance``'s rows (``num_rows``: rows of ``page_data.lance``)."""
        for name in ("min", "max", "null_count", "page_idx"):
            if name not in table.column_names:
                raise CorruptFileError(f"btree page lookup has no {name!r} column", path=where)
        if kind_of(value_type) is None:
            raise Unusable(f"btree on {value_type}")
        if batch_size <= 0:
            raise CorruptFileError(f"btree batch size {batch_size}", path=where)
        page_idx = np.asarray(table.column("page_idx").to_numpy(), dtype=np.int64)
        n_pages = -(-num_rows // batch_size)
        if len(page_idx) and (page_idx.min() < 0 or page_idx.max() >= max(n_pages, 1)):
            raise CorruptFileError(f"btree page numbers outside the {n_pages} pages of its data", path=where)
        mins, maxs = table.column("min"), table.column("max")
        fill = bottom(value_type)
        lows, highs = _bounds(mins, fill), _bounds(maxs, fill)
        nulls = np.asarray(table.column("null_count").to_numpy(), dtype=np.int64)
        ordered = nondecreasing(lows) and nondecreasing(highs) and nondecreasing(page_idx)
        return cls(value_type, batch_size, num_rows, lows, highs, nulls, page_idx, ordered)

    @property
    def num_pages(self) -> int:
        return len(self.page_idx)

    def page_rows(self, page: int) -> tuple[int, int]:
        """``(first row, rows)`` of page number ``page`` in ``page_data.lance``."""
        start = page * self.batch_size
        return start, max(0, min(self.batch_size, self.num_rows - start))

    def _bounds_of(self, c: Converted) -> tuple[Any, Any, int]:
        """``(lows, highs, n)``: the query's intervals' bounds (None: unbounded) and count."""
        if c.op == "in":
            vs = c.values
            assert vs is not None  # an ``in`` search carries its values
            return vs, vs, len(vs)
        if c.op == "range":
            return (None if c.lo is None else [c.lo]), (None if c.hi is None else [c.hi]), 1
        raise Unusable(f"btree cannot answer {c.op}")

    def page_spans(self, c: Converted) -> tuple[np.ndarray, np.ndarray]:
        """Per interval of ``c`` (``in``: each value; ``range``: one), the lookup rows
        ``[first, last)`` (int64; empty when ``last <= first``) of the pages that may hold it;
        lookups in value order only."""
        los, his, n = self._bounds_of(c)
        lows, highs = self.lows, self.highs
        first = np.zeros(n, dtype=np.int64) if los is None else np.searchsorted(highs, los, side="left")
        last = np.full(n, len(lows), dtype=np.int64) if his is None else np.searchsorted(lows, his, side="right")
        return np.asarray(first, dtype=np.int64), np.asarray(last, dtype=np.int64)

    def pages_for(self, c: Converted) -> np.ndarray:
        """Page numbers (sorted, int64) that may hold rows matching ``c``."""
        if c.op == "null":
            return np.unique(self.page_idx[self.null_counts > 0])
        lows, highs = self.lows, self.highs
        if not len(lows):
            return np.zeros(0, dtype=np.int64)
        if self.ordered:
            first, last = self.page_spans(c)
            counts = np.maximum(last - first, 0)
            total = int(counts.sum())
            if total == 0:
                return np.zeros(0, dtype=np.int64)
            if len(first) == 1:
                sel = np.arange(int(first[0]), int(last[0]), dtype=np.int64)
            else:
                starts = np.repeat(first, counts)
                sel = starts + (np.arange(total) - np.repeat(np.cumsum(counts) - counts, counts))
        else:  # pages out of value order: every page tested
            los, his, n = self._bounds_of(c)
            keep = np.zeros(len(lows), dtype=bool)
            for i in range(n):
                k = np.ones(len(lows), dtype=bool)
                if los is not None:
                    k &= ~(highs < los[i])
                if his is not None:
                    k &= ~(lows > his[i])
                keep |= k
            sel = np.flatnonzero(keep)
        pages = self.page_idx[sel]
        return pages if len(pages) == 1 else np.unique(pages)


@dataclass(frozen=True, slots=True, eq=False)
class BTreePage:
    """One loaded page: the non-null ``values`` in the domain, sorted (NumPy order), their row
    ``ids`` (uint64) and the ids of the page's NULL rows."""

    values: np.ndarray
    ids: np.ndarray
    null_ids: np.ndarray

    @property
    def nbytes(self) -> int:
        n = self.values.nbytes if self.values.dtype.kind != "O" else 64 * len(self.values)
        return int(n + self.ids.nbytes + self.null_ids.nbytes) + 256

    @classmethod
    def from_table(cls, table: pa.Table, where: str | None = None) -> "BTreePage":
        if len(table.column_names) != 2 or table.column_names[0] != VALUES:
            raise CorruptFileError("btree page data needs 'values' and 'ids' columns", path=where)
        col = table.column(VALUES)
        col = col.combine_chunks() if col.num_chunks != 1 else col.chunk(0)
        ids = table.column(1)
        if ids.null_count:
            raise CorruptFileError("btree page data holds NULL row ids", path=where)
        ids = np.ascontiguousarray(ids.to_numpy(), dtype=np.uint64)
        if col.null_count:
            valid = ~col.is_null().to_numpy(zero_copy_only=False)
            null_ids, ids = ids[~valid], ids[valid]
        else:
            null_ids = EMPTY
        values = values_of(col)
        if not nondecreasing(values):  # never from the reference's writer: sorted here then
            order = np.argsort(values, kind="stable")
            values, ids = values[order], ids[order]
        return cls(values, ids, null_ids)


def search_page(page: BTreePage, c: Converted) -> np.ndarray:
    """Row ids of ``page`` matching ``c`` (unsorted)."""
    if c.op == "null":
        return page.null_ids
    starts, stops = span(page.values, c)
    if len(starts) == 1:
        return page.ids[int(starts[0]):int(stops[0])]
    keep = stops > starts
    if not keep.any():
        return EMPTY
    return np.concatenate([page.ids[a:b] for a, b in zip(starts[keep].tolist(), stops[keep].tolist())])


__all__ = ["BTreeIndex", "BTreePage", "DEFAULT_BATCH_SIZE", "IDS", "LEGACY_IDS", "LOOKUP_FILE", "PAGES_FILE", "VALUES",
           "search_page"]
