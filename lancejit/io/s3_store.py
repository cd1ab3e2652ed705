"""S3 store: one bucket; reads (GET, HEAD, listings) and single-request writes signed and sent
by lancejit (:mod:`lancejit.io.s3_http`), multipart uploads and deletes through s3fs/aiobotocore
(see :mod:`lancejit.io.fsspec_store`).

When the endpoint (or the region) and the credentials are known without botocore (storage
options, ``AWS_*`` environment variables, or anonymous access), reads never import s3fs,
aiobotocore or botocore: the filesystem is made at the first write.  Otherwise (credentials from
botocore's chain: profiles, instance metadata...) the filesystem is made first and lends its
endpoint, region and credentials to the direct reads."""

from __future__ import annotations

import asyncio
import inspect
import os
from typing import Any, Iterable

from lancejit.core.config import MiB, IOConfig
from lancejit.core.errors import InvalidInputError
from lancejit.io import fsspec_store
from lancejit.io._tasks import gather_all
from lancejit.io.fsspec_store import OBJECT_STORE_IO, FsspecStore, parse_content_range
from lancejit.io.s3_http import RangeNotSatisfiable, S3HttpClient, Unsupported
from lancejit.io.sigv4 import Credentials
from lancejit.io.stats import IOStats
from lancejit.io.store import AsyncWriter, Buffer, ObjectInfo


async def _maybe_await(value: Any) -> Any:
    return await value if inspect.isawaitable(value) else value


def _own_settings(endpoint: str | None, region: str | None, key: str | None, secret: str | None,
                  token: str | None, anonymous: bool) -> tuple[str, str, Credentials | None] | None:
    """``(endpoint URL, region, credentials or None for unsigned)`` when known without botocore:
    the endpoint given (or AWS's for a given region), the region given (else ``AWS_REGION`` /
    ``AWS_DEFAULT_REGION``, else ``us-east-1`` with a given endpoint), credentials given or in
    ``AWS_ACCESS_KEY_ID`` / ``AWS_SECRET_ACCESS_KEY`` (``AWS_SESSION_TOKEN``), or anonymous.
    None when botocore must resolve something (its other credential sources, config files)."""
    region = region or os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")
    if not endpoint:
        if not region:
            return None
        endpoint = f"https://s3.{region}.amazonaws.com"
    creds: Credentials | None = None
    if not anonymous:
        if not key and not secret:
            key = os.environ.get("AWS_ACCESS_KEY_ID")
            secret = os.environ.get("AWS_SECRET_ACCESS_KEY")
            token = token or os.environ.get("AWS_SESSION_TOKEN")
        if not (key and secret):
            return None
        creds = Credentials(key, secret, token or None)
    return endpoint, region or "us-east-1", creds


