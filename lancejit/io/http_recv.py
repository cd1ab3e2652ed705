"""HTTP/1.1 requests over a small pool of keep-alive connections, each answer's body received
straight into one buffer (``asyncio.BufferedProtocol``: the socket writes into the final buffer).

What :class:`~lancejit.io.s3_http.S3HttpClient` sends its reads with (GET, HEAD, listings) to
``http://`` and ``https://`` endpoints without a proxy, instead of aiohttp: a process reading an
object store then imports no HTTP library (aiohttp and its dependencies are a large part of a
fresh process's imports), and no body is handed over as ``bytes`` pieces copied again into the
result (here the kernel copies each chunk into its final place, with no per-chunk allocation,
copy or stream bookkeeping).

Answers with a ``Content-Length`` (or without a body: to HEAD, 204, 304) and no transfer or
content coding are read here, whatever their status (the caller maps errors).  Any other
(chunked, encoded, an interim 1xx) raises :class:`NotPlain` before its body is read and the
connection is dropped: the caller then asks through its general client.  A connection is kept
for the next request unless the answer said ``Connection: close`` or was HTTP/1.0; a request
sent on a kept connection that the server had closed meanwhile (the connection ends before any
byte of the answer) is sent once more on a new connection (GET and HEAD are idempotent).
"""

from __future__ import annotations

import asyncio
import os
from typing import Any, Callable

import numpy as np

#: Most bytes of status line + headers accepted.
MAX_HEAD_BYTES = 64 * 1024
_EMPTY = np.empty(0, dtype=np.uint8)


class NotPlain(Exception):
    """The answer is not one read here (chunked, encoded, 1xx): send the request another way."""


class ShortBody(ConnectionError):
    """The connection closed before the body's last byte (transient: retried)."""


class _Stale(ConnectionError):
    """A kept connection ended before any byte of the answer (the server closed it idle)."""


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


class Headers(dict):
    """An answer's headers (lower-case names) read by any case of their names."""

    def __getitem__(self, name: str) -> str:
        return dict.__getitem__(self, name.lower())

    def get(self, name: str, default: Any = None) -> Any:  # type: ignore[override]
        return dict.get(self, name.lower(), default)


def env_proxied(scheme: str, host: str) -> bool:
    """Whether the environment routes ``scheme://host`` through a proxy: urllib's
    ``getproxies_environment()`` and ``proxy_bypass_environment()`` (what aiohttp with
    ``trust_env`` and urllib decide on Linux), without importing ``urllib.request``."""
    proxies: dict[str, str] = {}
    for name, value in os.environ.items():  # any case first, then lower-case names win
        low = name.lower()
        if value and low.endswith("_proxy"):
            proxies[low[:-6]] = value
    if "REQUEST_METHOD" in os.environ:  # a CGI script: HTTP_PROXY may come from a request header
        proxies.pop("http", None)
    for name, value in os.environ.items():
        if name.endswith("_proxy"):
            if value:
                proxies[name.lower()[:-6]] = value
            else:
                proxies.pop(name.lower()[:-6], None)
    if scheme not in proxies:
        return False
    no_proxy = proxies.get("no")
    if no_proxy is None:
        return True
    if no_proxy == "*":
        return False
    host = host.lower()
    for name in no_proxy.split(","):
        name = name.strip().lstrip(".").lower()
        if name and (host == name or host.endswith("." + name)):
            return False
    return True


_SSL: Any = None


def ssl_context() -> Any:
    """The TLS context of ``https://`` connections (the system's trusted certificates, as
    aiohttp's default), made once per process."""
    global _SSL
    if _SSL is None:
        import ssl

        _SSL = ssl.create_default_context()
    return _SSL


