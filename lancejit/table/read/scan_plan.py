"""Planning a scan: which physical row ranges of which fragments to read, in scan order.

The plan is arrays built from the version's :class:`~.index.DatasetIndex` (no per-fragment
object is created here; a :class:`~.fragment.FragmentReader` is made when a unit is read and
dropped after): a *unit* is a half-open physical row range ``[lo, hi)`` of the fragment at
index position ``pos``, about ``target_bytes`` of encoded data (at most ``max_rows`` rows), and ``est_bytes`` its
estimated encoded size (from the manifest's file sizes), which bounds the bytes in flight.

Page pruning hook: :func:`prune_ranges` is called once per fragment with the compiled filter;
it returns the row ranges of the fragment that may hold matching rows.  The default keeps the
whole fragment; a statistics-based pruner (zone maps, legacy page statistics) replaces it with
:func:`set_pruner` and may drop or split ranges (units never cross a returned range's edges).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Optional

import numpy as np

if TYPE_CHECKING:  # pragma: no cover
    from ..meta.context import DatasetContext
    from ..filter.compile import CompiledFilter
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


Pruner = Callable[["DatasetContext", int, int, int, "CompiledFilter"], Optional[list[tuple[int, int]]]]
_pruner: Pruner | None = None


def set_pruner(fn: Pruner | None) -> None:
    """Install (or with None remove) the page-pruning hook: ``fn(ctx, fragment_id, lo, hi,
    compiled_filter)`` returns the sub-ranges of ``[lo, hi)`` that may match (sorted,
    disjoint, half-open), or None for "cannot tell" (read everything)."""
    global _pruner
    _pruner = fn


def prune_ranges(ctx: "DatasetContext", fragment_id: int, lo: int, hi: int,
                 compiled: "CompiledFilter | None") -> list[tuple[int, int]]:
    """Row ranges of ``[lo, hi)`` of fragment ``fragment_id`` that may hold rows matching
    ``compiled`` (default: the whole range)."""
    if compiled is None or _pruner is None:
        return [(lo, hi)]
    got = _pruner(ctx, fragment_id, lo, hi, compiled)
    return [(lo, hi)] if got is None else [(int(a), int(b)) for a, b in got if b > a]


_FILE_BYTES: dict[str, np.ndarray] = {}  # per version (dataset uri | manifest path)


def fragment_bytes(ctx: "DatasetContext", index: "DatasetIndex") -> np.ndarray:
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
               target_bytes: int, max_rows: int, compiled: "CompiledFilter | None" = None,
               bounds: tuple[np.ndarray, np.ndarray] | None = None) -> ScanPlan:
    """Units of the fragments at index ``positions`` (in that order), vectorized: one unit per
    fragment unless a fragment holds more than ``target_bytes`` or ``max_rows`` rows.
    ``bounds``: per position, the physical rows ``[lo, hi)`` to read (default: all)."""
    phys = index.physical_rows[positions]
    if bounds is None:
        base = np.zeros(len(positions), dtype=np.int64)
        rows = phys
    else:
        base = np.asarray(bounds[0], dtype=np.int64)
        rows = np.asarray(bounds[1], dtype=np.int64) - base
    fbytes = fragment_bytes(ctx, index)[positions]
    bpr = np.where(phys > 0, fbytes / np.maximum(phys, 1), 0.0)
    by_bytes = np.where(bpr > 0, target_bytes / np.maximum(bpr, 1e-9), max_rows)
    step = np.clip(np.maximum(batch_size, by_bytes), 1, max_rows).astype(np.int64)
    if compiled is not None and _pruner is not None:
        return _plan_pruned(ctx, index, positions, base, rows, step, bpr, compiled)
    count = np.where(rows > 0, -(-rows // step), 0)
    pos = np.repeat(positions.astype(np.int64), count)
    starts = np.repeat(np.cumsum(count) - count, count)
    k = np.arange(len(pos), dtype=np.int64) - starts
    st = np.repeat(step, count)
    first = np.repeat(base, count)
    lo = first + k * st
    hi = np.minimum(lo + st, first + np.repeat(rows, count))
    est = ((hi - lo) * np.repeat(bpr, count)).astype(np.int64)
    return ScanPlan(pos, lo, hi, est)


def ramp_first_unit(plan: ScanPlan, first_rows: int) -> tuple[ScanPlan, int]:
    """``plan`` with its first unit cut into units of ``first_rows``, twice that, four times...
    (the first rows of a scan come back after a small read), and how many units the cut made
    (0: the first unit was small enough)."""
    if len(plan) == 0 or first_rows <= 0:
        return plan, 0
    lo0, hi0 = int(plan.lo[0]), int(plan.hi[0])
    if hi0 - lo0 <= 2 * first_rows:
        return plan, 0
    bounds, at, step = [lo0], lo0, first_rows
    while at + step < hi0:
        at += step
        bounds.append(at)
        step *= 2
    bounds.append(hi0)
    k = len(bounds) - 1
    lo = np.array(bounds[:-1], dtype=np.int64)
    hi = np.array(bounds[1:], dtype=np.int64)
    est = (int(plan.est_bytes[0]) * (hi - lo) // max(1, hi0 - lo0)).astype(np.int64)
    return ScanPlan(np.concatenate([np.full(k, plan.pos[0], dtype=np.int64), plan.pos[1:]]),
                    np.concatenate([lo, plan.lo[1:]]), np.concatenate([hi, plan.hi[1:]]),
                    np.concatenate([est, plan.est_bytes[1:]])), k


def _plan_pruned(ctx, index, positions, base, rows, step, bpr, compiled) -> ScanPlan:
    out: list[tuple[int, int, int, int]] = []
    for p, b0, n, s, b in zip(positions.tolist(), base.tolist(), rows.tolist(), step.tolist(), bpr.tolist()):
        for a, z in prune_ranges(ctx, int(index.fragment_ids[p]), b0, b0 + n, compiled):
            for lo in range(a, z, s):
                hi = min(z, lo + s)
                out.append((p, lo, hi, int((hi - lo) * b)))
    arr = np.array(out, dtype=np.int64).reshape(-1, 4)
    return ScanPlan(arr[:, 0], arr[:, 1], arr[:, 2], arr[:, 3])
