"""S3 reads (GET, HEAD, ListObjectsV2) and single PUTs signed with :mod:`.sigv4`; reads sent
over lancejit's own kept connections (:mod:`.http_recv`) or aiohttp, PUTs over aiohttp.

botocore's request pipeline (model serialization, event hooks, response parsing, chunked body
reads) costs milliseconds of Python per GET, more the bigger the body; a plain request signed
here costs several times less, whatever the size.  Requests are path-style
(``{endpoint}/{bucket}/{key}``), as the reference's object store sends them by default.

:class:`S3Store` uses this client for every read, listing and single-request write (deletion
files, transactions, manifests, small data files) and keeps botocore for multipart uploads and
deletes.  A conditional PUT (``If-None-Match: *``) answered 412 raises ``FileExistsError``.
Reads from ``http://`` and ``https://`` endpoints without a proxy go through :mod:`.http_recv`
(the socket writes each body into its final buffer; see :data:`DIRECT`), so reading imports no
HTTP library; chunked or encoded answers, endpoints behind a proxy and PUTs go through aiohttp
(imported then).

Answers map to the exceptions :mod:`.fsspec_store` already classifies: 404 ->
``FileNotFoundError``, 403 -> ``PermissionError``, 416 -> :class:`RangeNotSatisfiable`, other
statuses -> :class:`S3HttpError` (``code`` the HTTP status, ``s3_code`` the XML error code;
transient for 408/429/5xx).  A redirect or a 400 (wrong region, unusual endpoint) raises
:class:`Unsupported`: the store then goes back to botocore for its reads.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any
from urllib.parse import urlsplit

from lancejit.io.fsspec_store import parse_content_range
from lancejit.io.http_recv import Headers, aiohttp_session, endpoint_host, endpoint_pool
from lancejit.io.sigv4 import EMPTY_SHA256, Credentials, Signer, canonical_query, quote_key

#: Answers that make the store fall back to botocore (which follows region redirects).
_UNSUPPORTED_STATUS = frozenset({301, 302, 307, 308, 400})
_CODE = re.compile(rb"<Code>([^<]{1,100})</Code>")


class S3HttpError(OSError):
    """An S3 error answer: ``code`` the HTTP status, ``s3_code`` the S3 error code (or "")."""

    def __init__(self, status: int, s3_code: str, url: str) -> None:
        super().__init__(f"HTTP {status} {s3_code or ''} for {url}".strip())
        self.code = status
        self.s3_code = s3_code
        #: What :func:`lancejit.io.fsspec_store.is_transient` reads of botocore errors.
        self.response = {"Error": {"Code": s3_code}, "ResponseMetadata": {"HTTPStatusCode": status}}


class RangeNotSatisfiable(S3HttpError):
    """HTTP 416: the range starts past the object's end (or the object is empty)."""


class Unsupported(S3HttpError):
    """An answer this client does not follow (redirect, 400): use botocore instead."""


class IncompleteBody(ConnectionError):
    """The body ended before (or ran past) its ``Content-Length``: transient, retried."""


def _error(status: int, body: bytes, url: str) -> Exception:
    if status == 404:
        return FileNotFoundError(url)
    if status == 403:
        return PermissionError(f"HTTP 403 for {url}")
    m = _CODE.search(body or b"")
    code = m.group(1).decode("utf-8", "replace") if m else ""
    if status == 416:
        return RangeNotSatisfiable(status, code, url)
    if status in _UNSUPPORTED_STATUS:
        return Unsupported(status, code, url)
    return S3HttpError(status, code, url)


#: Bodies of at least this many bytes (through aiohttp) are received chunk by chunk into one
#: preallocated buffer, copied by NumPy (which releases the GIL: the emulator's or the decoders'
#: threads run meanwhile) instead of ``bytes.join`` under the GIL.
RECV_INTO_BYTES = 1 << 20
#: aiohttp's per-connection read buffer: fewer pause/resume cycles on multi-MB bodies.
READ_BUFSIZE = 1 << 20
#: Requests to ``http://`` and ``https://`` endpoints without a proxy go through
#: :mod:`.http_recv` (kept connections, bodies received into their buffers); False: aiohttp only.
DIRECT = True