class _Connection(asyncio.BufferedProtocol):
    """One connection: receives one answer at a time, the head into a small buffer, then the
    body (``Content-Length`` bytes) into one buffer allocated when the head is in."""

    def __init__(self) -> None:
        self.transport: Any = None
        self.closed = False
        self.head_buf = bytearray(MAX_HEAD_BYTES)
        self.done: asyncio.Future[None] | None = None
        #: Whether the connection may serve the next request (set by each answer).
        self.keep = False
        self.answers = 0
        self._start(None, False, None)

    def _start(self, done: asyncio.Future[None] | None, no_body: bool, progress: Callable | None) -> None:
        self.done = done
        self.no_body = no_body
        self.progress = progress
        self.head = b""
        self.in_body = False
        self.status = 0
        self.headers: dict[str, str] = {}
        self.out = _EMPTY
        self.view = self.readonly = _EMPTY.data
        self.length = 0
        self.filled = 0
        self.received = 0

    def connection_made(self, transport: Any) -> None:
        self.transport = transport

    def get_buffer(self, sizehint: int) -> Any:
        if not self.in_body:
            return memoryview(self.head_buf)[: MAX_HEAD_BYTES - len(self.head)]
        if self.filled < self.length:
            return self.view[self.filled:]
        return memoryview(self.head_buf)  # bytes past the body: caught in buffer_updated

    def _fail(self, exc: BaseException) -> None:
        self.keep = False
        if self.done is not None and not self.done.done():
            self.done.set_exception(exc)
        self.in_body = True
        self.filled = self.length  # (no further bytes land in out)

    def buffer_updated(self, nbytes: int) -> None:
        done = self.done
        if done is None or done.done():  # bytes nobody asked for: the connection is unusable
            self.keep = False
            self.closed = True
            if self.transport is not None:
                self.transport.abort()
            return
        self.received += nbytes
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
        bodiless = self.no_body or status in (204, 304)
        length = "0" if bodiless else headers.get("content-length", "")
        if status < 200 or not length.isdigit() or (not bodiless and (
                "transfer-encoding" in headers or "content-encoding" in headers)):
            self._fail(NotPlain(f"HTTP {status} without a plain Content-Length"))
            return
        self.status, self.headers, self.length = status, headers, int(length)
        self.keep = self.head.startswith(b"HTTP/1.1") and headers.get("connection", "").lower() != "close"
        extra = self.head[end + 4:]
        self.head = b""
        self.in_body = True
        if len(extra) > self.length:
            self._fail(ShortBody("the answer ran past its Content-Length"))
            return
        if self.length:
            self.out = np.empty(self.length, dtype=np.uint8)
            self.view = self.out.data
            self.readonly = self.view.toreadonly()
            self.out[: len(extra)] = np.frombuffer(extra, dtype=np.uint8)
        self.filled = len(extra)
        self._arrived()

    def _arrived(self) -> None:
        # (the last arrival is reported by request's task, which then returns at once: the
        # caller's bookkeeping runs before anyone woken by that report)
        if self.progress is not None and self.status == 206 and 0 < self.filled < self.length:
            try:
                self.progress(self.readonly, self.filled)
            except BaseException as exc:  # noqa: BLE001 - the caller's error, raised by request()
                self._fail(exc)
                return
        if self.filled == self.length and self.done is not None and not self.done.done():
            self.answers += 1
            self.done.set_result(None)

    def eof_received(self) -> bool:
        return False  # close the transport

    def connection_lost(self, exc: BaseException | None) -> None:
        self.closed = True
        self.keep = False
        done = self.done
        if done is not None and not done.done():
            if self.received == 0 and self.answers:
                err: ConnectionError = _Stale("the kept connection was closed")
            else:
                err = ShortBody(f"connection closed after {self.filled} of {self.length} body bytes"
                                if self.in_body else "connection closed before the answer's head")
            err.__cause__ = exc
            done.set_exception(err)

    async def exchange(self, request_head: bytes, no_body: bool, progress: Callable | None
                       ) -> tuple[int, dict[str, str], memoryview]:
        """Send one request and receive its answer (see :meth:`HttpPool.request`)."""
        done = asyncio.get_running_loop().create_future()
        self._start(done, no_body, progress)
        self.transport.write(request_head)
        await done
        self.done = None
        if progress is not None and self.status == 206 and self.length:
            progress(self.readonly, self.length)
        return self.status, self.headers, self.readonly

    def close(self, abort: bool = False) -> None:
        self.closed = True
        self.keep = False
        if self.transport is not None:
            if abort:
                self.transport.abort()
            else:
                self.transport.close()


