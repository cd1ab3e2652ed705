"""FileScheduler against the memory and local stores: exact bytes, request counts, budgets,
priorities and cancellation.  Budgets are checked with store subclasses that wrap the real
stores and record what is in flight."""

from __future__ import annotations

import asyncio
import os
import threading

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lancejit.core.config import IOConfig
from lancejit.core.errors import CorruptFileError, NotFoundError
from lancejit.core.ranges import RangeReader
from lancejit.io import FileScheduler, IOStats, LocalStore, MemoryStore, ScanScheduler, io_queue, plan_reads, run_sync

SIZE = 50_000
DATA = np.random.default_rng(7).integers(0, 256, SIZE, dtype=np.uint8).tobytes()


def cfg(block: int = 64, max_req: int = 1_000, par: int = 4, max_bytes: int = 1 << 30) -> IOConfig:
    return IOConfig(block_size=block, max_request_size=max_req, io_parallelism=par, max_bytes_in_flight=max_bytes)


class Instrumented:
    """Mixin: records concurrency of ``read_ranges`` (slots: 1 per call if serial else 1 per range)."""

    def _init_probe(self) -> None:
        self.in_flight = 0
        self.peak = 0
        self.bytes_in_flight = 0
        self.peak_bytes = 0
        self.calls: list[list[tuple[int, int]]] = []
        self.gate: asyncio.Event | None = None

    async def read_ranges(self, path, ranges):
        ranges = list(ranges)
        slots = 1 if self.serial_batches else len(ranges)
        nbytes = sum(e - s for s, e in ranges)
        self.calls.append(ranges)
        self.in_flight += slots
        self.bytes_in_flight += nbytes
        self.peak = max(self.peak, self.in_flight)
        self.peak_bytes = max(self.peak_bytes, self.bytes_in_flight)
        try:
            if self.gate is not None:
                await self.gate.wait()
            for _ in range(3):  # let other requests interleave
                await asyncio.sleep(0)
            return await super().read_ranges(path, ranges)
        finally:
            self.in_flight -= slots
            self.bytes_in_flight -= nbytes


class ProbeMemory(Instrumented, MemoryStore):
    def __init__(self, config: IOConfig, *, serial: bool = True) -> None:
        MemoryStore.__init__(self, "sched-test", config)  # same objects, fresh stats/budgets
        self.serial_batches = serial
        self._init_probe()


class ProbeLocal(Instrumented, LocalStore):
    def __init__(self, config: IOConfig) -> None:
        LocalStore.__init__(self, config)
        self._init_probe()


@pytest.fixture(scope="module")
def local_file(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("sched") / "data.bin")
    with open(path, "wb") as f:
        f.write(DATA)
    return path


def make_store(kind: str, config: IOConfig, local_path: str):
    if kind == "local":
        return ProbeLocal(config), local_path
    store = ProbeMemory(config, serial=(kind == "memory"))
    run_sync(store.put("data.bin", DATA))
    return store, "data.bin"


@st.composite
def batches(draw):
    n = draw(st.integers(1, 25))
    out = []
    for _ in range(n):
        start = draw(st.integers(0, SIZE))
        length = draw(st.integers(0, min(4_000, SIZE - start)))
        out.append((start, start + length))
    return out


KINDS = ["memory", "memory-concurrent", "local"]


@pytest.mark.parametrize("kind", KINDS)
@settings(max_examples=60, deadline=None)
@given(ranges=batches(), block=st.integers(0, 3_000), max_req=st.integers(1, 5_000), priority=st.integers(0, 10))
def test_bytes_and_request_counts(kind, local_file, ranges, block, max_req, priority):
    store, path = make_store(kind, cfg(block, max_req, par=3), local_file)
    extra = IOStats()
    sched = FileScheduler(store, path, stats=extra)
    assert isinstance(sched, RangeReader)
    before = store.stats.snapshot()
    out = run_sync(sched.read_ranges(ranges, priority=priority))
    delta = store.stats.snapshot() - before
    assert [bytes(b) for b in out] == [DATA[s:e] for s, e in ranges]
    plan = plan_reads(ranges, block, max_req)
    assert delta.read_iops == plan.num_requests
    assert delta.read_bytes == plan.bytes_read
    assert extra.snapshot().read_iops == plan.num_requests
    assert extra.snapshot().read_bytes == plan.bytes_read
    assert store.peak <= 3


@pytest.mark.parametrize("kind", KINDS)
async def test_budgets_hold_under_concurrent_batches(kind, local_file):
    """20 concurrent batches from 3 schedulers of one store: IOPS and bytes stay within budget."""
    max_bytes = 1_500
    store, path = make_store(kind, cfg(block=16, max_req=700, par=3, max_bytes=max_bytes), local_file)
    scheds = [FileScheduler(store, path) for _ in range(3)]
    rng = np.random.default_rng(3)
    work = []
    for i in range(20):
        starts = rng.integers(0, SIZE - 600, 8)
        ranges = [(int(s), int(s) + int(n)) for s, n in zip(starts, rng.integers(0, 600, 8))]
        while plan_reads(ranges, 16, 700).bytes_read > max_bytes:
            ranges.pop()
        assert ranges
        work.append((scheds[i % 3], ranges, int(rng.integers(0, 5))))
    outs = await asyncio.gather(*(s.read_ranges(r, priority=p) for s, r, p in work))
    for (_s, ranges, _p), out in zip(work, outs):
        assert [bytes(b) for b in out] == [DATA[a:b] for a, b in ranges]
    assert 1 <= store.peak <= 3
    assert store.peak_bytes <= max_bytes
    queue = io_queue(store)
    assert queue.iops.peak_in_use <= 3 and queue.bytes.peak_in_use <= max_bytes
    assert queue.idle


