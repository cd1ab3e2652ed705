"""Close per-event-loop resources (HTTP sessions, clients) when their event loop shuts down.

A caller that runs each request in its own event loop (``asyncio.run(...)`` per request, an
``asyncio.Runner``) makes lancejit open one HTTP session per loop; nothing else tells lancejit
that such a loop ends.  :func:`close_with_loop` ties a close coroutine to the running loop:
``asyncio.run`` and ``asyncio.Runner`` finish every live async generator of their loop
(``loop.shutdown_asyncgens()``) before closing it, so a generator suspended at its one
``yield`` (registered with the loop when first stepped) runs ``close()`` in its ``finally``
while the loop still runs.

A loop closed without ``shutdown_asyncgens`` cannot run coroutines any more: call
:meth:`LoopCloser.discard` for it (the generator is then finished without running ``close``,
so collecting it schedules nothing on the closed loop).
"""

from __future__ import annotations

import asyncio
from typing import AsyncGenerator, Awaitable, Callable


class LoopCloser:
    """A close coroutine bound to the running loop's shutdown (see :func:`close_with_loop`)."""

    __slots__ = ("_gen", "_armed")

    def __init__(self, close: Callable[[], Awaitable[None]]) -> None:
        self._armed = True
        self._gen = self._guard(close)
        # Calling asend() registers the generator with the running loop (its firstiter hook);
        # stepping the awaitable by hand runs the body up to the yield without a loop turn.
        step = self._gen.asend(None)
        try:
            step.send(None)
        except StopIteration:
            pass

    async def _guard(self, close: Callable[[], Awaitable[None]]) -> AsyncGenerator[None, None]:
        try:
            yield
        finally:
            if self._armed and _loop_running():
                self._armed = False
                try:
                    await close()
                except Exception:  # noqa: BLE001 - best effort while the loop shuts down
                    pass

    def discard(self) -> None:
        """Finish the generator without running ``close`` (for a loop that is already closed)."""
        self._armed = False
        step = self._gen.aclose()
        try:
            step.send(None)
        except (StopIteration, RuntimeError):
            pass


def _loop_running() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def close_with_loop(close: Callable[[], Awaitable[None]]) -> LoopCloser:
    """Await ``close()`` when the running event loop shuts down its async generators
    (``asyncio.run``, ``asyncio.Runner``); must be called from a coroutine on that loop."""
    asyncio.get_running_loop()  # raises RuntimeError outside a running loop
    return LoopCloser(close)


__all__ = ["LoopCloser", "close_with_loop"]
