"""The I/O scheduler: coalesced, prioritised, bounded reads of one file.

:class:`FileScheduler` implements :class:`lancejit.core.ranges.RangeReader`.  Each
``read_ranges`` call (a *batch*) is

1. planned by :func:`lancejit.io.planner.plan_reads` (merge ranges closer than ``block_size``,
   split runs longer than ``max_request_size``);
2. admitted under the store's **bytes-in-flight** budget (``max_bytes_in_flight``): the batch
   reserves all its physical bytes at once and keeps them until its result is assembled, so
   no batch waits while holding part of the budget (no deadlock); a batch larger than the whole
   budget runs alone;
3. issued as *units* under the store's **IOPS budget** (``io_parallelism`` units in flight,
   shared by every scheduler of the store on the running event loop).  For stores whose
   batches run serially in one worker (local files, memory), consecutive physical reads are
   packed into one unit of at most ``max_request_size`` bytes — one thread hand-off; for S3/GCS
   each physical read is one unit (one HTTP request);
4. sliced back to the requested ranges (zero-copy unless a range spans split parts).

Waiting batches and units are served lowest ``priority`` first (FIFO among equals).
Cancelling the caller's task cancels its queued and running reads and returns every
reservation before the cancellation propagates; nothing keeps running.

Budgets come from the store's :class:`~lancejit.core.config.IOConfig`; a scheduler's own
``config`` only changes its planning (``block_size``, ``max_request_size``).
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import time
from typing import Any, Sequence

import numpy as np

from lancejit.core.config import IOConfig
from lancejit.core.ranges import ByteRange
from lancejit.io._tasks import gather_all
from lancejit.io.planner import PhysicalRead, assemble, plan_reads
from lancejit.io.stats import IOStats
from lancejit.io.store import ObjectStore, past_eof

Priority = tuple[int, int]


class PriorityGate:
    """A counted resource handed out lowest priority first (FIFO among equal priorities).

    ``capacity`` units exist; ``acquire(priority, amount)`` waits until ``amount`` units are free
    and every earlier-queued, lower-or-equal-priority request was served.  A request larger than
    ``capacity`` is granted when nothing else holds the resource.  Bound to one event loop.
    """

    def __init__(self, capacity: int) -> None:
        self.capacity = max(1, int(capacity))
        self.available = self.capacity
        self._heap: list[tuple[Priority, int, int, asyncio.Future[None]]] = []
        self._seq = itertools.count()
        self.peak_in_use = 0

    @property
    def in_use(self) -> int:
        return self.capacity - self.available

    @property
    def waiting(self) -> int:
        """Requests queued and not cancelled."""
        return sum(1 for *_, fut in self._heap if not fut.done())

    def _fits(self, amount: int) -> bool:
        return amount <= self.available or self.available == self.capacity

    def _dispatch(self) -> None:
        heap = self._heap
        while heap:
            _prio, _seq, amount, fut = heap[0]
            if fut.done():  # cancelled waiter
                heapq.heappop(heap)
                continue
            if not self._fits(amount):
                return
            heapq.heappop(heap)
            self._take(amount)
            fut.set_result(None)

    def _take(self, amount: int) -> None:
        self.available -= amount
        self.peak_in_use = max(self.peak_in_use, self.in_use)

    async def acquire(self, priority: Priority, amount: int = 1) -> None:
        """Wait for ``amount`` units (lowest priority first); pair with :meth:`release`."""
        if not self._heap and self._fits(amount):
            self._take(amount)
            return
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._heap, (priority, next(self._seq), amount, fut))
        self._dispatch()
        try:
            await fut
        except asyncio.CancelledError:
            if fut.done() and not fut.cancelled():  # granted as we were cancelled: give it back
                self.release(amount)
            else:
                fut.cancel()
                self._dispatch()
            raise

    def release(self, amount: int = 1) -> None:
        self.available += amount
        self._dispatch()


class IOQueue:
    """The budgets of one store on one event loop: IOPS (units in flight) and bytes in flight."""

    def __init__(self, config: IOConfig) -> None:
        self.iops = PriorityGate(config.io_parallelism)
        self.bytes = PriorityGate(config.max_bytes_in_flight)

    def try_take(self, nbytes: int) -> bool:
        """Take one IOPS unit and ``nbytes`` of the bytes budget at once when both are free
        now and nobody waits (what two uncontended ``acquire`` calls would grant); else False."""
        iops, byts = self.iops, self.bytes
        if iops._heap or byts._heap or iops.available < 1:
            return False
        if nbytes > byts.available and byts.available != byts.capacity:
            return False
        iops.available -= 1
        byts.available -= nbytes
        if iops.capacity - iops.available > iops.peak_in_use:
            iops.peak_in_use = iops.capacity - iops.available
        if byts.capacity - byts.available > byts.peak_in_use:
            byts.peak_in_use = byts.capacity - byts.available
        return True

    def give_back(self, nbytes: int) -> None:
        """Return what :meth:`try_take` took (waking waiters if any arrived meanwhile)."""
        self.iops.available += 1
        self.bytes.available += nbytes
        if self.iops._heap:
            self.iops._dispatch()
        if self.bytes._heap:
            self.bytes._dispatch()

    @property
    def idle(self) -> bool:
        """Nothing in flight and nothing waiting."""
        return (self.iops.in_use == 0 and self.bytes.in_use == 0
                and self.iops.waiting == 0 and self.bytes.waiting == 0)


def io_queue(store: ObjectStore) -> IOQueue:
    """The store's :class:`IOQueue` for the running event loop."""
    return store.loop_local("io_queue", lambda: IOQueue(store.config))


