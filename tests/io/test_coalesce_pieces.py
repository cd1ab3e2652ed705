"""CoalescingReader on object stores: a tick's reads larger than one request are planned
together and cut into near-equal pieces at range boundaries (one request each); callers are
answered as soon as their pieces arrive; failures and cancellations stay per caller."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from lancejit.core.config import CLOUD_IO, MiB
from lancejit.core.errors import CorruptFileError
from lancejit.io import FileScheduler, MemoryStore
from lancejit.io.coalesce import SOLO_BYTES, CoalescingReader, _piece_calls

DATA = np.random.default_rng(3).integers(0, 256, 3 * MiB, dtype=np.uint8).tobytes()
PIECE = 512 * 1024


class ObjectLikeStore(MemoryStore):
    """A memory store whose every range is its own request (as S3/GCS), with ``delay(start)``
    seconds of latency per request and a log of the requests (start, end)."""

    serial_batches = False
    preferred_read_size = PIECE

    def __init__(self, delay=lambda start: 0.0) -> None:
        super().__init__("pieces-test", CLOUD_IO)
        self.delay = delay
        self.requests: list[tuple[int, int]] = []

    async def read_ranges(self, path, ranges):
        out = []
        for s, e in ranges:
            self.requests.append((int(s), int(e)))
            await asyncio.sleep(self.delay(int(s)))
            out.extend(await super().read_ranges(path, [(s, e)]))
        return out


async def _reader(store: ObjectLikeStore) -> CoalescingReader:
    await store.put("f", DATA)
    return CoalescingReader(FileScheduler(store, "f"))


def _units(n_units: int, n_cols: int, col_bytes: int, gap: int = 2000) -> list[list[tuple[int, int]]]:
    """Scan-like asks: unit u wants its slice of each of ``n_cols`` contiguous columns."""
    per = col_bytes // n_units
    out = []
    for u in range(n_units):
        asks = []
        for c in range(n_cols):
            base = c * (col_bytes + gap)
            asks.append((base + u * per, base + (u + 1) * per))
        out.append(asks)
    return out


async def test_scan_like_ticks_become_few_near_equal_requests():
    store = ObjectLikeStore()
    reader = await _reader(store)
    asks = _units(8, 3, 600_000)
    got = await asyncio.gather(*(reader.read_ranges(a) for a in asks))
    for a, bufs in zip(asks, got):
        assert [bytes(b) for b in bufs] == [DATA[s:e] for s, e in a]
    total = sum(e - s for a in asks for s, e in a)
    sizes = [e - s for s, e in store.requests]
    assert len(store.requests) == -(-(total + 2 * 2000) // PIECE)  # the columns merge (gaps < block)
    assert max(sizes) <= PIECE and min(sizes) >= 0.5 * max(sizes)
    assert sum(sizes) <= total + 2 * 2000


async def test_first_callers_answered_before_the_last_piece():
    # pieces starting late in the file arrive late; the first unit must not wait for them
    store = ObjectLikeStore(delay=lambda start: 0.3 if start >= 1_000_000 else 0.0)
    reader = await _reader(store)
    asks = [[(u * 100_000, (u + 1) * 100_000)] for u in range(20)]  # one 2 MB run
    loop = asyncio.get_running_loop()
    t0 = loop.time()
    done_at = {}

    async def ask(i):
        bufs = await reader.read_ranges(asks[i])
        done_at[i] = loop.time() - t0
        return bufs

    got = await asyncio.gather(*(ask(i) for i in range(20)))
    assert [bytes(g[0]) for g in got] == [DATA[s:e] for a in asks for s, e in a]
    assert done_at[0] < 0.2 < done_at[19]


async def test_a_bad_range_fails_only_its_caller_in_pieces():
    store = ObjectLikeStore()
    reader = await _reader(store)
    asks = _units(6, 2, 900_000)
    bad = [(len(DATA) - 10, len(DATA) + 10)]
    got = await asyncio.gather(*(reader.read_ranges(a) for a in asks + [bad]), return_exceptions=True)
    assert isinstance(got[-1], CorruptFileError)
    for a, bufs in zip(asks, got[:-1]):
        assert [bytes(b) for b in bufs] == [DATA[s:e] for s, e in a]


async def test_cancelling_every_caller_cancels_the_pieces():
    store = ObjectLikeStore(delay=lambda start: 5.0)
    reader = await _reader(store)
    tasks = [asyncio.ensure_future(reader.read_ranges(a)) for a in _units(4, 2, 1_000_000)]
    await asyncio.sleep(0.05)
    assert store.requests
    for t in tasks:
        t.cancel()
    res = await asyncio.wait_for(asyncio.gather(*tasks, return_exceptions=True), 2.0)
    assert all(isinstance(r, asyncio.CancelledError) for r in res)


async def test_serial_stores_keep_caller_groups():
    store = MemoryStore("serial-pieces")
    await store.put("f", DATA)
    reader = CoalescingReader(FileScheduler(store, "f"))
    assert reader._piece_plan() is None
    asks = _units(4, 2, 1_000_000)
    got = await asyncio.gather(*(reader.read_ranges(a) for a in asks))
    for a, bufs in zip(asks, got):
        assert [bytes(b) for b in bufs] == [DATA[s:e] for s, e in a]


@pytest.mark.parametrize("seed", range(12))
def test_piece_calls_cover_every_range_once(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 400))
    starts = np.sort(rng.integers(0, 50 * MiB, n))
    lengths = rng.choice([0, 10, 5000, 300_000, 3 * MiB], n, p=[0.05, 0.3, 0.4, 0.2, 0.05])
    ranges = np.stack([starts, starts + lengths], axis=1)
    block, piece = int(rng.choice([0, 4096, 65536])), int(rng.choice([256 * 1024, MiB, 8 * MiB]))
    calls = _piece_calls(ranges, block, piece)
    assert calls[0][0] == 0 and calls[-1][1] == n
    assert all(a[1] == b[0] and a[0] < a[1] for a, b in zip(calls, calls[1:]))
    for lo, hi in calls:
        part = ranges[lo:hi]
        union = _union_bytes(part)
        if hi - lo > 1:
            # a call of several ranges reads about one piece (near-equal cuts land on range ends)
            assert union <= 2 * max(piece, SOLO_BYTES) + 2 * int((part[:, 1] - part[:, 0]).max()), (lo, hi, union)


def _union_bytes(part: np.ndarray) -> int:
    total, end = 0, -1
    for s, e in part.tolist():
        if e > end:
            total += e - max(s, end)
            end = e
    return total
