"""The search cache: decoded file metadata and per-file decoder state, LRU-bounded in bytes.

Keys.  Every open reads the file's last 64 KiB in one request anyway; the key of a file's
contents is ``(uri, file size, SHA-256 digest of that tail)``.  The tail holds the footer, both
offset tables and - whenever the metadata fits, which is when a cached open saves anything but
parsing - the schema and every column's page list.  So a rewritten file gets a new key (and is
never served stale metadata) unless it keeps the same size *and* the same last 64 KiB; a cache
hit costs that one request and no parsing, also for files whose metadata is larger than the
tail (their second request is saved).  Decoder state (chunk words, dictionaries, repetition
indexes) is stored under the same key, so it goes with the metadata it was derived from.

Why not a version token (mtime, ETag, generation)?  None of them comes with the tail read on
every store, and asking costs a request per open.  Lance data files are write-once (UUID
names), so the digest only has to guard standalone files rewritten in place; a caller rewriting
files in place with identical size and tail (only page bytes changed) should pass a fresh
:class:`SearchCache` or call :meth:`SearchCache.clear`.

Sizes are in bytes.  All methods are thread-safe.
"""

from __future__ import annotations

import asyncio
import hashlib
import sys
import threading
from typing import Any, Awaitable, Callable, Hashable, TypeVar

import cachetools

from lancejit.core.config import METADATA_CACHE_BYTES

T = TypeVar("T")

#: Key of one file's contents: ``(uri, file size, digest of the tail bytes)``.
FileKey = tuple[str, int, bytes]

_METADATA = "__file_metadata__"


#: Bytes of the tail digested in the key of a write-once file (see :func:`file_key`).
IMMUTABLE_DIGEST_BYTES = 4096


def file_key(uri: str, file_size: int, tail: bytes | memoryview, *, immutable: bool = False) -> FileKey:
    """The cache key of the file ``uri`` of ``file_size`` bytes whose last bytes are ``tail``.

    ``immutable``: the file is write-once (a dataset's data file: the reference never rewrites
    one in place, new contents get a new UUID name), so only the last
    :data:`IMMUTABLE_DIGEST_BYTES` of the tail are digested (footer, offset tables and, for
    files of a few columns, all their metadata: a damaged footer still changes the key) -
    an order of magnitude less time per data file opened than digesting the whole tail.
    """
    # SHA-256 (hardware-accelerated where the CPU has SHA extensions): faster than BLAKE2b
    # over a 64 KiB tail, and a digest per data file opened is on the cold take path.
    if immutable and len(tail) > IMMUTABLE_DIGEST_BYTES:
        tail = memoryview(tail)[len(tail) - IMMUTABLE_DIGEST_BYTES:]
    return (uri, int(file_size), hashlib.sha256(tail).digest())


def estimate_nbytes(value: Any) -> int:
    """Rough memory footprint of a cached value in bytes (numpy/Arrow/bytes aware)."""
    nbytes = getattr(value, "nbytes", None)
    if isinstance(nbytes, int):
        return nbytes + 64
    if isinstance(value, (bytes, bytearray, memoryview)):
        return len(value) + 64
    size_hint = getattr(value, "cache_nbytes", None)
    if isinstance(size_hint, int):
        return size_hint
    metadata_nbytes = getattr(value, "metadata_nbytes", None)
    if isinstance(metadata_nbytes, int):
        # Decoded protobufs and Python objects take several times their wire size.
        return 8 * metadata_nbytes + 1024
    if isinstance(value, (tuple, list)):
        return 56 + sum(estimate_nbytes(v) for v in value)
    if isinstance(value, dict):
        return 232 + sum(estimate_nbytes(k) + estimate_nbytes(v) for k, v in value.items())
    return sys.getsizeof(value)


