"""Scan windows: a column decoded in consecutive row windows with one window read ahead,
and cut back into fixed-size batches.

Row ranges are half-open ``[start, end)``; window sizes are in rows.
"""

from __future__ import annotations

import asyncio
from collections import deque
from typing import Any, AsyncGenerator

import pyarrow as pa

from lancejit.core.errors import LanceJitError


class Slicer:
    """Cuts consecutive ``n``-row slices out of a stream of arrays."""

    def __init__(self, windows: AsyncGenerator[pa.Array, None]) -> None:
        self._windows = windows
        self._current: pa.Array | None = None
        self._offset = 0

    async def take(self, n: int) -> pa.Array:
        pieces = []
        while n > 0:
            if self._current is None or self._offset >= len(self._current):
                try:
                    self._current = await self._windows.__anext__()
                except StopAsyncIteration:
                    raise LanceJitError("decoder returned fewer rows than requested") from None
                self._offset = 0
                continue
            k = min(n, len(self._current) - self._offset)
            pieces.append(self._current.slice(self._offset, k))
            self._offset += k
            n -= k
        return pieces[0] if len(pieces) == 1 else pa.concat_arrays(pieces)

    async def aclose(self) -> None:
        await self._windows.aclose()


async def windows(decoder: Any, start: int, end: int, window_rows: int) -> AsyncGenerator[pa.Array, None]:
    """Arrays of rows ``[start, end)`` in windows of ``window_rows``, one window read ahead."""
    pos = start
    pending: deque[tuple[asyncio.Future, int, int]] = deque()

    def launch() -> None:
        nonlocal pos
        s, e = pos, min(end, pos + window_rows)
        pos = e
        pending.append((asyncio.ensure_future(decoder.read_range(s, e)), s, e))

    try:
        if pos < end:
            launch()
        while pending:
            if pos < end and len(pending) < 2:
                launch()
            fut, s, e = pending.popleft()
            array = await fut
            if isinstance(array, pa.ChunkedArray):
                array = array.combine_chunks() if array.num_chunks != 1 else array.chunk(0)
            if len(array) != e - s:
                raise LanceJitError(f"decoder returned {len(array)} rows for rows [{s}, {e})")
            yield array
    finally:
        for fut, _, _ in pending:
            fut.cancel()
        if pending:
            await asyncio.gather(*(fut for fut, _, _ in pending), return_exceptions=True)


__all__ = ["Slicer", "windows"]
