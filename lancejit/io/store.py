"""The object-store interface every backend implements (local files, memory, S3, GCS).

Paths are store-relative strings: an absolute filesystem path for the local store, the key
inside the bucket for memory/S3/GCS (no leading slash).  Build child paths with ``/``
(:func:`join_path`).  ``lancejit.io.open_store(uri)`` returns the store and the path of a URI.

Byte ranges are half-open ``(start, end)`` pairs, in bytes from the object's start.

Errors: a missing object raises :class:`~lancejit.core.errors.NotFoundError` (also a
``FileNotFoundError``); a range past the end of the object raises
:class:`~lancejit.core.errors.CorruptFileError`; an existing target of :meth:`ObjectStore.put_if_absent`
raises :class:`~lancejit.core.errors.AlreadyExistsError`; every other backend failure
(directories, permissions, network) raises :class:`~lancejit.core.errors.StoreError`.

Every physical request a store issues is counted in its :class:`~lancejit.io.stats.IOStats`.
"""

from __future__ import annotations

import asyncio
import weakref
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Protocol, Sequence, TypeVar, runtime_checkable

from lancejit.core.config import IOConfig
from lancejit.core.ranges import ByteRange
from lancejit.core.errors import (
    AlreadyExistsError,
    CorruptFileError,
    InvalidInputError,
    LanceJitError,
    NotFoundError,
    StoreError,
)
from lancejit.io.loop_close import close_with_loop
from lancejit.io.stats import IOStats

T = TypeVar("T")

#: Key of a loop's :class:`~lancejit.io.loop_close.LoopCloser` in its per-loop state.
_CLOSER = "_closer"

#: Bytes-like payloads accepted by ``put`` / ``write``.
Buffer = bytes | bytearray | memoryview


@dataclass(frozen=True, slots=True)
class ObjectInfo:
    """One listed object: store path, size in bytes, modification time (seconds since the
    epoch, ``None`` if unknown) and an opaque version tag (ETag/generation, ``None`` if unknown)."""

    path: str
    size: int
    mtime: float | None = None
    etag: str | None = None


def join_path(base: str, *parts: str) -> str:
    """``base`` and ``parts`` joined by single ``/`` separators (``base`` may be empty)."""
    out = base.rstrip("/")
    for part in parts:
        part = part.strip("/")
        if part:
            out = f"{out}/{part}" if out else part
    return out


