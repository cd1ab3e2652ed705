"""S3 and GCS stores over the async fsspec filesystems (s3fs, gcsfs).

One store per bucket; paths are keys inside the bucket.  Each store keeps one filesystem
(HTTP session) per event loop, created lazily, with the listings cache off (every listing is a
real request, and gcsfs's root-listing cache bug cannot bite).  Requests are issued with the
filesystems' low-level calls so that one range is exactly one HTTP request:

* range read: ``GET`` with ``Range: bytes=a-(b-1)``; ranges of a batch run concurrently;
* tail read: ``GET`` with a suffix range ``bytes=-n`` (size from ``Content-Range``);
* ``put_if_absent``: S3 ``PutObject If-None-Match: *``; GCS upload with ``ifGenerationMatch=0``;
* writers: S3 multipart upload, GCS resumable upload (see :mod:`lancejit.io.fsspec_writers`).

A per-loop semaphore bounds the requests in flight to ``config.io_parallelism``.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from datetime import datetime
from typing import Any, Iterable, Sequence

os.environ.setdefault("GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT", "false")

from lancejit.core.config import CLOUD_IO, MiB, IOConfig  # noqa: E402
from lancejit.core.errors import (  # noqa: E402
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
    ObjectInfo,
    ObjectStore,
    check_ranges,
    past_eof,
    translate_error,
)

#: Objects at most this big are uploaded in one request by ``put``/``put_if_absent``.
SINGLE_PUT_MAX_BYTES = 64 * MiB

#: Objects per listing page (each page is one request).
LIST_PAGE_SIZE = 1000


def _parse_content_range(value: str | None) -> int | None:
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

    def __init__(self, bucket: str, config: IOConfig = CLOUD_IO, stats: IOStats | None = None,
                 *, part_size: int = 8 * MiB) -> None:
        if not bucket:
            raise InvalidInputError(f"{self.scheme}:// URI needs a bucket name")
        super().__init__(config, stats)
        self.bucket = bucket
        self.part_size = part_size

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
        return key

    async def _handle(self) -> _FsHandle:
        loop = asyncio.get_running_loop()
        handle: _FsHandle = self.loop_local("fs", lambda: _FsHandle(self._new_fs(loop), self.config.io_parallelism))
        if handle.ready is None:
            handle.ready = asyncio.ensure_future(self._start_session(handle.fs))
        if not handle.ready.done():
            await asyncio.shield(handle.ready)
        if handle.ready.exception() is not None:
            exc = handle.ready.exception()
            handle.ready = None  # retry next time
            raise translate_error(exc, self.uri(""))
        return handle

    async def filesystem(self) -> Any:
        """The fsspec filesystem bound to the running loop (session started)."""
        return (await self._handle()).fs

    async def _call(self, path: str, fn, *args: Any, **kwargs: Any) -> Any:
        """Run ``fn(fs, *args)`` under the in-flight limit, mapping errors to lancejit's."""
        handle = await self._handle()
        async with handle.sem:
            try:
                return await fn(handle.fs, *args, **kwargs)
            except (LanceJitError, asyncio.CancelledError):
                raise
            except Exception as exc:
                err = translate_error(exc, self.uri(path))
                if err is exc:
                    raise
                raise err  # keeps __cause__ = the backend's exception

    # ------------------------------------------------------------------------ reads
    async def _read_one(self, path: str, key: str, start: int, end: int) -> memoryview:
        async def op(fs: Any) -> memoryview:
            t0 = time.perf_counter()
            try:
                data, total = await self._get(fs, key, f"bytes={start}-{end - 1}")
            except Exception as exc:
                if self._is_range_error(exc):
                    self.stats.record_read(0, time.perf_counter() - t0)
                    raise past_eof(self.uri(path), start, end, None) from None
                raise
            self.stats.record_read(len(data), time.perf_counter() - t0)
            if len(data) != end - start:
                raise past_eof(self.uri(path), start, end, total)
            return memoryview(data)

        return await self._call(path, op)

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

        out = await self._call(path, op)
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

        return await self._call(path, op)

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
        if len(memoryview(data).cast("B")) > SINGLE_PUT_MAX_BYTES:
            await self._put_streamed(path, data, if_absent=True)
        else:
            await self._put_single(path, data, if_absent=True)

    async def _put_single(self, path: str, data: Buffer, *, if_absent: bool) -> None:
        raise NotImplementedError

    async def _put_streamed(self, path: str, data: Buffer, *, if_absent: bool) -> None:
        writer = await self.open_writer(path, if_absent=if_absent)
        async with writer:
            view = memoryview(data).cast("B")
            for pos in range(0, len(view), self.part_size):
                await writer.write(view[pos:pos + self.part_size])

    async def open_writer(self, path: str, *, if_absent: bool = False) -> AsyncWriter:
        raise NotImplementedError

    async def aclose(self) -> None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        slots = self._per_loop.get(loop)
        handle = slots.pop("fs", None) if slots else None
        if handle is not None and handle.ready is not None and handle.ready.done() \
                and handle.ready.exception() is None:
            await self._close_session(handle.fs)


