"""The one sync-to-async bridge of lancejit.

lancejit's I/O is asyncio.  Synchronous APIs call :func:`run_sync`, which runs the coroutine
on a single daemon thread that owns one event loop for the whole process (started lazily on
first use, restarted if it died, e.g. after ``fork``).  Stores cache per-loop state (HTTP
sessions, scheduler queues), so running everything on this one loop keeps sessions reused.

For stores whose reads are local system calls (local files, memory: :func:`runs_inline`),
``run_sync(coro, store=store)`` runs the coroutine in the CALLER's thread instead, on a loop
owned by that thread (:func:`run_here`): no thread hop, same async code, planner and kernels.
The coroutine is first driven directly (``coro.send``) with that loop marked running; a take
whose reads complete inline finishes without one event-loop iteration.  When it does suspend
(a worker-thread read, a gather of tasks), the rest runs as a task on the thread's loop.
Object stores keep the bridge thread (their sessions live on its loop).

Calling :func:`run_sync` from the loop thread itself would deadlock; it raises
:class:`RuntimeError` instead.  Calling it from a thread that runs some *other* event loop works
(the calling thread blocks until the result is ready) but blocks that loop: async callers should
``await`` the coroutine directly.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import contextvars
import functools
import inspect
import os
import threading
from typing import Any, AsyncGenerator, Callable, Concatenate, Coroutine, Iterator, ParamSpec, TypeVar

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
            if _loop is not None and _pid != os.getpid():
                _inherited.append(_loop)  # a forked child: never close (or collect) the parent's loop
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


#: Store schemes whose reads are local system calls or memory copies: run in the caller's thread.
INLINE_SCHEMES = frozenset({"file", "memory"})


def runs_inline(store: Any) -> bool:
    """True when synchronous calls on ``store`` run in the caller's thread (local, memory)."""
    return getattr(store, "scheme", None) in INLINE_SCHEMES


def uri_runs_inline(uri: Any) -> bool:
    """True when ``uri`` names a local path, ``file://`` or ``memory://`` object."""
    text = str(uri)
    return "://" not in text or text.startswith(("file://", "memory://"))


class _LocalHint:
    """Stands for "a local or memory store" where the store is not opened yet."""

    scheme = "file"


_LOCAL_HINT = _LocalHint()


def store_hint(uri: Any) -> Any:
    """What to pass as ``run_sync(..., store=)`` for work on ``uri`` before its store is open:
    a stand-in local store when ``uri`` is local or in memory (run in the caller's thread), else
    None (the bridge)."""
    return _LOCAL_HINT if uri_runs_inline(uri) else None


#: Bumped in a forked child: loops made before the fork belong to the parent.
_generation = 0
#: A forked child's inherited loops, kept alive so that they are never closed (or collected,
#: which closes them) there: their epoll instance is shared with the parent, and closing
#: unregisters the parent's wake-up pipe from it (the parent's loop would then sleep forever).
_inherited: list[Any] = []


class _ThreadLoop:
    """The event loop of one caller thread (closed when the thread's locals are collected,
    only in the process that created it)."""

    __slots__ = ("loop", "pid", "generation", "__weakref__")

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.pid = os.getpid()
        self.generation = _generation

    def __del__(self) -> None:
        try:
            if self.pid == os.getpid() and not self.loop.is_closed() and not self.loop.is_running():
                self.loop.close()
        except BaseException:  # noqa: BLE001 - never fail in a finalizer
            pass


_local = threading.local()


def thread_loop() -> asyncio.AbstractEventLoop:
    """The calling thread's own event loop for :func:`run_here` (created on first use)."""
    holder = getattr(_local, "holder", None)
    if holder is None or holder.generation != _generation or holder.loop.is_closed():
        if holder is not None and holder.generation != _generation:
            _inherited.append(holder)  # the parent's loop: never closed here
        holder = _local.holder = _ThreadLoop()
    return holder.loop


def _after_fork_in_child() -> None:
    """Loops made before a fork are not reused (nor closed) by the child (runs between fork
    and exec too, so it only bumps a counter)."""
    global _generation
    _generation += 1


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