def endpoint_host(parts: Any) -> str:
    """The ``Host`` header of requests to the endpoint ``parts`` (a ``urlsplit`` result): the
    port only when it is not the scheme's default."""
    default_port = {"http": 80, "https": 443}.get(parts.scheme)
    return parts.netloc if parts.port not in (None, default_port) else (parts.hostname or "")


def endpoint_pool(parts: Any, limit: int, connect_timeout: float | None) -> "HttpPool | None":
    """A pool of kept connections to the endpoint ``parts`` (a ``urlsplit`` result), or None when
    requests to it do not go direct (a scheme other than http/https, or a proxy applies)."""
    default_port = {"http": 80, "https": 443}.get(parts.scheme)
    if default_port is None or not parts.hostname or env_proxied(parts.scheme, parts.hostname):
        return None
    return HttpPool(parts.hostname, parts.port or default_port, tls=parts.scheme == "https", limit=limit,
                    connect_timeout=connect_timeout)


def aiohttp_session(limit: int, connect_timeout: float | None, **options: Any) -> Any:
    """An aiohttp session for what the pools do not send (aiohttp imported now): bodies as
    stored (no decompression, no ``Accept-Encoding``), proxies from the environment."""
    import aiohttp

    return aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(limit=limit),
        timeout=aiohttp.ClientTimeout(total=None, sock_connect=connect_timeout),
        auto_decompress=False,  # byte ranges address the stored bytes
        skip_auto_headers=("Accept-Encoding",),
        trust_env=True,
        **options,
    )


class HttpPool:
    """Requests to one ``host:port`` (TLS when ``tls``) over at most ``limit`` connections, kept
    between requests; made and used in one event loop."""

    def __init__(self, host: str, port: int, *, tls: bool, limit: int, connect_timeout: float | None) -> None:
        self.host, self.port, self.tls = host, port, tls
        self.limit = max(1, limit)
        self.connect_timeout = connect_timeout
        self._idle: list[_Connection] = []
        self._slots = asyncio.Semaphore(self.limit)
        #: Connections opened so far (for tests and measurements).
        self.connections = 0

    async def _connect(self) -> _Connection:
        loop = asyncio.get_running_loop()
        kwargs: dict[str, Any] = {"ssl": ssl_context(), "server_hostname": self.host} if self.tls else {}
        async with asyncio.timeout(self.connect_timeout):
            _, conn = await loop.create_connection(_Connection, self.host, self.port, **kwargs)
        self.connections += 1
        return conn

    def _kept(self) -> _Connection | None:
        while self._idle:
            conn = self._idle.pop()
            if not conn.closed and conn.keep and not conn.transport.is_closing():
                return conn
        return None

    async def request(self, request_head: bytes, *, no_body: bool = False, progress: Callable | None = None
                      ) -> tuple[int, dict[str, str], memoryview]:
        """Send ``request_head`` (a complete request head without a body) and return ``(status,
        headers with lower-case names, body as a read-only view)``; ``no_body``: the request is a
        HEAD (its answer has none).  ``progress(view, filled)`` after each arrival of a 206
        answer's body (``view[:filled]`` is in; the last one just before returning).  Raises
        :class:`NotPlain` for an answer not read here, :class:`ShortBody` when the connection
        ends before the answer does."""
        async with self._slots:
            for attempt in range(2):
                conn = self._kept()
                if conn is None:
                    conn = await self._connect()
                try:
                    got = await conn.exchange(request_head, no_body, progress)
                except _Stale:
                    conn.close(abort=True)
                    if attempt == 0:
                        continue
                    raise ShortBody("the connection closed before the answer's head") from None
                except BaseException:
                    conn.close(abort=True)
                    raise
                if conn.keep and not conn.closed and len(self._idle) < self.limit:
                    self._idle.append(conn)
                else:
                    conn.close()
                return got
        raise AssertionError("unreachable")  # pragma: no cover

    def close(self) -> None:
        """Close the kept connections."""
        while self._idle:
            self._idle.pop().close()


__all__ = ["Headers", "HttpPool", "NotPlain", "ShortBody", "aiohttp_session", "endpoint_host", "endpoint_pool",
           "env_proxied", "parse_head", "ssl_context"]
