"""I/O counters: physical requests and bytes as issued to a storage backend.

Every :class:`~lancejit.io.store.ObjectStore` owns one :class:`IOStats`; schedulers may record
into extra ones (for example per scan).  A *request* is one call to the backend: one ``pread``
locally, one HTTP request on S3/GCS, one dictionary lookup in memory.  Bytes are payload bytes.
Latencies are in seconds and kept in a log2 histogram of microseconds (percentiles are bucket
upper bounds, so they over-estimate by at most 2x).

All methods are thread-safe.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

#: Histogram buckets: bucket ``i`` holds latencies in ``[2**(i-1), 2**i)`` microseconds
#: (bucket 0: below 1 us); the last bucket is open-ended (>= ~35 minutes).
N_LATENCY_BUCKETS = 32


def _bucket_of(seconds: float) -> int:
    micros = int(seconds * 1e6)
    if micros <= 0:
        return 0
    return min(micros.bit_length(), N_LATENCY_BUCKETS - 1)


@dataclass(frozen=True, slots=True)
class IOStatsSnapshot:
    """Counters at one moment (or their change over an interval, see :meth:`IOStats.incremental`).

    ``read_iops`` / ``write_iops``: physical read / write requests.  ``read_bytes`` /
    ``written_bytes``: payload bytes.  ``list_iops``: listing requests (one per page).
    ``meta_iops``: metadata requests (HEAD/stat/exists/delete).  ``latency_buckets``: request
    counts per log2-microsecond bucket (reads and writes).  ``pages_pruned`` / ``rows_pruned``:
    row groups a filtered scan skipped from statistics without any request -- batches of legacy
    files (one page of each column) or zones of zone-map indices -- and their rows.
    ``index_searches``: predicates answered by a scalar index (BTREE, BITMAP, LABEL_LIST);
    ``index_parts_loaded``: parts of scalar indices read from storage for them (page lookups,
    BTREE pages, bitmaps; parts already cached are not counted).
    """

    read_iops: int = 0
    read_bytes: int = 0
    write_iops: int = 0
    written_bytes: int = 0
    list_iops: int = 0
    meta_iops: int = 0
    latency_buckets: tuple[int, ...] = field(default=(0,) * N_LATENCY_BUCKETS)
    #: Row groups (legacy batches, zone-map zones) a filtered scan skipped from statistics, and their rows.
    pages_pruned: int = 0
    rows_pruned: int = 0
    index_searches: int = 0
    index_parts_loaded: int = 0

    @property
    def num_requests(self) -> int:
        """All requests of every kind."""
        return self.read_iops + self.write_iops + self.list_iops + self.meta_iops

    def latency_percentile(self, q: float) -> float:
        """Upper bound (seconds) of the bucket holding the ``q``-quantile (0 <= q <= 1); 0.0 if empty."""
        if not 0.0 <= q <= 1.0:
            raise ValueError(f"quantile must be in [0, 1], got {q}")
        total = sum(self.latency_buckets)
        if total == 0:
            return 0.0
        rank = max(1, int(q * total + 0.999999))
        seen = 0
        for i, count in enumerate(self.latency_buckets):
            seen += count
            if seen >= rank:
                return (1 << i) / 1e6
        return (1 << (N_LATENCY_BUCKETS - 1)) / 1e6

    def __sub__(self, other: "IOStatsSnapshot") -> "IOStatsSnapshot":
        return IOStatsSnapshot(
            self.read_iops - other.read_iops,
            self.read_bytes - other.read_bytes,
            self.write_iops - other.write_iops,
            self.written_bytes - other.written_bytes,
            self.list_iops - other.list_iops,
            self.meta_iops - other.meta_iops,
            tuple(a - b for a, b in zip(self.latency_buckets, other.latency_buckets)),
            self.pages_pruned - other.pages_pruned,
            self.rows_pruned - other.rows_pruned,
            self.index_searches - other.index_searches,
            self.index_parts_loaded - other.index_parts_loaded,
        )


class IOStats:
    """Thread-safe request/byte counters with a latency histogram."""

    __slots__ = ("_lock", "_read_iops", "_read_bytes", "_write_iops", "_written_bytes",
                 "_list_iops", "_meta_iops", "_buckets", "_last", "_pages_pruned", "_rows_pruned",
                 "_index_searches", "_index_parts")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._read_iops = 0
        self._read_bytes = 0
        self._write_iops = 0
        self._written_bytes = 0
        self._list_iops = 0
        self._meta_iops = 0
        self._pages_pruned = 0
        self._rows_pruned = 0
        self._index_searches = 0
        self._index_parts = 0
        self._buckets = [0] * N_LATENCY_BUCKETS
        self._last = IOStatsSnapshot()

    def record_pruned(self, pages: int, rows: int = 0) -> None:
        """Count ``pages`` (and ``rows``) a filtered scan skipped from statistics."""
        with self._lock:
            self._pages_pruned += pages
            self._rows_pruned += rows

    def record_index(self, searches: int = 0, parts: int = 0) -> None:
        """Count predicates answered by a scalar index and index parts read for them."""
        with self._lock:
            self._index_searches += searches
            self._index_parts += parts

    def record_read(self, nbytes: int, seconds: float | None = None, *, requests: int = 1) -> None:
        """Count ``requests`` physical reads returning ``nbytes`` bytes in total."""
        with self._lock:
            self._read_iops += requests
            self._read_bytes += nbytes
            if seconds is not None:
                self._buckets[_bucket_of(seconds)] += 1

    def record_write(self, nbytes: int, seconds: float | None = None, *, requests: int = 1) -> None:
        """Count ``requests`` physical writes sending ``nbytes`` bytes in total."""
        with self._lock:
            self._write_iops += requests
            self._written_bytes += nbytes
            if seconds is not None:
                self._buckets[_bucket_of(seconds)] += 1

    def record_list(self, requests: int = 1) -> None:
        """Count listing requests (one per page)."""
        with self._lock:
            self._list_iops += requests

    def record_meta(self, requests: int = 1) -> None:
        """Count metadata requests (HEAD, stat, delete)."""
        with self._lock:
            self._meta_iops += requests

    def snapshot(self) -> IOStatsSnapshot:
        """Totals since creation (or the last :meth:`reset`)."""
        with self._lock:
            return self._snapshot_locked()

    def incremental(self) -> IOStatsSnapshot:
        """Change since the previous ``incremental()`` call (or since creation/reset)."""
        with self._lock:
            now = self._snapshot_locked()
            delta = now - self._last
            self._last = now
            return delta

    def reset(self) -> None:
        """Zero every counter."""
        with self._lock:
            self._read_iops = self._read_bytes = self._write_iops = self._written_bytes = 0
            self._list_iops = self._meta_iops = 0
            self._pages_pruned = self._rows_pruned = 0
            self._index_searches = self._index_parts = 0
            self._buckets = [0] * N_LATENCY_BUCKETS
            self._last = IOStatsSnapshot()

    def _snapshot_locked(self) -> IOStatsSnapshot:
        return IOStatsSnapshot(
            self._read_iops,
            self._read_bytes,
            self._write_iops,
            self._written_bytes,
            self._list_iops,
            self._meta_iops,
            tuple(self._buckets),
            self._pages_pruned,
            self._rows_pruned,
            self._index_searches,
            self._index_parts,
        )

    def __repr__(self) -> str:
        s = self.snapshot()
        return (f"IOStats(read_iops={s.read_iops}, read_bytes={s.read_bytes}, write_iops={s.write_iops}, "
                f"written_bytes={s.written_bytes}, list_iops={s.list_iops}, meta_iops={s.meta_iops})")
