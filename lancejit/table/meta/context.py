"""State shared by everything reading one version of a dataset, and error context.

``DatasetContext`` holds the store, the root, the manifest, the Arrow schema and the caches
(deletion vectors, row-id sequences, opened data files, the row-id index).  Caches that do not
depend on the version (deletion files, data files, row-id sequences: all immutable objects
named uniquely) are shared by every version checked out from the same dataset object.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, Hashable, Iterator

import pyarrow as pa

from lancejit.core.config import settings
from lancejit.core.errors import CorruptFileError, LanceJitError
from lancejit.io.scheduler import FileScheduler
from lancejit.io.stats import IOStats
from lancejit.io.store import ObjectStore, join_path

from .fields import TopField
from .manifest import DataFile, DeletionFile, Manifest
from .paths import confined_join, unsafe_reason


class AsyncLRU:
    """A small LRU of awaited values; concurrent loads of one key on one event loop share one
    task (values are plain objects, usable from any loop: sync calls run on lancejit's loop,
    ``*_async`` calls on the caller's)."""

    def __init__(self, capacity: int, max_bytes: int | None = None) -> None:
        self.capacity = capacity
        #: With ``max_bytes``, values are also weighed by their ``nbytes`` attribute (0 when
        #: absent) and the least recently used leave while the total is above it.
        self.max_bytes = max_bytes
        self.nbytes = 0
        self._items: OrderedDict[Hashable, Any] = OrderedDict()
        self._loading: dict[tuple[int, Hashable], asyncio.Future] = {}

    def _evict(self) -> None:
        items = self._items
        limit = self.max_bytes
        while len(items) > self.capacity or (limit is not None and self.nbytes > limit and len(items) > 1):
            _, old = items.popitem(last=False)
            if limit is not None:
                self.nbytes -= int(getattr(old, "nbytes", 0))

    def _add(self, key: Hashable, value: Any) -> None:
        self._items[key] = value
        if self.max_bytes is not None:
            self.nbytes += int(getattr(value, "nbytes", 0))
        self._evict()

    async def get(self, key: Hashable, load: Callable[[], Awaitable[Any]]) -> Any:
        if key in self._items:
            self._items.move_to_end(key)
            return self._items[key]
        slot = (id(asyncio.get_running_loop()), key)
        fut = self._loading.get(slot)
        if fut is None:
            fut = asyncio.ensure_future(load())
            self._loading[slot] = fut
            try:
                value = await fut
            finally:
                self._loading.pop(slot, None)
            if key not in self._items:
                self._add(key, value)
            return value
        return await asyncio.shield(fut)

    def peek(self, key: Hashable) -> Any:
        """The cached value of ``key`` (marked recently used), or None."""
        items = self._items
        value = items.get(key)
        if value is not None:
            items.move_to_end(key)
        return value

    def loading(self, key: Hashable) -> bool:
        """True when a :meth:`get` of ``key`` is loading it on the running event loop."""
        return (id(asyncio.get_running_loop()), key) in self._loading

    def grew(self, key: Hashable, value: Any, nbytes: int) -> None:
        """Weigh ``value``, cached under ``key``, ``nbytes`` more (a value filled over time,
        whose ``nbytes`` attribute has grown by as much); others may leave.  Nothing when
        ``value`` has left already."""
        items = self._items
        if self.max_bytes is None or items.get(key) is not value:
            return
        items.move_to_end(key)
        self.nbytes += nbytes
        self._evict()

    def put(self, key: Hashable, value: Any) -> Any:
        """Cache ``value`` under ``key`` unless a value is cached already; returns the cached
        one (for callers loading many keys at once, e.g. a batched open of data files)."""
        items = self._items
        got = items.get(key)
        if got is not None:
            items.move_to_end(key)
            return got
        self._add(key, value)
        return value


@dataclass(slots=True)
class WholeFileBudget:
    """How many bytes of small data files the open handles of one dataset may hold in memory.

    Spent once per file held (never returned when a handle leaves the cache: a conservative
    bound); once spent, further small files are read through the scheduler like any other."""

    limit: int = 256 * 1024 * 1024
    used: int = 0

    def take(self, nbytes: int) -> bool:
        """Reserve ``nbytes``; False (nothing reserved) when that would pass ``limit``."""
        if self.used + nbytes > self.limit:
            return False
        self.used += nbytes
        return True


@dataclass(slots=True)
class SharedCaches:
    """Caches valid across versions of one dataset (keys are immutable files)."""

    deletions: AsyncLRU = field(default_factory=lambda: AsyncLRU(4096))
    row_ids: AsyncLRU = field(default_factory=lambda: AsyncLRU(4096))
    #: Opened data files (footer + page tables; files of at most 64 KiB whole).  Sized for
    #: datasets of many small fragments: a take must not reopen files it touched recently.
    files: AsyncLRU = field(default_factory=lambda: AsyncLRU(16384))
    #: Bytes of small data files held whole by the handles in ``files`` (bounded: see
    #: :class:`WholeFileBudget`).
    whole_files: "WholeFileBudget" = field(default_factory=lambda: WholeFileBudget())
    row_id_index: AsyncLRU = field(default_factory=lambda: AsyncLRU(8))
    #: Per-version :class:`~.index.DatasetIndex` by manifest path.
    indexes: AsyncLRU = field(default_factory=lambda: AsyncLRU(32))
    #: Opened scalar indices (their lookups: BTREE page bounds, BITMAP keys) by index uuid.
    scalar_indices: AsyncLRU = field(default_factory=lambda: AsyncLRU(64))
    #: Loaded parts of scalar indices (BTREE pages, bitmaps) by (index uuid, part), bounded
    #: in bytes.
    index_parts: AsyncLRU = field(default_factory=lambda: AsyncLRU(1 << 20, max_bytes=settings().index_parts_bytes))
    #: Requests made on behalf of this dataset (all its checkouts), for ``Dataset.io_stats()``.
    stats: IOStats = field(default_factory=IOStats)


@dataclass(slots=True, weakref_slot=True)
class DatasetContext:
    """One checked-out version: where it is, what it holds, and its caches."""

    uri: str
    store: ObjectStore
    root: str
    manifest: Manifest
    manifest_path: str
    schema: pa.Schema
    top_fields: list[TopField]
    caches: SharedCaches
    storage_options: dict[str, str] | None = None
    #: The manifest's schema as a Lance field tree (ids of nested fields; None: not built).
    lance_schema: Any = None
    #: This version's :class:`~.index.DatasetIndex` once built (see :func:`.index.dataset_index`).
    index: Any = None
    #: The other checkout of this version the shared index serves (kept alive by this one:
    #: the index references its context weakly; see :func:`.index._adopt`), else None.
    index_owner: Any = None
    #: ``(root, root's data directory)`` once computed (see :meth:`data_file_location`).
    data_dir: tuple[str, str] | None = None

    @property
    def version(self) -> int:
        return self.manifest.version

    def base_location(self, base_id: int) -> tuple[ObjectStore, str, bool]:
        """``(store, root path, is_dataset_root)`` of base path ``base_id`` (shallow clones,
        multi-base datasets); the store is opened with this dataset's storage options."""
        for base in self.manifest.base_paths:
            if base.id == base_id:
                from lancejit.io import open_store

                store, path = open_store(base.path, self.storage_options)
                return store, path.rstrip("/"), base.is_dataset_root
        raise CorruptFileError(
            f"{self.describe_where(self.manifest_path)}: base path id {base_id} is not in the manifest"
        )

    def data_file_location(self, data_file: DataFile) -> tuple[ObjectStore, str]:
        """``(store, path)`` of a data file (``data/`` under the root or under its base path)."""
        if data_file.base_id is None:
            path = data_file.path
            got = self.data_dir
            if got is not None and got[0] == self.root and unsafe_reason(path) is None:
                return self.store, f"{got[1]}/{path}" if got[1] else path
            where = self.describe_where(self.manifest_path)
            data = confined_join(self.root, "data", what="data file path", where=where)
            self.data_dir = (self.root, data)
            return self.store, confined_join(data, path, what="data file path", where=where)
        where = self.describe_where(self.manifest_path)
        store, root, is_root = self.base_location(data_file.base_id)
        if is_root:
            return store, confined_join(root, "data", data_file.path, what="data file path", where=where)
        return store, confined_join(root, data_file.path, what="data file path", where=where)

    def data_file_path(self, data_file: DataFile) -> str:
        return self.data_file_location(data_file)[1]

    def deletion_file_location(self, fragment_id: int, deletion: DeletionFile) -> tuple[ObjectStore, str]:
        """``(store, path)`` of a fragment's deletion file."""
        rel = deletion.relative_path(fragment_id)
        if deletion.base_id is None:
            return self.store, join_path(self.root, rel)
        store, root, _ = self.base_location(deletion.base_id)
        return store, join_path(root, rel)

    @property
    def stats(self) -> IOStats:
        return self.caches.stats

    def reader(self, store: ObjectStore, path: str, size: int | None = None) -> FileScheduler:
        """A scheduled reader of ``path`` whose requests count in this dataset's stats."""
        return FileScheduler(store, path, stats=self.caches.stats, size=size)

    def path(self, relative: str) -> str:
        """Store path of a file the manifest names relative to the root (confined to it)."""
        return confined_join(self.root, relative, what="file path", where=self.describe_where(self.manifest_path))

    def describe_where(self, path: str | None = None, store: ObjectStore | None = None) -> str:
        where = f"dataset {self.uri} version {self.version}"
        if path is not None:
            where += f" file {(store or self.store).uri(path)}"
        return where

    @contextlib.contextmanager
    def errors(self, path: str | None = None, store: ObjectStore | None = None) -> Iterator[None]:
        """Re-raise lancejit errors with the dataset, version and file named in the message."""
        try:
            yield
        except LanceJitError as exc:
            if getattr(exc, "_lancejit_where", None):
                raise
            raise with_context(exc, self.describe_where(path, store)) from exc


def with_context(exc: LanceJitError, where: str) -> LanceJitError:
    """``exc`` re-created (same class) with ``where`` prefixed, once."""
    if getattr(exc, "_lancejit_where", None):
        return exc
    msg = f"{where}: {exc}"
    try:
        new = type(exc)(msg)
    except TypeError:
        new = LanceJitError(msg)
    new._lancejit_where = where  # type: ignore[attr-defined]  # a marker on this instance only
    if hasattr(exc, "path"):
        try:
            new.path = exc.path  # type: ignore[attr-defined]  # (the classes that have one)
        except AttributeError:
            pass
    return new
