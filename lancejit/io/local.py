"""Local filesystem store: plain paths and ``file://`` URIs.

Blocking calls run in a bounded thread pool (``config.io_parallelism`` workers).  A batch of
ranges is ONE hand-off to a worker, which ``preadv``s every range into one preallocated buffer;
each range counts as one read request.  Writes go to a temporary file in the destination's
directory and are published with ``os.replace`` (``put``, writers) or ``os.link`` (``put_if_absent``,
which fails if the target exists), so readers never see partial objects.
"""

from __future__ import annotations

import asyncio
import builtins
import concurrent.futures
import errno
import functools
import os
import re
import threading
import time
import uuid
from typing import Any, Callable, Iterable, Sequence, TypeVar
from urllib.parse import quote

import numpy as np

from lancejit.core.config import LOCAL_IO, IOConfig, settings
from lancejit.core.cores import idle_core
from lancejit.core.errors import AlreadyExistsError, CorruptFileError, InvalidInputError
from lancejit.io.fd_cache import FdCache, tail_slice
from lancejit.io.stats import IOStats
from lancejit.io.store import (
    AsyncWriter,
    Buffer,
    ObjectInfo,
    ObjectStore,
    check_ranges,
    past_eof,
    translate_error,
)

T = TypeVar("T")

#: Bytes a local writer buffers before handing them to a worker thread.
WRITE_BUFFER_BYTES = 1 << 20

#: Writes of at most this many bytes (deletion files, transactions, manifests, small data
#: files), and the opening and renaming of written files, run inline on the event loop; so do
#: bigger reads and writes while no core is idle (:func:`lancejit.core.cores.idle_core`: a
#: worker would get the core late, and a big read would wait in the pool longer than it takes
#: inline).
INLINE_WRITE_BYTES = 256 * 1024

#: A non-recursive listing of a directory of at most this many entries runs inline on the event
#: loop (``os.scandir`` plus a ``stat`` per file costs microseconds, the worker hand-off more:
#: finding a dataset's latest version lists ``_versions/``); larger directories and recursive
#: listings go to the worker pool.
INLINE_LIST_ENTRIES = 256


def _tmp_name(path: str) -> str:
    head, tail = os.path.split(path)
    return os.path.join(head, f".{tail}.tmp-{uuid.uuid4().hex[:16]}")


#: Absolute, normalized paths made only of characters ``quote`` keeps as they are.
_PLAIN_PATH = re.compile(r"(?:/[A-Za-z0-9_.~-]+)+")


@functools.lru_cache(maxsize=4096)
def _absolute_uri(path: str) -> str:
    """``file://`` URI of absolute ``path`` (memoized: the open of every data file asks for its
    URI several times; a plain normalized path, the usual data file, needs neither
    normalizing nor quoting)."""
    if _PLAIN_PATH.fullmatch(path) and "/./" not in path and "/../" not in path and not path.endswith(
            ("/.", "/..")):
        return "file://" + path
    return "file://" + quote(os.path.abspath(path))


def _small_listing(root: str) -> list[os.DirEntry] | None:
    """The entries of directory ``root`` when it has at most :data:`INLINE_LIST_ENTRIES`
    (``[]`` when it is missing or not a directory), else None (list it in a worker)."""
    try:
        it = os.scandir(root)
    except (FileNotFoundError, NotADirectoryError):
        return []
    with it:
        entries: list[os.DirEntry] = []
        for entry in it:
            if len(entries) >= INLINE_LIST_ENTRIES:
                return None
            entries.append(entry)
    return entries


def _makedirs_for(path: str) -> None:
    parent = os.path.dirname(path)
    if parent:
        os.makedirs(parent, exist_ok=True)


def _write_all(fd: int, data: memoryview) -> None:
    while len(data):
        n = os.write(fd, data)
        data = data[n:]


def _create_tmp(path: str) -> tuple[str, int]:
    """A new temporary file next to ``path`` (its directory made when missing) and its
    descriptor, open for writing."""
    tmp = _tmp_name(path)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL
    try:
        return tmp, os.open(tmp, flags, 0o644)
    except FileNotFoundError:  # the directory does not exist yet
        _makedirs_for(path)
        return tmp, os.open(tmp, flags, 0o644)


def _write_tmp(path: str, data: Buffer) -> str:
    tmp, fd = _create_tmp(path)
    try:
        _write_all(fd, memoryview(data).cast("B"))
    except BaseException:
        os.close(fd)
        os.unlink(tmp)
        raise
    os.close(fd)
    return tmp


