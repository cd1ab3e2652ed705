"""The per-version dataset index: the fragments of one version as NumPy arrays.

Built once per version (``await dataset_index(ctx)``, single-flight, cached on the
:class:`~.context.DatasetContext` and in the dataset's shared caches by manifest path) from the
manifest alone when the manifest has the counts: no data file and no deletion file is read.
Everything that maps rows to fragments (takes, ``count_rows()``, scans) plans over these
arrays with vectorized operations and looks only at the fragments it touches.

API (positions ``pos`` are indices into the manifest's fragment list, ``[0, len(index))``):

* ``index.fragment_ids``   int64[n]  fragment id of each position (manifest order)
* ``index.physical_rows``  int64[n]  physical rows (resolved, see below)
* ``index.live_rows``      int64[n]  rows after deletions
* ``index.live_starts``    int64[n + 1]  prefix sums of ``live_rows`` (logical offset of each
  fragment's first live row; ``live_starts[-1] == total_rows``)
* ``index.has_deletions``  bool[n]   the fragment has a deletion file
* ``index.total_rows``     int       live rows of the version
* ``index.count_rows()``   the same, or ``NotFoundError`` if a fragment has no data files
* ``index_now(ctx)`` -> the index without awaiting when the manifest has every count, else None
* ``index.positions_of(ids)`` -> ``(pos, found)`` for fragment ids (vectorized)
* ``index.locate(offsets)`` -> ``(pos, local)``: logical offsets (checked in range by the
  caller) to fragment positions and logical offsets within the fragment
* ``index.reader(pos)`` -> the :class:`~.fragment.FragmentReader` of one position, created on
  first use (only touched fragments get one) with the resolved physical row count.

Legacy manifests: a fragment whose ``physical_rows`` is 0 while it has data files has an
*unknown* row count (old writers); it is resolved by opening its first data file (one footer
read, cached like every opened data file) and taking its row count; a missing file raises
``NotFoundError``.  A deletion file whose ``num_deleted_rows`` is unknown (0) is read to count
its rows.  Only such fragments are resolved, all concurrently, once per version.
"""

from __future__ import annotations

import asyncio
import weakref
from typing import TYPE_CHECKING, Sequence

import numpy as np

from lancejit.core.errors import CorruptFileError, LanceJitError, NotFoundError

from .datafile import open_data_file
from .fragment import FragmentReader
from ..meta.fragment_list import UNKNOWN, FragmentList

if TYPE_CHECKING:  # pragma: no cover
    from ..meta.context import DatasetContext
    from ..meta.manifest import Fragment


#: Rows a fragment can hold: local offsets are the low 32 bits of a row address.
MAX_FRAGMENT_ROWS = 1 << 32


def _no_context() -> None:
    """The context of an index built without one (tests of its arrays)."""
    return None


