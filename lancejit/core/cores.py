"""Whether a core is idle: worker threads pay off only then.

When other processes keep every core busy, a worker thread gets the core (and the GIL) late:
work handed to it finishes later than the handing thread would have finished it itself, and the
hand-offs cost CPU of their own (scan decodes and a compaction's per-column encoding alike).
"""

from __future__ import annotations

import asyncio
import os
import time
from typing import Any, Callable, TypeVar

T = TypeVar("T")

#: Seconds a reading of ``/proc/loadavg`` is reused.
CHECK_INTERVAL = 0.05

_checked = -1.0
_idle = True


def idle_core_now() -> bool:
    """Whether a core is idle besides the calling thread's (Linux: the kernel's count of
    runnable threads in ``/proc/loadavg`` is at most the calling thread plus ``cpus - 2``;
    elsewhere assumed)."""
    try:
        with open("/proc/loadavg", "rb") as fh:
            running = int(fh.read().split()[3].split(b"/")[0])
    except (OSError, ValueError, IndexError):
        return True
    return running - 1 <= (os.cpu_count() or 1) - 2


def idle_core() -> bool:
    """:func:`idle_core_now`, read at most every :data:`CHECK_INTERVAL` seconds."""
    global _checked, _idle
    now = time.perf_counter()
    if now - _checked >= CHECK_INTERVAL:
        _checked = now
        _idle = idle_core_now()
    return _idle


async def off_loop_if_idle(fn: Callable[..., T], *args: Any) -> T:
    """``fn(*args)`` in a worker thread while a core is idle (the event loop keeps reading and
    decoding meanwhile), else in the calling thread."""
    if idle_core():
        return await asyncio.to_thread(fn, *args)
    return fn(*args)


__all__ = ["CHECK_INTERVAL", "idle_core", "idle_core_now", "off_loop_if_idle"]
