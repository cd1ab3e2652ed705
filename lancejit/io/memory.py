"""``memory://`` store: a process-wide dictionary of immutable ``bytes``.

``memory://NAME/key`` addresses object ``key`` of namespace ``NAME``; every
:class:`MemoryStore` sees the same process-wide objects (stores differ only in config and
stats).  A namespace can be started afresh (:meth:`MemoryStore.renewed`: a new generation; the
reference gives each call its own memory store, so creating a dataset at a memory URI always
starts empty there): stores opened afterwards see the new generation, stores opened before keep
the objects they saw.  Each range read, tail read, put or delete counts as one request.  Meant for tests
and scratch data; it honours the same semantics as the other stores (atomic
``put_if_absent``, writers invisible until closed).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterable, Sequence

from lancejit.core.config import CLOUD_IO, IOConfig
from lancejit.core.errors import AlreadyExistsError, InvalidInputError, NotFoundError
from lancejit.io.stats import IOStats
from lancejit.io.store import AsyncWriter, Buffer, ObjectInfo, ObjectStore, check_ranges, past_eof

if TYPE_CHECKING:
    import numpy as np


@dataclass(frozen=True, slots=True)
class _Entry:
    data: bytes
    mtime: float
    version: int


_LOCK = threading.Lock()
_OBJECTS: dict[str, _Entry] = {}
_VERSION = [0]
#: The current generation of each renewed namespace (absent: generation 0).
_GENERATIONS: dict[str, int] = {}


def _next_version() -> int:
    _VERSION[0] += 1
    return _VERSION[0]


def clear_memory_objects(prefix: str = "") -> None:
    """Drop every memory object whose full key (``NAME/key``) starts with ``prefix``."""
    with _LOCK:
        for key in [k for k in _OBJECTS if k.startswith(prefix)]:
            del _OBJECTS[key]


class MemoryStore(ObjectStore):
    """Objects of namespace ``name`` (``memory://name/...``); paths are keys without a leading ``/``."""

    scheme = "memory"
    serial_batches = True

    def __init__(self, name: str = "", config: IOConfig = CLOUD_IO, stats: IOStats | None = None,
                 generation: int | None = None) -> None:
        super().__init__(config, stats)
        self.name = name
        self.generation = _GENERATIONS.get(name, 0) if generation is None else generation
        self._prefix = name if self.generation == 0 else f"{name}\x00{self.generation}"

    def is_current(self) -> bool:
        """True when this store sees its namespace's current generation."""
        return self.generation == _GENERATIONS.get(self.name, 0)

    def renewed(self) -> "MemoryStore":
        """A store of a new, empty generation of this namespace (the current one from now on)."""
        with _LOCK:
            gen = _GENERATIONS[self.name] = _GENERATIONS.get(self.name, 0) + 1
        return MemoryStore(self.name, self.config, None, gen)

    def _key(self, path: str) -> str:
        path = path.strip("/")
        if not self._prefix:
            return path
        return f"{self._prefix}/{path}" if path else self._prefix

    def uri(self, path: str) -> str:
        path = path.strip("/")
        shown = f"{self.name}/{path}" if self.name and path else (self.name or path)
        return f"memory://{shown}"

    def _get(self, path: str) -> _Entry:
        entry = _OBJECTS.get(self._key(path))
        if entry is None:
            raise NotFoundError(f"{self.uri(path)}: object not found")
        return entry

    # -------------------------------------------------------------------------------- reads
    async def read_ranges(self, path: str, ranges: Sequence[tuple[int, int]]) -> list[memoryview]:
        ranges = check_ranges(ranges)
        out: list[memoryview] = []
        entry: _Entry | None = None
        for start, end in ranges:
            if end == start:
                out.append(memoryview(b""))
                continue
            t0 = time.perf_counter()
            if entry is None:
                entry = self._get(path)
            view = memoryview(entry.data)
            if end > len(view):
                raise past_eof(self.uri(path), start, end, len(view))
            out.append(view[start:end])
            self.stats.record_read(end - start, time.perf_counter() - t0)
        return out

    def read_files_into(self, files: Sequence[tuple[str, list[list[int]]]], out: np.ndarray) -> int:
        """Copy, for every ``(path, reads)``, each ``[source, start, end, position]`` of ``reads``
        (half-open byte range) into ``out[position:position + end - start]``; one request per
        read (as :meth:`read_ranges` counts them).  Returns the requests made."""
        t0 = time.perf_counter()
        done = nreq = 0
        try:
            for path, reads in files:
                data = memoryview(self._get(path).data)
                size = len(data)
                for _, start, end, at in reads:
                    if end > size:
                        raise past_eof(self.uri(path), start, end, size)
                    out[at:at + end - start] = data[start:end]
                    done += end - start
                    nreq += 1
        finally:
            if nreq:
                self.stats.record_read(done, time.perf_counter() - t0, requests=nreq)
        return nreq

    async def read_tail(self, path: str, nbytes: int) -> tuple[int, memoryview]:
        if nbytes < 0:
            raise InvalidInputError(f"read_tail needs nbytes >= 0, got {nbytes}")
        t0 = time.perf_counter()
        data = self._get(path).data
        n = min(nbytes, len(data))
        self.stats.record_read(n, time.perf_counter() - t0)
        return len(data), memoryview(data)[len(data) - n:]

    async def size(self, path: str) -> int:
        self.stats.record_meta()
        return len(self._get(path).data)

    async def exists(self, path: str) -> bool:
        self.stats.record_meta()
        return self._key(path) in _OBJECTS

    async def list(self, prefix: str = "", *, recursive: bool = True) -> list[ObjectInfo]:
        self.stats.record_list()
        base = self._key(prefix)
        base = base + "/" if base else ""
        cut = len(self._prefix) + 1 if self._prefix else 0
        with _LOCK:
            items = [(k, e) for k, e in _OBJECTS.items() if k.startswith(base)]
        out = [
            ObjectInfo(k[cut:], len(e.data), e.mtime, str(e.version))
            for k, e in items
            if recursive or "/" not in k[len(base):]
        ]
        out.sort(key=lambda info: info.path)
        return out

    # ------------------------------------------------------------------------------- writes
    async def put(self, path: str, data: Buffer) -> None:
        t0 = time.perf_counter()
        payload = bytes(data)
        with _LOCK:
            _OBJECTS[self._key(path)] = _Entry(payload, time.time(), _next_version())
        self.stats.record_write(len(payload), time.perf_counter() - t0)

    async def put_if_absent(self, path: str, data: Buffer) -> None:
        t0 = time.perf_counter()
        payload = bytes(data)
        key = self._key(path)
        with _LOCK:
            if key in _OBJECTS:
                self.stats.record_write(0, time.perf_counter() - t0)
                raise AlreadyExistsError(f"{self.uri(path)}: object already exists")
            _OBJECTS[key] = _Entry(payload, time.time(), _next_version())
        self.stats.record_write(len(payload), time.perf_counter() - t0)

    async def delete(self, path: str) -> None:
        self.stats.record_meta()
        with _LOCK:
            _OBJECTS.pop(self._key(path), None)

    async def delete_many(self, paths: Iterable[str]) -> None:
        for path in paths:
            await self.delete(path)

    async def open_writer(self, path: str) -> AsyncWriter:
        return MemoryWriter(self, path)


class MemoryWriter(AsyncWriter):
    """Collects bytes; ``close`` publishes them with one ``put``."""

    def __init__(self, store: MemoryStore, path: str) -> None:
        self.store = store
        self.path = path
        self._buf = bytearray()
        self.bytes_written = 0
        self._state = "open"

    async def write(self, data: Buffer) -> None:
        if self._state != "open":
            raise InvalidInputError(f"{self.path}: writer is {self._state}")
        view = memoryview(data).cast("B")
        self._buf += view
        self.bytes_written += len(view)

    async def close(self) -> None:
        if self._state == "closed":
            return
        if self._state != "open":
            raise InvalidInputError(f"{self.path}: writer is {self._state}")
        await self.store.put(self.path, self._buf)
        self._buf = bytearray()
        self._state = "closed"

    async def abort(self) -> None:
        if self._state == "open":
            self._state = "aborted"
            self._buf = bytearray()
