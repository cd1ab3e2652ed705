"""The loaded pages of a numeric BTREE index side by side, and the kernels searching them.

A :class:`PageSlab` has room for every row of an index's ``page_data.lance`` (values in a
search dtype: int64, uint64 or float64; ids uint64) and is filled page by page as searches need
pages (room never filled costs no memory: NumPy's empty arrays are mapped lazily).  Page ``p``
occupies slab rows ``[p * batch_size, p * batch_size + rows)``: the ids of its NULL rows first,
then its values in order with their ids; ``vstart[p]`` / ``vstop[p]`` bound the values
(half-open).

A search is then a few array operations and two kernel calls however many keys and pages it
touches (no per-key or per-page Python work): the query becomes intervals (an ``IN`` list one
per value, a range one), the page lookup gives each interval its lookup rows (half-open
``[first, last)``, :meth:`~.btree.BTreeIndex.page_spans`), :func:`_spans` binary-searches each
interval in each of its pages and returns the runs of slab rows inside it, and :func:`_gather`
copies the runs' ids into one array.

Only lookups in value order (every writer of the reference since indices exist) and numeric or
boolean columns are searched here; other indices keep their pages one by one
(:mod:`.opened`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from lancejit.encoding.kernels import readonly
from lancejit.encoding.kernels.jit import njit

from .btree import BTreeIndex, BTreePage
from .domain import Converted, kind_of

#: Interval flags: a lower bound, inclusive; an upper bound, inclusive.
HAS_LO, LO_INCL, HAS_HI, HI_INCL = 1, 2, 4, 8
_POINT = HAS_LO | LO_INCL | HAS_HI | HI_INCL

_SPANS = tuple(
    f"ro({t}[::1]), ro(i8[::1]), ro(i8[::1]), ro(i8[::1]), ro({t}[::1]), ro({t}[::1]), ro(u1[::1]), "
    "ro(i8[::1]), ro(i8[::1]), i8[::1], i8[::1]"
    for t in ("i8", "u8", "f8")
)


@njit(cache=True, nogil=True, inline="always")
def _bound(values, a, b, v, after):  # pragma: no cover - compiled
    """The first position in ``[a, b)`` of the sorted ``values`` holding a value above ``v``
    (``after``) or at least ``v`` (``b`` when none); NaN counts as above every number."""
    while a < b:
        m = (a + b) >> 1
        if values[m] < v or (after and values[m] == v):
            a = m + 1
        else:
            b = m
    return a


@njit(cache=True, nogil=True, specs=_SPANS)
def _spans(values, vstart, vstop, page_of, q_lo, q_hi, flags, first, last, out_a, out_b):  # pragma: no cover
    """For each interval ``i`` and lookup row ``r`` in ``[first[i], last[i])``: the run of slab
    rows of page ``page_of[r]`` (values ``[vstart, vstop)``, sorted) inside the interval,
    written to ``out_a`` / ``out_b`` when not empty (room: ``sum(last - first)``); returns the
    number of runs.  Bounded ends leave NaN (sorted last) out."""
    n = 0
    for i in range(q_lo.shape[0]):
        f = flags[i]
        for r in range(first[i], last[i]):
            p = page_of[r]
            a = vstart[p]
            b = vstop[p]
            if f & 1:
                a = _bound(values, a, b, q_lo[i], (f & 2) == 0)
            if f & 4:
                b = _bound(values, a, b, q_hi[i], (f & 8) != 0)
            if b > a:
                out_a[n] = a
                out_b[n] = b
                n += 1
    return n


@njit(cache=True, nogil=True, specs=("ro(u8[::1]), ro(i8[::1]), ro(i8[::1]), u8[::1]",))
def _gather(ids, starts, stops, out):  # pragma: no cover - compiled
    """``ids[starts[i]:stops[i]]`` for every ``i``, back to back into ``out``; returns the count."""
    n = 0
    for i in range(starts.shape[0]):
        for j in range(starts[i], stops[i]):
            out[n] = ids[j]
            n += 1
    return n


def spans_numpy(values, vstart, vstop, page_of, q_lo, q_hi, flags, first, last):
    """:func:`_spans` in NumPy (the reference the kernel is tested against)."""
    out_a, out_b = [], []
    for i in range(len(q_lo)):
        f = int(flags[i])
        for r in range(int(first[i]), int(last[i])):
            p = int(page_of[r])
            seg = values[vstart[p]:vstop[p]]
            a = 0 if not f & HAS_LO else int(np.searchsorted(seg, q_lo[i], side="left" if f & LO_INCL else "right"))
            b = len(seg) if not f & HAS_HI else int(np.searchsorted(seg, q_hi[i], side="right" if f & HI_INCL else "left"))
            if b > a:
                out_a.append(int(vstart[p]) + a)
                out_b.append(int(vstart[p]) + b)
    return np.array(out_a, dtype=np.int64), np.array(out_b, dtype=np.int64)


def search_dtype(lookup: BTreeIndex) -> np.dtype | None:
    """The slab dtype of an index's values, or None when its pages are not searched here."""
    if not lookup.ordered:
        return None
    kind = kind_of(lookup.value_type)
    if kind == "float":
        return np.dtype(np.float64)
    if kind == "bool":
        return np.dtype(np.int64)
    if kind == "int":
        return np.dtype(np.uint64) if pa.types.is_uint64(lookup.value_type) else np.dtype(np.int64)
    return None


