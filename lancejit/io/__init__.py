"""Layer 1: object stores, the coalescing I/O scheduler, I/O stats and the sync bridge.

* :func:`open_store` — ``(store, path)`` for a URI (local path, ``file://``, ``memory://``,
  ``s3://``, ``gs://``/``gcs://``) and reference-style ``storage_options``.
* :class:`ObjectStore` — async reads (``read_ranges``, ``read_tail``), listing and atomic writes.
* :class:`FileScheduler` — implements :class:`lancejit.core.ranges.RangeReader` over a store.
* :class:`IOStats` — physical request/byte counters; :func:`run_sync` — the one sync bridge.

All byte ranges are half-open ``(start, end)`` in bytes.
"""

from lancejit.io.local import LocalStore, LocalWriter
from lancejit.io.planner import PhysicalRead, ReadPlan, Slice, assemble, merge_ranges, plan_reads
from lancejit.io.registry import clear_store_cache, open_store, parse_uri
from lancejit.io.scheduler import (
    FileScheduler,
    IOQueue,
    PriorityGate,
    ScanScheduler,
    io_queue,
    open_file,
    scheduler_for,
)
from lancejit.io.stats import IOStats, IOStatsSnapshot
from lancejit.io.store import AsyncWriter, ObjectInfo, ObjectStore, join_path
from lancejit.io.sync import run_sync

__all__ = [
    "AsyncWriter",
    "FileScheduler",
    "IOQueue",
    "IOStats",
    "IOStatsSnapshot",
    "LocalStore",
    "LocalWriter",
    "MemoryStore",
    "ObjectInfo",
    "ObjectStore",
    "PhysicalRead",
    "PriorityGate",
    "ReadPlan",
    "ScanScheduler",
    "Slice",
    "assemble",
    "clear_memory_objects",
    "clear_store_cache",
    "io_queue",
    "join_path",
    "merge_ranges",
    "open_file",
    "open_store",
    "parse_uri",
    "plan_reads",
    "run_sync",
    "scheduler_for",
]


def __getattr__(name: str):
    # S3Store / GCSStore import s3fs/gcsfs lazily (slow imports) on first access.
    if name == "S3Store":
        from lancejit.io.s3_store import S3Store

        return S3Store
    if name == "GCSStore":
        from lancejit.io.gcs_store import GCSStore

        return GCSStore
    if name in ("MemoryStore", "clear_memory_objects"):  # memory:// only: not loaded by local reads
        from lancejit.io import memory

        return getattr(memory, name)
    if name == "FsspecStore":
        from lancejit.io.fsspec_store import FsspecStore

        return FsspecStore
    raise AttributeError(f"module 'lancejit.io' has no attribute {name!r}")
