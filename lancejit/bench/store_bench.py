"""``lancejit bench store URI``: what a store gives through lancejit's own scheduler.

The benchmark writes one random test object under ``URI`` (a directory or prefix), then for
every request size and concurrency level issues ``requests`` random, size-aligned reads, each
one ``FileScheduler.read_ranges`` call of one range, from ``concurrency`` concurrent tasks on
lancejit's I/O loop.  It reports per-request latency percentiles (exact, from the samples),
IOPS (requests / wall seconds) and throughput (bytes / wall seconds); the object is deleted at
the end, also on errors.

Requests go through the store's IOPS budget (``io_parallelism``), so concurrency above it
queues inside lancejit: that is what a take would see.  Pass ``io_parallelism`` as a storage
option to change it.  Sizes are bytes, times seconds; byte ranges are half-open.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np

from lancejit.core.errors import InvalidInputError

#: Default request sizes: two sector-sized random reads and one page-sized read.
DEFAULT_SIZES = (4 << 10, 64 << 10, 8 << 20)
DEFAULT_CONCURRENCY = (1, 4, 16, 64)
#: Requests at or above this size use ``large_requests`` per point instead of ``requests``.
LARGE_REQUEST = 1 << 20


@dataclass(frozen=True, slots=True)
class StorePoint:
    """One (request size, concurrency) measurement.

    ``size``: bytes per request; ``requests``: requests issued; ``seconds``: wall time of all of
    them; ``p50``/``p90``/``p99``/``mean``: per-request latency (seconds, from issue to data);
    ``store_requests``: physical requests the store's counters saw.
    """

    size: int
    concurrency: int
    requests: int
    seconds: float
    p50: float
    p90: float
    p99: float
    mean: float
    store_requests: int

    @property
    def iops(self) -> float:
        return self.requests / self.seconds if self.seconds > 0 else float("nan")

    @property
    def throughput(self) -> float:
        """Bytes per second."""
        return self.requests * self.size / self.seconds if self.seconds > 0 else float("nan")

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["iops"] = self.iops
        d["throughput_bytes_per_s"] = self.throughput
        return d


@dataclass(slots=True)
class StoreResult:
    """All points of one ``bench store`` run (``kind`` is always ``"store"``)."""

    uri: str
    scheme: str
    object_size: int
    io_parallelism: int
    block_size: int
    max_request_size: int
    points: list[StorePoint] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": "store",
            "uri": self.uri,
            "scheme": self.scheme,
            "object_size": self.object_size,
            "io_parallelism": self.io_parallelism,
            "block_size": self.block_size,
            "max_request_size": self.max_request_size,
            "points": [p.to_dict() for p in self.points],
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "StoreResult":
        if d.get("kind") != "store":
            raise InvalidInputError("not a 'bench store' JSON report (kind != 'store')")
        names = {f.name for f in dataclasses.fields(StorePoint)}
        points = [StorePoint(**{k: v for k, v in p.items() if k in names}) for p in d["points"]]
        return cls(d["uri"], d["scheme"], d["object_size"], d["io_parallelism"], d["block_size"],
                   d["max_request_size"], points)

    def sizes(self) -> list[int]:
        return sorted({p.size for p in self.points})

    def table(self) -> str:
        from lancejit.bench.report import format_table, human_bytes, human_rate, human_seconds

        rows = [
            [human_bytes(p.size), p.concurrency, p.requests, human_seconds(p.p50), human_seconds(p.p90),
             human_seconds(p.p99), f"{p.iops:,.0f}", human_rate(p.throughput)]
            for p in self.points
        ]
        title = (f"store {self.uri} ({self.scheme}; io_parallelism {self.io_parallelism}, "
                 f"test object {human_bytes(self.object_size)})")
        return format_table(["size", "conc", "reqs", "p50", "p90", "p99", "IOPS", "throughput"], rows, title)

    def plot(self, path: str) -> None:
        """PNG: latency (p50 solid, p99 dashed) against concurrency per size; throughput
        against request size per concurrency."""
        from lancejit.bench.report import human_bytes, pyplot, save_figure

        plt = pyplot()
        fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4.2))
        for size in self.sizes():
            pts = sorted((p for p in self.points if p.size == size), key=lambda p: p.concurrency)
            xs = [p.concurrency for p in pts]
            line = ax1.plot(xs, [p.p50 * 1e3 for p in pts], marker="o", label=f"{human_bytes(size)} p50")[0]
            ax1.plot(xs, [p.p99 * 1e3 for p in pts], marker="x", linestyle="--", color=line.get_color(),
                     label=f"{human_bytes(size)} p99")
        ax1.set_xscale("log", base=2)
        concs = sorted({p.concurrency for p in self.points})
        ax1.set_xticks(concs, [str(c) for c in concs])
        ax1.set_yscale("log")
        ax1.set_xlabel("concurrent requests")
        ax1.set_ylabel("latency per request (ms)")
        ax1.set_title("latency vs concurrency")
        ax1.grid(True, which="both", alpha=0.3)
        ax1.legend(fontsize=7)
        for conc in sorted({p.concurrency for p in self.points}):
            pts = sorted((p for p in self.points if p.concurrency == conc), key=lambda p: p.size)
            ax2.plot([p.size for p in pts], [p.throughput / (1 << 20) for p in pts], marker="o",
                     label=f"concurrency {conc}")
        ax2.set_xscale("log", base=2)
        ax2.set_yscale("log")
        ticks = self.sizes()
        ax2.set_xticks(ticks, [human_bytes(s) for s in ticks])
        ax2.set_xlabel("request size")
        ax2.set_ylabel("throughput (MiB/s)")
        ax2.set_title("throughput vs request size")
        ax2.grid(True, which="both", alpha=0.3)
        ax2.legend(fontsize=7)
        fig.suptitle(f"lancejit bench store: {self.uri}", fontsize=9)
        save_figure(fig, path)


def _percentiles(samples: Sequence[float]) -> tuple[float, float, float, float]:
    arr = np.asarray(samples, dtype=np.float64)
    p50, p90, p99 = np.percentile(arr, [50, 90, 99])
    return float(p50), float(p90), float(p99), float(arr.mean())


async def _one_point(sched: Any, stats: Any, size: int, conc: int, n: int, object_size: int,
                     rng: np.random.Generator, tick: Callable[[int], None]) -> StorePoint:
    slots = max(1, (object_size - size) // size + 1)
    offsets = rng.integers(0, slots, n) * size
    latencies = [0.0] * n
    counter = iter(range(n))
    before = stats.snapshot()

    async def worker() -> None:
        for i in counter:
            start = int(offsets[i])
            t0 = time.perf_counter()
            (buf,) = await sched.read_ranges([(start, start + size)])
            latencies[i] = time.perf_counter() - t0
            if len(buf) != size:  # pragma: no cover - the store's own checks catch this
                raise InvalidInputError(f"short read: {len(buf)} of {size} bytes")
            tick(1)

    t0 = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(min(conc, n))))
    seconds = time.perf_counter() - t0
    p50, p90, p99, mean = _percentiles(latencies)
    got = stats.snapshot() - before
    return StorePoint(size, conc, n, seconds, p50, p90, p99, mean, got.read_iops)


def plan_points(sizes: Sequence[int], concurrency: Sequence[int], requests: int,
                large_requests: int) -> list[tuple[int, int, int]]:
    """``(size, concurrency, requests)`` of every point, in run order."""
    out = []
    for size in sizes:
        n = large_requests if size >= LARGE_REQUEST else requests
        for conc in concurrency:
            out.append((int(size), int(conc), max(1, int(n))))
    return out


async def bench_store_async(
    uri: str,
    storage_options: dict[str, Any] | None = None,
    *,
    sizes: Sequence[int] = DEFAULT_SIZES,
    concurrency: Sequence[int] = DEFAULT_CONCURRENCY,
    requests: int = 256,
    large_requests: int = 16,
    object_size: int = 32 << 20,
    seed: int = 0,
    on_progress: Callable[[int], None] | None = None,
) -> StoreResult:
    """Run the store benchmark under ``uri`` (see the module docstring).

    ``object_size`` (bytes) is raised to twice the largest request size when smaller.
    """
    from lancejit.io import FileScheduler, IOStats, join_path, open_store

    if not sizes or not concurrency:
        raise InvalidInputError("need at least one size and one concurrency level")
    if any(int(s) <= 0 for s in sizes) or any(int(c) <= 0 for c in concurrency):
        raise InvalidInputError("sizes and concurrency levels must be positive")
    store, base = open_store(uri, storage_options)
    object_size = max(int(object_size), 2 * max(int(s) for s in sizes))
    path = join_path(base, f"_lancejit_bench_{uuid.uuid4().hex[:12]}.bin")
    rng = np.random.default_rng(seed)
    tick = on_progress or (lambda n: None)
    cfg = store.config
    result = StoreResult(store.uri(base), store.scheme, object_size, cfg.io_parallelism,
                         cfg.block_size, cfg.max_request_size)
    await store.put(path, rng.bytes(object_size))
    try:
        stats = IOStats()
        sched = FileScheduler(store, path, stats=stats, size=object_size)
        await sched.read_ranges([(0, min(4096, object_size))])  # warm sessions (not timed)
        for size, conc, n in plan_points(sizes, concurrency, requests, large_requests):
            result.points.append(await _one_point(sched, stats, size, conc, n, object_size, rng, tick))
    finally:
        await store.delete(path)
    return result


def bench_store(uri: str, storage_options: dict[str, Any] | None = None, *, show_progress: bool = False,
                **kwargs: Any) -> StoreResult:
    """Synchronous :func:`bench_store_async` (``show_progress``: a tqdm bar on stderr)."""
    from lancejit.bench.report import progress
    from lancejit.io.sync import run_sync

    points = plan_points(kwargs.get("sizes", DEFAULT_SIZES), kwargs.get("concurrency", DEFAULT_CONCURRENCY),
                         kwargs.get("requests", 256), kwargs.get("large_requests", 16))
    with progress(sum(n for _, _, n in points), "bench store", show_progress, unit="req") as bar:
        return run_sync(bench_store_async(uri, storage_options, on_progress=bar.update, **kwargs))


__all__ = ["DEFAULT_CONCURRENCY", "DEFAULT_SIZES", "StorePoint", "StoreResult", "bench_store",
           "bench_store_async", "plan_points"]