@dataclass(eq=False)
class PageSlab:
    """Room for every page of one index (see the module docstring); ``nbytes``: the bytes of
    the pages filled so far (what a byte-bounded cache weighs it by)."""

    batch_size: int
    values: np.ndarray
    ids: np.ndarray
    vstart: np.ndarray
    vstop: np.ndarray
    loaded: np.ndarray
    nbytes: int = 0

    @classmethod
    def empty(cls, lookup: BTreeIndex, dtype: np.dtype) -> "PageSlab":
        pages = -(-lookup.num_rows // lookup.batch_size)
        base = np.arange(pages, dtype=np.int64) * lookup.batch_size
        return cls(lookup.batch_size, np.empty(lookup.num_rows, dtype=dtype),
                   np.empty(lookup.num_rows, dtype=np.uint64), base.copy(), base.copy(),
                   np.zeros(pages, dtype=bool))

    @staticmethod
    def full_bytes(lookup: BTreeIndex, dtype: np.dtype) -> int:
        """The bytes of a slab holding every page of ``lookup``."""
        return lookup.num_rows * (dtype.itemsize + 8)

    def missing(self, pages: np.ndarray) -> np.ndarray:
        """The page numbers of ``pages`` (sorted) not filled yet."""
        return pages[~self.loaded[pages]]

    def fill(self, page: int, got: BTreePage) -> int:
        """Put loaded page ``page`` in its place; returns the bytes it adds."""
        if self.loaded[page]:
            return 0
        at = page * self.batch_size
        z, n = len(got.null_ids), len(got.values)
        self.ids[at:at + z] = got.null_ids
        self.values[at + z:at + z + n] = got.values
        self.ids[at + z:at + z + n] = got.ids
        self.vstart[page], self.vstop[page] = at + z, at + z + n
        self.loaded[page] = True
        added = (z + n) * 8 + n * self.values.itemsize
        self.nbytes += added
        return added

    def search(self, lookup: BTreeIndex, c: Converted) -> np.ndarray:
        """Ids (uint64, in value order) of the rows matching ``c``; every page the lookup gives
        ``c`` must be filled (:meth:`missing` of :meth:`~.btree.BTreeIndex.pages_for`)."""
        if c.op == "null":
            pages = lookup.pages_for(c)
            starts = pages * self.batch_size
            return self._gather(starts, self.vstart[pages])
        q_lo, q_hi, flags = intervals(c, self.values.dtype)
        first, last = lookup.page_spans(c)
        room = int(np.maximum(last - first, 0).sum())
        if room == 0:
            return np.zeros(0, dtype=np.uint64)
        out_a = np.empty(room, dtype=np.int64)
        out_b = np.empty(room, dtype=np.int64)
        n = _spans(readonly(self.values), readonly(self.vstart), readonly(self.vstop), readonly(lookup.page_idx),
                   readonly(q_lo), readonly(q_hi), readonly(flags), readonly(first, np.int64),
                   readonly(last, np.int64), out_a, out_b)
        return self._gather(out_a[:n], out_b[:n])

    def _gather(self, starts: np.ndarray, stops: np.ndarray) -> np.ndarray:
        if len(starts) == 1:
            return self.ids[int(starts[0]):int(stops[0])].copy()
        total = int((stops - starts).sum()) if len(starts) else 0
        out = np.empty(total, dtype=np.uint64)
        if total:
            _gather(readonly(self.ids), readonly(starts, np.int64), readonly(stops, np.int64), out)
        return out


def intervals(c: Converted, dtype: np.dtype) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(lows, highs, flags)`` of the intervals of ``c`` (``in``: one point per value;
    ``range``: one) in the slab's ``dtype``."""
    if c.op == "in":
        vals = np.asarray(c.values).astype(dtype)
        return vals, vals, np.full(len(vals), _POINT, dtype=np.uint8)
    flags = 0
    lo = hi = 0
    if c.lo is not None:
        flags |= HAS_LO | (LO_INCL if c.lo_incl else 0)
        lo = c.lo
    if c.hi is not None:
        flags |= HAS_HI | (HI_INCL if c.hi_incl else 0)
        hi = c.hi
    return (np.array([lo], dtype=dtype), np.array([hi], dtype=dtype), np.array([flags], dtype=np.uint8))


def searchable(c: Converted, dtype: np.dtype) -> bool:
    """Whether the slab answers ``c`` exactly (NaN literals are left to the page path)."""
    if c.op == "null":
        return True
    if dtype.kind != "f":
        return True
    if c.op == "in":
        return not bool(np.isnan(np.asarray(c.values, dtype=np.float64)).any())
    return not any(v is not None and v != v for v in (c.lo, c.hi))


__all__ = ["PageSlab", "intervals", "search_dtype", "searchable", "spans_numpy"]
