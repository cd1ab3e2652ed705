"""Common base of the S3 and GCS stores over the async fsspec filesystems (s3fs, gcsfs).

One store per bucket; paths are keys inside the bucket.  Each store keeps one filesystem
(HTTP session) per event loop, created lazily, with the listings cache off (every listing is a
real request, and gcsfs's root-listing cache bug cannot bite).  Requests are issued with the
filesystems' low-level calls so that one range is exactly one HTTP request:

* range read: ``GET`` with ``Range: bytes=a-(b-1)``; ranges of a batch run concurrently;
* tail read: ``GET`` with a suffix range ``bytes=-n`` (size from ``Content-Range``);
* ``put_if_absent``: S3 ``PutObject If-None-Match: *``; GCS upload with ``ifGenerationMatch=0``;
* writers: S3 multipart upload, GCS resumable upload (see :mod:`lancejit.io.fsspec_writers`).

A per-loop semaphore bounds the requests in flight to ``config.io_parallelism``.

Transient failures (HTTP 429/500/502/503/504, S3 ``SlowDown``/``InternalError``, connection
resets, a request taking longer than ``timeout`` seconds) are retried up to ``max_retries``
times with full-jitter exponential backoff (:func:`retry_delay`); other failures are not.  A
retried conditional create (``put_if_absent``) whose earlier attempt had landed meets its own
object: it is recognised by comparing the stored bytes and counts as success, not a conflict.

The concrete stores are :class:`lancejit.io.s3_store.S3Store` and :class:`lancejit.io.gcs_store.GCSStore`.
"""

from __future__ import annotations

import asyncio
import os
import random
import time
from typing import Any, Iterable, Sequence

os.environ.setdefault("GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT", "false")

from lancejit.core.config import MiB, IOConfig, cloud_io  # noqa: E402
from lancejit.core.errors import (  # noqa: E402
    AlreadyExistsError,
    CorruptFileError,
    InvalidInputError,
    LanceJitError,
    NotFoundError,
)
from lancejit.io._tasks import gather_all  # noqa: E402
from lancejit.io.stats import IOStats  # noqa: E402
from lancejit.io.store import (  # noqa: E402
    AsyncWriter,
    Buffer,
    ObjectStore,
    check_ranges,
    past_eof,
    translate_error,
)

#: Scheduler settings of S3 and GCS stores (knobs: the reference's 16 MiB largest request).
OBJECT_STORE_IO = cloud_io()

#: Target bytes per GET when a tick's reads are cut into pieces (:mod:`lancejit.io.coalesce`):
#: the project's 8 MiB scan page, so a 1M-row scan of three columns (18 MB) is 3 concurrent
#: GETs of ~6 MB (the reference sends one GET per column there).  Pieces stream: each column of
#: each unit is decoded in a worker thread as soon as its bytes are in.  Larger pieces (fewer
#: GETs) look faster on moto only because moto copies the whole object for every GET; real
#: object stores serve more concurrent GETs faster.
PREFERRED_READ_BYTES = 8 * MiB

#: Objects at most this big are uploaded in one request by ``put``/``put_if_absent``.
SINGLE_PUT_MAX_BYTES = 64 * MiB

#: Objects per listing page (each page is one request).
LIST_PAGE_SIZE = 1000


#: Retries after the first attempt of a request failing transiently (default).
DEFAULT_MAX_RETRIES = 6
#: Seconds one attempt of a request may take before it is abandoned and retried (default).
DEFAULT_TIMEOUT_S = 60.0
#: Backoff before retry ``n`` (1-based): uniform in ``[0, min(CAP, BASE * 2**n))`` seconds.
RETRY_BASE_S = 0.05
RETRY_CAP_S = 2.0

_TRANSIENT_STATUS = frozenset({408, 429, 500, 502, 503, 504})
_TRANSIENT_CODES = frozenset({
    "SlowDown", "InternalError", "ServiceUnavailable", "RequestTimeout", "Throttling",
    "ThrottlingException", "RequestLimitExceeded", "TooManyRequests", "RequestTimeTooSkewed",
})


def retry_delay(attempt: int) -> float:
    """Seconds to wait before retry ``attempt`` (1-based): full jitter, capped."""
    return random.uniform(0.0, min(RETRY_CAP_S, RETRY_BASE_S * (2 ** attempt)))


