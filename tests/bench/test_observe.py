"""``lancejit.bench.observe``: the probes see what the scheduler is handed and plan it as the
scheduler does (checked against the store's counters), ranges served from memory plan no
request, and labelled step plans pass their values through unchanged."""

from __future__ import annotations

import numpy as np
import pytest

from lancejit.bench.observe import BatchRecorder, labelled_steps, probe_chain
from lancejit.encoding.v20.steps import gather
from lancejit.io import FileScheduler, IOStats, open_store, run_sync
from lancejit.io.coalesce import CoalescingReader
from lancejit.io.planner import plan_reads

RANGE_SETS = [
    [(0, 10)],
    [(0, 10), (20, 30), (100_000, 100_100)],
    [(5, 6), (5, 6), (0, 0), (70_000, 90_000), (300, 200_000)],
]


@pytest.fixture
def blob(tmp_path):
    data = np.random.default_rng(1).integers(0, 256, 250_000, dtype=np.uint8).tobytes()
    path = tmp_path / "blob.bin"
    path.write_bytes(data)
    return str(path), data


@pytest.mark.parametrize("ranges", RANGE_SETS)
def test_scheduler_probe_plans_what_the_counters_measure(blob, ranges):
    path, data = blob
    store, key = open_store(path)
    sched = FileScheduler(store, key, stats=IOStats())
    recorder = BatchRecorder(probe_chain(sched))
    assert probe_chain(sched).inner is sched

    async def go():
        before = sched.stats.snapshot()
        bufs = await recorder.read_ranges(ranges)
        return bufs, sched.stats.snapshot() - before

    bufs, delta = run_sync(go())
    assert [bytes(b) for b in bufs] == [data[s:e] for s, e in ranges]
    (batch,) = recorder.batches
    expected = plan_reads(ranges, sched.config.block_size, sched.config.max_request_size)
    assert batch.requests == tuple(zip(expected.read_starts, expected.read_ends))
    assert batch.reached_scheduler and batch.ranges == tuple(ranges)
    assert len(batch.requests) == delta.read_iops
    assert sum(e - s for s, e in batch.requests) == delta.read_bytes


class HeldInMemory:
    """A wrapper of a scheduler (``inner``) serving every read from bytes it holds, as the
    dataset layer does for small data files (the dataset tests cover the real one)."""

    def __init__(self, inner, data: bytes) -> None:
        self.inner = inner
        self._data = memoryview(data)

    def __getattr__(self, name):
        if name == "inner":
            raise AttributeError(name)
        return getattr(self.inner, name)

    async def read_ranges(self, ranges, *, priority=0):
        return [self._data[s:e] for s, e in ranges]


def test_wrapper_serving_from_memory_plans_no_request(blob):
    path, data = blob
    store, key = open_store(path)
    sched = FileScheduler(store, key, stats=IOStats())
    whole = HeldInMemory(sched, data)
    probed = probe_chain(whole)
    assert probed is not whole and whole.inner is sched  # the original chain is untouched
    recorder = BatchRecorder(probed)
    before = sched.stats.snapshot()
    bufs = run_sync(recorder.read_ranges([(0, 4), (1000, 2000)]))
    assert [bytes(b) for b in bufs] == [data[0:4], data[1000:2000]]
    (batch,) = recorder.batches
    assert batch.requests == () and not batch.reached_scheduler
    assert (sched.stats.snapshot() - before).read_iops == 0


def test_coalesced_batches_are_observed_once(blob):
    path, data = blob
    store, key = open_store(path)
    sched = FileScheduler(store, key, stats=IOStats())
    recorder = BatchRecorder(probe_chain(sched))
    reader = CoalescingReader(recorder)

    async def go():
        import asyncio

        return await asyncio.gather(reader.read_ranges([(0, 8)]), reader.read_ranges([(50_000, 50_008)]))

    a, b = run_sync(go())
    assert bytes(a[0]) == data[:8] and bytes(b[0]) == data[50_000:50_008]
    (batch,) = recorder.batches  # one merged batch, as the scheduler sees it
    assert sorted(batch.ranges) == [(0, 8), (50_000, 50_008)]


def _steps(ranges_per_step, result):
    got = []
    for ranges in ranges_per_step:
        got.append((yield ranges))
    return result, got


def test_labelled_steps_pass_through():
    recorder = BatchRecorder(None)
    plans = [labelled_steps(_steps([[(0, 2)], [(4, 6)]], "a"), "a", recorder),
             labelled_steps(_steps([[], [(8, 9)]], "b"), "b", recorder)]
    gen = gather(plans)
    assert next(gen) == [(0, 2)]
    assert recorder.pending_labels == ["a"]
    recorder.pending_labels.clear()
    assert gen.send(["x"]) == [(4, 6), (8, 9)]
    assert recorder.pending_labels == ["a", "b"]
    with pytest.raises(StopIteration) as stop:
        gen.send(["y", "z"])
    assert stop.value.value == [("a", [["x"], ["y"]]), ("b", [[], ["z"]])]