def check_ranges(ranges: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    """Validate half-open ``(start, end)`` ranges (pairs or ``ByteRange``): ints, ``0 <= start <= end``."""
    out: list[tuple[int, int]] = []
    for rng in ranges:
        try:
            if isinstance(rng, ByteRange):
                start, end = rng.start, rng.end
            else:
                start, end = rng
            start, end = int(start), int(end)
        except (TypeError, ValueError):
            raise InvalidInputError(f"byte range must be a (start, end) pair of ints, got {rng!r}") from None
        if start < 0 or end < start:
            raise InvalidInputError(f"invalid byte range [{start}, {end})")
        out.append((start, end))
    return out


def past_eof(path: str, start: int, end: int, size: int | None) -> CorruptFileError:
    """The error for a range that ends after the object does."""
    where = f" (object size {size})" if size is not None else ""
    return CorruptFileError(f"byte range [{start}, {end}) is past the end of the object{where}", path=path)


def translate_error(exc: BaseException, path: str) -> BaseException:
    """Map a backend exception to lancejit's hierarchy (lancejit errors and cancellations pass through)."""
    if isinstance(exc, (LanceJitError, asyncio.CancelledError)) or not isinstance(exc, Exception):
        return exc
    if isinstance(exc, FileNotFoundError):
        err: LanceJitError = NotFoundError(f"{path}: object not found")
    elif isinstance(exc, FileExistsError):
        err = AlreadyExistsError(f"{path}: object already exists")
    elif isinstance(exc, IsADirectoryError):
        err = StoreError(f"{path}: is a directory, not an object")
    elif isinstance(exc, PermissionError):
        err = StoreError(f"{path}: permission denied ({exc})")
    else:
        err = StoreError(f"{path}: {type(exc).__name__}: {exc}")
    err.__cause__ = exc
    return err


class AsyncWriter(ABC):
    """A streaming write of one object.

    Nothing is visible at the destination until :meth:`close` succeeds; :meth:`abort` (or an
    exception inside ``async with``) discards everything written.  ``bytes_written`` counts
    bytes accepted by :meth:`write`.
    """

    path: str
    bytes_written: int

    @abstractmethod
    async def write(self, data: Buffer) -> None:
        """Append ``data`` (copied or sent before returning; the caller may reuse its buffer)."""

    @abstractmethod
    async def close(self) -> None:
        """Finish the upload and publish the object.  Idempotent once it succeeded."""

    @abstractmethod
    async def abort(self) -> None:
        """Discard the upload; nothing appears at the destination.  Idempotent."""

    async def __aenter__(self) -> "AsyncWriter":
        return self

    async def __aexit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            await self.close()
        else:
            await self.abort()


#: Every store alive in the process (weakly held), so sessions can be closed at exit.
_LIVE_STORES: "weakref.WeakSet[ObjectStore]" = weakref.WeakSet()


def register_for_close(obj: Any) -> None:
    """Have :func:`aclose_all_stores` also ``await obj.aclose()`` (weakly held): for clients
    other than stores that keep sessions on lancejit's loop (e.g. an external manifest store)."""
    _LIVE_STORES.add(obj)


async def aclose_all_stores() -> None:
    """``aclose()`` every live store on the running loop (sessions, pools); errors ignored.

    :mod:`lancejit.io.sync` runs this on its loop at interpreter exit, so HTTP sessions opened
    by synchronous APIs are closed instead of warning ("Unclosed client session").
    """
    for store in list(_LIVE_STORES):
        try:
            await store.aclose()
        except Exception:  # noqa: BLE001 - best effort at shutdown
            pass


class ObjectStore(ABC):
    """Asynchronous access to one namespace of objects (a filesystem, a bucket, a memory prefix).

    ``config`` holds the scheduler settings for this store, ``stats`` counts its physical
    requests.  ``serial_batches`` tells the scheduler how :meth:`read_ranges` runs: ``True`` when a
    whole batch is served one range after another by one worker (local files, memory), so a
    batch occupies one slot of the IOPS budget; ``False`` when each range is its own concurrent
    request (S3, GCS).
    """

    scheme: str = ""
    serial_batches: bool = False
    #: True when reads are network requests answered on the event loop (S3, GCS): a file
    #: reader's range read then reads and decodes each column on its own (a column decodes in
    #: a worker thread once its bytes are in, while the loop keeps receiving the others'; see
    #: ``lancejit.file.reader.AsyncLanceFileReader.read_range``).
    decode_off_loop: bool = False
    #: False for a store without atomic put-if-absent (storage option ``conditional_put="disabled"``):
    #: plain commits refuse; commits go through an external manifest store instead.
    conditional_put: bool = True
    #: ``s3+ddb://`` stores: the :class:`~lancejit.io.registry.ExternalManifestConfig` of the
    #: DynamoDB table commits go through (None: commits use :meth:`put_if_absent`).
    external_manifest: Any = None
    #: True when per-loop state holds sessions: they are closed when their loop shuts down
    #: (``asyncio.run`` / ``asyncio.Runner`` per call; see :mod:`lancejit.io.loop_close`).
    closes_with_loop: bool = False

    def __init__(self, config: IOConfig, stats: IOStats | None = None) -> None:
        self.config = config
        self.stats = stats if stats is not None else IOStats()
        _LIVE_STORES.add(self)
        self._per_loop: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, Any]] = (
            weakref.WeakKeyDictionary()
        )

    # ------------------------------------------------------------------ per-event-loop state
    def loop_local(self, key: str, factory: Callable[[], T]) -> T:
        """State of this store bound to the running event loop (created by ``factory`` once per loop).

        Sessions, semaphores and scheduler queues belong to one loop; this keeps one per loop.
        """
        loop = asyncio.get_running_loop()
        slots = self._per_loop.get(loop)
        if slots is None:
            # Per-loop state references its loop (sessions, futures), so the weak keys alone
            # never expire: drop the state of closed loops when a new loop shows up.
            for old in [lp for lp in self._per_loop if lp.is_closed()]:
                closer = self._per_loop.pop(old).get(_CLOSER)
                if closer is not None:
                    closer.discard()
            slots = self._per_loop[loop] = {}
            if self.closes_with_loop:
                state = slots
                slots[_CLOSER] = close_with_loop(lambda: self._close_loop_state(state))
        value = slots.get(key)
        if value is None:
            value = slots[key] = factory()
        return value

    # ------------------------------------------------------------------------------- naming
    @abstractmethod
    def uri(self, path: str) -> str:
        """The full URI of ``path`` (``s3://bucket/key``, ``file:///abs/path``, ...)."""

    # -------------------------------------------------------------------------------- reads
    @abstractmethod
    async def read_ranges(self, path: str, ranges: Sequence[tuple[int, int]]) -> list[memoryview]:
        """Read half-open byte ranges of ``path``: one read-only buffer per range, in order.

        One call is one batch; the store decides the physical requests (no coalescing here:
        use :class:`~lancejit.io.scheduler.FileScheduler` for that).  Zero-length ranges cost no
        request.  Raises ``CorruptFileError`` if a range ends past the object's end.
        """

    @abstractmethod
    async def read_tail(self, path: str, nbytes: int) -> tuple[int, memoryview]:
        """Read the last ``nbytes`` bytes (all of it if smaller) in one request.

        Returns ``(object_size, data)``; ``data`` starts at ``object_size - len(data)``.
        """

    async def read_all(self, path: str) -> memoryview:
        """The whole object (one request)."""
        size, data = await self.read_tail(path, 1 << 62)
        return data

    @abstractmethod
    async def size(self, path: str) -> int:
        """Object size in bytes (one metadata request)."""

    @abstractmethod
    async def exists(self, path: str) -> bool:
        """True when an object exists at ``path`` (directories/prefixes are not objects)."""

    @abstractmethod
    async def list(self, prefix: str = "", *, recursive: bool = True) -> list[ObjectInfo]:
        """Objects under the directory ``prefix`` (``"a/b"`` lists ``a/b/...``), sorted by path.

        ``recursive=False`` returns only the objects directly inside ``prefix``.  A missing
        prefix gives an empty list.  One listing (one request per result page).
        """

    # ------------------------------------------------------------------------------- writes
    @abstractmethod
    async def put(self, path: str, data: Buffer) -> None:
        """Write the whole object, replacing any existing one atomically."""

    @abstractmethod
    async def put_if_absent(self, path: str, data: Buffer) -> None:
        """Create the object only if nothing exists at ``path`` (atomic); else ``AlreadyExistsError``."""

    @abstractmethod
    async def delete(self, path: str) -> None:
        """Delete the object; deleting a missing object is not an error."""

    async def delete_many(self, paths: Iterable[str]) -> None:
        """Delete several objects (missing ones are ignored)."""
        for path in paths:
            await self.delete(path)

    @abstractmethod
    async def open_writer(self, path: str) -> AsyncWriter:
        """Start a streaming write of ``path`` (published by ``close()``, discarded by ``abort()``)."""

    def is_current(self) -> bool:
        """False when this (cached) store no longer serves its URI: a memory store of a renewed
        namespace (:meth:`~lancejit.io.memory.MemoryStore.renewed`); other stores always do."""
        return True

    async def aclose(self) -> None:
        """Release sessions/threads bound to the running event loop (the store stays usable)."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        slots = self._per_loop.get(loop)
        if slots:
            await self._close_loop_state(slots)

    async def _close_loop_state(self, slots: dict[str, Any]) -> None:
        """Close and remove what ``slots`` (one loop's state) holds that needs closing; runs on
        that loop, from :meth:`aclose` or when the loop shuts down (``closes_with_loop``).
        The base store holds nothing that needs closing."""
        return None

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.uri('')!r})"


@runtime_checkable
class StreamingStore(Protocol):
    """A store that hands out a range's bytes as they arrive (S3)."""

    async def read_streaming(self, path: str, start: int, end: int, progress: Any) -> memoryview:
        """Bytes ``[start, end)`` of ``path`` in one request; ``progress(view, filled)`` is called
        as they arrive (``view`` the whole read-only buffer, ``filled`` its bytes so far)."""
        ...


__all__ = [
    "AsyncWriter",
    "aclose_all_stores",
    "Buffer",
    "ObjectInfo",
    "ObjectStore",
    "StreamingStore",
    "check_ranges",
    "join_path",
    "past_eof",
    "translate_error",
]
