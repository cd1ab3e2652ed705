"""Kernels compiled in the background: no call waits on Numba's compiler in a fresh installation.

When a kernel call meets a specialization the on-disk cache lacks (an installation where
``lancejit warmup`` never ran, or an upgrade), the lazy kernel (:mod:`.jit`) does not compile it
in the caller's thread.  It asks a background process to compile it (:func:`request`) and serves
the call with the kernel's interpreted version meanwhile (tier 0's Python twin; kernels declared
``interpret=False`` are compiled in the caller instead).  The process is ``python -m
lancejit.warm --background``: at a lower priority, it compiles the kernels this process asked for
first, then every other declared specialization, like ``lancejit warmup`` (one such process per
installation at a time, under a file lock; it finishes its work after the process that started it
exits, so the next process finds a complete cache).  Calls check the cache again at most every
:data:`RETRY_S` seconds and use the compiled code as soon as it is there; a kernel is swapped
into its importing modules once every declared specialization is in the cache.

Active only with the fast cache loader (:func:`lancejit.encoding.kernels.jit.numba`), and not
when ``LANCEJIT_BACKGROUND_COMPILE=0`` (kernels then compile on first use, in the caller).
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from typing import IO, Callable

from lancejit.core.config import settings

#: Seconds between two cache checks of a kernel whose specialization was missing.
RETRY_S = 0.25

#: Environment variable that turns background compilation off (``0``).
ENV = "LANCEJIT_BACKGROUND_COMPILE"

_LOCK = threading.Lock()
_proc: subprocess.Popen | None = None
_asked: set[str] = set()


def active(fast_loader: Callable[[], bool]) -> bool:
    """Whether misses go to the background process: not turned off, and ``fast_loader()`` (the
    caller's check that Numba is loaded with the fast cache loader) is true."""
    if not settings().background_compile:
        return False
    return fast_loader()


def request(kernel: str) -> None:
    """Ask the background process (started on first use) to compile ``kernel`` (module.qualname)
    next."""
    global _proc
    with _LOCK:
        if kernel in _asked and _proc is not None:
            return
        _asked.add(kernel)
        if _proc is None or _proc.poll() is not None:
            env = dict(os.environ)
            env[ENV] = "0"
            env.pop("NUMBA_DISABLE_JIT", None)
            try:
                _proc = subprocess.Popen([sys.executable, "-m", "lancejit.warm", "--background"],
                                         stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                         stderr=subprocess.DEVNULL, env=env, text=True,
                                         start_new_session=True)
            except OSError:
                return
            for name in sorted(_asked):
                _send(_proc.stdin, name)
            return
        _send(_proc.stdin, kernel)


def _send(pipe: IO[str] | None, kernel: str) -> None:
    if pipe is None:
        return
    try:
        pipe.write(kernel + "\n")
        pipe.flush()
    except (BrokenPipeError, OSError, ValueError):  # the process finished: the cache is complete
        pass


def process() -> subprocess.Popen | None:
    """The background process started by this process, if any (tests)."""
    return _proc


__all__ = ["ENV", "RETRY_S", "active", "process", "request"]
