"""Cross-caller coalescing: ``read_ranges`` calls made in the same event-loop tick become ONE
scheduler call.

A file reader decodes its projected fields concurrently; each field's decoder asks for its
own byte ranges.  Issued separately, those batches are planned separately (no merging across
columns) and each costs a scheduler pass and, for local files, a thread hand-off.  Wrapping
the file's :class:`~lancejit.io.scheduler.FileScheduler` in a :class:`CoalescingReader` gathers
every call that arrives before the loop gets back to its ready queue (all tasks started by one
``asyncio.gather`` reach their first read in the same tick) and issues them as one batch, so
the planner merges ranges of different columns that sit close together in the file.

Byte ranges are half-open ``(start, end)``.  Each caller gets exactly its own buffers back.
If the merged read fails, every caller's ranges are re-read on their own, so each caller sees
its own result or error (a bad range of one column never fails another).

On object stores (S3, GCS: every physical read is one HTTP request), a tick's reads larger
than one request (a scan's units asking for the same columns) are planned together: ranges of
all callers are sorted and merged into runs (gaps up to ``block_size``), runs are cut at range
boundaries into pieces of at most ``store.preferred_read_size`` bytes (8 MiB; the largest
request is the reference's 16 MiB), and each piece is read on its own, so every column of a scan costs one or two large
GETs instead of one per caller group, and a caller is answered as soon as the pieces holding
its ranges have arrived (decoding the first units overlaps the download of the later ones).
"""

from __future__ import annotations

import asyncio
import time
from typing import Any, Sequence

import numpy as np

from lancejit.io.forwarding import ForwardingReader
from lancejit.io.planner import range_array
from lancejit.io.scheduler import FileScheduler, io_queue
from lancejit.io.store import StreamingStore

#: Bytes merged into one call when ``inner`` has no ``config.max_request_size``.
DEFAULT_MERGE_BYTES = 8 << 20


class _Batch:
    __slots__ = ("loop", "items", "ticks", "seen")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.items: list[tuple[Any, int, asyncio.Future]] = []
        self.ticks = 0
        self.seen = 0


