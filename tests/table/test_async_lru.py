"""AsyncLRU: one load per key for concurrent callers, errors and cancellation shared."""

import asyncio

import pytest

from lancejit.core.errors import NotFoundError
from lancejit.table.meta.context import AsyncLRU


def test_concurrent_callers_share_one_load() -> None:
    calls = []

    async def main() -> list[int]:
        lru = AsyncLRU(4)
        gate = asyncio.Event()

        async def load() -> int:
            calls.append(1)
            await gate.wait()
            return 7

        tasks = [asyncio.ensure_future(lru.get("k", load)) for _ in range(5)]
        await asyncio.sleep(0)
        gate.set()
        got = await asyncio.gather(*tasks)
        got.append(await lru.get("k", load))  # cached
        return got

    assert asyncio.run(main()) == [7] * 6
    assert len(calls) == 1


def test_error_reaches_every_waiter_and_is_not_cached() -> None:
    async def main() -> None:
        lru = AsyncLRU(4)
        gate = asyncio.Event()

        async def bad() -> int:
            await gate.wait()
            raise NotFoundError("missing")

        tasks = [asyncio.ensure_future(lru.get("k", bad)) for _ in range(3)]
        await asyncio.sleep(0)
        gate.set()
        res = await asyncio.gather(*tasks, return_exceptions=True)
        assert all(isinstance(r, NotFoundError) for r in res)

        async def good() -> int:
            return 3

        assert await lru.get("k", good) == 3

    asyncio.run(main())


def test_cancelled_loader_cancels_waiters_then_reloads() -> None:
    async def main() -> None:
        lru = AsyncLRU(4)

        async def slow() -> int:
            await asyncio.sleep(10)
            return 1

        first = asyncio.ensure_future(lru.get("k", slow))
        await asyncio.sleep(0)
        second = asyncio.ensure_future(lru.get("k", slow))
        await asyncio.sleep(0)
        first.cancel()
        with pytest.raises(asyncio.CancelledError):
            await first
        with pytest.raises(asyncio.CancelledError):
            await second

        async def quick() -> int:
            return 2

        assert await lru.get("k", quick) == 2

    asyncio.run(main())
