"""GCS store: one bucket through gcsfs's JSON-API client (see :mod:`lancejit.io.fsspec_store`);
with anonymous access (public buckets, emulators) reads go through lancejit's own requests
(:mod:`lancejit.io.gcs_http`) and a process that only reads never imports gcsfs."""

from __future__ import annotations

import asyncio
import json
import logging
from datetime import datetime
from typing import Any

from lancejit.core.config import MiB, IOConfig
from lancejit.core.errors import InvalidInputError
from lancejit.io import fsspec_store
from lancejit.io.fsspec_store import OBJECT_STORE_IO, FsspecStore, parse_content_range
from lancejit.io.gcs_request import call_once
from lancejit.io.stats import IOStats
from lancejit.io.store import AsyncWriter, Buffer, ObjectInfo


class _QuietRangeErrors(logging.Filter):
    """Drop gcsfs's ERROR log (with traceback) for "416 range not satisfiable": lancejit turns
    that answer into ``CorruptFileError`` (or an empty tail) itself."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        return getattr(exc, "code", None) != 416


_QUIET = _QuietRangeErrors()


class GCSStore(FsspecStore):
    """One GCS bucket through gcsfs's JSON-API client.

    ``endpoint``: custom endpoint (emulators); ``token``: anything gcsfs accepts (a service
    account JSON path, ``"google_default"``, ``"anon"``...); ``project``; ``timeout`` (seconds
    per request attempt) and ``max_retries`` (see :mod:`.fsspec_store`).
    """

    scheme = "gs"

    def __init__(self, bucket: str, *, endpoint: str | None = None, token: Any = None,
                 project: str | None = None, config: IOConfig = OBJECT_STORE_IO, stats: IOStats | None = None,
                 part_size: int = 8 * MiB, timeout: float | None = None,
                 max_retries: int | None = None) -> None:
        if part_size <= 0 or part_size % (256 * 1024):
            raise InvalidInputError("GCS upload chunks must be a positive multiple of 256 KiB")
        super().__init__(bucket, config, stats, part_size=part_size, timeout=timeout, max_retries=max_retries)
        self.endpoint = endpoint
        self.token = token
        self.project = project

    def _reads_need_fs(self) -> bool:
        return self.token != "anon"

    def _http(self) -> Any:
        """The anonymous read client of the running loop (made on first use)."""
        from lancejit.io.gcs_http import GcsHttpClient

        return self.loop_local("http", lambda: GcsHttpClient(
            self.endpoint, self.bucket, limit=max(10, self.config.io_parallelism),
            connect_timeout=min(10.0, self.timeout)))

    def _new_fs(self, loop: asyncio.AbstractEventLoop) -> Any:
        from gcsfs.core import GCSFileSystem  # the plain HTTP client

        gcsfs_logger = logging.getLogger("gcsfs")
        if _QUIET not in gcsfs_logger.filters:
            gcsfs_logger.addFilter(_QUIET)

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
        if not self._reads_need_fs():
            return await self._http().get(key, range_header)
        headers = {"Range": range_header} if range_header else {}
        resp_headers, data = await call_once(fs, "GET", self._download_url(fs, key), headers=headers)
        total = parse_content_range(resp_headers.get("Content-Range"))
        if total is None and not range_header:
            total = len(data)
        return data, total

    async def _object_meta(self, fs: Any, key: str) -> dict[str, Any]:
        if not self._reads_need_fs():
            return await self._http().meta(key)
        return await call_once(fs, "GET", "b/{}/o/{}", self.bucket, key, json_out=True)

    async def size(self, path: str) -> int:
        key = self._key(path)

        async def op(fs: Any) -> int:
            self.stats.record_meta()
            return int((await self._object_meta(fs, key))["size"])

        return await self._call(path, op, need_fs=self._reads_need_fs())

    async def list(self, prefix: str = "", *, recursive: bool = True) -> list[ObjectInfo]:
        base = prefix.strip("/")
        base = base + "/" if base else ""

        async def op(fs: Any) -> list[ObjectInfo]:
            out: list[ObjectInfo] = []
            token: str | None = None
            while True:
                self.stats.record_list()
                if fs is None:
                    page = await self._http().list_page(base, None if recursive else "/",
                                                        fsspec_store.LIST_PAGE_SIZE, token)
                else:
                    page = await call_once(
                        fs, "GET", "b/{}/o", self.bucket, json_out=True,
                        prefix=base or None, delimiter=None if recursive else "/",
                        pageToken=token, maxResults=fsspec_store.LIST_PAGE_SIZE,
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

        return await self._call(prefix, op, need_fs=self._reads_need_fs())

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
            await self._timed_write(len(payload), call_once(
                fs, "POST", f"{fs._location}/upload/storage/v1/b/{{}}/o", self.bucket,
                headers={"Content-Type": f'multipart/related; boundary="{boundary.decode()}"'},
                data=body, json_out=True, **params,
            ))

        await self._call(path, op)

    async def _delete_request(self, fs: Any, key: str) -> None:
        await call_once(fs, "DELETE", "b/{}/o/{}", self.bucket, key)

    async def open_writer(self, path: str, *, if_absent: bool = False) -> AsyncWriter:
        from lancejit.io.fsspec_writers import GCSWriter

        return GCSWriter(self, self._key(path), if_absent=if_absent)