class CoalescingReader(ForwardingReader):
    """A :class:`~lancejit.core.ranges.RangeReader` over ``inner`` that merges the
    ``read_ranges`` calls of one event-loop tick into a single ``inner.read_ranges`` call.

    ``settle_ticks``: extra loop ticks a batch waits while new calls keep arriving (0 = issue
    at the end of the tick of the first call).  Every other attribute (``store``, ``stats``,
    ``uri``, ``size()``, ``read_tail()``...) is ``inner`` 's.
    """

    def __init__(self, inner: Any, *, settle_ticks: int = 1) -> None:
        super().__init__(inner)
        self.settle_ticks = int(settle_ticks)
        self._batch: _Batch | None = None
        #: Calls received and merged ``inner.read_ranges`` calls issued (for tests/diagnostics).
        self.calls = 0
        self.batches = 0
        #: ``inner.read_ranges`` calls that served several callers at once.
        self.merged_calls = 0

    async def read_ranges(self, ranges: Sequence[tuple[int, int]], *, priority: int = 0) -> list[memoryview]:
        """Half-open byte ranges -> one buffer each, in order (merged with same-tick callers)."""
        self.calls += 1
        if len(ranges) == 0:
            return []
        loop = asyncio.get_running_loop()
        batch = self._batch
        if batch is not None and batch.loop is not loop:
            return await self.inner.read_ranges(ranges, priority=priority)  # another loop: no merging
        if batch is None:
            batch = self._batch = _Batch(loop)
            loop.call_soon(self._flush, batch)
        fut: asyncio.Future = loop.create_future()
        batch.items.append((ranges, priority, fut))
        return await fut

    def _flush(self, batch: _Batch) -> None:
        n = len(batch.items)
        if batch.ticks < self.settle_ticks and n != batch.seen:
            batch.ticks += 1
            batch.seen = n
            batch.loop.call_soon(self._flush, batch)
            return
        if self._batch is batch:
            self._batch = None
        items = [it for it in batch.items if not it[2].done()]
        if not items:
            return
        self.batches += 1
        batch.loop.create_task(self._issue(items))

    def _limit(self) -> int:
        config = getattr(self.inner, "config", None)
        return int(getattr(config, "max_request_size", 0) or DEFAULT_MERGE_BYTES)

    def _piece_plan(self) -> tuple[int, int] | None:
        """``(block_size, piece bytes)`` when ``inner`` reads from an object store whose every
        physical read is its own request (else None: the caller-grouping path)."""
        store = getattr(self.inner, "store", None)
        if store is None or getattr(store, "serial_batches", True):
            return None
        piece = int(getattr(store, "preferred_read_size", 0) or 0)
        if piece <= 0:
            return None
        config = getattr(self.inner, "config", None)
        return int(getattr(config, "block_size", 0) or 0), min(piece, self._limit())

    async def _issue(self, items: list[tuple[Any, int, asyncio.Future]]) -> None:
        if len(items) == 1:
            ranges, priority, fut = items[0]
            await self._single(ranges, priority, fut)
            return
        plan = self._piece_plan()
        if plan is not None:
            arrs = [range_array(r) for r, _, _ in items]
            total = sum(int((a[:, 1] - a[:, 0]).sum()) for a in arrs if a.size)
            if total > plan[1]:
                await self._pieces(items, arrs, *plan)
                return
        # Group callers up to ~one request's worth of bytes: large reads (scan windows) stay
        # on their own so that no requested range straddles the planner's split points.
        limit = self._limit()
        groups: list[list[tuple[np.ndarray, Any, int, asyncio.Future]]] = []
        current: list[tuple[np.ndarray, Any, int, asyncio.Future]] = []
        size = 0
        for ranges, priority, fut in items:
            arr = range_array(ranges)
            nbytes = int((arr[:, 1] - arr[:, 0]).sum()) if arr.size else 0
            if nbytes > limit:
                groups.append([(arr, ranges, priority, fut)])
                continue
            if current and size + nbytes > limit:
                groups.append(current)
                current, size = [], 0
            current.append((arr, ranges, priority, fut))
            size += nbytes
        if current:
            groups.append(current)
        if len(groups) == 1:
            await self._merged(groups[0])
        else:
            await asyncio.gather(*(self._merged(g) for g in groups))

    async def _merged(self, group: list[tuple[np.ndarray, Any, int, asyncio.Future]]) -> None:
        if len(group) == 1:
            _, ranges, priority, fut = group[0]
            await self._single(ranges, priority, fut)
            return
        self.merged_calls += 1
        merged: Any = np.concatenate([arr for arr, _, _, _ in group])
        priority = min(p for _, _, p, _ in group)
        if not isinstance(self.inner, FileScheduler):  # other readers may want pairs
            merged = [tuple(p) for p in merged.tolist()]
        task = asyncio.ensure_future(self.inner.read_ranges(merged, priority=priority))
        waiters = [fut for _, _, _, fut in group]

        def cancel_if_abandoned(_f: asyncio.Future) -> None:
            if all(w.done() for w in waiters) and not task.done():
                task.cancel()

        for w in waiters:
            w.add_done_callback(cancel_if_abandoned)
        try:
            bufs = await task
        except asyncio.CancelledError:
            for w in waiters:
                if not w.done():
                    w.cancel()
            return
        except BaseException:
            # Re-read each caller's ranges alone: each gets its own result or error.
            await asyncio.gather(*(self._single(r, p, f) for _, r, p, f in group if not f.done()))
            return
        pos = 0
        for arr, _, _, fut in group:
            k = arr.shape[0]
            if not fut.done():
                fut.set_result(bufs[pos:pos + k])
            pos += k

    async def _pieces(self, items: list[tuple[Any, int, asyncio.Future]], arrs: list[np.ndarray],
                      block: int, piece: int) -> None:
        """Read the callers' ranges as pieces of merged runs (see the module docstring): one
        call per piece of at least ``SOLO_BYTES``, the small pieces together; each caller
        answered when its last range arrives (streamed pieces deliver ranges as their bytes
        come in, see :meth:`_stream`)."""
        self.merged_calls += 1
        allr = np.concatenate(arrs)
        owner = np.repeat(np.arange(len(arrs)), [a.shape[0] for a in arrs])
        order = np.argsort(allr[:, 0], kind="stable")
        call_idx = [order[lo:hi] for lo, hi in _piece_calls(allr[order], block, piece)]
        starts = np.concatenate(([0], np.cumsum([a.shape[0] for a in arrs]))).tolist()
        out: list[Any] = [None] * allr.shape[0]
        left = np.bincount(owner, minlength=len(items)).tolist()  # ranges still missing per caller
        owner_of = owner.tolist()
        failed: set[int] = set()
        waiters = [fut for _, _, fut in items]
        priority = min(p for _, p, _ in items)
        can_stream = self._can_stream()
        max_run = self._limit()

        def deliver(g: int, buf: Any) -> None:
            out[g] = buf
            c = owner_of[g]
            left[c] -= 1
            if left[c] == 0 and c not in failed and not waiters[c].done():
                waiters[c].set_result(out[starts[c]:starts[c + 1]])

        async def run(idx: np.ndarray) -> None:
            try:
                if can_stream and _one_run(allr[idx], block, SOLO_BYTES, max_run):
                    await self._stream(allr[idx], idx, priority, deliver)
                    return
                bufs = await self.inner.read_ranges(allr[idx], priority=priority)
            except asyncio.CancelledError:
                raise
            except BaseException:  # noqa: BLE001 - each caller re-reads alone below
                failed.update(owner[idx].tolist())
                return
            for g, b in zip(idx.tolist(), bufs):
                deliver(g, b)

        tasks = [asyncio.ensure_future(run(idx)) for idx in call_idx]

        def cancel_if_abandoned(_f: asyncio.Future) -> None:
            if all(w.done() for w in waiters):
                for t in tasks:
                    if not t.done():
                        t.cancel()

        for w in waiters:
            w.add_done_callback(cancel_if_abandoned)
        results = await asyncio.gather(*tasks, return_exceptions=True)
        if any(isinstance(r, asyncio.CancelledError) for r in results):
            for w in waiters:
                if not w.done():
                    w.cancel()
            return
        if failed:
            await asyncio.gather(*(self._single(items[c][0], items[c][1], items[c][2])
                                   for c in sorted(failed) if not items[c][2].done()))

    def _scheduler(self) -> FileScheduler | None:
        """The file scheduler ``inner`` reads through: ``inner`` itself, or the scheduler a
        forwarding wrapper (``.inner``, e.g. a data file's small-file reader) passes its reads
        to when the wrapper holds no bytes of its own (``whole`` is None)."""
        inner = self.inner
        for _ in range(4):
            if isinstance(inner, FileScheduler):
                return inner
            if getattr(inner, "whole", None) is not None:
                return None  # served from memory: nothing to stream
            inner = getattr(inner, "inner", None)
            if inner is None:
                return None
        return None

    def _can_stream(self) -> bool:
        """True when ``inner`` reads through a file scheduler (see :meth:`_scheduler`) over a
        store that streams a range's bytes as they arrive (``store.read_streaming``)."""
        sched = self._scheduler()
        return sched is not None and isinstance(sched.store, StreamingStore)

    async def _stream(self, ranges: np.ndarray, idx: np.ndarray, priority: int, deliver) -> None:
        """One request for the run covering ``ranges`` (rows of the merged plan ``idx``),
        under the store's budgets like a scheduler batch; each range is handed to
        ``deliver(g, buffer)`` as soon as the bytes up to its end have arrived."""
        inner = self._scheduler()
        assert inner is not None  # _can_stream checked it
        store = inner.store
        assert isinstance(store, StreamingStore)  # _can_stream checked it
        base, top = int(ranges[:, 0].min()), int(ranges[:, 1].max())
        by_end = np.argsort(ranges[:, 1], kind="stable")
        ends = (ranges[by_end, 1] - base).tolist()
        begins = (ranges[by_end, 0] - base).tolist()
        gs = idx[by_end].tolist()
        done = 0

        def progress(view: memoryview, filled: int) -> None:
            nonlocal done
            while done < len(ends) and ends[done] <= filled:
                deliver(gs[done], view[begins[done]:ends[done]])
                done += 1

        nbytes = top - base
        queue = io_queue(store)
        prio = (inner.base_priority, priority)
        await queue.bytes.acquire(prio, nbytes)
        try:
            await queue.iops.acquire(prio)
            try:
                t0 = time.perf_counter()
                view = await store.read_streaming(inner.store_path, base, top, progress)
            finally:
                queue.iops.release()
        finally:
            queue.bytes.release(nbytes)
        if inner.stats is not None:
            inner.stats.record_read(nbytes, time.perf_counter() - t0, requests=1)
        progress(view, nbytes)

    async def _single(self, ranges: Any, priority: int, fut: asyncio.Future) -> None:
        # Always the last step of a task of its own (``_issue``'s, or one of a gather's), so
        # the read runs in that task (no extra task and loop tick): a caller cancelling
        # ``fut`` cancels this task, i.e. the read.
        if fut.done():
            return
        task = asyncio.current_task()
        assert task is not None  # runs in a task (see above)
        fut.add_done_callback(lambda f: task.cancel() if f.cancelled() and not task.done() else None)
        try:
            result = await self.inner.read_ranges(ranges, priority=priority)
        except asyncio.CancelledError:
            if not fut.done():
                fut.cancel()
            return
        except BaseException as exc:  # noqa: BLE001 - handed to the caller
            if not fut.done():
                fut.set_exception(exc)
            return
        if not fut.done():
            fut.set_result(result)

    def __repr__(self) -> str:
        return f"CoalescingReader({self.inner!r})"


