"""One read call for byte ranges of several files (the multi-file take).

:func:`read_files` takes physical reads already coalesced per file (``(file, start, end)``,
half-open byte ranges) and returns their bytes concatenated, in order, as ONE ``uint8`` array:

* files whose bytes a reader already holds (``reader.whole``: a small data file read whole by
  its open) are copied from memory, no request;
* on a store that reads in the caller's thread (local files up to ``inline_read_bytes`` per
  batch -- ``scattered`` batches of small reads, a take's, up to :data:`SCATTERED_FACTOR` times
  that: their many ``preadv`` calls cost less inline than handed to workers --, memory), every
  other read is one inline loop over the files (``store.read_files_into``:
  one ``preadv`` per read locally, on the file's cached descriptor; none for a range inside the
  footer tail its open read, see :mod:`lancejit.io.fd_cache`) when the store's budgets are free;
* otherwise (object stores, large or contended batches) each file's reads go through its own
  scheduler (``reader.read_ranges``: the store's budgets, concurrency, retries), all files at
  once, and are copied into place.

Each reader's ``stats`` (the dataset's counters) and the store's own stats count the same
requests and bytes as the files' schedulers would.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from lancejit.io._tasks import gather_all
from lancejit.io.scheduler import io_queue
from lancejit.io.store import past_eof


@dataclass(frozen=True, slots=True)
class FileSource:
    """One file of a multi-file read: its ``RangeReader`` (used when the store does not read
    inline), ``store`` and path in it, the ``stats`` its requests count in, and ``whole``: the
    file's bytes when already held in memory (then reads make no request)."""

    reader: Any
    store: Any
    path: str
    stats: Any
    whole: Any = None

    @classmethod
    def of(cls, reader: Any) -> "FileSource":
        """The source of a file scheduler (or a wrapper with ``store``, ``store_path``, ``stats``
        and optionally ``whole``)."""
        return cls(reader, reader.store, reader.store_path, getattr(reader, "stats", None),
                   getattr(reader, "whole", None))


#: Reads of at most this many bytes on average make a batch "scattered" (see the module docstring).
SCATTERED_READ_BYTES = 64 * 1024
#: A scattered batch reads inline up to this many times the store's ``inline_read_bytes``.
SCATTERED_FACTOR = 16


async def read_files(sources: Sequence[FileSource], reads: np.ndarray, nbytes: int, *,
                     priority: int = 0, scattered: bool = False) -> np.ndarray:
    """The bytes of ``reads`` (``(m, 4)`` int64 rows ``(source index, start, end, position)``:
    half-open byte ranges sorted by source, coalesced, and where each goes in the result; the
    positions are the running sum of the lengths) as one ``uint8`` array of ``nbytes`` bytes.
    ``scattered``: the reads serve a take (many small reads; see the module docstring)."""
    out = np.empty(nbytes, dtype=np.uint8)
    rows = reads.tolist()
    pending: list[tuple[FileSource, list[list[int]]]] = []
    store = None
    same = True
    inline_bytes = 0
    a, m = 0, len(rows)
    while a < m:  # one part per source (rows of one source are consecutive)
        r = rows[a][0]
        b = a + 1
        while b < m and rows[b][0] == r:
            b += 1
        part = rows[a:b]
        src = sources[r]
        if src.whole is not None:
            _copy_from(src, part, out)
        else:
            if store is None:
                store = src.store
            elif src.store is not store:
                same = False
            pending.append((src, part))
            last = part[-1]
            inline_bytes += last[3] + last[2] - last[1] - part[0][3]
        a = b
    if not pending:
        return out
    assert store is not None  # the store of the first pending source
    inline = getattr(store, "read_files_into", None) if same else None
    limit = getattr(store, "inline_read_bytes", inline_bytes)
    if scattered and len(rows) and inline_bytes <= SCATTERED_READ_BYTES * len(rows):
        limit *= SCATTERED_FACTOR
    if inline is not None and inline_bytes <= limit:
        queue = io_queue(store)
        if queue.try_take(inline_bytes):
            try:
                t0 = time.perf_counter()
                got = inline([(src.path, part) for src, part in pending], out)
            finally:
                queue.give_back(inline_bytes)
            # requests, or (requests, bytes read) when some ranges were served from memory
            nreq, nread = got if isinstance(got, tuple) else (got, inline_bytes)
            _count(pending, nread, nreq, time.perf_counter() - t0)
            return out
    await gather_all(_through_scheduler(src, part, out, priority) for src, part in pending)
    return out


