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
from typing import TYPE_CHECKING

import numpy as np

from .datafile import open_data_file
from .fragment import FragmentReader

if TYPE_CHECKING:  # pragma: no cover
    from .context import DatasetContext
    from .manifest import Fragment


class DatasetIndex:
    """Fragments of one dataset version as arrays (see the module docstring)."""

    __slots__ = ("ctx", "fragments", "fragment_ids", "physical_rows", "live_rows", "live_starts",
                 "has_deletions", "total_rows", "_sorted_ids", "_sorted_pos", "_readers")

    def __init__(self, ctx: "DatasetContext", fragments: "tuple[Fragment, ...]", physical_rows: np.ndarray,
                 live_rows: np.ndarray) -> None:
        n = len(fragments)
        self.ctx = ctx
        self.fragments = fragments
        self.fragment_ids = np.fromiter((f.id for f in fragments), dtype=np.int64, count=n)
        self.physical_rows = physical_rows
        self.live_rows = live_rows
        starts = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(live_rows, out=starts[1:])
        self.live_starts = starts
        self.has_deletions = np.fromiter((f.deletion_file is not None for f in fragments), dtype=bool, count=n)
        self.total_rows = int(starts[-1])
        order = np.argsort(self.fragment_ids, kind="stable")
        self._sorted_ids = self.fragment_ids[order]
        self._sorted_pos = order.astype(np.int64, copy=False)
        self._readers: dict[int, FragmentReader] = {}

    def __len__(self) -> int:
        return len(self.fragments)

    def reader(self, pos: int) -> FragmentReader:
        """The reader of the fragment at position ``pos`` (created once, on first use)."""
        r = self._readers.get(pos)
        if r is None:
            r = FragmentReader(self.ctx, self.fragments[pos], int(self.physical_rows[pos]))
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


async def _build(ctx: "DatasetContext") -> DatasetIndex:
    fragments = ctx.manifest.fragments
    n = len(fragments)
    physical = np.fromiter((f.physical_rows for f in fragments), dtype=np.int64, count=n)
    deleted = np.fromiter(
        (0 if f.deletion_file is None else (f.deletion_file.num_deleted_rows or -1) for f in fragments),
        dtype=np.int64, count=n,
    )
    unknown_rows = np.flatnonzero(physical == 0)
    unknown_rows = [int(i) for i in unknown_rows if fragments[i].files]
    if unknown_rows:

        async def rows_of(i: int) -> int:
            handle = await open_data_file(ctx, fragments[i].files[0])
            return int(handle.num_rows)

        physical[unknown_rows] = await asyncio.gather(*(rows_of(i) for i in unknown_rows))
    unknown_deleted = np.flatnonzero(deleted < 0).tolist()
    if unknown_deleted:

        async def deleted_of(i: int) -> int:
            d = await FragmentReader(ctx, fragments[i], int(physical[i])).deleted()
            return 0 if d is None else len(d)

        deleted[unknown_deleted] = await asyncio.gather(*(deleted_of(i) for i in unknown_deleted))
    return DatasetIndex(ctx, fragments, physical, physical - deleted)


async def dataset_index(ctx: "DatasetContext") -> DatasetIndex:
    """The index of ``ctx``'s version: built once (concurrent callers share one build) and cached."""
    index = ctx.index
    if index is None:
        index = await ctx.caches.indexes.get(ctx.manifest_path, lambda: _build(ctx))
        ctx.index = index
    return index
