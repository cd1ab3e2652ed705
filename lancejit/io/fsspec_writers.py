"""Streaming writers for S3 (multipart upload) and GCS (resumable upload).

Both buffer ``part_size`` bytes before sending a part; an object smaller than one part is
sent with a single request at ``close()``.  ``abort()`` (or any failure) cancels the upload, so
nothing appears at the destination.  Each HTTP request counts as one write request.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from lancejit.core.errors import InvalidInputError, StoreError
from lancejit.io._tasks import drain
from lancejit.io.fsspec_store import FsspecStore
from lancejit.io.gcs_request import call_once
from lancejit.io.store import AsyncWriter, Buffer

#: S3 parts uploaded concurrently by one writer.
S3_PARTS_IN_FLIGHT = 4


class _BufferedWriter(AsyncWriter):
    def __init__(self, store: FsspecStore, key: str, *, if_absent: bool) -> None:
        self.store = store
        self.key = key
        self.path = key
        self.if_absent = if_absent
        self.bytes_written = 0
        self._buf = bytearray()
        self._state = "open"  # open -> closed | aborted

    def _check_open(self) -> None:
        if self._state != "open":
            raise InvalidInputError(f"{self.store.uri(self.key)}: writer is {self._state}")

    async def write(self, data: Buffer) -> None:
        """Copy ``data`` into the part being filled; a full part is sent (handed over as it is)
        once more bytes follow it, so the final part is never empty."""
        self._check_open()
        view = memoryview(data).cast("B")
        self.bytes_written += len(view)
        size = self.store.part_size
        try:
            pos, n = 0, len(view)
            while pos < n:
                if len(self._buf) >= size:
                    part, self._buf = self._buf, bytearray()
                    await self._send_part(part)
                take = min(size - len(self._buf), n - pos)
                self._buf += view[pos:pos + take]
                pos += take
        except BaseException:
            await self.abort()
            raise

    async def close(self) -> None:
        if self._state == "closed":
            return
        self._check_open()
        try:
            await self._finish(bytes(self._buf))
        except BaseException:
            await self.abort()
            raise
        self._buf = bytearray()
        self._state = "closed"

    async def abort(self) -> None:
        if self._state != "open":
            return
        self._state = "aborted"
        self._buf = bytearray()
        await self._cancel_upload()

    async def _send_part(self, part: bytearray) -> None:
        raise NotImplementedError

    async def _finish(self, last: bytes) -> None:
        raise NotImplementedError

    async def _cancel_upload(self) -> None:
        raise NotImplementedError


class S3Writer(_BufferedWriter):
    """Multipart upload; parts go up concurrently (``S3_PARTS_IN_FLIGHT``)."""

    def __init__(self, store: FsspecStore, key: str, *, if_absent: bool = False) -> None:
        super().__init__(store, key, if_absent=if_absent)
        self._upload_id: str | None = None
        self._parts: dict[int, str] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._next_part = 1

    async def _s3(self, method: str, nbytes: int = 0, **kwargs: Any) -> Any:
        async def op(fs: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return await fs._call_s3(method, Bucket=self.store.bucket, Key=self.key, **kwargs)
            finally:
                self.store.stats.record_write(nbytes, time.perf_counter() - t0)

        return await self.store._call(self.key, op)

    async def _upload_part(self, number: int, part: bytes | bytearray) -> None:
        resp = await self._s3("upload_part", len(part), UploadId=self._upload_id, PartNumber=number, Body=part)
        self._parts[number] = resp["ETag"]

    async def _send_part(self, part: bytes | bytearray) -> None:
        if self._upload_id is None:
            resp = await self._s3("create_multipart_upload")
            self._upload_id = resp["UploadId"]
        while len(self._tasks) >= S3_PARTS_IN_FLIGHT:
            done, _ = await asyncio.wait(self._tasks, return_when=asyncio.FIRST_COMPLETED)
            self._tasks -= done
            for t in done:
                t.result()  # raise a part's failure
        task = asyncio.ensure_future(self._upload_part(self._next_part, part))
        self._next_part += 1
        self._tasks.add(task)

    async def _finish(self, last: bytes) -> None:
        if self._upload_id is None:  # small object: one PUT
            await self.store._put_single(self.key, last, if_absent=self.if_absent)
            return
        if last:
            await self._send_part(last)
        tasks, self._tasks = list(self._tasks), set()
        try:
            for t in tasks:
                await t
        except BaseException:
            self._tasks = set(tasks)
            raise
        extra: dict[str, Any] = {"IfNoneMatch": "*"} if self.if_absent else {}
        parts = [{"PartNumber": n, "ETag": self._parts[n]} for n in sorted(self._parts)]
        await self._s3("complete_multipart_upload", UploadId=self._upload_id,
                       MultipartUpload={"Parts": parts}, **extra)
        self._upload_id = None

    async def _cancel_upload(self) -> None:
        tasks, self._tasks = list(self._tasks), set()
        await drain(tasks)
        if self._upload_id is not None:
            upload_id, self._upload_id = self._upload_id, None
            try:
                await self._s3("abort_multipart_upload", UploadId=upload_id)
            except StoreError:
                pass  # the upload expires on its own; nothing is visible at the key


class GCSWriter(_BufferedWriter):
    """Resumable upload (chunks are multiples of 256 KiB, sent in order)."""

    def __init__(self, store: FsspecStore, key: str, *, if_absent: bool = False) -> None:
        super().__init__(store, key, if_absent=if_absent)
        self._location: str | None = None
        self._offset = 0

    async def _request(self, nbytes: int, *args: Any, **kwargs: Any) -> tuple[Any, bytes]:
        async def op(fs: Any) -> tuple[Any, bytes]:
            t0 = time.perf_counter()
            try:
                return await call_once(fs, *args, **kwargs)
            finally:
                self.store.stats.record_write(nbytes, time.perf_counter() - t0)

        return await self.store._call(self.key, op)

    async def _start(self) -> None:
        fs = await self.store.filesystem()
        params: dict[str, Any] = {"uploadType": "resumable", "name": self.key}
        if self.if_absent:
            params["ifGenerationMatch"] = "0"
        headers, _ = await self._request(
            0, "POST", f"{fs._location}/upload/storage/v1/b/{{}}/o", self.store.bucket,
            json={"name": self.key}, headers={"X-Upload-Content-Type": "application/octet-stream"},
            **params,
        )
        location = headers.get("Location")
        if not location:
            raise StoreError(f"{self.store.uri(self.key)}: resumable upload gave no session URI")
        self._location = location

    async def _put_chunk(self, data: bytes | bytearray, total: int | None) -> None:
        """Send ``data`` at ``self._offset``; ``total`` set on the final chunk."""
        view = memoryview(data)
        while True:
            end = self._offset + len(view) - 1
            size = str(total) if total is not None else "*"
            content_range = f"bytes {self._offset}-{end}/{size}" if len(view) else f"bytes */{size}"
            headers, _ = await self._request(
                len(view), "POST", self._location,
                headers={"Content-Range": content_range, "Content-Type": "application/octet-stream",
                         "Content-Length": str(len(view))},
                data=bytes(view) if len(view) else None,
            )
            persisted = headers.get("Range") if total is None else None
            if persisted:  # the server may keep less than we sent: resend the rest
                kept = int(persisted.split("-")[1]) + 1 - self._offset
                view = view[kept:]
                self._offset += kept
                if len(view):
                    continue
            else:
                self._offset += len(view)
            return

    async def _send_part(self, part: bytes | bytearray) -> None:
        if self._location is None:
            await self._start()
        await self._put_chunk(part, None)

    async def _finish(self, last: bytes) -> None:
        if self._location is None:  # small object: one multipart upload
            await self.store._put_single(self.key, last, if_absent=self.if_absent)
            return
        await self._put_chunk(last, self._offset + len(last))
        self._location = None

    async def _cancel_upload(self) -> None:
        if self._location is None:
            return
        location, self._location = self._location, None
        try:
            await self._request(0, "DELETE", location)
        except (StoreError, Exception):
            pass  # an unfinished resumable upload is invisible and expires
