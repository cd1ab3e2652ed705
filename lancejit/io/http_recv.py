"""One HTTP/1.1 GET over plain ``http://`` whose body the socket writes straight into one
buffer (``asyncio.BufferedProtocol``: ``recv_into`` the final buffer), on a connection of its own.

What :class:`~lancejit.io.s3_http.S3HttpClient` uses for GETs from ``http://`` endpoints
(emulators, in-cluster object stores): aiohttp hands a body over as a ``bytes`` object per
~256 KiB received, each then copied into the result; here the kernel copies each chunk into
its final place, with no per-chunk allocation, copy or stream bookkeeping (less event-loop CPU
per body, small or large).

Answers with a ``Content-Length`` and no transfer or content coding are read here, whatever
their status (the caller maps errors).  Any other (chunked, encoded) raises :class:`NotPlain`
before its body is read: the caller then asks through its general client.  The connection is
closed after each answer (no pool): the client sends small GETs this way only to servers that
close their connections anyway.
"""

from __future__ import annotations

import asyncio
from typing import Any, Callable

import numpy as np

#: Most bytes of status line + headers accepted.
MAX_HEAD_BYTES = 64 * 1024


class NotPlain(Exception):
    """The answer is not a plain ``206`` of the expected length: send the request another way."""


class ShortBody(ConnectionError):
    """The connection closed before the body's last byte (transient: retried)."""


def parse_head(head: bytes) -> tuple[int, dict[str, str]]:
    """``(status, headers with lower-case names)`` of an HTTP/1.x answer's head (without the
    blank line); raises :class:`NotPlain` when it is not HTTP/1.x."""
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ", 2)
    if len(parts) < 2 or not parts[0].startswith("HTTP/1.") or not parts[1].isdigit():
        raise NotPlain(f"not an HTTP/1.x status line: {lines[0][:80]!r}")
    headers: dict[str, str] = {}
    for line in lines[1:]:
        name, sep, value = line.partition(":")
        if sep:
            headers[name.strip().lower()] = value.strip()
    return int(parts[1]), headers


class _Answer(asyncio.BufferedProtocol):
    """Receives one answer: the head into a small buffer, then the body (``Content-Length``
    bytes) into one buffer allocated when the head is in."""

    def __init__(self, loop: asyncio.AbstractEventLoop, progress: Callable | None) -> None:
        self.progress = progress
        self.head_buf = bytearray(MAX_HEAD_BYTES)
        self.head = b""
        self.in_body = False
        self.status = 0
        self.headers: dict[str, str] = {}
        self.out = np.empty(0, dtype=np.uint8)
        self.view = self.readonly = self.out.data
        self.length = 0
        self.filled = 0
        self.done: asyncio.Future[None] = loop.create_future()

    def get_buffer(self, sizehint: int) -> Any:
        if not self.in_body:
            return memoryview(self.head_buf)[: MAX_HEAD_BYTES - len(self.head)]
        if self.filled < self.length:
            return self.view[self.filled:]
        return memoryview(self.head_buf)  # bytes past the body: caught in buffer_updated

    def _fail(self, exc: BaseException) -> None:
        if not self.done.done():
            self.done.set_exception(exc)
        self.in_body = True
        self.filled = self.length  # (no further bytes land in out)

    def buffer_updated(self, nbytes: int) -> None:
        if self.done.done():
            return
        if self.in_body:
            if self.filled >= self.length:
                self._fail(ShortBody("the answer ran past its Content-Length"))
                return
            self.filled += nbytes
            self._arrived()
            return
        self.head += bytes(self.head_buf[:nbytes])
        end = self.head.find(b"\r\n\r\n")
        if end < 0:
            if len(self.head) >= MAX_HEAD_BYTES:
                self._fail(NotPlain("answer head too long"))
            return
        try:
            status, headers = parse_head(self.head[:end])
        except NotPlain as exc:
            self._fail(exc)
            return
        length = headers.get("content-length", "")
        if not length.isdigit() or "transfer-encoding" in headers or "content-encoding" in headers:
            self._fail(NotPlain(f"HTTP {status} without a plain Content-Length"))
            return
        self.status, self.headers, self.length = status, headers, int(length)
        extra = self.head[end + 4:]
        self.head = b""
        self.in_body = True
        if len(extra) > self.length:
            self._fail(ShortBody("the answer ran past its Content-Length"))
            return
        self.out = np.empty(self.length, dtype=np.uint8)
        self.view = self.out.data
        self.readonly = self.view.toreadonly()
        self.out[: len(extra)] = np.frombuffer(extra, dtype=np.uint8)
        self.filled = len(extra)
        self._arrived()

    def _arrived(self) -> None:
        # (the last arrival is reported by get_into's task, which then returns at once: the
        # caller's bookkeeping runs before anyone woken by that report)
        if self.progress is not None and self.status == 206 and 0 < self.filled < self.length:
            try:
                self.progress(self.readonly, self.filled)
            except BaseException as exc:  # noqa: BLE001 - the caller's error, raised by get_into()
                self._fail(exc)
                return
        if self.filled == self.length and not self.done.done():
            self.done.set_result(None)

    def eof_received(self) -> bool:
        return False  # close the transport

    def connection_lost(self, exc: BaseException | None) -> None:
        if not self.done.done():
            err = ShortBody(f"connection closed after {self.filled} of {self.length} body bytes"
                            if self.in_body else "connection closed before the answer's head")
            err.__cause__ = exc
            self.done.set_exception(err)


async def get_into(host: str, port: int, request_head: bytes, progress: Callable | None = None,
                   connect_timeout: float | None = None) -> tuple[int, dict[str, str], memoryview]:
    """Send ``request_head`` (a complete GET head) to ``host:port`` on a new connection and
    return ``(status, headers with lower-case names, body as a read-only view)``; the
    connection is closed afterwards.  ``progress(view, filled)`` after each arrival of a 206
    answer's body (``view[:filled]`` is in; the last one just before returning).  Raises
    :class:`NotPlain` for an answer without a plain ``Content-Length`` (chunked, encoded)."""
    loop = asyncio.get_running_loop()
    proto = _Answer(loop, progress)
    async with asyncio.timeout(connect_timeout):
        transport, _ = await loop.create_connection(lambda: proto, host, port)
    try:
        transport.write(request_head)
        await proto.done
    finally:
        done = proto.done
        if not done.done() or done.cancelled() or done.exception() is not None:
            transport.abort()
        else:
            transport.close()
    if progress is not None and proto.status == 206 and proto.length:
        progress(proto.readonly, proto.length)
    return proto.status, proto.headers, proto.readonly


__all__ = ["NotPlain", "ShortBody", "get_into", "parse_head"]
