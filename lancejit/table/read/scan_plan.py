"""Planning a scan: which physical row ranges of which fragments to read, in scan order.

The plan is arrays built from the version's :class:`~.index.DatasetIndex` (no per-fragment
object is created here; a :class:`~.fragment.FragmentReader` is made when a unit is read and
dropped after): a *unit* is a half-open physical row range ``[lo, hi)`` of the fragment at
index position ``pos``, about ``target_bytes`` of encoded data (at most ``max_rows`` rows), and ``est_bytes`` its
estimated encoded size (from the manifest's file sizes), which bounds the bytes in flight.

Pruning: with a ``pruner`` (a :class:`Pruner`, e.g. :class:`~.pruning.PrunePlan`), each fragment
it may prune is asked once for the row ranges that may hold matching rows; units never cross a
kept range's edges and dropped rows are never read.  Other fragments are read whole.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

import numpy as np

if TYPE_CHECKING:  # pragma: no cover
    from ..meta.context import DatasetContext
    from .version_index import DatasetIndex


@dataclass(frozen=True, slots=True)
class ScanPlan:
    """Units in scan order, as parallel int64 arrays: ``pos`` (index position of the
    fragment), ``lo``/``hi`` (physical rows, half-open) and ``est_bytes``."""

    pos: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    est_bytes: np.ndarray

    def __len__(self) -> int:
        return len(self.pos)


class Pruner(Protocol):
    """What the planner asks of statistics (see :class:`~.pruning.PrunePlan`)."""

    def fragment_ids(self) -> np.ndarray:
        """Ids of the fragments it may prune (int64)."""

    def kept(self, fragment_id: int, lo: int, hi: int) -> tuple[np.ndarray, int, int] | None:
        """``(kept sub-ranges of [lo, hi): (k, 2) int64 sorted, disjoint, half-open; batches
        skipped; rows skipped)``, or None for "read it all"."""


_FILE_BYTES: dict[str, np.ndarray] = {}  # per version (dataset uri | manifest path)


def _file_bytes(ctx: "DatasetContext", index: "DatasetIndex") -> np.ndarray:
    """Encoded bytes of each fragment's data files (manifest sizes; cached per version)."""
    key = f"{ctx.uri}|{ctx.manifest_path}"
    got = _FILE_BYTES.get(key)
    if got is None or len(got) != len(index):
        got = np.fromiter(
            (sum(df.file_size_bytes or 0 for df in f.files) for f in index.fragments),
            dtype=np.int64, count=len(index),
        )
        if len(_FILE_BYTES) >= 16:
            _FILE_BYTES.pop(next(iter(_FILE_BYTES)))
        _FILE_BYTES[key] = got
    return got


def plan_units(ctx: "DatasetContext", index: "DatasetIndex", positions: np.ndarray, batch_size: int,
               target_bytes: int, max_rows: int, pruner: Pruner | None = None) -> ScanPlan:
    """Units of the fragments at index ``positions`` (in that order), vectorized: one unit per
    fragment (per kept range with a ``pruner``) unless it holds more than ``target_bytes`` or
    ``max_rows`` rows.  Rows a pruner drops are counted in ``ctx.stats``."""
    positions = np.asarray(positions, dtype=np.int64)
    rows = index.physical_rows[positions]
    fbytes = _file_bytes(ctx, index)[positions]
    bpr = np.where(rows > 0, fbytes / np.maximum(rows, 1), 0.0)
    by_bytes = np.where(bpr > 0, target_bytes / np.maximum(bpr, 1e-9), max_rows)
    step = np.clip(np.maximum(batch_size, by_bytes), 1, max_rows).astype(np.int64)
    lo, hi, owner = np.zeros(len(positions), dtype=np.int64), rows.astype(np.int64), np.arange(len(positions))
    if pruner is not None and len(positions):
        ids = index.fragment_ids[positions]
        hit = np.flatnonzero(np.isin(ids, pruner.fragment_ids()))
        if len(hit):
            lo, hi, owner = _pruned_ranges(ctx, pruner, ids, rows, hit)
    return _split(positions[owner], lo, hi, step[owner], bpr[owner])


def _pruned_ranges(ctx: "DatasetContext", pruner: Pruner, ids: np.ndarray, rows: np.ndarray,
                   hit: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Row ranges to read, in order: whole fragments, and the kept ranges of those at ``hit``."""
    parts: list[np.ndarray] = []
    owners: list[np.ndarray] = []
    prev = 0
    pages = dropped = 0
    for i in hit.tolist():
        if i > prev:
            whole = np.arange(prev, i)
            parts.append(np.stack([np.zeros(len(whole), dtype=np.int64), rows[whole]], axis=1))
            owners.append(whole)
        got = pruner.kept(int(ids[i]), 0, int(rows[i]))
        kept = np.array([[0, rows[i]]], dtype=np.int64) if got is None else got[0].reshape(-1, 2)
        if got is not None:
            pages, dropped = pages + got[1], dropped + got[2]
        parts.append(kept.astype(np.int64))
        owners.append(np.full(len(kept), i))
        prev = i + 1
    if prev < len(ids):
        whole = np.arange(prev, len(ids))
        parts.append(np.stack([np.zeros(len(whole), dtype=np.int64), rows[whole]], axis=1))
        owners.append(whole)
    if dropped:
        ctx.stats.record_pruned(pages, dropped)
    ranges = np.concatenate(parts)
    return ranges[:, 0], ranges[:, 1], np.concatenate(owners).astype(np.int64)


def _split(pos: np.ndarray, lo: np.ndarray, hi: np.ndarray, step: np.ndarray, bpr: np.ndarray) -> ScanPlan:
    """Units of ``step`` rows (at most) covering each range ``[lo, hi)`` of fragment position
    ``pos``, in order (empty ranges give no unit)."""
    n = np.maximum(hi - lo, 0)
    count = -(-n // step)
    upos = np.repeat(pos.astype(np.int64), count)
    first = np.repeat(np.cumsum(count) - count, count)
    k = np.arange(len(upos), dtype=np.int64) - first
    st = np.repeat(step, count)
    ulo = np.repeat(lo, count) + k * st
    uhi = np.minimum(ulo + st, np.repeat(hi, count))
    est = ((uhi - ulo) * np.repeat(bpr, count)).astype(np.int64)
    return ScanPlan(upos, ulo, uhi, est)