# ===================================================================================== S3


class S3Store(FsspecStore):
    """One S3 bucket through s3fs/aiobotocore.

    ``endpoint``: custom endpoint URL (``http://`` needs ``allow_http``); ``region``;
    ``key``/``secret``/``token``: credentials (else botocore's default chain); ``anonymous``.
    """

    scheme = "s3"

    def __init__(self, bucket: str, *, endpoint: str | None = None, region: str | None = None,
                 key: str | None = None, secret: str | None = None, token: str | None = None,
                 anonymous: bool = False, config: IOConfig = CLOUD_IO, stats: IOStats | None = None,
                 part_size: int = 8 * MiB) -> None:
        if part_size < 5 * MiB:
            raise InvalidInputError("S3 multipart parts must be at least 5 MiB")
        super().__init__(bucket, config, stats, part_size=part_size)
        self.endpoint = endpoint
        self.region = region
        self._creds = (key, secret, token)
        self.anonymous = anonymous

    def _new_fs(self, loop: asyncio.AbstractEventLoop) -> Any:
        from s3fs import S3FileSystem

        key, secret, token = self._creds
        client_kwargs: dict[str, Any] = {}
        if self.region:
            client_kwargs["region_name"] = self.region
        return S3FileSystem(
            endpoint_url=self.endpoint,
            key=key,
            secret=secret,
            token=token,
            anon=self.anonymous,
            client_kwargs=client_kwargs,
            config_kwargs={"max_pool_connections": max(10, self.config.io_parallelism)},
            asynchronous=True,
            loop=loop,
            skip_instance_cache=True,
            use_listings_cache=False,
        )

    async def _start_session(self, fs: Any) -> None:
        await fs.set_session()

    async def _close_session(self, fs: Any) -> None:
        creator = getattr(fs, "_s3creator", None)
        if creator is not None:
            await creator.__aexit__(None, None, None)
            fs._s3 = None
            fs._s3creator = None

    def _is_range_error(self, exc: BaseException) -> bool:
        cause: BaseException | None = exc
        while cause is not None:
            response = getattr(cause, "response", None)
            if isinstance(response, dict) and response.get("Error", {}).get("Code") == "InvalidRange":
                return True
            cause = cause.__cause__
        return False

    async def _get(self, fs: Any, key: str, range_header: str | None) -> tuple[bytes, int | None]:
        kwargs = {"Range": range_header} if range_header else {}
        resp = await fs._call_s3("get_object", Bucket=self.bucket, Key=key, **kwargs)
        body = resp["Body"]
        try:
            data = await body.read()
        finally:
            body.close()
        total = _parse_content_range(resp.get("ContentRange"))
        if total is None and not range_header:
            total = len(data)
        return data, total

    async def size(self, path: str) -> int:
        key = self._key(path)

        async def op(fs: Any) -> int:
            self.stats.record_meta()
            head = await fs._call_s3("head_object", Bucket=self.bucket, Key=key)
            return int(head["ContentLength"])

        return await self._call(path, op)

    async def list(self, prefix: str = "", *, recursive: bool = True) -> list[ObjectInfo]:
        base = prefix.strip("/")
        base = base + "/" if base else ""

        async def op(fs: Any) -> list[ObjectInfo]:
            out: list[ObjectInfo] = []
            kwargs: dict[str, Any] = {"Bucket": self.bucket, "Prefix": base, "MaxKeys": LIST_PAGE_SIZE}
            if not recursive:
                kwargs["Delimiter"] = "/"
            while True:
                self.stats.record_list()
                page = await fs._call_s3("list_objects_v2", **kwargs)
                for item in page.get("Contents", []) or []:
                    modified = item.get("LastModified")
                    out.append(ObjectInfo(
                        item["Key"], int(item["Size"]),
                        modified.timestamp() if modified is not None else None,
                        (item.get("ETag") or "").strip('"') or None,
                    ))
                token = page.get("NextContinuationToken")
                if not page.get("IsTruncated") or not token:
                    break
                kwargs["ContinuationToken"] = token
            out.sort(key=lambda info: info.path)
            return out

        return await self._call(prefix, op)

    async def _put_single(self, path: str, data: Buffer, *, if_absent: bool) -> None:
        key = self._key(path)
        payload = bytes(data) if not isinstance(data, bytes) else data
        extra = {"IfNoneMatch": "*"} if if_absent else {}

        async def op(fs: Any) -> None:
            t0 = time.perf_counter()
            try:
                await fs._call_s3("put_object", Bucket=self.bucket, Key=key, Body=payload, **extra)
            finally:
                self.stats.record_write(len(payload), time.perf_counter() - t0)

        await self._call(path, op)

    async def delete(self, path: str) -> None:
        key = self._key(path)

        async def op(fs: Any) -> None:
            self.stats.record_meta()
            await fs._call_s3("delete_object", Bucket=self.bucket, Key=key)

        try:
            await self._call(path, op)
        except NotFoundError:
            pass

    async def delete_many(self, paths: Iterable[str]) -> None:
        keys = [self._key(p) for p in paths]

        async def op(fs: Any, chunk: list[str]) -> None:
            self.stats.record_meta()
            resp = await fs._call_s3(
                "delete_objects", Bucket=self.bucket,
                Delete={"Objects": [{"Key": k} for k in chunk], "Quiet": True},
            )
            errors = [e for e in resp.get("Errors", []) or [] if e.get("Code") != "NoSuchKey"]
            if errors:
                raise OSError(f"delete_objects failed for {len(errors)} keys: {errors[:3]}")

        await gather_all(self._call(keys[i], op, keys[i:i + 1000]) for i in range(0, len(keys), 1000))

    async def open_writer(self, path: str, *, if_absent: bool = False) -> AsyncWriter:
        from lancejit.io.fsspec_writers import S3Writer

        return S3Writer(self, self._key(path), if_absent=if_absent)