def is_transient(exc: BaseException) -> bool:
    """True when ``exc`` (or an exception it was raised from) is a failure worth retrying:
    timeouts, connection errors, throttling and 5xx answers; never a missing object, an
    existing one (412), a refused range or a permission error."""
    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        if isinstance(cur, (FileNotFoundError, FileExistsError, PermissionError, LanceJitError)):
            return False
        if isinstance(cur, (TimeoutError, asyncio.TimeoutError, ConnectionError)):
            return True
        name = type(cur).__name__
        if name in ("ClientPayloadError", "ServerDisconnectedError", "ClientConnectionError",
                    "ClientOSError", "ServerTimeoutError", "EndpointConnectionError",
                    "ConnectionClosedError", "ReadTimeoutError", "ConnectTimeoutError",
                    "HTTPClientError", "ResponseParserError", "IncompleteRead", "FSTimeoutError",
                    "ClientConnectorError", "ServerConnectionError"):
            return True
        response = getattr(cur, "response", None)
        if isinstance(response, dict):
            code = response.get("Error", {}).get("Code")
            status = response.get("ResponseMetadata", {}).get("HTTPStatusCode")
            if code in _TRANSIENT_CODES or status in _TRANSIENT_STATUS:
                return True
        status = getattr(cur, "code", None)
        if isinstance(status, int) and status in _TRANSIENT_STATUS:
            return True
        cur = cur.__cause__ or cur.__context__
    return False


def parse_content_range(value: str | None) -> int | None:
    """Total size from ``bytes a-b/TOTAL`` (None if absent or ``*``)."""
    if not value or "/" not in value:
        return None
    total = value.rsplit("/", 1)[1].strip()
    return int(total) if total.isdigit() else None


class _FsHandle:
    __slots__ = ("fs", "ready", "sem")

    def __init__(self, fs: Any, limit: int) -> None:
        self.fs = fs
        self.ready: asyncio.Future[None] | None = None
        self.sem = asyncio.Semaphore(max(1, limit))