async def _receive_into(resp: Any, length: int, url: str, progress: Any = None) -> memoryview:
    """The body of ``resp`` (``length`` bytes) in one buffer; ``progress(view, filled)`` (if
    given) after each chunk, ``view`` the read-only whole buffer, ``filled`` its bytes so far."""
    import numpy as np

    out = np.empty(length, dtype=np.uint8)
    view = out.data.toreadonly()
    pos = 0
    async for chunk in resp.content.iter_any():
        n = len(chunk)
        if pos + n > length:
            raise IncompleteBody(f"{url}: body longer than its Content-Length {length}")
        out[pos:pos + n] = np.frombuffer(chunk, dtype=np.uint8)
        pos += n
        if progress is not None:
            progress(view, pos)
    if pos != length:  # aiohttp raises ClientPayloadError first on a short body; belt and braces
        raise IncompleteBody(f"{url}: body of {pos} bytes, Content-Length {length}")
    return view


def parse_list_page(body: bytes) -> tuple[list[tuple[str, int, float | None, str | None]], str | None]:
    """The objects of a ListObjectsV2 answer (``encoding-type=url``) and its next token."""
    from datetime import datetime
    from urllib.parse import unquote_plus
    from xml.etree import ElementTree

    root = ElementTree.fromstring(body)
    items = []
    truncated, token = False, None
    for el in root:
        tag = el.tag.rsplit("}", 1)[-1]
        if tag == "Contents":
            fields = {c.tag.rsplit("}", 1)[-1]: (c.text or "") for c in el}
            modified = fields.get("LastModified")
            when = datetime.fromisoformat(modified.replace("Z", "+00:00")).timestamp() if modified else None
            items.append((unquote_plus(fields["Key"]), int(fields["Size"]), when,
                          fields.get("ETag", "").strip('"') or None))
        elif tag == "IsTruncated":
            truncated = (el.text or "").strip().lower() == "true"
        elif tag == "NextContinuationToken":
            token = el.text or None
    return items, (token if truncated else None)


