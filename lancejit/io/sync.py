"""The one sync-to-async bridge of lancejit.

lancejit's I/O is asyncio.  Synchronous APIs call :func:`run_sync`, which runs the coroutine
on a single daemon thread that owns one event loop for the whole process (started lazily on
first use, restarted if it died, e.g. after ``fork``).  Stores cache per-loop state (HTTP
sessions, scheduler queues), so running everything on this one loop keeps sessions reused.

Calling :func:`run_sync` from the loop thread itself would deadlock; it raises
:class:`RuntimeError` instead.  Calling it from a thread that runs some *other* event loop works
(the calling thread blocks until the result is ready) but blocks that loop: async callers should
``await`` the coroutine directly.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import os
import threading
from typing import Any, AsyncIterator, Coroutine, Iterator, TypeVar

T = TypeVar("T")

_lock = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None
_thread: threading.Thread | None = None
_pid: int | None = None


def _run_loop(loop: asyncio.AbstractEventLoop, ready: threading.Event) -> None:
    asyncio.set_event_loop(loop)
    loop.call_soon(ready.set)
    loop.run_forever()


def get_loop() -> asyncio.AbstractEventLoop:
    """The bridge's event loop, starting its thread if needed."""
    global _loop, _thread, _pid
    with _lock:
        if _loop is None or _thread is None or not _thread.is_alive() or _pid != os.getpid():
            loop = asyncio.new_event_loop()
            ready = threading.Event()
            thread = threading.Thread(
                target=_run_loop, args=(loop, ready), name="lancejit-io-loop", daemon=True
            )
            thread.start()
            ready.wait()
            _loop, _thread, _pid = loop, thread, os.getpid()
            _register_shutdown()
        return _loop


_shutdown_registered = False

#: Seconds the exit hook waits for stores to close their sessions.
SHUTDOWN_TIMEOUT = 5.0


def _register_shutdown() -> None:
    global _shutdown_registered
    if not _shutdown_registered:
        _shutdown_registered = True
        atexit.register(shutdown)


def shutdown(timeout: float = SHUTDOWN_TIMEOUT) -> None:
    """Close every store's sessions and pools on the bridge loop (run at interpreter exit).

    Stores stay usable afterwards (they reopen sessions lazily).  Best effort: errors and a
    loop that does not answer within ``timeout`` seconds are ignored.
    """
    loop, thread = _loop, _thread
    if loop is None or thread is None or not thread.is_alive() or _pid != os.getpid() or in_loop_thread():
        return
    from lancejit.io.store import aclose_all_stores

    try:
        asyncio.run_coroutine_threadsafe(aclose_all_stores(), loop).result(timeout)
    except BaseException:  # noqa: BLE001 - never fail interpreter exit
        pass


def in_loop_thread() -> bool:
    """True when called from the bridge's event-loop thread."""
    return _thread is not None and threading.current_thread() is _thread


def run_sync(coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
    """Run ``coro`` on the I/O loop thread and return its result (exceptions re-raised as is).

    ``timeout`` (seconds) cancels the coroutine and raises :class:`TimeoutError` when exceeded.
    A ``KeyboardInterrupt`` in the caller cancels the coroutine too.
    """
    if not asyncio.iscoroutine(coro):
        raise TypeError(f"run_sync needs a coroutine, got {type(coro).__name__}")
    if in_loop_thread():
        coro.close()
        raise RuntimeError(
            "lancejit.io.sync.run_sync() called from lancejit's own event-loop thread; "
            "await the coroutine instead of calling a synchronous lancejit API from async code"
        )
    loop = get_loop()
    future = asyncio.run_coroutine_threadsafe(coro, loop)
    try:
        return future.result(timeout)
    except BaseException as exc:
        if future.done():
            raise  # the coroutine's own exception, unchanged
        future.cancel()
        if isinstance(exc, concurrent.futures.TimeoutError):
            raise TimeoutError(f"operation did not finish within {timeout} s") from None
        raise


_END = object()


def iter_sync(agen: AsyncIterator[T]) -> Iterator[T]:
    """Iterate the async generator ``agen`` synchronously: each item is fetched with
    :func:`run_sync` on the I/O loop thread.

    When the returned iterator finishes, fails or is closed early, ``agen`` is closed on the loop
    too (skipped when the iterator is collected on the loop thread itself, which cannot block).
    """

    async def step() -> Any:
        try:
            return await agen.__anext__()
        except StopAsyncIteration:
            return _END

    try:
        while True:
            item = run_sync(step())
            if item is _END:
                return
            yield item
    finally:
        if not in_loop_thread():
            run_sync(agen.aclose())


__all__ = ["get_loop", "in_loop_thread", "iter_sync", "run_sync", "shutdown"]
