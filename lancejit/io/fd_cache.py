"""A small, bounded cache of open file descriptors (and footer tails) for :class:`LocalStore`.

Opening a file (``os.open`` + ``close``) is the largest single cost of reading a few ranges of a
newly met data file; a cold take opens each file once for its tail, then reads its chunk
metadata and its data.  The cache keeps the descriptor a tail read opened, keyed by path, so the
later reads of the same file reuse it, and keeps the tail's bytes (bounded in total) so ranges
inside it are served from memory without a request.

Scope: entries are kept only while a *hold* is open (:meth:`FdCache.hold` / :meth:`unhold`,
nested holds counted): the multi-file take holds its store from the admission of new files
(tail reads, chunk-metadata reads) to the end of its data read.  When the last hold ends every
descriptor is closed, so reads outside a hold open the file as before and see a file removed,
truncated or rewritten since (a standalone reader must).  Within a hold, only
:meth:`FdCache.fresh` (called by ``read_tail``, the first read of a file reader) opens the path
again and replaces the entry.

Safety: descriptors are reference-counted while a read uses them; an entry evicted (least
recently used beyond ``max_fds`` descriptors or ``max_tail_bytes`` tail bytes) or dropped while
in use is closed by its last user.  In a forked child the inherited entries are closed (the
child's copies) and the lock is replaced.
"""

from __future__ import annotations

import collections
import os
import threading
import weakref
from typing import Any

#: Default bounds: open descriptors per store and bytes of kept tails per store.
MAX_FDS = 256
MAX_TAIL_BYTES = 8 << 20


class _Entry:
    __slots__ = ("fd", "users", "dead", "tail_start", "tail")

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.users = 0
        self.dead = False
        self.tail_start = 0
        self.tail: Any = None  # memoryview of the file's bytes [tail_start, size) or None


class FdCache:
    """Open descriptors keyed by path, LRU-bounded; see the module docstring."""

    def __init__(self, max_fds: int = MAX_FDS, max_tail_bytes: int = MAX_TAIL_BYTES) -> None:
        self.max_fds = max_fds
        self.max_tail_bytes = max_tail_bytes
        self._lock = threading.Lock()
        self._entries: collections.OrderedDict[str, _Entry] = collections.OrderedDict()
        self._tail_bytes = 0
        self._holds = 0
        _ALL.add(self)

    def __len__(self) -> int:
        return len(self._entries)

    # ---------------------------------------------------------------------------- holds
    def hold(self) -> None:
        """Start keeping descriptors (until the matching :meth:`unhold`)."""
        with self._lock:
            self._holds += 1

    def unhold(self) -> None:
        """End one hold; the last one closes every cached descriptor."""
        with self._lock:
            self._holds = max(0, self._holds - 1)
            last = self._holds == 0
        if last:
            self.close()

    @property
    def holding(self) -> bool:
        """Whether a hold is open (descriptors are kept)."""
        return self._holds > 0

    # ------------------------------------------------------------------ acquire / release
    def acquire(self, path: str) -> _Entry:
        """The cached entry of ``path`` (opened when absent), marked in use: pair with :meth:`release`."""
        if not self._holds:
            return _single(os.open(path, os.O_RDONLY))
        with self._lock:
            entry = self._entries.get(path)
            if entry is not None:
                self._entries.move_to_end(path)
                entry.users += 1
                return entry
        fd = os.open(path, os.O_RDONLY)
        if not self._holds:
            return _single(fd)
        return self._insert(path, fd)

    def fresh(self, path: str) -> _Entry:
        """Open ``path`` again (a new reader must see the current file), replace the cached
        entry with it, and return it marked in use: pair with :meth:`release`."""
        fd = os.open(path, os.O_RDONLY)
        if not self._holds:
            return _single(fd)
        return self._insert(path, fd)

    def _insert(self, path: str, fd: int) -> _Entry:
        entry = _Entry(fd)
        entry.users = 1
        doomed: list[int] = []
        with self._lock:
            if not self._holds:  # the hold ended meanwhile
                entry.dead = True
                return entry
            old = self._entries.pop(path, None)
            if old is not None:
                self._drop(old, doomed)
            self._entries[path] = entry
            while len(self._entries) > self.max_fds:
                self._drop(self._entries.popitem(last=False)[1], doomed)
        _close_all(doomed)
        return entry

    def release(self, entry: _Entry) -> None:
        """End one use of ``entry`` (closes its descriptor when it was dropped meanwhile)."""
        with self._lock:
            entry.users -= 1
            close = entry.dead and entry.users == 0
        if close:
            _close_all([entry.fd])

    def discard(self, path: str) -> None:
        """Forget ``path`` (after an error reading it)."""
        doomed: list[int] = []
        with self._lock:
            old = self._entries.pop(path, None)
            if old is not None:
                self._drop(old, doomed)
        _close_all(doomed)

    # ------------------------------------------------------------------------------ tails
    def keep_tail(self, path: str, entry: _Entry, start: int, tail: Any) -> None:
        """Keep ``tail`` (the bytes ``[start, start + len(tail))`` of the file) with ``entry``."""
        n = len(tail)
        if n == 0 or n > self.max_tail_bytes:
            return
        with self._lock:
            if entry.dead or self._entries.get(path) is not entry:
                return
            if entry.tail is not None:
                self._tail_bytes -= len(entry.tail)
            entry.tail_start, entry.tail = start, tail
            self._tail_bytes += n
            if self._tail_bytes > self.max_tail_bytes:
                for other in self._entries.values():  # oldest first
                    if other.tail is not None and other is not entry:
                        self._tail_bytes -= len(other.tail)
                        other.tail = None
                        if self._tail_bytes <= self.max_tail_bytes:
                            break

    # ---------------------------------------------------------------------------- closing
    def _drop(self, entry: _Entry, doomed: list[int]) -> None:  # lock held
        entry.dead = True
        if entry.tail is not None:
            self._tail_bytes -= len(entry.tail)
            entry.tail = None
        if entry.users == 0:
            doomed.append(entry.fd)

    def close(self) -> None:
        """Close every descriptor not in use (those in use close when released)."""
        doomed: list[int] = []
        with self._lock:
            for entry in self._entries.values():
                self._drop(entry, doomed)
            self._entries.clear()
        _close_all(doomed)

    def _after_fork(self) -> None:
        self._lock = threading.Lock()
        self._holds = 0
        for entry in self._entries.values():  # the child's copies; no other thread uses them
            entry.dead = True
            _close_all([entry.fd])
        self._entries.clear()
        self._tail_bytes = 0


def _single(fd: int) -> _Entry:
    """An uncached entry: closed by its :meth:`FdCache.release`."""
    entry = _Entry(fd)
    entry.users = 1
    entry.dead = True
    return entry


def tail_slice(entry: _Entry, start: int, end: int) -> Any:
    """``entry``'s kept bytes ``[start, end)`` when inside its tail, else None."""
    tail = entry.tail
    if tail is None:
        return None
    ts = entry.tail_start
    if start < ts or end > ts + len(tail):
        return None
    return tail[start - ts:end - ts]


def _close_all(fds: list[int]) -> None:
    for fd in fds:
        try:
            os.close(fd)
        except OSError:  # pragma: no cover - already closed
            pass


_ALL: "weakref.WeakSet[FdCache]" = weakref.WeakSet()


def _after_fork_in_child() -> None:
    for cache in list(_ALL):
        cache._after_fork()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)

__all__ = ["FdCache", "MAX_FDS", "MAX_TAIL_BYTES", "tail_slice"]