#: Pieces of at least this many bytes are read by a call of their own (smaller ones together).
SOLO_BYTES = 1 << 20


def _one_run(ranges: np.ndarray, block: int, least: int, most: int) -> bool:
    """True when ``ranges`` (sorted by start) merge into one run of ``least`` to ``most``
    bytes (gaps at most ``block``): one request that can be streamed."""
    span = int(ranges[:, 1].max()) - int(ranges[0, 0])
    if not least <= span <= most:
        return False
    cm = np.maximum.accumulate(ranges[:, 1])
    return bool(np.all(ranges[1:, 0] <= cm[:-1] + block))


def _piece_calls(sorted_ranges: np.ndarray, block: int, piece: int) -> list[tuple[int, int]]:
    """Half-open spans ``[lo, hi)`` of ``sorted_ranges`` ((n, 2), sorted by start), one per
    scheduler call: runs merged while the gap is at most ``block`` bytes, cut at range
    boundaries into ``ceil(run / piece)`` pieces of near-equal size (about ``piece`` bytes at
    most; a single longer range stays whole: the scheduler splits it); pieces under
    ``SOLO_BYTES`` share calls of up to ``piece`` bytes."""
    n = sorted_ranges.shape[0]
    s = sorted_ranges[:, 0]
    cm = np.maximum.accumulate(sorted_ranges[:, 1])
    breaks = np.flatnonzero(s[1:] > cm[:-1] + block) + 1
    bounds = np.concatenate(([0], breaks, [n])).tolist()
    pieces: list[tuple[int, int, int]] = []  # (lo, hi, bytes)
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        top = int(cm[hi - 1])
        k = min(hi - lo, -(-(top - int(s[lo])) // piece))  # near-equal pieces, cut at range ends
        while k > 1:
            base = int(s[lo])
            target = base + (top - base) // k
            cut = lo + int(np.searchsorted(cm[lo:hi], target, side="right"))  # ends <= target
            if cut < hi and (cut == lo or int(cm[cut]) - target < target - int(cm[cut - 1])):
                cut += 1  # the range ending just past the target is the nearer cut
            cut = min(max(cut, lo + 1), hi - k + 1)
            pieces.append((lo, cut, int(cm[cut - 1]) - base))
            lo, k = cut, k - 1
        pieces.append((lo, hi, top - int(s[lo])))
    calls: list[tuple[int, int]] = []
    small_lo, small_bytes = -1, 0
    for lo, hi, nbytes in pieces:
        if nbytes >= SOLO_BYTES:
            if small_lo >= 0:
                calls.append((small_lo, lo))
                small_lo, small_bytes = -1, 0
            calls.append((lo, hi))
            continue
        if small_lo >= 0 and small_bytes + nbytes > piece:
            calls.append((small_lo, lo))
            small_lo, small_bytes = -1, 0
        if small_lo < 0:
            small_lo = lo
        small_bytes += nbytes
    if small_lo >= 0:
        calls.append((small_lo, n))
    return calls


__all__ = ["CoalescingReader"]