# ==================================================================================== GCS


class GCSStore(FsspecStore):
    """One GCS bucket through gcsfs's JSON-API client.

    ``endpoint``: custom endpoint (emulators); ``token``: anything gcsfs accepts (a service
    account JSON path, ``"google_default"``, ``"anon"``...); ``project``.
    """

    scheme = "gs"

    def __init__(self, bucket: str, *, endpoint: str | None = None, token: Any = None,
                 project: str | None = None, config: IOConfig = CLOUD_IO, stats: IOStats | None = None,
                 part_size: int = 8 * MiB) -> None:
        if part_size <= 0 or part_size % (256 * 1024):
            raise InvalidInputError("GCS upload chunks must be a positive multiple of 256 KiB")
        super().__init__(bucket, config, stats, part_size=part_size)
        self.endpoint = endpoint
        self.token = token
        self.project = project

    def _new_fs(self, loop: asyncio.AbstractEventLoop) -> Any:
        from gcsfs.core import GCSFileSystem  # the plain client (see /work/shared/notes/stores.md)

        kwargs: dict[str, Any] = {
            "asynchronous": True,
            "loop": loop,
            "skip_instance_cache": True,
            "use_listings_cache": False,
        }
        if self.endpoint:
            kwargs["endpoint_url"] = self.endpoint
        if self.token is not None:
            kwargs["token"] = self.token
        if self.project:
            kwargs["project"] = self.project
        return GCSFileSystem(**kwargs)

    async def _start_session(self, fs: Any) -> None:
        await fs._set_session()

    async def _close_session(self, fs: Any) -> None:
        session = getattr(fs, "_session", None)
        if session is not None and not session.closed:
            await session.close()

    def _is_range_error(self, exc: BaseException) -> bool:
        cause: BaseException | None = exc
        while cause is not None:
            if getattr(cause, "code", None) == 416:
                return True
            cause = cause.__cause__
        return False

    def _download_url(self, fs: Any, key: str) -> str:
        return fs.url(f"{self.bucket}/{key}")

    async def _get(self, fs: Any, key: str, range_header: str | None) -> tuple[bytes, int | None]:
        headers = {"Range": range_header} if range_header else {}
        resp_headers, data = await fs._call("GET", self._download_url(fs, key), headers=headers)
        total = _parse_content_range(resp_headers.get("Content-Range"))
        if total is None and not range_header:
            total = len(data)
        return data, total

    async def _object_meta(self, fs: Any, key: str) -> dict[str, Any]:
        return await fs._call("GET", "b/{}/o/{}", self.bucket, key, json_out=True)

    async def size(self, path: str) -> int:
        key = self._key(path)

        async def op(fs: Any) -> int:
            self.stats.record_meta()
            return int((await self._object_meta(fs, key))["size"])

        return await self._call(path, op)

    async def list(self, prefix: str = "", *, recursive: bool = True) -> list[ObjectInfo]:
        base = prefix.strip("/")
        base = base + "/" if base else ""

        async def op(fs: Any) -> list[ObjectInfo]:
            out: list[ObjectInfo] = []
            token: str | None = None
            while True:
                self.stats.record_list()
                page = await fs._call(
                    "GET", "b/{}/o", self.bucket, json_out=True,
                    prefix=base or None, delimiter=None if recursive else "/",
                    pageToken=token, maxResults=LIST_PAGE_SIZE,
                )
                for item in page.get("items", []) or []:
                    name = item["name"]
                    if name.endswith("/"):
                        continue  # directory placeholder
                    updated = item.get("updated")
                    out.append(ObjectInfo(
                        name, int(item.get("size", 0)),
                        datetime.fromisoformat(updated.replace("Z", "+00:00")).timestamp() if updated else None,
                        str(item.get("generation") or item.get("etag") or "") or None,
                    ))
                token = page.get("nextPageToken")
                if not token:
                    break
            out.sort(key=lambda info: info.path)
            return out

        return await self._call(prefix, op)

    async def _put_single(self, path: str, data: Buffer, *, if_absent: bool) -> None:
        key = self._key(path)
        payload = memoryview(data).cast("B")
        meta = json.dumps({"name": key}).encode()
        boundary = b"lancejit-boundary-7f3a9c"
        body = b"".join([
            b"--", boundary, b"\r\nContent-Type: application/json; charset=UTF-8\r\n\r\n", meta,
            b"\r\n--", boundary, b"\r\nContent-Type: application/octet-stream\r\n\r\n",
            payload, b"\r\n--", boundary, b"--\r\n",
        ])
        params: dict[str, Any] = {"uploadType": "multipart"}
        if if_absent:
            params["ifGenerationMatch"] = "0"

        async def op(fs: Any) -> None:
            t0 = time.perf_counter()
            try:
                await fs._call(
                    "POST", f"{fs._location}/upload/storage/v1/b/{{}}/o", self.bucket,
                    headers={"Content-Type": f'multipart/related; boundary="{boundary.decode()}"'},
                    data=body, json_out=True, **params,
                )
            finally:
                self.stats.record_write(len(payload), time.perf_counter() - t0)

        await self._call(path, op)

    async def delete(self, path: str) -> None:
        key = self._key(path)

        async def op(fs: Any) -> None:
            self.stats.record_meta()
            await fs._call("DELETE", "b/{}/o/{}", self.bucket, key)

        try:
            await self._call(path, op)
        except NotFoundError:
            pass

    async def open_writer(self, path: str, *, if_absent: bool = False) -> AsyncWriter:
        from lancejit.io.fsspec_writers import GCSWriter

        return GCSWriter(self, self._key(path), if_absent=if_absent)