class S3Store(FsspecStore):
    """One S3 bucket through s3fs/aiobotocore.

    ``endpoint``: custom endpoint URL (``http://`` needs ``allow_http``); ``region``;
    ``key``/``secret``/``token``: credentials (else botocore's default chain); ``anonymous``;
    ``timeout`` (seconds per request attempt) and ``max_retries`` (see :mod:`.fsspec_store`).
    """

    scheme = "s3"

    def __init__(self, bucket: str, *, endpoint: str | None = None, region: str | None = None,
                 key: str | None = None, secret: str | None = None, token: str | None = None,
                 anonymous: bool = False, config: IOConfig = OBJECT_STORE_IO, stats: IOStats | None = None,
                 part_size: int = 8 * MiB, timeout: float | None = None,
                 max_retries: int | None = None) -> None:
        if part_size < 5 * MiB:
            raise InvalidInputError("S3 multipart parts must be at least 5 MiB")
        super().__init__(bucket, config, stats, part_size=part_size, timeout=timeout, max_retries=max_retries)
        self.endpoint = endpoint
        self.region = region
        self._creds = (key, secret, token)
        self.anonymous = anonymous
        #: Reads go through :mod:`.s3_http` until an answer it does not follow
        #: (redirect, 400) sends this store back to botocore for good.
        self.direct_reads = True
        self._session: Any = None
        self._own = _own_settings(endpoint, region, key, secret, token, anonymous)

    def _reads_need_fs(self) -> bool:
        return not (self.direct_reads and self._own is not None)

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
            config_kwargs={"max_pool_connections": max(10, self.config.io_parallelism),
                           "read_timeout": self.timeout, "connect_timeout": min(10.0, self.timeout),
                           # one attempt per call: FsspecStore retries transient failures itself
                           "retries": {"total_max_attempts": 1}},
            asynchronous=True,
            loop=loop,
            skip_instance_cache=True,
            use_listings_cache=False,
            session=self._botocore_session(),
        )

    def _botocore_session(self) -> Any:
        """One aiobotocore session for every loop's filesystem: it caches the service model
        that each new client would otherwise load again (a loop per call pays it per call)."""
        if self._session is None:
            from aiobotocore.session import AioSession

            self._session = AioSession()
        return self._session

    async def _start_session(self, fs: Any) -> None:
        await fs.set_session()

    async def _close_session(self, fs: Any) -> None:
        creator = getattr(fs, "_s3creator", None)
        if creator is not None:
            await creator.__aexit__(None, None, None)
            fs._s3 = None
            fs._s3creator = None

    def _http(self, fs: Any) -> S3HttpClient:
        """The direct-read client of the running loop (made on first use)."""
        return self.loop_local("http", lambda: self._new_http(fs))

    def _new_http(self, fs: Any) -> S3HttpClient:
        limit = max(10, self.config.io_parallelism)
        if self._own is not None and (fs is None or not getattr(fs, "_s3", None)):
            endpoint, region, creds = self._own

            async def own_credentials() -> Any:
                return creds

            return S3HttpClient(endpoint, self.bucket, region, own_credentials, limit=limit,
                                connect_timeout=min(10.0, self.timeout))
        client = fs._s3  # the session is started (FsspecStore._handle) before any request
        meta = client.meta
        resolved: list[Any] = []

        async def credentials() -> Any:
            if self.anonymous:
                return None
            if not resolved:
                resolved.append(await _maybe_await(client._get_credentials()))
            creds = resolved[0]
            # refreshable credentials refresh here when due; frozen ones have the
            # access_key / secret_key / token fields the signer reads
            return None if creds is None else await _maybe_await(creds.get_frozen_credentials())

        return S3HttpClient(meta.endpoint_url, self.bucket, meta.region_name or "us-east-1", credentials,
                            limit=limit, connect_timeout=min(10.0, self.timeout))

    def _is_range_error(self, exc: BaseException) -> bool:
        cause: BaseException | None = exc
        while cause is not None:
            if isinstance(cause, RangeNotSatisfiable):
                return True
            response = getattr(cause, "response", None)
            if isinstance(response, dict) and response.get("Error", {}).get("Code") == "InvalidRange":
                return True
            cause = cause.__cause__
        return False

    async def read_streaming(self, path: str, start: int, end: int, progress: Any) -> memoryview:
        """Bytes ``[start, end)`` of ``path`` in one GET, ``progress(view, filled)`` called as
        they arrive (``view[:filled]`` holds the first ``filled`` bytes; a retried attempt
        starts a new view).  Returns the whole range."""
        return await self._read_one(path, self._key(path), start, end, progress)

    async def _get(self, fs: Any, key: str, range_header: str | None, progress: Any = None
                   ) -> tuple[bytes, int | None]:
        if self.direct_reads:
            try:
                return await self._http(fs).get(key, range_header, progress)
            except Unsupported:
                self.direct_reads = False
            except PermissionError:
                # refused: if botocore's request is accepted, this endpoint wants something
                # the direct client does not send; use botocore from now on
                out = await self._boto_get(fs or await self.filesystem(), key, range_header)
                self.direct_reads = False
                return out
        return await self._boto_get(fs or await self.filesystem(), key, range_header)

    async def _boto_get(self, fs: Any, key: str, range_header: str | None) -> tuple[bytes, int | None]:
        kwargs = {"Range": range_header} if range_header else {}
        resp = await fs._call_s3("get_object", Bucket=self.bucket, Key=key, **kwargs)
        body = resp["Body"]
        try:
            data = await body.read()
        finally:
            body.close()
        total = parse_content_range(resp.get("ContentRange"))
        if total is None and not range_header:
            total = len(data)
        return data, total

    async def size(self, path: str) -> int:
        key = self._key(path)

        async def op(fs: Any) -> int:
            async def boto_head() -> int:
                head = await (fs or await self.filesystem())._call_s3("head_object", Bucket=self.bucket, Key=key)
                return int(head["ContentLength"])

            self.stats.record_meta()
            if self.direct_reads:
                try:
                    return await self._http(fs).head(key)
                except Unsupported:
                    self.direct_reads = False
                except PermissionError:  # as in _get: botocore decides
                    size = await boto_head()
                    self.direct_reads = False
                    return size
            return await boto_head()

        return await self._call(path, op, need_fs=self._reads_need_fs())

    async def list(self, prefix: str = "", *, recursive: bool = True) -> list[ObjectInfo]:
        base = prefix.strip("/")
        base = base + "/" if base else ""

        async def direct(fs: Any) -> list[ObjectInfo]:
            http = self._http(fs)
            out: list[ObjectInfo] = []
            token = None
            while True:
                self.stats.record_list()
                items, token = await http.list_page(base, None if recursive else "/",
                                                    fsspec_store.LIST_PAGE_SIZE, token)
                out.extend(ObjectInfo(*item) for item in items)
                if token is None:
                    break
            out.sort(key=lambda info: info.path)
            return out

        async def op(fs: Any) -> list[ObjectInfo]:
            out: list[ObjectInfo] = []
            kwargs: dict[str, Any] = {"Bucket": self.bucket, "Prefix": base, "MaxKeys": fsspec_store.LIST_PAGE_SIZE}
            if not recursive:
                kwargs["Delimiter"] = "/"
            if self.direct_reads:
                try:
                    return await direct(fs)
                except Unsupported:
                    self.direct_reads = False
            fs = fs or await self.filesystem()
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

        return await self._call(prefix, op, need_fs=self._reads_need_fs())

    async def _put_single(self, path: str, data: Buffer, *, if_absent: bool) -> None:
        key = self._key(path)
        payload = bytes(data) if not isinstance(data, bytes) else data
        extra = {"IfNoneMatch": "*"} if if_absent else {}

        async def op(fs: Any) -> None:
            if self.direct_reads:  # the direct client (as the reads) until it is refused
                try:
                    await self._timed_write(len(payload), self._http(fs).put(key, payload, if_absent=if_absent))
                    return
                except Unsupported:
                    self.direct_reads = False
                except PermissionError:  # as in _get: botocore decides, and is used from now on
                    self.direct_reads = False
                fs = fs or await self.filesystem()
            await self._timed_write(
                len(payload), fs._call_s3("put_object", Bucket=self.bucket, Key=key, Body=payload, **extra)
            )

        await self._call(path, op, need_fs=self._reads_need_fs())

    async def _delete_request(self, fs: Any, key: str) -> None:
        await fs._call_s3("delete_object", Bucket=self.bucket, Key=key)

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