class DatasetIndex:
    """Fragments of one dataset version as arrays (see the module docstring)."""

    __slots__ = ("_ctx", "fragments", "fragment_ids", "physical_rows", "live_rows", "live_starts",
                 "has_deletions", "total_rows", "no_data_fragment", "_sorted_ids", "_sorted_pos", "_readers",
                 "take_state")

    def __init__(self, ctx: "DatasetContext | None", fragments: "Sequence[Fragment]", physical_rows: np.ndarray,
                 live_rows: np.ndarray, fragment_ids: np.ndarray | None = None,
                 has_deletions: np.ndarray | None = None, order: np.ndarray | None = None,
                 live_starts: np.ndarray | None = None) -> None:
        n = len(fragments)
        #: The context this index serves, held weakly: the context holds the index
        #: (``ctx.index``, and its shared caches the index LRU), so a strong reference back
        #: would make every dropped dataset a cycle freed only by a full GC collection.
        self._ctx = _no_context if ctx is None else weakref.ref(ctx)
        self.fragments = fragments
        if fragment_ids is None:
            fragment_ids = np.fromiter((f.id for f in fragments), dtype=np.int64, count=n)
        if has_deletions is None:
            has_deletions = np.fromiter((f.deletion_file is not None for f in fragments), dtype=bool, count=n)
        self.fragment_ids = fragment_ids
        self.physical_rows = physical_rows
        self.live_rows = live_rows
        if live_starts is None:
            live_starts = np.zeros(n + 1, dtype=np.int64)
            np.cumsum(live_rows, out=live_starts[1:])
        self.live_starts = starts = live_starts
        self.has_deletions = has_deletions
        self.total_rows = int(starts[-1])
        #: Id of a fragment without data files (None: every fragment has some).
        self.no_data_fragment: int | None = None
        if order is None:  # (the positions that sort the ids, when the caller does not know them)
            order = np.argsort(self.fragment_ids, kind="stable")
        self._sorted_ids = self.fragment_ids[order]
        self._sorted_pos = order.astype(np.int64, copy=False)
        self._readers: dict[int, FragmentReader] = {}
        #: Per projection: the multi-file take's state (:mod:`.take_files`), built on first use.
        self.take_state: dict = {}

    def __len__(self) -> int:
        return len(self.fragments)

    @property
    def ctx(self) -> "DatasetContext":
        """The context this index serves (alive while any context using the index is: see
        :func:`_adopt`)."""
        ctx = self._context()
        if ctx is None:
            raise LanceJitError("this index was built without a dataset")
        return ctx

    def _context(self) -> "DatasetContext | None":
        """The context, None for an index built without one."""
        ctx = self._ctx()
        if ctx is None and self._ctx is not _no_context:  # (an index held without its dataset)
            raise LanceJitError("the dataset this index belongs to was closed")
        return ctx

    def count_rows(self) -> int:
        """Live rows of the version; like the reference, a fragment without data files cannot
        be counted (``NotFoundError``)."""
        if self.no_data_fragment is not None:
            raise NotFoundError(
                f"{self.ctx.describe_where(self.ctx.manifest_path)}: fragment {self.no_data_fragment} "
                "has no data files"
            )
        return self.total_rows

    def reader(self, pos: int) -> FragmentReader:
        """The reader of the fragment at position ``pos`` (created once, on first use)."""
        r = self._readers.get(pos)
        if r is None:
            ctx = self._context()
            r = FragmentReader(ctx, self.fragments[pos], int(self.physical_rows[pos]), weak=ctx is not None)
            self._readers[pos] = r
        return r

    def positions_of(self, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(positions, found)`` of fragment ``ids`` (int64 arrays); positions of ids not in
        this version are 0 with ``found`` False."""
        ids = np.asarray(ids, dtype=np.int64)
        if len(self._sorted_ids) == 0:
            return np.zeros(len(ids), dtype=np.int64), np.zeros(len(ids), dtype=bool)
        at = np.searchsorted(self._sorted_ids, ids)
        np.minimum(at, len(self._sorted_ids) - 1, out=at)
        found = self._sorted_ids[at] == ids
        return np.where(found, self._sorted_pos[at], 0), found

    def locate(self, offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(positions, local)`` of logical ``offsets`` (int64, each in ``[0, total_rows)``):
        the fragment holding each and the logical offset (among its live rows) inside it."""
        pos = np.searchsorted(self.live_starts, offsets, side="right") - 1
        return pos, offsets - self.live_starts[pos]


def _manifest_counts(fragments: "Sequence[Fragment]") -> tuple[np.ndarray, ...]:
    """``(ids, physical_rows, num_deleted, has_files, has_deletion_file)`` of every fragment
    (``physical_rows`` 0: unknown when it has files; ``num_deleted`` -1: unknown)."""
    if isinstance(fragments, FragmentList):  # straight from the protobuf: no Fragment built
        ids, physical, deleted, has_files = fragments.counts()
        return ids, physical, deleted, has_files, deleted != 0
    n = len(fragments)
    ids = np.fromiter((f.id for f in fragments), dtype=np.int64, count=n)
    physical = np.fromiter((f.physical_rows for f in fragments), dtype=np.uint64, count=n)
    deleted = np.fromiter(
        (0 if f.deletion_file is None else min(f.deletion_file.num_deleted_rows or UNKNOWN, f.physical_rows)
         if f.physical_rows else f.deletion_file.num_deleted_rows or UNKNOWN for f in fragments),
        dtype=np.int64, count=n,
    )
    has_files = np.fromiter((bool(f.files) for f in fragments), dtype=bool, count=n)
    has_del = np.fromiter((f.deletion_file is not None for f in fragments), dtype=bool, count=n)
    return ids, physical, deleted, has_files, has_del


def _id_order(ctx: "DatasetContext", ids: np.ndarray) -> np.ndarray:
    """Positions that sort ``ids``; :class:`CorruptFileError` when an id repeats (the
    reference's Dataset.validate rule).  Ids in increasing order (what writers make) cost one
    comparison."""
    n = len(ids)
    if n < 2 or (ids[1:] > ids[:-1]).all():
        return np.arange(n, dtype=np.int64)
    order = np.argsort(ids, kind="stable")
    s = ids[order]
    dup = s[1:] == s[:-1]
    if dup.any():
        raise CorruptFileError(
            f"{ctx.describe_where(ctx.manifest_path)}: fragment id {int(s[1:][dup][0])} is used by "
            f"more than one fragment (the reference's Dataset.validate rule)"
        )
    return order


def _too_many_rows(ctx: "DatasetContext", fragment_id: int, rows: int) -> CorruptFileError:
    return CorruptFileError(
        f"{ctx.describe_where(ctx.manifest_path)}: fragment {fragment_id} records {rows} "
        f"physical rows, more than a fragment can address ({MAX_FRAGMENT_ROWS})"
    )


def _checked_counts(ctx: "DatasetContext", fragments: "Sequence[Fragment]") -> tuple[np.ndarray, ...]:
    """``(ids, physical_rows, num_deleted, has_files, has_deletion_file, id order)`` (see
    :func:`_manifest_counts`), checked."""
    ids, physical, deleted, has_files, has_del = _manifest_counts(fragments)
    if len(physical) and physical.max() > MAX_FRAGMENT_ROWS:
        i = int(np.argmax(physical > MAX_FRAGMENT_ROWS))
        raise _too_many_rows(ctx, int(ids[i]), int(physical[i]))
    return ids, physical.astype(np.int64), deleted, has_files, has_del, _id_order(ctx, ids)


def _index_from_arrays(ctx: "DatasetContext", fragments: FragmentList) -> DatasetIndex | None:
    """:func:`index_now` for fragments the wire-format kernels read (one kernel pass over their
    values, :mod:`lancejit.encoding.kernels.frag_index`; the same rules and checks as
    :func:`_checked_counts` and :func:`_finish`)."""
    from lancejit.encoding.kernels.frag_index import index_arrays

    a = fragments.arrays
    n = len(a.ids)
    out = np.empty((4, n), dtype=np.int64)
    starts = np.empty(n + 1, dtype=np.int64)
    too_big, no_files, increasing, unknown = index_arrays(
        a.ids, a.physical_rows, a.num_deleted, a.has_deletion, a.num_files, fragments.stats_trusted,
        MAX_FRAGMENT_ROWS, out, starts)
    if too_big >= 0:
        raise _too_many_rows(ctx, int(out[0, too_big]), int(a.physical_rows[too_big]))
    ids = out[0]
    order = np.arange(n, dtype=np.int64) if increasing else _id_order(ctx, ids)
    if unknown:
        return None
    index = DatasetIndex(ctx, fragments, out[1], out[3], ids, a.has_deletion, order, starts)
    if no_files >= 0:
        index.no_data_fragment = int(ids[no_files])
    return index


def _finish(ctx: "DatasetContext", fragments: "Sequence[Fragment]", ids: np.ndarray, physical: np.ndarray,
            deleted: np.ndarray, has_files: np.ndarray, has_del: np.ndarray, order: np.ndarray) -> DatasetIndex:
    index = DatasetIndex(ctx, fragments, physical, physical - deleted, ids, has_del, order)
    if not has_files.all():
        index.no_data_fragment = int(ids[np.argmin(has_files)])
    return index


def index_now(ctx: "DatasetContext") -> DatasetIndex | None:
    """The index of ``ctx``'s version without awaiting: the cached one, or built now when the
    manifest has every count (no file to read); None when counts must be read from files
    (then use :func:`dataset_index`)."""
    index = ctx.index
    if index is None:
        fragments = ctx.manifest.fragments
        if isinstance(fragments, FragmentList) and fragments.arrays is not None:
            index = ctx.index = _index_from_arrays(ctx, fragments)
            return index
        counts = _checked_counts(ctx, fragments)
        ids, physical, deleted, has_files, has_del, order = counts
        if (deleted < 0).any() or ((physical == 0) & has_files).any():  # UNKNOWN counts
            return None
        index = ctx.index = _finish(ctx, fragments, *counts)
    return index


async def _build(ctx: "DatasetContext") -> DatasetIndex:
    fragments = ctx.manifest.fragments
    ids, physical, deleted, has_files, has_del, order = _checked_counts(ctx, fragments)
    unknown_rows = np.flatnonzero((physical == 0) & has_files).tolist()
    if unknown_rows:

        async def rows_of(i: int) -> int:
            handle = await open_data_file(ctx, fragments[i].files[0])
            return int(handle.num_rows)

        physical[unknown_rows] = await asyncio.gather(*(rows_of(i) for i in unknown_rows))
        # a recorded deleted count above the rows the file holds: count the deletion file
        deleted[(deleted != UNKNOWN) & (deleted > physical)] = UNKNOWN
    unknown_deleted = np.flatnonzero(deleted == UNKNOWN).tolist()
    if unknown_deleted:

        async def deleted_of(i: int) -> int:
            d = await FragmentReader(ctx, fragments[i], int(physical[i])).deleted()
            return 0 if d is None else len(d)

        deleted[unknown_deleted] = await asyncio.gather(*(deleted_of(i) for i in unknown_deleted))
    return _finish(ctx, fragments, ids, physical, deleted, has_files, has_del, order)


async def dataset_index(ctx: "DatasetContext") -> DatasetIndex:
    """The index of ``ctx``'s version: built once (concurrent callers share one build) and cached."""
    index = ctx.index
    if index is None:
        index = await ctx.caches.indexes.get(ctx.manifest_path, lambda: _build(ctx))
        _adopt(ctx, index)
    return index


def _adopt(ctx: "DatasetContext", index: DatasetIndex) -> None:
    """Make ``index`` (shared by the checkouts of one version through the caches' LRU) the
    index of ``ctx``.  The index and its readers reference one context weakly: when that one
    is gone, the index serves ``ctx`` from now on (readers made for the dead one dropped);
    when it is another live context, ``ctx`` keeps that one alive (``index_owner``: no cycle,
    the owner never references ``ctx``), so readers already handed out stay valid."""
    bound = index._ctx()
    if bound is None:
        index._ctx = weakref.ref(ctx)
        index._readers = {}
    elif bound is not ctx:
        ctx.index_owner = bound
    ctx.index = index