class FsspecStore(ObjectStore):
    """Common part of the S3 and GCS stores: per-loop filesystem, batching, error mapping."""

    serial_batches = False
    decode_off_loop = True
    closes_with_loop = True

    def __init__(self, bucket: str, config: IOConfig = OBJECT_STORE_IO, stats: IOStats | None = None,
                 *, part_size: int = 8 * MiB, timeout: float | None = None,
                 max_retries: int | None = None) -> None:
        if not bucket:
            raise InvalidInputError(f"{self.scheme}:// URI needs a bucket name")
        super().__init__(config, stats)
        self.bucket = bucket
        self.part_size = part_size
        #: Seconds one attempt of a request may take.
        self.timeout = DEFAULT_TIMEOUT_S if timeout is None else float(timeout)
        #: Retries of a transiently failing request (0: none).
        self.max_retries = DEFAULT_MAX_RETRIES if max_retries is None else int(max_retries)
        if not self.timeout > 0 or self.max_retries < 0:
            raise InvalidInputError("timeout must be > 0 seconds and max_retries >= 0")
        #: Requests retried so far (all loops).
        self.retries = 0

    @property
    def preferred_read_size(self) -> int:
        """Bytes per request that long reads are cut into (:data:`PREFERRED_READ_BYTES`, at
        most ``config.max_request_size``; see :mod:`lancejit.io.coalesce`)."""
        return min(PREFERRED_READ_BYTES, self.config.max_request_size)

    # ---------------------------------------------------------------- backend hooks
    def _new_fs(self, loop: asyncio.AbstractEventLoop) -> Any:
        raise NotImplementedError

    async def _start_session(self, fs: Any) -> None:
        raise NotImplementedError

    async def _close_session(self, fs: Any) -> None:
        raise NotImplementedError

    def _is_range_error(self, exc: BaseException) -> bool:
        """True when ``exc`` is the backend's "416 range not satisfiable"."""
        raise NotImplementedError

    async def _get(self, fs: Any, key: str, range_header: str | None) -> tuple[bytes, int | None]:
        """One GET of ``key`` (optionally ranged): ``(payload, total size or None)``."""
        raise NotImplementedError

    # ------------------------------------------------------------------ plumbing
    def uri(self, path: str) -> str:
        return f"{self.scheme}://{self.bucket}/{path.lstrip('/')}" if path else f"{self.scheme}://{self.bucket}"

    def _key(self, path: str) -> str:
        key = path.strip("/")
        if not key:
            raise InvalidInputError(f"{self.uri(path)}: an object path needs a key, not just the bucket")
        if any(seg in (".", "..") for seg in key.split("/")):
            # HTTP clients and servers normalise dot segments, which would address another key
            raise InvalidInputError(f"{self.uri(path)}: object key has a '.' or '..' segment")
        return key

    def _reads_need_fs(self) -> bool:
        """Whether reads (GET, HEAD, listings) go through the filesystem: True unless the
        backend reads with its own requests and needs nothing of the filesystem to sign them
        (then the filesystem, and its client libraries, are made only for writes)."""
        return True

    async def _handle(self, need_fs: bool = True) -> _FsHandle:
        loop = asyncio.get_running_loop()
        handle: _FsHandle = self.loop_local("fs", lambda: _FsHandle(None, self.config.io_parallelism))
        if not need_fs:
            return handle
        if handle.fs is None:
            handle.fs = self._new_fs(loop)
        if handle.ready is None:
            handle.ready = asyncio.ensure_future(self._start_session(handle.fs))
        if not handle.ready.done():
            await asyncio.shield(handle.ready)
        exc = handle.ready.exception()
        if exc is not None:
            handle.ready = None  # retry next time
            raise translate_error(exc, self.uri(""))
        return handle

    async def filesystem(self) -> Any:
        """The fsspec filesystem bound to the running loop (session started)."""
        return (await self._handle()).fs

    async def _call(self, path: str, fn, *args: Any, need_fs: bool = True, **kwargs: Any) -> Any:
        """Run ``fn(fs, *args)`` under the in-flight limit, each attempt bounded by ``timeout``,
        retrying transient failures (see :func:`is_transient`) up to ``max_retries`` times with
        jittered backoff; errors mapped to lancejit's.  ``fn`` must be safe to repeat.
        ``need_fs=False``: ``fs`` is None unless the filesystem was started already (``fn``
        calls :meth:`filesystem` if it needs it after all)."""
        handle = await self._handle(need_fs)
        attempt = 0
        while True:
            async with handle.sem:
                try:
                    async with asyncio.timeout(self.timeout):  # no extra task (wait_for makes one)
                        return await fn(handle.fs, *args, **kwargs)
                except (LanceJitError, asyncio.CancelledError):
                    raise
                except Exception as exc:
                    if attempt >= self.max_retries or not is_transient(exc):
                        err = translate_error(exc, self.uri(path))
                        if err is exc:
                            raise
                        if attempt:
                            err = type(err)(f"{err} (after {attempt} retries)")
                        raise err from exc  # __cause__ = the backend's exception
            attempt += 1
            self.retries += 1
            await asyncio.sleep(retry_delay(attempt))

    # ------------------------------------------------------------------------ reads
    async def _read_one(self, path: str, key: str, start: int, end: int, progress: Any = None) -> memoryview:
        extra = (progress,) if progress is not None else ()

        async def op(fs: Any) -> memoryview:
            t0 = time.perf_counter()
            try:
                data, total = await self._get(fs, key, f"bytes={start}-{end - 1}", *extra)
            except Exception as exc:
                if self._is_range_error(exc):
                    self.stats.record_read(0, time.perf_counter() - t0)
                    raise past_eof(self.uri(path), start, end, None) from None
                raise
            self.stats.record_read(len(data), time.perf_counter() - t0)
            if len(data) != end - start:
                raise past_eof(self.uri(path), start, end, total)
            return memoryview(data)

        return await self._call(path, op, need_fs=self._reads_need_fs())

    async def read_ranges(self, path: str, ranges: Sequence[tuple[int, int]]) -> list[memoryview]:
        ranges = check_ranges(ranges)
        key = self._key(path)
        empty = memoryview(b"")

        async def one(start: int, end: int) -> memoryview:
            if start == end:
                return empty
            return await self._read_one(path, key, start, end)

        return await gather_all(one(s, e) for s, e in ranges)

    async def read_tail(self, path: str, nbytes: int) -> tuple[int, memoryview]:
        if nbytes < 0:
            raise InvalidInputError(f"read_tail needs nbytes >= 0, got {nbytes}")
        key = self._key(path)
        if nbytes == 0:
            return await self.size(path), memoryview(b"")

        async def op(fs: Any) -> tuple[int, memoryview] | None:
            t0 = time.perf_counter()
            try:
                data, total = await self._get(fs, key, f"bytes=-{nbytes}")
            except Exception as exc:
                if self._is_range_error(exc):  # empty object: no suffix is satisfiable
                    self.stats.record_read(0, time.perf_counter() - t0)
                    return None
                raise
            self.stats.record_read(len(data), time.perf_counter() - t0)
            if total is None:  # a server answering 200 with the whole object
                total = len(data)
                data = data[max(0, total - nbytes):]
            if len(data) != min(nbytes, total):
                raise CorruptFileError(f"tail read returned {len(data)} bytes of {total}", path=self.uri(path))
            return total, memoryview(data)

        out = await self._call(path, op, need_fs=self._reads_need_fs())
        if out is None:
            size = await self.size(path)
            if size != 0:
                raise CorruptFileError(f"suffix range refused on a {size}-byte object", path=self.uri(path))
            return 0, memoryview(b"")
        return out

    async def read_all(self, path: str) -> memoryview:
        key = self._key(path)

        async def op(fs: Any) -> memoryview:
            t0 = time.perf_counter()
            data, _ = await self._get(fs, key, None)
            self.stats.record_read(len(data), time.perf_counter() - t0)
            return memoryview(data)

        return await self._call(path, op, need_fs=self._reads_need_fs())

    async def exists(self, path: str) -> bool:
        try:
            await self.size(path)
        except NotFoundError:
            return False
        return True

    async def delete_many(self, paths: Iterable[str]) -> None:
        await gather_all(self.delete(p) for p in list(paths))

    async def put(self, path: str, data: Buffer) -> None:
        if len(memoryview(data).cast("B")) > SINGLE_PUT_MAX_BYTES:
            await self._put_streamed(path, data, if_absent=False)
        else:
            await self._put_single(path, data, if_absent=False)

    async def put_if_absent(self, path: str, data: Buffer) -> None:
        """Create ``path`` unless it exists (:class:`AlreadyExistsError` then).  If the object
        found holds exactly ``data``, it is this call's own write whose answer was lost and the
        request retried (by lancejit or the HTTP client): success, not a conflict."""
        try:
            if len(memoryview(data).cast("B")) > SINGLE_PUT_MAX_BYTES:
                await self._put_streamed(path, data, if_absent=True)
            else:
                await self._put_single(path, data, if_absent=True)
        except AlreadyExistsError:
            if not await self._holds(path, data):
                raise

    async def _holds(self, path: str, data: Buffer) -> bool:
        """True when the object at ``path`` exists and its bytes equal ``data``."""
        want = memoryview(data).cast("B")
        try:
            if await self.size(path) != len(want):
                return False
            return await self.read_all(path) == want
        except NotFoundError:
            return False

    async def _put_single(self, path: str, data: Buffer, *, if_absent: bool) -> None:
        raise NotImplementedError

    async def _timed_write(self, nbytes: int, request: Any) -> Any:
        """Await the upload ``request`` (an awaitable) and record ``nbytes`` written and its
        duration, also when it fails."""
        t0 = time.perf_counter()
        try:
            return await request
        finally:
            self.stats.record_write(nbytes, time.perf_counter() - t0)

    async def delete(self, path: str) -> None:
        """Delete the object; deleting a missing object is not an error."""
        key = self._key(path)

        async def op(fs: Any) -> None:
            self.stats.record_meta()
            await self._delete_request(fs, key)

        try:
            await self._call(path, op)
        except NotFoundError:
            pass

    async def _delete_request(self, fs: Any, key: str) -> None:
        """Send the backend's delete request for object ``key``."""
        raise NotImplementedError

    async def _put_streamed(self, path: str, data: Buffer, *, if_absent: bool) -> None:
        writer = await self.open_writer(path, if_absent=if_absent)
        async with writer:
            view = memoryview(data).cast("B")
            for pos in range(0, len(view), self.part_size):
                await writer.write(view[pos:pos + self.part_size])

    async def open_writer(self, path: str, *, if_absent: bool = False) -> AsyncWriter:
        raise NotImplementedError

    async def _close_loop_state(self, slots: dict[str, Any]) -> None:
        handle = slots.pop("fs", None)
        http = slots.pop("http", None)
        if http is not None:
            await http.close()
        if handle is not None and handle.ready is not None and handle.ready.done() \
                and not handle.ready.cancelled() and handle.ready.exception() is None:
            await self._close_session(handle.fs)
