"""CoalescingReader: same-tick ``read_ranges`` calls become one scheduler batch."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from lancejit.core.errors import CorruptFileError
from lancejit.io import FileScheduler, MemoryStore
from lancejit.io.coalesce import CoalescingReader

DATA = np.random.default_rng(7).integers(0, 256, 200_000, dtype=np.uint8).tobytes()


class CountingReader:
    """A RangeReader over ``DATA`` that records every call (ranges as given)."""

    path = "mem://counting"

    def __init__(self) -> None:
        self.calls: list[list[tuple[int, int]]] = []

    async def size(self) -> int:
        return len(DATA)

    async def read_tail(self, nbytes: int):
        return len(DATA), memoryview(DATA[-nbytes:])

    async def read_ranges(self, ranges, *, priority: int = 0):
        ranges = [tuple(r) for r in ranges]
        self.calls.append(ranges)
        await asyncio.sleep(0)
        out = []
        for s, e in ranges:
            if e > len(DATA):
                raise CorruptFileError(f"[{s}, {e}) past the end", path=self.path)
            out.append(memoryview(DATA[s:e]))
        return out


async def test_same_tick_calls_merge_into_one():
    inner = CountingReader()
    reader = CoalescingReader(inner)
    asks = [[(0, 10), (100, 150)], [(5, 7)], [(1000, 1004), (0, 0), (20, 30)]]
    got = await asyncio.gather(*(reader.read_ranges(a) for a in asks))
    assert len(inner.calls) == 1 and sorted(inner.calls[0]) == sorted(r for a in asks for r in a)
    for a, bufs in zip(asks, got):
        assert [bytes(b) for b in bufs] == [DATA[s:e] for s, e in a]
    # sequential calls are not held back
    assert [bytes(b) for b in await reader.read_ranges([(3, 9)])] == [DATA[3:9]]
    assert len(inner.calls) == 2


async def test_a_bad_range_fails_only_its_caller():
    reader = CoalescingReader(CountingReader())
    good, bad = await asyncio.gather(
        reader.read_ranges([(0, 4)]), reader.read_ranges([(len(DATA) - 2, len(DATA) + 5)]),
        return_exceptions=True,
    )
    assert [bytes(b) for b in good] == [DATA[:4]]
    assert isinstance(bad, CorruptFileError)


async def test_cancelling_one_caller_keeps_the_others():
    reader = CoalescingReader(CountingReader())
    t1 = asyncio.ensure_future(reader.read_ranges([(0, 8)]))
    t2 = asyncio.ensure_future(reader.read_ranges([(8, 16)]))
    await asyncio.sleep(0)
    t1.cancel()
    assert [bytes(b) for b in await t2] == [DATA[8:16]]
    with pytest.raises(asyncio.CancelledError):
        await t1


async def test_large_reads_stay_separate():
    store = MemoryStore()
    await store.put("f", DATA)
    sched = FileScheduler(store, "f")
    reader = CoalescingReader(sched)
    limit = sched.config.max_request_size
    assert limit < len(DATA) * 100  # sanity of the setting
    reader_small = CoalescingReader(sched)
    a, b = await asyncio.gather(reader_small.read_ranges([(0, 10)]), reader_small.read_ranges([(50, 60)]))
    assert bytes(a[0]) == DATA[:10] and bytes(b[0]) == DATA[50:60]
    assert reader_small.merged_calls == 1
    # callers above the limit are issued on their own
    reader._limit = lambda: 100  # type: ignore[method-assign]
    a, b = await asyncio.gather(reader.read_ranges([(0, 1000)]), reader.read_ranges([(5000, 5010)]))
    assert bytes(a[0]) == DATA[:1000] and bytes(b[0]) == DATA[5000:5010]
    assert reader.merged_calls == 0


async def test_scheduler_counts_one_request_for_close_ranges_of_two_callers():
    store = MemoryStore()
    await store.put("f", DATA)
    sched = FileScheduler(store, "f")
    reader = CoalescingReader(sched)
    before = store.stats.snapshot().read_iops
    # two "columns" whose ranges interleave within the block size: one physical read
    col_a = [(i * 1000, i * 1000 + 8) for i in range(50)]
    col_b = [(i * 1000 + 500, i * 1000 + 520) for i in range(50)]
    a, b = await asyncio.gather(reader.read_ranges(col_a), reader.read_ranges(col_b))
    assert store.stats.snapshot().read_iops - before == 1
    assert [bytes(x) for x in a] == [DATA[s:e] for s, e in col_a]
    assert [bytes(x) for x in b] == [DATA[s:e] for s, e in col_b]


async def test_array_ranges_and_passthrough():
    reader = CoalescingReader(CountingReader())
    arr = np.array([[0, 3], [10, 12]], dtype=np.int64)
    got = await reader.read_ranges(arr)
    assert [bytes(b) for b in got] == [DATA[0:3], DATA[10:12]]
    assert await reader.size() == len(DATA)
    assert reader.path == CountingReader.path
    assert await reader.read_ranges([]) == []