def pack_units(reads: Sequence[Any], serial: bool, max_unit_bytes: int) -> list[list[int]]:
    """Group physical reads (indices) into units issued as one ``store.read_ranges`` call each.

    ``reads``: :class:`PhysicalRead` s or ``(start, end)`` pairs.  ``serial`` stores get
    consecutive reads packed up to ``max_unit_bytes``; others one read per unit.
    """
    if not serial:
        return [[i] for i in range(len(reads))]
    units: list[list[int]] = []
    current: list[int] = []
    size = 0
    for i, read in enumerate(reads):
        length = read.length if isinstance(read, PhysicalRead) else read[1] - read[0]
        if current and size + length > max_unit_bytes:
            units.append(current)
            current, size = [], 0
        current.append(i)
        size += length
    if current:
        units.append(current)
    return units


def _max_end(ranges: Any) -> int:
    """The largest end of half-open byte ``ranges`` (pairs, ``ByteRange``s or an ``(n, 2)`` array)."""
    if isinstance(ranges, np.ndarray):
        return int(ranges.reshape(-1, 2)[:, 1].max()) if ranges.size else 0
    top = 0
    for r in ranges:
        end = r.end if isinstance(r, ByteRange) else r[1]
        if end > top:
            top = end
    return int(top)


class FileScheduler:
    """Scheduled reads of one file (``path`` inside ``store``); implements ``RangeReader``.

    ``config`` overrides the store's planning settings; ``stats`` (optional) receives the same
    counts as the store's stats for the requests this scheduler issues (per-scan accounting);
    ``size`` (bytes) saves a metadata request when already known; ``base_priority`` orders
    this file's requests before/after other files' (compared before ``priority``).
    """

    def __init__(self, store: ObjectStore, path: str, config: IOConfig | None = None,
                 stats: IOStats | None = None, *, size: int | None = None, base_priority: int = 0) -> None:
        self.store = store
        self._path = path
        self.config = config if config is not None else store.config
        self.stats = stats
        self._size = size
        self.base_priority = base_priority

    @property
    def path(self) -> str:
        """The file's name for messages: the OS path for local files, else the full URI."""
        if self.store.scheme == "file":
            return self._path
        return self.store.uri(self._path)

    @property
    def store_path(self) -> str:
        """The path inside ``store`` (what ``store.read_ranges`` takes)."""
        return self._path

    @property
    def uri(self) -> str:
        """The full URI (``file://...`` for local files)."""
        return self.store.uri(self._path)

    def with_priority(self, base_priority: int) -> "FileScheduler":
        """The same file with another ``base_priority`` (shares the known size)."""
        return FileScheduler(self.store, self._path, self.config, self.stats,
                             size=self._size, base_priority=base_priority)

    async def size(self) -> int:
        """File size in bytes (one metadata request the first time, then cached)."""
        if self._size is None:
            self._size = await self.store.size(self._path)
        return self._size

    async def read_ranges(self, ranges: Sequence[tuple[int, int]], *, priority: int = 0) -> list[memoryview]:
        """Read half-open byte ranges (any order, overlaps, repeats, empties): one buffer each, in order.

        ``ranges`` may also be an ``(n, 2)`` integer array (planned without per-range Python work).
        """
        if self._size is not None and _max_end(ranges) > self._size:
            # before planning: a range a file claims can be 2**40 bytes long, which the planner
            # would cut into millions of requests
            for start, end in plan_reads(ranges, 0, 1 << 62).requested:
                if end > self._size:
                    raise past_eof(self.path, start, end, self._size)
        plan = plan_reads(ranges, self.config.block_size, self.config.max_request_size)
        if not plan.read_starts:
            return assemble(plan, [])
        prio: Priority = (self.base_priority, priority)
        queue = io_queue(self.store)
        pairs = list(zip(plan.read_starts, plan.read_ends))
        total = plan.bytes_read
        store = self.store
        stats = self.stats
        if len(pairs) == 1 or (store.serial_batches and total <= self.config.max_request_size):
            # One unit: no tasks, no per-unit bookkeeping.
            if queue.try_take(total):  # both budgets free and nobody waiting: no queueing
                try:
                    t0 = time.perf_counter()
                    buffers = await store.read_ranges(self._path, pairs)
                finally:
                    queue.give_back(total)
                if stats is not None:
                    stats.record_read(total, time.perf_counter() - t0, requests=len(pairs))
                return assemble(plan, buffers)
            await queue.bytes.acquire(prio, total)
            try:
                await queue.iops.acquire(prio)
                try:
                    t0 = time.perf_counter()
                    buffers = await store.read_ranges(self._path, pairs)
                finally:
                    queue.iops.release()
            finally:
                queue.bytes.release(total)
            if stats is not None:
                stats.record_read(total, time.perf_counter() - t0, requests=len(pairs))
            return assemble(plan, buffers)
        units = pack_units(pairs, store.serial_batches, self.config.max_request_size)
        parts: list[Any] = [None] * len(pairs)

        async def run_unit(unit: list[int]) -> None:
            await queue.iops.acquire(prio)
            try:
                t0 = time.perf_counter()
                got = await store.read_ranges(self._path, [pairs[i] for i in unit])
            finally:
                queue.iops.release()
            if stats is not None:
                stats.record_read(sum(len(b) for b in got), time.perf_counter() - t0, requests=len(unit))
            for i, buf in zip(unit, got):
                parts[i] = buf

        await queue.bytes.acquire(prio, total)
        try:
            await gather_all(run_unit(u) for u in units)
        finally:
            queue.bytes.release(total)
        return assemble(plan, parts)

    async def read_tail(self, nbytes: int) -> tuple[int, memoryview]:
        """The last ``nbytes`` bytes (fewer if the file is smaller) in one request: ``(size, data)``."""
        queue = io_queue(self.store)
        prio: Priority = (self.base_priority, -1)
        reserve = min(nbytes, self._size) if self._size is not None else nbytes
        reserve = max(0, min(reserve, self.store.config.max_bytes_in_flight))
        await queue.bytes.acquire(prio, reserve)
        try:
            await queue.iops.acquire(prio)
            try:
                t0 = time.perf_counter()
                size, data = await self.store.read_tail(self._path, nbytes)
            finally:
                queue.iops.release()
        finally:
            queue.bytes.release(reserve)
        if self.stats is not None:
            self.stats.record_read(len(data), time.perf_counter() - t0)
        self._size = size
        return size, data

    def __repr__(self) -> str:
        return f"FileScheduler({self.uri!r})"


