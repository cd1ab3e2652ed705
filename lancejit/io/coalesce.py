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
"""

from __future__ import annotations

import asyncio
from typing import Any, Sequence

import numpy as np

from lancejit.io.forwarding import ForwardingReader
from lancejit.io.planner import range_array
from lancejit.io.scheduler import FileScheduler

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

    async def _issue(self, items: list[tuple[Any, int, asyncio.Future]]) -> None:
        if len(items) == 1:
            ranges, priority, fut = items[0]
            await self._single(ranges, priority, fut)
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

    async def _single(self, ranges: Any, priority: int, fut: asyncio.Future) -> None:
        # Always the last step of a task of its own (``_issue``'s, or one of a gather's), so
        # the read runs in that task (no extra task and loop tick): a caller cancelling
        # ``fut`` cancels this task, i.e. the read.
        if fut.done():
            return
        task = asyncio.current_task()
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


__all__ = ["CoalescingReader"]
