"""Subprocess bodies (multiprocessing, spawn) for test_external_store.py: importable by name."""

from __future__ import annotations

import os

import numpy as np
import pyarrow as pa

ROWS = 3
APPENDS = 10


def batch(first: int, n: int = ROWS) -> pa.Table:
    ids = np.arange(first, first + n, dtype=np.int64)
    return pa.table({"id": ids, "s": pa.array([f"r{i}" for i in ids])})


def appender(engine: str, uri: str, opts: dict, writer: int, barrier, out) -> None:
    """``APPENDS`` appends of ``ROWS`` rows each (ids from ``writer * 100 * ROWS``) by ``engine``
    (``"lancejit"`` or ``"lance"``, the reference), started together at ``barrier``."""
    os.environ.setdefault("LANCE_LOG", "error")
    if engine == "lance":
        import lance as mod
    else:
        import lancejit as mod

    barrier.wait(timeout=120)
    versions = []
    for i in range(APPENDS):
        ds = mod.write_dataset(batch((writer * 100 + i) * ROWS), uri, mode="append", storage_options=opts)
        versions.append(ds.version)
    out.put((engine, writer, versions))


def die_before_finalize(uri: str, opts: dict, first: int) -> None:
    """Append ``batch(first)`` but die (exit code 3) right after the version was claimed in the
    external store, before the staged manifest is copied to its final name."""
    import lancejit
    from lancejit.table.meta import external_store

    def killed(*args, **kwargs):
        os._exit(3)

    external_store.finalize = killed
    lancejit.write_dataset(batch(first), uri, mode="append", storage_options=opts)