async def test_oversized_batch_runs_alone():
    store, path = make_store("memory", cfg(block=0, max_req=100, par=2, max_bytes=500), "")
    sched = FileScheduler(store, path)
    big = [(0, 2_000)]
    small = [(3_000, 3_100)]
    a, b = await asyncio.gather(sched.read_ranges(big), sched.read_ranges(small))
    assert bytes(a[0]) == DATA[0:2_000] and bytes(b[0]) == DATA[3_000:3_100]
    assert io_queue(store).bytes.peak_in_use == 2_000  # alone: the small batch waited
    assert io_queue(store).idle


async def test_lower_priority_value_served_first():
    store, path = make_store("memory-concurrent", cfg(block=0, max_req=1_000, par=1), "")
    sched = FileScheduler(store, path)
    store.gate = asyncio.Event()
    blocker = asyncio.ensure_future(sched.read_ranges([(0, 10)], priority=100))
    while not store.calls:
        await asyncio.sleep(0)
    prios = [5, 1, 3, 0, 2, 4]
    tasks = [asyncio.ensure_future(sched.read_ranges([(1_000 * (p + 1), 1_000 * (p + 1) + 10)], priority=p))
             for p in prios]
    for _ in range(10):
        await asyncio.sleep(0)
    assert len(store.calls) == 1  # everything else queued behind the single slot
    store.gate.set()
    await asyncio.gather(blocker, *tasks)
    order = [call[0][0] // 1_000 - 1 for call in store.calls[1:]]
    assert order == sorted(prios)


@pytest.mark.parametrize("kind", ["memory", "memory-concurrent", "local"])
async def test_cancellation_leaves_nothing_running(kind, local_file):
    store, path = make_store(kind, cfg(block=0, max_req=100, par=2, max_bytes=1 << 20), local_file)
    sched = FileScheduler(store, path)
    store.gate = asyncio.Event()
    tasks_before = asyncio.all_tasks()
    ranges = [(i * 1_000, i * 1_000 + 300) for i in range(10)]  # 30 physical reads
    task = asyncio.ensure_future(sched.read_ranges(ranges))
    while store.in_flight < 2 if kind != "memory" else not store.calls:
        await asyncio.sleep(0)
    queue = io_queue(store)
    assert queue.iops.in_use >= 1
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert store.in_flight == 0
    assert queue.idle
    leftover = {t for t in asyncio.all_tasks() - tasks_before if not t.done()}
    assert leftover == set()
    # the store and scheduler still work afterwards
    store.gate = None
    out = await sched.read_ranges(ranges[:3])
    assert [bytes(b) for b in out] == [DATA[a:b] for a, b in ranges[:3]]


async def test_local_cancellation_waits_for_worker_thread(tmp_path):
    """A cancelled local read returns only after its worker thread stopped."""
    store = LocalStore(cfg(par=1))
    started = threading.Event()
    finished = threading.Event()

    def work(cancel: threading.Event) -> None:
        started.set()
        cancel.wait(30)
        finished.set()

    task = asyncio.ensure_future(store._run(str(tmp_path), work))
    while not started.is_set():
        await asyncio.sleep(0.001)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert finished.is_set()


async def test_read_tail_and_size(local_file):
    store = LocalStore(cfg())
    sched = FileScheduler(store, local_file)
    before = store.stats.snapshot()
    size, tail = await sched.read_tail(4_096)
    assert size == SIZE and bytes(tail) == DATA[-4_096:]
    assert (store.stats.snapshot() - before).read_iops == 1
    assert await sched.size() == SIZE
    assert (store.stats.snapshot() - before).num_requests == 1  # size cached by the tail read
    with pytest.raises(CorruptFileError):  # known size: rejected before any request
        await sched.read_ranges([(SIZE - 10, SIZE + 1)])
    assert (store.stats.snapshot() - before).num_requests == 1


async def test_zero_length_ranges_cost_nothing():
    store, path = make_store("memory", cfg(), "")
    sched = FileScheduler(store, path)
    before = store.stats.snapshot()
    out = await sched.read_ranges([(5, 5), (0, 0)])
    assert [bytes(b) for b in out] == [b"", b""]
    assert (store.stats.snapshot() - before).num_requests == 0


async def test_errors_propagate_and_release_budget(tmp_path):
    store = LocalStore(cfg(par=2))
    sched = FileScheduler(store, str(tmp_path / "missing.bin"))
    with pytest.raises(NotFoundError):
        await sched.read_ranges([(0, 10), (5_000, 5_010)])
    assert io_queue(store).idle
    path = str(tmp_path / "short.bin")
    with open(path, "wb") as f:
        f.write(b"x" * 100)
    with pytest.raises(CorruptFileError):
        await FileScheduler(store, path).read_ranges([(0, 10), (5_000, 5_010)])
    assert io_queue(store).idle


async def test_scan_scheduler_shares_stats(local_file):
    store = LocalStore(cfg(block=0))
    scan = ScanScheduler(store)
    a, b = scan.open_file(local_file), scan.open_file(local_file)
    assert (a.base_priority, b.base_priority) == (0, 1)
    await a.read_ranges([(0, 10)])
    await b.read_ranges([(100, 110), (200, 210)])
    assert scan.stats.snapshot().read_iops == 3


def test_shared_budget_per_store(local_file):
    store = LocalStore(cfg())
    a, b = FileScheduler(store, local_file), FileScheduler(store, local_file)

    async def queues():
        return io_queue(a.store) is io_queue(b.store)

    assert run_sync(queues())
    assert os.path.exists(local_file)
