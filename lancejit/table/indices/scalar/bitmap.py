"""BITMAP and LABEL_LIST scalar indices: reading, searching.

Both store ``_indices/<uuid>/bitmap_page_lookup.lance``: one row per distinct value, ``keys``
(the column's type; for a label list the list's item type; one NULL key for NULL values or
items) and ``bitmaps`` (binary: a serialized ``RowIdTreeMap`` of the rows holding that value,
see :mod:`.rowset`).  Keys are written in value order (NULL first) by the reference's current
writer and in any order by older ones: :class:`BitmapIndex` sorts them once.  Schema metadata:
``lance:index_stats`` (JSON ``{"num_bitmaps": n}``); a label list index of version 1 also names
in ``lance:label_list_nulls`` the global buffer holding the ``RowIdTreeMap`` of the rows whose
list is NULL (what ``NOT array_has_any(...)`` leaves out).

Searches load only the bitmaps of the keys they need (the caller caches them by key row).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from lancejit.core.errors import CorruptFileError

from .domain import Query, Unusable, convert, kind_of, literal, span, values_of

LOOKUP_FILE = "bitmap_page_lookup.lance"
KEYS = "keys"
BITMAPS = "bitmaps"
STATS_KEY = "lance:index_stats"
LIST_NULLS_KEY = "lance:label_list_nulls"


@dataclass(frozen=True, slots=True, eq=False)
class BitmapIndex:
    """The keys of one BITMAP (or LABEL_LIST) index: ``keys`` (the non-null keys in the domain,
    sorted), ``rows`` (each key's row in the lookup file), ``null_row`` (the NULL key's row, -1
    when none); ``value_type`` is the keys' Arrow type; ``list_nulls`` the rows whose list is
    NULL (label lists of version 1; None: not recorded)."""

    value_type: pa.DataType
    keys: np.ndarray
    rows: np.ndarray
    null_row: int
    list_nulls: np.ndarray | None = None

    @classmethod
    def from_keys(cls, keys: pa.Array | pa.ChunkedArray, list_nulls: np.ndarray | None = None,
                  where: str | None = None) -> "BitmapIndex":
        if isinstance(keys, pa.ChunkedArray):
            keys = keys.combine_chunks() if keys.num_chunks != 1 else keys.chunk(0)
        t = keys.type
        if kind_of(t) is None:
            raise Unusable(f"bitmap keys of type {t}")
        nulls = np.flatnonzero(keys.is_null().to_numpy(zero_copy_only=False))
        if len(nulls) > 1:
            raise CorruptFileError(f"bitmap index has {len(nulls)} NULL keys", path=where)
        valid = np.ones(len(keys), dtype=bool)
        valid[nulls] = False
        rows = np.flatnonzero(valid).astype(np.int64)
        vals = values_of(keys)
        order = np.argsort(vals, kind="stable")
        return cls(t, vals[order], rows[order], int(nulls[0]) if len(nulls) else -1, list_nulls)

    def rows_for(self, q: Query) -> np.ndarray:
        """Lookup-file rows of the keys matching ``q`` (``eq`` / ``in`` / ``range`` / ``null``;
        ``any`` / ``all``: the rows of each label, in label order, -2 for a label with no key)."""
        if q.op == "null":
            return np.array([self.null_row] if self.null_row >= 0 else [], dtype=np.int64)
        if q.op in ("any", "all"):
            vs = convert(Query("in", q.values), self.value_type).values
            assert vs is not None  # an ``in`` search carries its values
            a = np.searchsorted(self.keys, vs, side="left")
            found = (a < len(self.keys)) & (self.keys[np.minimum(a, len(self.keys) - 1)] == vs) if len(self.keys) \
                else np.zeros(len(vs), dtype=bool)
            return np.where(found, self.rows[np.minimum(a, max(len(self.rows) - 1, 0))], -2).astype(np.int64)
        if q.op not in ("eq", "in", "range"):
            raise Unusable(f"bitmap cannot answer {q.op}")
        if q.op == "range" and q.lo is None and q.hi is None:
            return self.rows.copy()
        starts, stops = span(self.keys, convert(q, self.value_type))
        keep = stops > starts
        if not keep.any():
            return np.zeros(0, dtype=np.int64)
        return np.concatenate([self.rows[a:b] for a, b in zip(starts[keep].tolist(), stops[keep].tolist())])


def check_literals(index: BitmapIndex, q: Query) -> None:
    """Raise :class:`Unusable` when a literal of ``q`` has no counterpart in the key domain."""
    for v in q.values:
        literal(v, index.value_type)
    for v in (q.lo, q.hi):
        if v is not None:
            literal(v, index.value_type)


__all__ = ["BITMAPS", "BitmapIndex", "KEYS", "LIST_NULLS_KEY", "LOOKUP_FILE", "STATS_KEY", "check_literals"]