class S3HttpClient:
    """GET and HEAD of objects in one bucket (bound to the event loop that created it): over
    :class:`~lancejit.io.http_recv.HttpPool` where it applies (see :data:`DIRECT`), else, and
    for answers it does not read, over one aiohttp session made on first need.

    ``endpoint``: base URL (``https://s3.us-east-1.amazonaws.com``, ``http://127.0.0.1:9000``);
    ``credentials``: an async callable returning :class:`Credentials` (or None: unsigned);
    ``limit``: connections kept open at most (per client).
    """

    def __init__(self, endpoint: str, bucket: str, region: str, credentials: Any, *, limit: int,
                 connect_timeout: float) -> None:
        parts = urlsplit(endpoint.rstrip("/"))
        self.base = f"{parts.scheme}://{parts.netloc}"
        self.prefix = parts.path.rstrip("/")
        self.host = endpoint_host(parts)
        self.bucket = bucket
        self.signer = Signer(region)
        self._credentials = credentials
        self._limit = max(1, limit)
        self._connect_timeout = connect_timeout
        self._session: Any = None
        self._pool = endpoint_pool(parts, self._limit, connect_timeout)

    def _aiohttp(self) -> Any:
        """The aiohttp session (made on first use)."""
        if self._session is None:
            self._session = aiohttp_session(self._limit, self._connect_timeout, read_bufsize=READ_BUFSIZE)
        return self._session

    async def _signed(self, method: str, key: str, range_header: str | None, query: str = "",
                      payload_sha256: str = EMPTY_SHA256) -> tuple[str, dict[str, str]]:
        """The escaped request path and the headers of one request (signed if credentials)."""
        path = quote_key(f"{self.prefix}/{self.bucket}/{key}" if key else f"{self.prefix}/{self.bucket}")
        creds: Credentials | None = await self._credentials()
        headers = (self.signer.headers(method, self.host, path, creds, query=query, payload_sha256=payload_sha256)
                   if creds is not None else {})
        if range_header:
            headers["Range"] = range_header
        return path, headers

    async def _request(self, method: str, key: str, range_header: str | None,
                       progress: Any = None, query: str = "") -> tuple[int, Any, Any]:
        path, headers = await self._signed(method, key, range_header, query)
        if self._pool is not None and DIRECT:
            from lancejit.io.http_recv import NotPlain

            head = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
            target = f"{path}?{query}" if query else path
            request = f"{method} {target} HTTP/1.1\r\nHost: {self.host}\r\n{head}\r\n"
            try:
                status, answer, body = await self._pool.request(request.encode("latin-1"),
                                                                no_body=method == "HEAD", progress=progress)
            except NotPlain:
                pass  # a chunked or encoded answer: asked again below
            else:
                if status >= 300:
                    raise _error(status, bytes(body), self.base + path)
                return status, Headers(answer), body
        from yarl import URL

        url = self.base + path + (f"?{query}" if query else "")
        async with self._aiohttp().request(method, URL(url, encoded=True), headers=headers,
                                           allow_redirects=False) as resp:
            length = resp.content_length
            if resp.status >= 300 or method == "HEAD" or length is None or length < RECV_INTO_BYTES:
                body = await resp.read()
                if resp.status >= 300:
                    raise _error(resp.status, body, url)
                return resp.status, resp.headers, body
            return resp.status, resp.headers, await _receive_into(
                resp, length, url, progress if resp.status == 206 else None)

    async def get(self, key: str, range_header: str | None, progress: Any = None) -> tuple[bytes, int | None]:
        """One GET (optionally ranged): ``(payload, object size or None)``.  A server that
        ignores the range answers 200 with the whole object: the size is then its length.
        ``progress(view, filled)``: see :func:`_receive_into` (large partial answers only)."""
        status, headers, body = await self._request("GET", key, range_header, progress)
        if status == 206 or not range_header:
            total = parse_content_range(headers.get("Content-Range"))
            return body, (len(body) if total is None and not range_header else total)
        # 200 to a ranged GET: the whole object; cut out the range we asked for
        total = len(body)
        a, _, b = range_header[6:].partition("-")
        if not a:  # suffix bytes=-n
            return body[max(0, total - int(b)):], total
        return body[int(a):int(b) + 1], total

    async def put(self, key: str, data: bytes, *, if_absent: bool = False) -> None:
        """One PUT of ``data`` (its SHA-256 signed).  ``if_absent``: ``If-None-Match: *``, a 412
        answer (the object exists) raising ``FileExistsError``."""
        from yarl import URL

        path, headers = await self._signed("PUT", key, None, payload_sha256=hashlib.sha256(data).hexdigest())
        if if_absent:
            headers["If-None-Match"] = "*"
        url = self.base + path
        async with self._aiohttp().put(URL(url, encoded=True), data=data, headers=headers,
                                       allow_redirects=False) as resp:
            body = await resp.read()
            if resp.status == 412 and if_absent:
                raise FileExistsError(url)
            if resp.status >= 300:
                raise _error(resp.status, body, url)

    async def head(self, key: str) -> int:
        """The object's size in bytes (one HEAD)."""
        _, headers, _ = await self._request("HEAD", key, None)
        return int(headers["Content-Length"])

    async def list_page(self, prefix: str, delimiter: str | None, max_keys: int, token: str | None
                        ) -> tuple[list[tuple[str, int, float | None, str | None]], str | None]:
        """One ListObjectsV2 page: ``([(key, size, modified epoch seconds, etag)], next
        continuation token or None)``; keys URL-encoded on the wire (``encoding-type=url``)."""
        params = {"list-type": "2", "prefix": prefix, "max-keys": str(max_keys), "encoding-type": "url"}
        if delimiter:
            params["delimiter"] = delimiter
        if token:
            params["continuation-token"] = token
        _, _, body = await self._request("GET", "", None, query=canonical_query(params))
        return parse_list_page(bytes(body))

    async def close(self) -> None:
        if self._pool is not None:
            self._pool.close()
        if self._session is not None:
            await self._session.close()


__all__ = ["RangeNotSatisfiable", "S3HttpClient", "S3HttpError", "Unsupported"]