async def read_tails(readers: Sequence[Any], nbytes: int) -> list[Any]:
    """For every file scheduler of ``readers`` (:class:`~lancejit.io.scheduler.FileScheduler`
    or anything with ``store``, ``store_path``, ``stats`` and ``read_tail``): ``(size, last
    min(nbytes, size) bytes)``, or the error reading it raised (an ``Exception``: the caller
    raises it with the file named).  Cancellation propagates.

    On a store reading in the caller's thread (local files: ``store.read_tails_inline``) when
    its byte budget is free, ONE inline loop (one request per file, no task per file);
    otherwise every file's ``read_tail`` through its scheduler, all at once (the store's queue
    bounds how many run).  The requests count in each reader's ``stats`` as the schedulers'
    would (once per batch when they share one stats object)."""
    if not readers:
        return []
    store = readers[0].store
    inline = getattr(store, "read_tails_inline", None)
    if inline is not None and nbytes <= getattr(store, "inline_read_bytes", 0) and all(
            r.store is store for r in readers):
        total = nbytes * len(readers)
        queue = io_queue(store)
        if queue.try_take(total):
            try:
                t0 = time.perf_counter()
                got = inline([r.store_path for r in readers], nbytes)
            finally:
                queue.give_back(total)
            seconds = time.perf_counter() - t0
            first = readers[0].stats
            if all(r.stats is first for r in readers):
                ok = [g[1] for g in got if type(g) is tuple]
                if first is not None and ok:
                    first.record_read(sum(len(t) for t in ok), seconds, requests=len(ok))
            else:  # pragma: no cover - readers of one batch counted in several places
                for r, g in zip(readers, got):
                    if type(g) is tuple and r.stats is not None:
                        r.stats.record_read(len(g[1]), seconds)
            return got

    async def one(reader: Any) -> Any:
        try:
            return await reader.read_tail(nbytes)
        except Exception as exc:
            return exc

    return list(await gather_all(one(r) for r in readers))


def _count(pending: list[tuple[FileSource, list[list[int]]]], nbytes: int, nreq: int, seconds: float) -> None:
    """Record an inline batch in the sources' stats (once when they share one stats object)."""
    first = pending[0][0].stats
    for src, _ in pending:
        if src.stats is not first:
            break
    else:
        if first is not None and nreq:
            first.record_read(nbytes, seconds, requests=nreq)
        return
    for src, part in pending:  # pragma: no cover - files of one take counted in several places
        if src.stats is not None:
            src.stats.record_read(sum(e - s for _, s, e, _ in part), seconds, requests=len(part))


def _copy_from(src: FileSource, part: list[list[int]], out: np.ndarray) -> None:
    whole = src.whole
    n = len(whole)
    for _, s, e, p in part:
        if e > n:
            raise past_eof(src.store.uri(src.path), s, e, n)
        out[p:p + e - s] = whole[s:e]


async def _through_scheduler(src: FileSource, part: list[list[int]], out: np.ndarray, priority: int) -> None:
    bufs = await src.reader.read_ranges([(s, e) for _, s, e, _ in part], priority=priority)
    for (_, s, e, p), buf in zip(part, bufs):
        out[p:p + e - s] = np.frombuffer(buf, dtype=np.uint8)


__all__ = ["FileSource", "read_files", "read_tails"]
