"""Anonymous GCS reads (JSON API): object bytes (``alt=media``, ranged), object metadata and
listing pages, without gcsfs (and the Google auth libraries it imports), over lancejit's own kept
connections (:mod:`.http_recv`) or, behind a proxy and for answers those do not read (chunked,
encoded), aiohttp.

Used by :class:`lancejit.io.gcs_store.GCSStore` for anonymous access (public buckets,
emulators); signed access goes through gcsfs.  Errors: 404 is ``FileNotFoundError``, 401/403
``PermissionError``, any other status a :class:`GcsHttpError` whose ``code`` is the status (416:
range not satisfiable; 429/5xx are retried by the store, see
:func:`lancejit.io.fsspec_store.is_transient`).
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import quote, urlencode, urlsplit

from lancejit.io.fsspec_store import parse_content_range
from lancejit.io.http_recv import Headers, NotPlain, aiohttp_session, endpoint_host, endpoint_pool

#: The public endpoint.
DEFAULT_ENDPOINT = "https://storage.googleapis.com"


class GcsHttpError(OSError):
    """A GCS answer with an error status ``code``."""

    def __init__(self, code: int, url: str) -> None:
        super().__init__(f"HTTP {code} for {url}")
        self.code = code


class GcsNotFound(GcsHttpError, FileNotFoundError):
    """404: no such object or bucket."""


class GcsRefused(GcsHttpError, PermissionError):
    """401/403: anonymous access refused."""


def _error(status: int, url: str) -> GcsHttpError:
    if status == 404:
        return GcsNotFound(status, url)
    if status in (401, 403):
        return GcsRefused(status, url)
    return GcsHttpError(status, url)


class GcsHttpClient:
    """Anonymous requests to one bucket of ``endpoint`` (make it in the event loop that uses it);
    ``limit`` connections at most."""

    def __init__(self, endpoint: str | None, bucket: str, *, limit: int, connect_timeout: float) -> None:
        self.base = (endpoint or DEFAULT_ENDPOINT).rstrip("/")
        self.bucket = bucket
        self._limit = max(1, limit)
        self._connect_timeout = connect_timeout
        self._session: Any = None
        parts = urlsplit(self.base)
        self._host = endpoint_host(parts)
        self._pool = endpoint_pool(parts, self._limit, connect_timeout)

    def _aiohttp(self) -> Any:
        """The aiohttp session (made on first use)."""
        if self._session is None:
            self._session = aiohttp_session(self._limit, self._connect_timeout)
        return self._session

    def _object(self, key: str) -> str:
        return f"b/{quote(self.bucket, safe='')}/o/{quote(key, safe='')}"

    async def _fetch(self, url: str, headers: dict[str, str] | None = None) -> tuple[int, Any, Any]:
        if self._pool is not None:
            target = url[len(self.base):] or "/"
            extra = "".join(f"{k}: {v}\r\n" for k, v in (headers or {}).items())
            try:
                status, answer, body = await self._pool.request(
                    f"GET {target} HTTP/1.1\r\nHost: {self._host}\r\n{extra}\r\n".encode("latin-1"))
            except NotPlain:
                pass  # a chunked or encoded answer: asked again below
            else:
                if status >= 300:
                    raise _error(status, url)
                return status, Headers(answer), body
        from yarl import URL

        async with self._aiohttp().get(URL(url, encoded=True), headers=headers or {}, allow_redirects=False) as resp:
            body = await resp.read()
            if resp.status >= 300:
                raise _error(resp.status, url)
            return resp.status, resp.headers, body

    async def get(self, key: str, range_header: str | None) -> tuple[bytes, int | None]:
        """One GET of the object's bytes (optionally ranged): ``(payload, object size or None)``."""
        url = f"{self.base}/download/storage/v1/{self._object(key)}?alt=media"
        status, headers, body = await self._fetch(url, {"Range": range_header} if range_header else None)
        if status == 206 or not range_header:
            total = parse_content_range(headers.get("Content-Range"))
            return body, (len(body) if total is None and not range_header else total)
        total = len(body)  # 200 to a ranged GET: the whole object; cut out the range asked for
        a, _, b = range_header[6:].partition("-")
        if not a:
            return body[max(0, total - int(b)):], total
        return body[int(a):int(b) + 1], total

    async def meta(self, key: str) -> dict[str, Any]:
        """The object's JSON metadata (``size``, ``updated``, ``generation``...)."""
        _, _, body = await self._fetch(f"{self.base}/storage/v1/{self._object(key)}")
        return json.loads(bytes(body))

    async def list_page(self, prefix: str, delimiter: str | None, max_results: int, token: str | None
                        ) -> dict[str, Any]:
        """One page of the bucket's object listing (the JSON API's answer)."""
        params = {"maxResults": str(max_results)}
        if prefix:
            params["prefix"] = prefix
        if delimiter:
            params["delimiter"] = delimiter
        if token:
            params["pageToken"] = token
        url = f"{self.base}/storage/v1/b/{quote(self.bucket, safe='')}/o?{urlencode(params, quote_via=quote)}"
        _, _, body = await self._fetch(url)
        return json.loads(bytes(body))

    async def close(self) -> None:
        if self._pool is not None:
            self._pool.close()
        if self._session is not None:
            await self._session.close()


__all__ = ["DEFAULT_ENDPOINT", "GcsHttpClient", "GcsHttpError", "GcsNotFound", "GcsRefused"]