class ScanScheduler:
    """Opens :class:`FileScheduler` s of one store that share per-scan ``stats``.

    Files opened later get larger ``base_priority`` by default, so a scan's earlier files are
    served first when the budgets are full.
    """

    def __init__(self, store: ObjectStore, config: IOConfig | None = None, stats: IOStats | None = None) -> None:
        self.store = store
        self.config = config
        self.stats = stats if stats is not None else IOStats()
        self._next_priority = itertools.count()

    def open_file(self, path: str, *, size: int | None = None, base_priority: int | None = None) -> FileScheduler:
        prio = next(self._next_priority) if base_priority is None else base_priority
        return FileScheduler(self.store, path, self.config, self.stats, size=size, base_priority=prio)


def scheduler_for(store: ObjectStore, path: str, *, size: int | None = None,
                  config: IOConfig | None = None, stats: IOStats | None = None) -> FileScheduler:
    """A :class:`FileScheduler` for ``path`` in ``store``."""
    return FileScheduler(store, path, config, stats, size=size)


def open_file(uri: str, storage_options: dict[str, Any] | None = None, *, size: int | None = None,
              stats: IOStats | None = None) -> FileScheduler:
    """A :class:`FileScheduler` for a URI (store chosen and cached by ``open_store``)."""
    from lancejit.io.registry import open_store

    store, path = open_store(uri, storage_options)
    return FileScheduler(store, path, None, stats, size=size)


__all__ = [
    "FileScheduler",
    "IOQueue",
    "PriorityGate",
    "ScanScheduler",
    "io_queue",
    "open_file",
    "pack_units",
    "scheduler_for",
]