class SearchCache:
    """A process-wide (or caller-owned) LRU cache bounded by ``capacity_bytes``.

    Holds, per file key, the parsed ``FileMetadata`` and any decoder state, each entry sized
    separately so the bound stays honest as decoders add state.
    """

    def __init__(self, capacity_bytes: int = METADATA_CACHE_BYTES) -> None:
        self.capacity_bytes = int(capacity_bytes)
        # values are stored as they are (no wrapper object per entry): the size of the value
        # being inserted is handed to the LRU through ``_next_size`` (set under the lock)
        self._next_size = 1
        self._lru: cachetools.LRUCache = cachetools.LRUCache(
            maxsize=max(1, self.capacity_bytes), getsizeof=self._size_of
        )
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def _size_of(self, value: Any) -> int:
        return self._next_size

    # -- generic entries -------------------------------------------------------------------
    def get(self, key: Hashable) -> Any | None:
        with self._lock:
            value = self._lru.get(key)
            if value is None:
                self.misses += 1
                return None
            self.hits += 1
            return value

    def put(self, key: Hashable, value: Any, nbytes: int | None = None) -> None:
        """Insert ``value`` (not None); an entry larger than the whole capacity is simply not kept."""
        size = max(1, int(estimate_nbytes(value) if nbytes is None else nbytes))
        if size > self._lru.maxsize or value is None:
            return
        with self._lock:
            self._next_size = size
            self._lru[key] = value

    def clear(self) -> None:
        with self._lock:
            self._lru.clear()
            self.hits = self.misses = 0

    @property
    def size_bytes(self) -> int:
        """Bytes currently accounted for by the entries."""
        return int(self._lru.currsize)

    def __len__(self) -> int:
        return len(self._lru)

    # -- files -----------------------------------------------------------------------------
    def file(self, key: FileKey) -> "FileCache":
        """The view of this cache holding the state of the file contents ``key``."""
        return FileCache(self, key)

    def get_metadata(self, key: FileKey) -> Any | None:
        return self.get((key, _METADATA))

    def put_metadata(self, key: FileKey, metadata: Any) -> None:
        size = getattr(metadata, "metadata_nbytes", None)
        # (decoded protobufs and Python objects take several times their wire size)
        self.put((key, _METADATA), metadata, 8 * size + 1024 if isinstance(size, int) else estimate_nbytes(metadata))


#: Guards the in-flight loads of every :class:`FileCache` (one lock, held for a dict update).
_FLIGHTS_LOCK = threading.Lock()


class FileCache:
    """Decoder state of one file's contents, stored in a :class:`SearchCache`.

    Keys are any hashable chosen by the decoder, e.g. ``("miniblock-meta", column, page)``.
    Values may be evicted at any time; :meth:`get_or_load` reloads them.
    """

    __slots__ = ("_cache", "_key", "_inflight")

    def __init__(self, cache: SearchCache | None = None, key: Hashable = None) -> None:
        self._cache = cache if cache is not None else SearchCache()
        self._key = key
        #: Loads in flight (made by the first :meth:`get_or_load`: a file whose decoders never
        #: load through it keeps no dict), guarded by the module's ``_FLIGHTS_LOCK``.
        self._inflight: dict[tuple[int, Hashable], asyncio.Future] | None = None

    def get(self, key: Hashable) -> Any | None:
        """The cached value for ``key``, or ``None``."""
        return self._cache.get((self._key, key))

    def put(self, key: Hashable, value: Any, nbytes: int | None = None) -> None:
        """Store ``value`` (``nbytes``: its memory footprint; estimated when omitted)."""
        self._cache.put((self._key, key), value, nbytes)

    async def get_or_load(
        self,
        key: Hashable,
        loader: Callable[[], Awaitable[T]],
        nbytes: Callable[[T], int] | None = None,
    ) -> T:
        """The value for ``key``, awaiting ``loader()`` once if absent.

        Concurrent callers on the same event loop share one load (``loader`` must not return
        ``None``, which reads as "absent").  ``nbytes(value)`` gives the
        value's footprint in bytes (estimated when omitted).
        """
        loop = asyncio.get_running_loop()
        flight_key = (id(loop), key)
        while True:
            value = self.get(key)
            if value is not None:
                return value
            with _FLIGHTS_LOCK:
                inflight = self._inflight
                if inflight is None:
                    inflight = self._inflight = {}
                waiting = inflight.get(flight_key)
                if waiting is None:  # this call loads
                    fut = loop.create_future()
                    inflight[flight_key] = fut
            if waiting is None:
                break
            try:
                return await asyncio.shield(waiting)
            except asyncio.CancelledError:
                task = asyncio.current_task()
                if task is not None and task.cancelling():
                    raise
                # The loading task was cancelled, not us: try again (maybe as the owner).
        try:
            value = await loader()
        except BaseException as exc:
            with _FLIGHTS_LOCK:
                inflight.pop(flight_key, None)
            if isinstance(exc, asyncio.CancelledError):
                fut.cancel()
            else:
                fut.set_exception(exc)
                fut.exception()  # mark retrieved: waiters (if any) re-raise it
            raise
        self.put(key, value, None if nbytes is None else nbytes(value))
        with _FLIGHTS_LOCK:
            inflight.pop(flight_key, None)
        fut.set_result(value)
        return value


_default_cache: SearchCache | None = None
_default_lock = threading.Lock()


def default_cache() -> SearchCache:
    """The process-wide search cache (bounded by the ``metadata_cache_bytes`` knob)."""
    global _default_cache
    if _default_cache is None:
        with _default_lock:
            if _default_cache is None:
                _default_cache = SearchCache(METADATA_CACHE_BYTES)
    return _default_cache


__all__ = ["IMMUTABLE_DIGEST_BYTES", "FileCache", "FileKey", "SearchCache", "default_cache", "estimate_nbytes", "file_key"]
