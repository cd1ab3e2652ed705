"""A latency model of a store, fitted to ``bench store`` figures, that predicts a read plan.

Per measured concurrency level ``c`` the model fits ``latency(size) = base_c + size / bw_c``
(least squares on the p50 latency of each request size at that concurrency; ``base_c >= 0``,
``bw_c > 0``).  A *step* of a plan (requests issued together, e.g. one ``read_ranges`` call
per column, all columns at once) with ``n`` requests runs at concurrency
``c = min(n, io_parallelism)`` and is predicted to take

    max(max_i latency_c(size_i), sum_i latency_c(size_i) / c)

(the slowest single request, or the requests spread over ``c`` lanes); the steps of a plan run
one after the other, so their times add.  ``latency_c`` uses the measured concurrency level
closest to ``c`` on a log scale.  Sizes are bytes, times seconds.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from lancejit.core.errors import InvalidInputError


@dataclass(frozen=True, slots=True)
class LevelFit:
    """``latency(size) = base + size / bandwidth`` at one concurrency level (seconds, bytes/s)."""

    concurrency: int
    base: float
    bandwidth: float

    def latency(self, size: int) -> float:
        return self.base + size / self.bandwidth


def _fit(sizes: Sequence[int], lats: Sequence[float]) -> tuple[float, float]:
    x = np.asarray(sizes, dtype=np.float64)
    y = np.asarray(lats, dtype=np.float64)
    if len(x) == 1 or np.ptp(x) == 0:
        # one size: split its latency evenly between base latency and transfer time
        half = max(float(y.mean()), 1e-9) / 2
        return half, float(max(x.mean(), 1.0) / half)
    slope, base = np.polyfit(x, y, 1)
    if slope <= 0:
        slope = 1e-12
    if base < 0:  # force through a non-negative intercept: refit slope with base 0
        base = 0.0
        slope = float(np.dot(x, y) / np.dot(x, x))
    return float(base), float(1.0 / slope)


@dataclass(frozen=True, slots=True)
class LatencyModel:
    """Fitted per-concurrency levels plus the store's IOPS budget (``io_parallelism``)."""

    levels: tuple[LevelFit, ...]
    io_parallelism: int
    source: str = ""

    @classmethod
    def from_store_result(cls, result: Any) -> "LatencyModel":
        """Fit a :class:`~lancejit.bench.store_bench.StoreResult` (or its ``to_dict()``)."""
        if isinstance(result, dict):
            from lancejit.bench.store_bench import StoreResult

            result = StoreResult.from_dict(result)
        levels = []
        for conc in sorted({p.concurrency for p in result.points}):
            pts = [p for p in result.points if p.concurrency == conc]
            base, bw = _fit([p.size for p in pts], [p.p50 for p in pts])
            levels.append(LevelFit(conc, base, bw))
        if not levels:
            raise InvalidInputError("store result has no points to fit")
        return cls(tuple(levels), int(result.io_parallelism), result.uri)

    @classmethod
    def load(cls, path: str) -> "LatencyModel":
        """From a JSON file: a ``bench store --json`` report or a saved :meth:`to_dict`."""
        with open(path, encoding="utf-8") as f:
            d = json.load(f)
        if d.get("kind") == "store":
            return cls.from_store_result(d)
        if d.get("kind") == "model":
            return cls.from_dict(d)
        if isinstance(d.get("model"), dict):  # a bench dataset report embeds its model
            return cls.from_dict(d["model"])
        raise InvalidInputError(f"{path}: neither a 'bench store' report nor a latency model")

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": "model",
            "source": self.source,
            "io_parallelism": self.io_parallelism,
            "levels": [{"concurrency": l.concurrency, "base_s": l.base, "bandwidth_bytes_per_s": l.bandwidth}
                       for l in self.levels],
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "LatencyModel":
        levels = tuple(LevelFit(int(l["concurrency"]), float(l["base_s"]), float(l["bandwidth_bytes_per_s"]))
                       for l in d["levels"])
        return cls(levels, int(d["io_parallelism"]), str(d.get("source", "")))

    def level(self, concurrency: int) -> LevelFit:
        """The fitted level closest to ``concurrency`` (log scale)."""
        c = max(1, int(concurrency))
        return min(self.levels, key=lambda l: abs(math.log(l.concurrency) - math.log(c)))

    def step_seconds(self, request_sizes: Sequence[int]) -> float:
        """Predicted seconds for requests of ``request_sizes`` bytes issued together."""
        sizes = [int(s) for s in request_sizes if s > 0]
        if not sizes:
            return 0.0
        c = max(1, min(len(sizes), self.io_parallelism))
        fit = self.level(c)
        lats = [fit.latency(s) for s in sizes]
        return max(max(lats), sum(lats) / c)

    def predict(self, steps: Sequence[Sequence[int]]) -> float:
        """Predicted seconds of a plan: ``steps[k]`` lists the request sizes of step ``k``."""
        return sum(self.step_seconds(s) for s in steps)

    def describe(self) -> str:
        parts = [f"c={l.concurrency}: {l.base * 1e3:.3f} ms + size / {l.bandwidth / (1 << 20):.0f} MiB/s"
                 for l in self.levels]
        return f"latency model (io_parallelism {self.io_parallelism}): " + "; ".join(parts)


async def calibrate_async(uri: str, storage_options: dict[str, Any] | None = None, *,
                          requests: int = 32, object_size: int = 4 << 20) -> LatencyModel:
    """A quick model from a small ``bench store`` run under ``uri`` (sizes 4 KiB, 64 KiB, 1 MiB;
    concurrency 1, 8, 64)."""
    from lancejit.bench.store_bench import bench_store_async

    result = await bench_store_async(uri, storage_options, sizes=(4 << 10, 64 << 10, 1 << 20),
                                     concurrency=(1, 8, 64), requests=requests,
                                     large_requests=max(4, requests // 4), object_size=object_size)
    return LatencyModel.from_store_result(result)


__all__ = ["LatencyModel", "LevelFit", "calibrate_async"]
