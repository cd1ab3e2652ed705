"""The sync bridge: one loop thread, usable from any plain thread."""

from __future__ import annotations

import asyncio
import threading

import pytest

from lancejit.io import sync
from lancejit.io.sync import run_sync


async def _loop_thread_name() -> str:
    await asyncio.sleep(0)
    return threading.current_thread().name


def test_run_sync_returns_result():
    assert run_sync(_loop_thread_name()) == "lancejit-io-loop"


def test_run_sync_from_many_threads():
    results: list[tuple[int, str]] = []
    errors: list[BaseException] = []

    def worker(i: int) -> None:
        try:
            async def job() -> tuple[int, str]:
                await asyncio.sleep(0.001)
                return i, threading.current_thread().name

            results.append(run_sync(job()))
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert sorted(i for i, _ in results) == list(range(16))
    assert {name for _, name in results} == {"lancejit-io-loop"}  # one loop thread for all


def test_exceptions_reraised_unchanged():
    err = KeyError("exact object")

    async def fail():
        raise err

    with pytest.raises(KeyError) as info:
        run_sync(fail())
    assert info.value is err

    async def fail_timeout():
        raise TimeoutError("from the coroutine")

    with pytest.raises(TimeoutError, match="from the coroutine"):
        run_sync(fail_timeout())


def test_called_from_loop_thread_raises():
    async def nested():
        return run_sync(_loop_thread_name())

    with pytest.raises(RuntimeError, match="event-loop thread"):
        run_sync(nested())


def test_timeout_cancels_coroutine():
    cancelled = threading.Event()

    async def slow():
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    with pytest.raises(TimeoutError):
        run_sync(slow(), timeout=0.05)
    assert cancelled.wait(5)


def test_works_from_inside_another_event_loop():
    async def outer():
        # blocking call from a foreign loop's thread is allowed (it blocks that loop)
        return run_sync(_loop_thread_name())

    assert asyncio.run(outer()) == "lancejit-io-loop"
    assert sync.get_loop() is sync.get_loop()


def test_rejects_non_coroutines():
    with pytest.raises(TypeError):
        run_sync(lambda: 1)  # type: ignore[arg-type]
