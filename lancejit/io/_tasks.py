"""Task helpers: run coroutines concurrently and leave nothing running on error or cancellation."""

from __future__ import annotations

import asyncio
from typing import Any, Awaitable, Iterable, TypeVar

T = TypeVar("T")


async def drain(tasks: Iterable[asyncio.Future[Any]]) -> None:
    """Cancel ``tasks`` and wait until every one has finished, even if we are cancelled meanwhile.

    A cancellation that arrives while draining is re-raised once the tasks are done.
    """
    pending = [t for t in tasks if not t.done()]
    for t in pending:
        t.cancel()
    cancelled = False
    while pending:
        try:
            await asyncio.wait(pending)
        except asyncio.CancelledError:
            cancelled = True
        pending = [t for t in pending if not t.done()]
    for t in tasks:  # mark exceptions as retrieved
        if t.done() and not t.cancelled():
            t.exception()
    if cancelled:
        raise asyncio.CancelledError()


async def gather_all(aws: Iterable[Awaitable[T]]) -> list[T]:
    """Like ``asyncio.gather`` but on the first failure (or our cancellation) cancel the others
    and wait for them before raising; results are in input order."""
    aws = list(aws)
    if not aws:
        return []
    if len(aws) == 1:  # no task needed: cancellation reaches the awaitable directly
        return [await aws[0]]
    tasks = [asyncio.ensure_future(a) for a in aws]
    try:
        done, pending = await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
    except BaseException:
        await drain(tasks)
        raise
    if pending:
        await drain(tasks)
    for t in tasks:  # the first failure in input order
        if t.done() and not t.cancelled():
            exc = t.exception()
            if exc is not None:
                raise exc
    return [t.result() for t in tasks]
