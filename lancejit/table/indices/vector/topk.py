"""Top-k state of a vector search: one set of bounded heaps per worker (see :mod:`.kernels`), merged
into sorted per-query results at the end, and the worker pool the kernels run on.

Kernels release the GIL, so blocks of rows are scored by :data:`WORKERS` threads at once, each
with its own heaps (no locking), while the event loop keeps reading the next blocks.
"""

from __future__ import annotations

import asyncio
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

#: Threads scoring blocks (one per core).
WORKERS = max(1, os.cpu_count() or 1)
#: Rows below which a block is scored by one thread.
SPLIT_ROWS = 16384

_POOL: ThreadPoolExecutor | None = None


def pool() -> ThreadPoolExecutor:
    """The process's scoring threads (created on first use)."""
    global _POOL
    if _POOL is None:
        _POOL = ThreadPoolExecutor(max_workers=WORKERS, thread_name_prefix="lancejit-vector")
    return _POOL


@dataclass(slots=True)
class Heaps:
    """Per-query heaps of one worker: ``d`` float32 ``(nq, k)``, ``ids`` uint64 ``(nq, k)``,
    ``n`` int64 ``(nq,)`` entries used."""

    d: np.ndarray
    ids: np.ndarray
    n: np.ndarray

    @classmethod
    def empty(cls, nq: int, k: int) -> "Heaps":
        return cls(np.empty((nq, k), np.float32), np.empty((nq, k), np.uint64), np.zeros(nq, np.int64))

    def query(self, j: int) -> "Heaps":
        """The heap of query ``j`` as a one-query heap set (views)."""
        return Heaps(self.d[j:j + 1], self.ids[j:j + 1], self.n[j:j + 1])


@dataclass(frozen=True, slots=True)
class Result:
    """Sorted results of one query: ``distances`` float32 and ``row_ids`` uint64, nearest first
    (ties by row id)."""

    distances: np.ndarray
    row_ids: np.ndarray


class TopK:
    """Heaps for ``nq`` queries and ``k`` results, one set per worker."""

    def __init__(self, nq: int, k: int, workers: int = WORKERS) -> None:
        self.nq = nq
        self.k = k
        self.heaps = [Heaps.empty(nq, k) for _ in range(max(1, workers))]

    async def run(self, n: int, fn: Callable[[Heaps, int, int], Any]) -> None:
        """Call ``fn(heaps, lo, hi)`` over ``[0, n)`` cut into one slice per worker, in the pool
        (a small ``n``: one call)."""
        parts = len(self.heaps) if n >= SPLIT_ROWS * 2 else 1
        bounds = np.linspace(0, n, parts + 1).astype(np.int64)
        loop = asyncio.get_running_loop()
        futs = [loop.run_in_executor(pool(), fn, self.heaps[i], int(bounds[i]), int(bounds[i + 1]))
                for i in range(parts) if bounds[i + 1] > bounds[i]]
        if futs:
            await asyncio.gather(*futs)

    def results(self) -> list[Result]:
        """Every query's merged, sorted results."""
        return merge([(h.d, h.ids, h.n) for h in self.heaps], self.nq, self.k)


def merge(parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]], nq: int, k: int) -> list[Result]:
    """Merge heap sets ``(d, ids, n)`` into each query's ``k`` best, sorted by distance then id."""
    out = []
    for j in range(nq):
        d = np.concatenate([p[0][j, : p[2][j]] for p in parts])
        ids = np.concatenate([p[1][j, : p[2][j]] for p in parts])
        order = np.lexsort((ids, d))[:k]
        out.append(Result(d[order], ids[order]))
    return out


__all__ = ["Heaps", "Result", "SPLIT_ROWS", "TopK", "WORKERS", "merge", "pool"]