class _Cancelled(Exception):
    pass


class LocalStore(ObjectStore):
    """Files on the local filesystem; paths are absolute OS paths."""

    scheme = "file"
    serial_batches = True

    def __init__(self, config: IOConfig = LOCAL_IO, stats: IOStats | None = None) -> None:
        super().__init__(config, stats)
        #: A read batch of at most this many bytes runs inline on the event loop (a ``preadv``
        #: from the page cache is cheaper than the two thread hand-offs of a worker); larger
        #: batches go to the worker pool so that big scans overlap with decoding; 0 disables
        #: inline reads (the ``local_inline_read_bytes`` knob).
        self.inline_read_bytes = settings().local_inline_read_bytes
        self._executor: concurrent.futures.ThreadPoolExecutor | None = None
        self._executor_lock = threading.Lock()
        #: Open descriptors (and footer tails) of files read lately: reads after a file's tail
        #: read reuse its descriptor and serve ranges inside the tail from memory (no request).
        self._fds = FdCache()

    # ---------------------------------------------------------------------------- plumbing
    @property
    def executor(self) -> concurrent.futures.ThreadPoolExecutor:
        """The bounded worker pool (``config.io_parallelism`` threads)."""
        with self._executor_lock:
            if self._executor is None:
                self._executor = concurrent.futures.ThreadPoolExecutor(
                    max_workers=max(1, self.config.io_parallelism), thread_name_prefix="lancejit-local-io"
                )
            return self._executor

    async def _run(self, path: str, fn: Callable[[threading.Event], T]) -> T:
        """Run ``fn(cancel_event)`` in a worker; on cancellation set the event and wait for the worker.

        Waiting means nothing keeps running after the caller's cancellation completes.
        """
        cancel = threading.Event()
        loop = asyncio.get_running_loop()
        cfut = self.executor.submit(fn, cancel)
        afut = asyncio.wrap_future(cfut, loop=loop)
        try:
            return await afut
        except asyncio.CancelledError:
            cancel.set()
            if not cfut.cancel():
                done: asyncio.Future[None] = loop.create_future()

                def finish() -> None:
                    if not done.done():
                        done.set_result(None)

                cfut.add_done_callback(lambda _f: loop.call_soon_threadsafe(finish))
                while not done.done():
                    try:
                        await asyncio.shield(done)
                    except asyncio.CancelledError:
                        continue
            raise
        except _Cancelled:  # pragma: no cover - only raised after cancel.set()
            raise asyncio.CancelledError() from None
        except BaseException as exc:
            err = translate_error(exc, path)
            if err is exc:
                raise
            raise err from exc  # __cause__: the OS error

    async def _run_write(self, path: str, fn: Callable[[threading.Event | None], T], data: Buffer | None) -> T:
        """``fn`` inline when it writes at most :data:`INLINE_WRITE_BYTES` (``data``; None:
        no data, only file-system operations) or no core is idle, else in a worker (:meth:`_run`)."""
        if data is None or memoryview(data).nbytes <= INLINE_WRITE_BYTES or not idle_core():
            return self._run_inline(path, fn)
        return await self._run(path, fn)

    @staticmethod
    def _run_inline(path: str, fn: Callable[[None], T]) -> T:
        """Run ``fn(None)`` on the calling thread (small reads), errors translated as by :meth:`_run`."""
        try:
            return fn(None)
        except BaseException as exc:
            err = translate_error(exc, path)
            if err is exc:
                raise
            raise err from exc  # __cause__: the OS error

    @staticmethod
    def to_os_path(path: str) -> str:
        """``path`` as an absolute OS path."""
        return os.path.abspath(os.path.expanduser(path))

    def uri(self, path: str) -> str:
        if path.startswith("/"):
            return _absolute_uri(path)
        return "file://" + quote(self.to_os_path(path) if path else "/")

    def hold_files(self) -> None:
        """Keep the descriptors (and footer tails) of the files read from now until the matching
        :meth:`release_files` (nested holds counted; the last release closes them).  The
        multi-file take holds across its cold opens and its read."""
        self._fds.hold()

    def release_files(self) -> None:
        """End one :meth:`hold_files`."""
        self._fds.unhold()

    # -------------------------------------------------------------------------------- reads
    async def read_ranges(self, path: str, ranges: Sequence[tuple[int, int]]) -> list[memoryview]:
        ranges = check_ranges(ranges)
        total = 0
        for start, end in ranges:
            total += end - start
        if not total:
            return [memoryview(b"") for _ in ranges]
        stats = self.stats

        def work(cancel: threading.Event | None) -> list[memoryview]:
            buf = np.empty(total, dtype=np.uint8).data  # no zero fill: preadv fills it
            out: list[memoryview] = []
            entry = self._fds.acquire(path)
            fd = entry.fd
            t0 = time.perf_counter()
            done = nreq = 0  # bytes and requests completed (counted once per batch)
            try:
                pos = 0
                for start, end in ranges:
                    n = end - start
                    view = buf[pos:pos + n]
                    pos += n
                    out.append(view.toreadonly())
                    if n == 0:
                        continue
                    if cancel is not None and cancel.is_set():
                        raise _Cancelled()
                    got = 0
                    while got < n:
                        k = os.preadv(fd, [view[got:]], start + got)
                        if k == 0:
                            raise past_eof(path, start, end, os.fstat(fd).st_size)
                        got += k
                    done += n
                    nreq += 1
            finally:
                self._fds.release(entry)
                if nreq:
                    stats.record_read(done, time.perf_counter() - t0, requests=nreq)
            return out

        if total <= self.inline_read_bytes or not idle_core():
            return self._run_inline(path, work)
        return await self._run(path, work)

    def read_files_into(self, files: Sequence[tuple[str, list[list[int]]]], out: np.ndarray) -> tuple[int, int]:
        """Read in the calling thread, for every ``(path, reads)``, each ``[source, start, end, position]``
        of ``reads`` (half-open byte range ``[start, end)``, already coalesced) into
        ``out[position:position + end - start]``: one ``preadv`` per read (none for a read inside
        the file's kept tail), the file's cached descriptor (opened when absent).  Returns the
        requests made and the bytes they read (counted in the store's stats as one batch; bytes
        served from kept tails are in neither).  Used by the multi-file take for batches up to
        :attr:`inline_read_bytes` (the caller checks)."""
        view = out.data
        t0 = time.perf_counter()
        done = nreq = 0
        try:
            for path, reads in files:
                try:
                    entry = self._fds.acquire(path)
                except OSError as exc:
                    raise translate_error(exc, path) from exc
                fd = entry.fd
                try:
                    for _, start, end, at in reads:
                        n = end - start
                        held = tail_slice(entry, start, end)
                        if held is not None:  # inside the kept tail: no request
                            out[at:at + n] = held
                            continue
                        got = 0
                        while got < n:
                            k = os.preadv(fd, [view[at + got:at + n]], start + got)
                            if k == 0:
                                raise past_eof(path, start, end, os.fstat(fd).st_size)
                            got += k
                        done += n
                        nreq += 1
                except OSError as exc:
                    raise translate_error(exc, path) from exc
                finally:
                    self._fds.release(entry)
        finally:
            if nreq:
                self.stats.record_read(done, time.perf_counter() - t0, requests=nreq)
        return nreq, done

    async def read_tail(self, path: str, nbytes: int) -> tuple[int, memoryview]:
        if nbytes < 0:
            raise InvalidInputError(f"read_tail needs nbytes >= 0, got {nbytes}")
        stats = self.stats

        def work(cancel: threading.Event | None) -> tuple[int, memoryview]:
            t0 = time.perf_counter()
            size, tail = self._tail(path, nbytes)
            stats.record_read(len(tail), time.perf_counter() - t0)
            return size, tail

        if nbytes <= self.inline_read_bytes or not idle_core():  # footer reads (64 KiB): no worker hand-off
            return self._run_inline(path, work)
        return await self._run(path, work)

    def _tail(self, path: str, nbytes: int) -> tuple[int, memoryview]:
        """``(size, last min(nbytes, size) bytes)`` of ``path`` read in the calling thread from
        a new descriptor (kept with the tail while files are held, see :mod:`.fd_cache`)."""
        entry = self._fds.fresh(path)  # a new reader: open the current file
        fd = entry.fd
        try:
            size = os.fstat(fd).st_size
            n = min(nbytes, size)
            view = np.empty(n, dtype=np.uint8).data  # no zero fill: preadv fills it
            got = 0
            while got < n:
                k = os.preadv(fd, [view[got:]], size - n + got)
                if k == 0:
                    raise CorruptFileError(f"object shrank while reading (size {size})", path=path)
                got += k
            tail = view.toreadonly()
            self._fds.keep_tail(path, entry, size - n, tail)
        finally:
            self._fds.release(entry)
        return size, tail

    def read_tails_inline(self, paths: Sequence[str], nbytes: int) -> list[Any]:
        """For every path of ``paths``, in the calling thread, ``(size, last min(nbytes, size)
        bytes)`` as :meth:`read_tail` returns it, or the error (translated as :meth:`read_tail`
        raises it) when that file cannot be read.  One request per file, counted in the store's
        stats as one batch.  Used by the batched open of data files for tails up to
        :attr:`inline_read_bytes` (the caller checks)."""
        out: list[Any] = []
        t0 = time.perf_counter()
        done = nreq = 0
        for path in paths:
            try:
                got = self._tail(path, nbytes)
            except Exception as exc:
                out.append(translate_error(exc, path))
                continue
            out.append(got)
            done += len(got[1])
            nreq += 1
        if nreq:
            self.stats.record_read(done, time.perf_counter() - t0, requests=nreq)
        return out

    async def size(self, path: str) -> int:
        def work(cancel: threading.Event) -> int:
            self.stats.record_meta()
            st = os.stat(path)
            if not os.path.isfile(path):
                raise IsADirectoryError(path)
            return st.st_size

        return await self._run(path, work)

    async def exists(self, path: str) -> bool:
        def work(cancel: threading.Event) -> bool:
            self.stats.record_meta()
            return os.path.isfile(path)

        return await self._run(path, work)

    async def list(self, prefix: str = "", *, recursive: bool = True) -> list[ObjectInfo]:
        root = self.to_os_path(prefix) if prefix else os.getcwd()

        def work(cancel: threading.Event | None, entries: list[os.DirEntry] | None = None) -> list[ObjectInfo]:
            self.stats.record_list()
            out: list[ObjectInfo] = []
            if entries is not None:
                for entry in entries:
                    if entry.is_file():
                        _add(out, entry.path)
            elif not os.path.isdir(root):
                return out
            elif recursive:
                for dirpath, _dirs, files in os.walk(root):
                    for name in files:
                        _add(out, os.path.join(dirpath, name))
            else:
                with os.scandir(root) as it:
                    for entry in it:
                        if entry.is_file():
                            _add(out, entry.path)
            out.sort(key=lambda info: info.path)
            return out

        def _add(out: list[ObjectInfo], full: str) -> None:
            if os.path.basename(full).startswith(".") and ".tmp-" in full:
                return  # an in-progress write
            try:
                st = os.stat(full)
            except FileNotFoundError:
                return
            out.append(ObjectInfo(full, st.st_size, st.st_mtime, f"{st.st_mtime_ns:x}-{st.st_size:x}"))

        if not recursive:
            small = self._run_inline(prefix, lambda _c: _small_listing(root))
            if small is not None:
                return self._run_inline(prefix, lambda c: work(c, small))
        return await self._run(prefix, work)

    async def list_names(self, prefix: str) -> builtins.list[str]:
        """Names of the entries directly inside directory ``prefix`` (``[]`` when it is missing),
        unsorted, without the per-entry ``stat`` of :meth:`list` (finding the latest manifest
        needs names only: a dataset of many versions has many).  One listing in the stats."""
        root = self.to_os_path(prefix)

        def work(cancel: threading.Event | None) -> builtins.list[str]:
            self.stats.record_list()
            try:
                return os.listdir(root)
            except (FileNotFoundError, NotADirectoryError):
                return []

        return self._run_inline(prefix, work)

    # ------------------------------------------------------------------------------- writes
    async def put(self, path: str, data: Buffer) -> None:
        def work(cancel: threading.Event | None) -> None:
            t0 = time.perf_counter()
            tmp = _write_tmp(path, data)
            try:
                os.replace(tmp, path)
            except BaseException:
                _unlink_quietly(tmp)
                raise
            self._fds.discard(path)
            self.stats.record_write(len(memoryview(data).cast("B")), time.perf_counter() - t0)

        await self._run_write(path, work, data)

    async def put_if_absent(self, path: str, data: Buffer) -> None:
        def work(cancel: threading.Event | None) -> None:
            t0 = time.perf_counter()
            nbytes = len(memoryview(data).cast("B"))
            tmp = _write_tmp(path, data)
            try:
                try:
                    os.link(tmp, path)  # atomic, fails if the target exists
                except FileExistsError:
                    raise AlreadyExistsError(f"{path}: object already exists") from None
                except OSError as exc:
                    if exc.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV, errno.EMLINK):
                        raise
                    _create_exclusive(path, data)  # no hard links here: O_EXCL create
            finally:
                _unlink_quietly(tmp)
            self.stats.record_write(nbytes, time.perf_counter() - t0)

        await self._run_write(path, work, data)

    async def delete(self, path: str) -> None:
        def work(cancel: threading.Event) -> None:
            self.stats.record_meta()
            self._fds.discard(path)
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass

        await self._run(path, work)

    async def delete_many(self, paths: Iterable[str]) -> None:
        paths = list(paths)

        def work(cancel: threading.Event) -> None:
            for p in paths:
                self.stats.record_meta()
                self._fds.discard(p)
                try:
                    os.unlink(p)
                except FileNotFoundError:
                    pass

        await self._run(paths[0] if paths else "", work)

    async def open_writer(self, path: str) -> AsyncWriter:
        def work(cancel: threading.Event | None) -> tuple[str, int]:
            return _create_tmp(path)

        tmp, fd = await self._run_write(path, work, None)
        return LocalWriter(self, path, tmp, fd)

    async def aclose(self) -> None:
        self._fds.close()
        with self._executor_lock:
            executor, self._executor = self._executor, None
        if executor is not None:
            executor.shutdown(wait=False)


