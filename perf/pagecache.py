"""Bring a dataset's files into the OS page cache before timing it.

The perf scripts alternate lancejit and the reference on the same rows: after memory pressure
(a test run, a big scan) has evicted a dataset's pages, whichever library reads a row first
pays the disk read and the other finds the page cached (seen here: lancejit's 1-row take,
timed first, 0.19 -> 0.56 ms with two blocking reads per take, the reference's unchanged).
Reading every file once beforehand makes both measure their own work on a warm cache.
"""

from __future__ import annotations

import os


def warm(path: str, chunk: int = 8 << 20) -> int:
    """Read every file under ``path`` once (``chunk`` bytes at a time); returns the bytes read."""
    total = 0
    buf = bytearray(chunk)
    for root, _, files in os.walk(path):
        for name in files:
            with open(os.path.join(root, name), "rb", buffering=0) as f:
                while n := f.readinto(buf):
                    total += n
    return total
