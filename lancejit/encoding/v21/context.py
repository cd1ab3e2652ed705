"""What every 2.1/2.2 page reader of one leaf column shares: I/O, schema path and caches."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any, Callable, Generator, Sequence, TypeVar

import pyarrow as pa

from lancejit.core.cores import idle_core, off_loop_if_idle
from lancejit.core.errors import CorruptFileError
from lancejit.core.ranges import RangeReader
from lancejit.encoding.v21.repdef import CanonicalLevels

T = TypeVar("T")
#: A step generator: yields absolute byte ranges, receives their buffers, returns a result
#: (the protocol of :mod:`lancejit.encoding.v20.steps`).
Steps = Generator[list, list, Any]


def _resume(gen: Steps, bufs: list) -> tuple[bool, Any]:
    """``gen.send(bufs)`` as ``(finished, next request or result)`` (StopIteration cannot
    cross a thread/future boundary)."""
    try:
        return False, gen.send(bufs)
    except StopIteration as stop:
        return True, stop.value

#: Below this many bytes of decode input, decoding runs inline instead of in a worker thread.
INLINE_DECODE_BYTES = 64 * 1024
#: Read-merging gap for readers that do not expose a coalescing block size.
DEFAULT_GAP_BYTES = 4 * 1024


@dataclass(slots=True)
class ColumnContext:
    """One physical column of a 2.1/2.2 file.

    ``value_type``: Arrow type of the values stored in the column (the leaf type, or the whole
    struct for packed structs, or the binary type of a blob field).
    ``canon``: canonical rep/def numbering of the column's schema path.
    ``cache``: the file's metadata cache (``FileMetadata.cache``) or None.
    ``file_size``: bytes, for bounds checks (0 = unknown).
    """

    reader: RangeReader
    path: str
    column_index: int
    canon: CanonicalLevels
    value_type: pa.DataType
    cache: Any = None
    file_size: int = 0
    version: str = "2.1"
    field_metadata: dict = field(default_factory=dict)

    @property
    def gap_bytes(self) -> int:
        """Bytes up to which neighbouring reads of a take share one range: the reader's own
        coalescing block size (4 KiB local, 64 KiB cloud), so merging here never reads more
        than the scheduler would merge anyway; 4 KiB when the reader does not say."""
        config = getattr(self.reader, "config", None)
        return int(getattr(config, "block_size", DEFAULT_GAP_BYTES))

    def check_ranges(self, ranges: Sequence[tuple[int, int]]) -> None:
        """CorruptFileError unless every absolute half-open byte range lies inside the file."""
        for s, e in ranges:
            if s < 0 or e < s or (self.file_size and e > self.file_size):
                raise CorruptFileError(f"byte range [{s}, {e}) outside the file", path=self.path)

    def check_buffers(self, ranges: Sequence[tuple[int, int]], bufs: Sequence[Any]) -> None:
        """CorruptFileError unless one buffer of the right length came back per range."""
        if len(bufs) != len(ranges):
            raise CorruptFileError(f"{len(bufs)} buffers read for {len(ranges)} ranges", path=self.path)
        for (s, e), b in zip(ranges, bufs):
            if len(b) != e - s:
                raise CorruptFileError(f"short read of [{s}, {e}): {len(b)} bytes", path=self.path)

    async def read(self, ranges: Sequence[tuple[int, int]], priority: int = 0) -> list[memoryview]:
        """Read absolute half-open byte ranges in ONE scheduler call (so they coalesce)."""
        if not ranges:
            return []
        self.check_ranges(ranges)
        bufs = await self.reader.read_ranges(list(ranges), priority=priority)
        self.check_buffers(ranges, bufs)
        return bufs

    def read_steps(self, ranges: Sequence[tuple[int, int]]) -> Steps:
        """One I/O step of a step generator: ``bufs = yield from ctx.read_steps(ranges)``
        yields the absolute half-open byte ranges (none when empty) and returns their
        buffers, checked like :meth:`read`."""
        if not ranges:
            return []
        ranges = list(ranges)
        self.check_ranges(ranges)
        bufs = yield ranges
        self.check_buffers(ranges, bufs)
        return bufs

    async def drive(self, gen: Steps, priority: int = 0) -> Any:
        """Run step generator ``gen`` on this column's reader (one ``read_ranges`` per step).

        Each resumption decodes what the step read: it runs in a worker thread when the step
        brought at least :data:`INLINE_DECODE_BYTES`, inline otherwise.
        """
        try:
            req = next(gen)
        except StopIteration as stop:
            return stop.value
        while True:
            bufs = list(await self.reader.read_ranges(req, priority=priority)) if req else []
            nbytes = 0
            for b in bufs:
                nbytes += len(b)
            if nbytes < INLINE_DECODE_BYTES or not idle_core():
                try:
                    req = gen.send(bufs)
                except StopIteration as stop:
                    return stop.value
            else:
                finished, value = await asyncio.to_thread(_resume, gen, bufs)
                if finished:
                    return value
                req = value

    def cached_value(self, key: Any) -> Any:
        """The value cached under ``key`` (None if absent or no cache), for step generators."""
        return self.cache_get(key)

    async def decode(self, nbytes: int, fn: Callable[..., T], *args: Any) -> T:
        """Run ``fn(*args)`` off the event loop when the input is large (``nbytes``)."""
        if nbytes < INLINE_DECODE_BYTES:
            return fn(*args)
        return await off_loop_if_idle(fn, *args)

    async def cached(self, key: Any, loader: Callable[[], Any], nbytes: Callable[[Any], int]) -> Any:
        """The value cached under ``key`` in the file's metadata cache, loading it once with
        ``await loader()`` (concurrent callers share one load when the cache supports it)."""
        if self.cache is None:
            return await loader()
        get_or_load = getattr(self.cache, "get_or_load", None)
        if get_or_load is not None:
            return await get_or_load(key, loader, nbytes)
        value = self.cache_get(key)
        if value is None:
            value = await loader()
            self.cache_put(key, value, nbytes(value))
        return value

    def cache_get(self, key: Any) -> Any:
        if self.cache is None:
            return None
        try:
            return self.cache.get(key)
        except Exception:  # pragma: no cover - cache must never break reads
            return None

    def cache_put(self, key: Any, value: Any, nbytes: int) -> None:
        if self.cache is None:
            return
        try:
            self.cache.put(key, value, nbytes)
        except Exception:  # pragma: no cover
            pass
