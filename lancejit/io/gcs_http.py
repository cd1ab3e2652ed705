"""Anonymous GCS reads over aiohttp (JSON API): object bytes (``alt=media``, ranged), object
metadata and listing pages, without gcsfs (and the Google auth libraries it imports).

Used by :class:`lancejit.io.gcs_store.GCSStore` for anonymous access (public buckets,
emulators); signed access goes through gcsfs.  Errors: 404 is ``FileNotFoundError``, 401/403
``PermissionError``, any other status a :class:`GcsHttpError` whose ``code`` is the status (416:
range not satisfiable; 429/5xx are retried by the store, see
:func:`lancejit.io.fsspec_store.is_transient`).
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import quote, urlencode

from lancejit.io.fsspec_store import parse_content_range

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
    """Anonymous requests to one bucket of ``endpoint`` (one aiohttp session; make it in the
    event loop that uses it); ``limit`` connections at most."""

    def __init__(self, endpoint: str | None, bucket: str, *, limit: int, connect_timeout: float) -> None:
        import aiohttp

        self.base = (endpoint or DEFAULT_ENDPOINT).rstrip("/")
        self.bucket = bucket
        self._session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=max(1, limit)),
            timeout=aiohttp.ClientTimeout(total=None, sock_connect=connect_timeout),
            auto_decompress=False,  # byte ranges address the stored bytes
            skip_auto_headers=("Accept-Encoding",),
            trust_env=True,
        )

    def _object(self, key: str) -> str:
        return f"b/{quote(self.bucket, safe='')}/o/{quote(key, safe='')}"

    async def _fetch(self, url: str, headers: dict[str, str] | None = None) -> tuple[int, Any, bytes]:
        from yarl import URL

        async with self._session.get(URL(url, encoded=True), headers=headers or {}, allow_redirects=False) as resp:
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
        return json.loads(body)

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
        return json.loads(body)

    async def close(self) -> None:
        await self._session.close()


__all__ = ["DEFAULT_ENDPOINT", "GcsHttpClient", "GcsHttpError", "GcsNotFound", "GcsRefused"]