class _Resume:
    """Awaitable continuing a coroutine that was started outside a task and suspended on
    ``first`` (an asyncio future): waits for each future it yields, forwards cancellation."""

    __slots__ = ("coro", "first")

    def __init__(self, coro: Coroutine[Any, Any, T], first: Any) -> None:
        self.coro, self.first = coro, first

    def __await__(self):
        coro, fut = self.coro, self.first
        while True:
            try:
                yield fut
            except BaseException as exc:  # cancellation (or an error thrown in): pass it on
                try:
                    fut = coro.throw(exc)
                except StopIteration as stop:
                    return stop.value
                continue
            try:
                fut = coro.send(None)
            except StopIteration as stop:
                return stop.value


async def _finish(coro: Coroutine[Any, Any, T], first: Any) -> T:
    return await _Resume(coro, first)


def run_here(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` in the calling thread on the thread's own loop (:func:`thread_loop`).

    The caller must not be running an event loop.  The coroutine runs directly with the loop
    marked running; if it suspends, the rest runs as a task of that loop until it completes.
    Callbacks it scheduled (``call_soon``) run before returning.
    """
    loop = thread_loop()
    asyncio._set_running_loop(loop)
    try:
        first = coro.send(None)
    except StopIteration as stop:
        asyncio._set_running_loop(None)
        # callbacks it scheduled: run them now
        if loop._ready:  # type: ignore[attr-defined]  # the loop's private queue: not in typeshed
            loop.run_until_complete(_noop())
        return stop.value
    except BaseException:
        asyncio._set_running_loop(None)
        raise
    asyncio._set_running_loop(None)
    if first is not None and not getattr(first, "_asyncio_future_blocking", False):  # None: sleep(0)
        coro.close()
        raise RuntimeError(f"coroutine yielded {first!r}, not an asyncio future")
    task = loop.create_task(_finish(coro, first))
    try:
        return loop.run_until_complete(task)
    except BaseException:
        if not task.done():  # KeyboardInterrupt: cancel and let it clean up
            task.cancel()
            try:
                loop.run_until_complete(task)
            except BaseException:  # noqa: BLE001
                pass
        raise


async def _noop() -> None:
    return None


def _submit(coro: Coroutine[Any, Any, T], loop: asyncio.AbstractEventLoop) -> concurrent.futures.Future:
    """``asyncio.run_coroutine_threadsafe``, the task running in a copy of the caller's
    :mod:`contextvars` context (so configuration overrides made around a sync call hold on the
    I/O loop too)."""
    ctx = contextvars.copy_context()
    future: concurrent.futures.Future = concurrent.futures.Future()

    def start() -> None:
        if future.cancelled():
            coro.close()
            return
        task = loop.create_task(coro, context=ctx)

        def done(t: asyncio.Task) -> None:
            if t.cancelled():
                future.cancel()
            elif future.set_running_or_notify_cancel():
                exc = t.exception()
                if exc is not None:
                    future.set_exception(exc)
                else:
                    future.set_result(t.result())

        def cancel_task(f: concurrent.futures.Future) -> None:
            if f.cancelled():
                loop.call_soon_threadsafe(task.cancel)

        task.add_done_callback(done)
        future.add_done_callback(cancel_task)

    loop.call_soon_threadsafe(start)
    return future


def run_sync(coro: Coroutine[Any, Any, T], timeout: float | None = None, *, store: Any = None) -> T:
    """Run ``coro`` and return its result (exceptions re-raised as is).

    On the I/O loop thread, unless ``store`` is a local or memory store (:func:`runs_inline`),
    no ``timeout`` is given and the calling thread runs no event loop: then in the caller's
    thread (:func:`run_here`).

    ``timeout`` (seconds) cancels the coroutine and raises :class:`TimeoutError` when exceeded.
    A ``KeyboardInterrupt`` in the caller cancels the coroutine too.
    """
    if not asyncio.iscoroutine(coro):
        raise TypeError(f"run_sync needs a coroutine, got {type(coro).__name__}")
    # (the bridge's own thread always has a running loop, so it never takes the inline path)
    if store is not None and timeout is None and runs_inline(store) and asyncio._get_running_loop() is None:
        return run_here(coro)
    if in_loop_thread():
        coro.close()
        raise RuntimeError(
            "lancejit.io.sync.run_sync() called from lancejit's own event-loop thread; "
            "await the coroutine instead of calling a synchronous lancejit API from async code"
        )
    loop = get_loop()
    future = _submit(coro, loop)
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


def iter_sync(agen: AsyncGenerator[T, None], *, store: Any = None) -> Iterator[T]:
    """Iterate the async generator ``agen`` synchronously: each item is fetched with
    :func:`run_sync` -- in the caller's thread on its own loop when ``store`` is a local or
    memory store (as :func:`run_sync` runs such work; work ``agen`` left running, e.g. reads
    ahead, goes on while the next item is fetched), else on the I/O loop thread.

    When the returned iterator finishes, fails or is closed early, ``agen`` is closed the same
    way (skipped when the iterator is collected on the loop thread itself, which cannot block).
    An inline iterator closed from another thread (engines pulling batches from their own
    threads drop it there; the thread that read ahead may be gone with its loop) is closed on
    that thread's loop: work left on a closed loop cannot be stopped any more and is let go.
    """

    async def step() -> Any:
        try:
            return await agen.__anext__()
        except StopAsyncIteration:
            return _END

    here = store is not None and runs_inline(store) and asyncio._get_running_loop() is None
    hint = store if here else None
    thread = threading.get_ident()
    try:
        while True:
            item = run_sync(step(), store=hint)
            if item is _END:
                return
            yield item
    finally:
        if here:  # agen ran on caller threads' own loops
            if asyncio._get_running_loop() is None:
                if threading.get_ident() == thread:
                    run_sync(agen.aclose(), store=hint)
                else:
                    try:
                        run_sync(agen.aclose(), store=hint)
                    except RuntimeError:  # its read-ahead belongs to a loop closed with its thread
                        pass
        elif not in_loop_thread():
            run_sync(agen.aclose())


P = ParamSpec("P")
R = TypeVar("R")


def bridged(async_method: Callable[Concatenate[Any, P], Coroutine[Any, Any, R]], *, via: str | None = None,
            store: str = "store") -> Callable[Concatenate[Any, P], R]:
    """The synchronous face of ``async_method``, one way for every class of lancejit::

        class Dataset(DatasetReader):
            to_table = bridged(DatasetReader.to_table_async)

        class LanceFileReader:
            read_all = bridged(AsyncLanceFileReader.read_all, via="_inner")

    The sync method calls ``async_method`` on ``self`` (or on ``self.<via>``) through
    :func:`run_sync`: in the caller's thread when that object's ``<store>`` is a local or memory
    store, on the I/O loop otherwise.  It carries the async method's docstring and signature, and
    its name without the ``_async`` suffix."""
    name = async_method.__name__

    def method(self: Any, *args: P.args, **kwargs: P.kwargs) -> R:
        target = self if via is None else getattr(self, via)
        return run_sync(getattr(target, name)(*args, **kwargs), store=getattr(target, store, None))

    functools.update_wrapper(method, async_method)
    method.__name__ = name.removesuffix("_async")
    method.__qualname__ = method.__qualname__.removesuffix("_async")
    return method


def async_methods_without_twin(cls: type) -> list[str]:
    """Public ``*_async`` coroutine methods of ``cls`` that have no synchronous ``name`` (a test
    keeps this empty for every public class)."""
    out = []
    for attr in dir(cls):
        if attr.startswith("_") or not attr.endswith("_async"):
            continue
        if isinstance(inspect.getattr_static(cls, attr), classmethod):  # constructors: functions instead
            continue
        if inspect.iscoroutinefunction(getattr(cls, attr)) and not hasattr(cls, attr[: -len("_async")]):
            out.append(attr)
    return out

__all__ = ["async_methods_without_twin", "bridged", "get_loop", "in_loop_thread", "iter_sync", "run_here", "run_sync", "runs_inline", "shutdown", "thread_loop",
           "uri_runs_inline", "store_hint"]