def _unlink_quietly(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def _create_exclusive(path: str, data: Buffer) -> None:
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except FileExistsError:
        raise AlreadyExistsError(f"{path}: object already exists") from None
    try:
        _write_all(fd, memoryview(data).cast("B"))
    finally:
        os.close(fd)


class LocalWriter(AsyncWriter):
    """Streams into a temporary file next to ``path``; ``close`` renames it into place."""

    def __init__(self, store: LocalStore, path: str, tmp: str, fd: int) -> None:
        self.store = store
        self.path = path
        self._tmp = tmp
        self._fd: int | None = fd
        self._buf = bytearray()
        self.bytes_written = 0
        self._state = "open"  # open -> closed | aborted

    def _check_open(self) -> None:
        if self._state != "open":
            raise InvalidInputError(f"{self.path}: writer is {self._state}")

    async def _flush(self) -> None:
        if not self._buf:
            return
        data, self._buf = self._buf, bytearray()  # handed over whole: never changed again
        await self._write_out(data)

    async def _write_out(self, data: Buffer) -> None:
        """Write ``data`` at the file's end (inline, or in a worker while a core is idle)."""
        fd = self._fd
        assert fd is not None  # open: flushed before close lets it go
        stats = self.store.stats

        def work(cancel: threading.Event | None) -> None:
            t0 = time.perf_counter()
            view = memoryview(data).cast("B")
            _write_all(fd, view)
            stats.record_write(len(view), time.perf_counter() - t0)

        await self.store._run_write(self.path, work, data)

    async def write(self, data: Buffer) -> None:
        self._check_open()
        view = memoryview(data).cast("B")
        self.bytes_written += len(view)
        try:
            if len(view) >= WRITE_BUFFER_BYTES:  # big buffers (pages) go out as they are
                await self._flush()
                await self._write_out(view)
                return
            self._buf += view
            if len(self._buf) >= WRITE_BUFFER_BYTES:
                await self._flush()
        except BaseException:
            await self.abort()
            raise

    async def close(self) -> None:
        if self._state == "closed":
            return
        self._check_open()
        try:
            await self._flush()
            fd, tmp, path = self._fd, self._tmp, self.path
            assert fd is not None  # open (checked above)

            def work(cancel: threading.Event | None) -> None:
                os.close(fd)
                os.replace(tmp, path)
                self.store._fds.discard(path)

            self._fd = None
            await self.store._run_write(self.path, work, None)
        except BaseException:
            await self.abort()
            raise
        self._state = "closed"

    async def abort(self) -> None:
        if self._state != "open":
            return
        self._state = "aborted"
        self._buf = bytearray()
        fd, tmp = self._fd, self._tmp
        self._fd = None

        def work(cancel: threading.Event) -> None:
            if fd is not None:
                try:
                    os.close(fd)
                except OSError:
                    pass
            _unlink_quietly(tmp)

        await self.store._run(self.path, work)
