"""Letting the C heap keep the memory of freed scan buffers (glibc only).

A scan allocates its read buffers, decode scratch and output arrays with NumPy, i.e. glibc's
``malloc``.  By default glibc serves blocks above a dynamic threshold (128 KiB at first) with
fresh ``mmap`` mappings and gives the top of the heap back to the system as soon as 128 KiB are
free there, so every scan writes to fresh pages: one page fault per 4 KiB, a large share of a
small scan's time.  With blocks up to 32 MiB from the heap and up to 64 MiB of free heap kept, a
repeated scan writes mostly to pages already mapped and takes a fraction of the page faults
(``perf/scan.py`` counts them).  The reference's allocator keeps freed memory the same way.

:func:`keep_scan_buffers` sets those two limits once per process, at the first scan or the first
batched open of 32 or more data files (a fresh 64 KiB tail buffer costs more in page faults
than its read), unless the
process chose its own (``MALLOC_MMAP_THRESHOLD_`` / ``MALLOC_TRIM_THRESHOLD_`` in the
environment) or ``LANCEJIT_MALLOC_TUNE=0``.  The cost: up to 64 MiB of freed memory stays
resident per heap instead of returning to the system.
"""

from __future__ import annotations

import os
import sys

from lancejit.core.config import settings

#: ``mallopt`` parameters (glibc ``malloc.h``).
M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
#: Blocks up to this size come from the heap (glibc's dynamic threshold stops at 32 MiB too).
MMAP_THRESHOLD_BYTES = 32 << 20
#: Free memory kept at the top of a heap before it is returned to the system.
TRIM_THRESHOLD_BYTES = 64 << 20

_done = False


def keep_scan_buffers() -> bool:
    """Set glibc's mmap and trim thresholds once per process (see the module docstring);
    True when they were set by this call."""
    global _done
    if _done:
        return False
    _done = True
    env = os.environ
    if not settings().malloc_tune or "MALLOC_MMAP_THRESHOLD_" in env \
            or "MALLOC_TRIM_THRESHOLD_" in env or not sys.platform.startswith("linux"):
        return False
    try:
        if not os.confstr("CS_GNU_LIBC_VERSION"):
            return False
        import ctypes

        mallopt = ctypes.CDLL(None).mallopt
    except (AttributeError, OSError, ValueError):  # not glibc
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    return bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES)) and bool(
        mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD_BYTES))


__all__ = ["keep_scan_buffers"]
