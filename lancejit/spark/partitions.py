"""Input partitions of a Spark read: fragments packed to fit the cluster, big fragments split.

As Spark's file sources do (``FilePartition.maxSplitBytes`` / ``getFilePartitions``), every
fragment costs its data files' bytes plus ``open_cost`` bytes; a partition holds at most

    max_split = min(max_partition_bytes, max(open_cost, total_cost / min_partitions))

so a small dataset is spread over ``min_partitions`` tasks and a big one cut into pieces of at
most ``max_partition_bytes``.  A fragment whose bytes exceed ``max_split`` (or whose rows exceed
``max_rows``) is split into near-equal physical row ranges; pieces are then packed in dataset
order (next fit: a partition is closed when the next piece would take it over ``max_split``
bytes or ``max_rows`` rows), so reading the partitions in order gives the dataset's rows in
scan order.  Rows ranges are half-open ``[lo, hi)``; bytes are the manifest's file sizes
(estimated from the rows when a writer did not record them).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Sequence

import numpy as np

#: Spark's ``spark.sql.files.maxPartitionBytes`` default.
DEFAULT_MAX_PARTITION_BYTES = 128 * 1024 * 1024
#: What opening one fragment costs, in bytes of reading (Spark's file sources use 4 MiB per
#: file; lancejit opens a partition's fragments in one batch, so a fragment costs far less).
DEFAULT_OPEN_COST_BYTES = 64 * 1024
#: Bytes per row assumed for fragments whose data files have no recorded size and no
#: fragment of the version to learn from.
FALLBACK_ROW_BYTES = 64


def default_min_partitions() -> int:
    """The cores this process may run on (the planning worker runs beside the driver; pass the
    ``minPartitionNum`` option when the executors have more cores in total)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # pragma: no cover - platforms without affinity
        return max(1, os.cpu_count() or 1)


@dataclass(frozen=True, slots=True)
class Piece:
    """Physical rows ``[lo, hi)`` of fragment ``fragment_id`` (``whole``: all of it)."""

    fragment_id: int
    lo: int
    hi: int
    whole: bool


@dataclass(frozen=True, slots=True)
class PartitionPlan:
    """Partitions as lists of pieces, with the numbers that made them."""

    partitions: tuple[tuple[Piece, ...], ...]
    max_split_bytes: int
    total_bytes: int


def estimate_bytes(file_bytes: np.ndarray, physical_rows: np.ndarray) -> np.ndarray:
    """Per fragment, its data files' bytes; fragments without recorded sizes get the version's
    mean bytes per row (``FALLBACK_ROW_BYTES`` when no fragment has a size)."""
    fb = np.asarray(file_bytes, dtype=np.int64)
    rows = np.asarray(physical_rows, dtype=np.int64)
    known = fb > 0
    if known.all():
        return fb
    per_row = fb[known].sum() / max(1, rows[known].sum()) if known.any() else FALLBACK_ROW_BYTES
    return np.where(known, fb, (rows * per_row).astype(np.int64))


def plan_partitions(
    fragment_ids: Sequence[int] | np.ndarray,
    physical_rows: Sequence[int] | np.ndarray,
    fragment_bytes: Sequence[int] | np.ndarray,
    *,
    max_partition_bytes: int = DEFAULT_MAX_PARTITION_BYTES,
    open_cost: int = DEFAULT_OPEN_COST_BYTES,
    min_partitions: int | None = None,
    max_rows: int | None = None,
) -> PartitionPlan:
    """Partitions of the fragments (see the module docstring); fragments without rows are
    left out."""
    ids = np.asarray(fragment_ids, dtype=np.int64)
    rows = np.asarray(physical_rows, dtype=np.int64)
    fbytes = np.asarray(fragment_bytes, dtype=np.int64)
    keep = rows > 0
    ids, rows, fbytes = ids[keep], rows[keep], fbytes[keep]
    parts = max(1, min_partitions if min_partitions is not None else default_min_partitions())
    total = int(fbytes.sum()) + open_cost * len(ids)
    max_split = int(min(max_partition_bytes, max(open_cost, total // parts)))
    max_split = max(1, max_split)
    # pieces per fragment: by bytes, and by rows when capped
    n_split = np.maximum(1, -(-fbytes // max_split))
    if max_rows is not None:
        n_split = np.maximum(n_split, -(-rows // max_rows))
    n_split = np.minimum(n_split, rows)
    out: list[tuple[Piece, ...]] = []
    current: list[Piece] = []
    cur_bytes = 0
    cur_rows = 0
    for fid, n, b, k in zip(ids.tolist(), rows.tolist(), fbytes.tolist(), n_split.tolist()):
        bounds = [n * i // k for i in range(k + 1)]
        for lo, hi in zip(bounds, bounds[1:]):
            pb = b * (hi - lo) // n
            pr = hi - lo
            if current and (cur_bytes + pb > max_split or (max_rows is not None and cur_rows + pr > max_rows)):
                out.append(tuple(current))
                current, cur_bytes, cur_rows = [], 0, 0
            current.append(Piece(fid, lo, hi, k == 1))
            cur_bytes += pb + open_cost
            cur_rows += pr
    if current:
        out.append(tuple(current))
    return PartitionPlan(tuple(out), max_split, total)


__all__ = ["DEFAULT_MAX_PARTITION_BYTES", "DEFAULT_OPEN_COST_BYTES", "PartitionPlan", "Piece",
           "default_min_partitions", "estimate_bytes", "plan_partitions"]
