"""AWS Signature Version 4 for S3 requests (GET, HEAD, single PUTs), in plain Python.

What :class:`~lancejit.io.s3_http.S3HttpClient` signs its reads with, instead of going through
botocore's request pipeline (milliseconds of Python per request; this costs tens of
microseconds).  Only the headers ``host``, ``x-amz-content-sha256``, ``x-amz-date`` (and
``x-amz-security-token`` with temporary credentials) are signed; other headers (``Range``) ride
unsigned, as S3 allows.  The payload hash is that of the empty body, or the one given (a PUT's).

Tested against botocore's ``S3SigV4Auth`` (the same signature for the same request and time).
"""

from __future__ import annotations

import hashlib
import hmac
import time
from dataclasses import dataclass
from urllib.parse import quote

#: SHA-256 of the empty payload (hex): the ``x-amz-content-sha256`` of a GET or HEAD.
EMPTY_SHA256 = hashlib.sha256(b"").hexdigest()
_ALGORITHM = "AWS4-HMAC-SHA256"
#: Characters S3 leaves unescaped in a canonical URI (RFC 3986 unreserved, plus ``/``).
_SAFE = "-._~/"


@dataclass(frozen=True, slots=True)
class Credentials:
    """An access key pair, with the session token of temporary credentials (or None)."""

    access_key: str
    secret_key: str
    token: str | None = None


def quote_key(path: str) -> str:
    """``path`` (``/bucket/key``) escaped for the request line and the canonical URI (S3
    escapes each byte once, keeps ``/``)."""
    return quote(path, safe=_SAFE)


def canonical_query(params: dict[str, str]) -> str:
    """``params`` as a query string in SigV4's canonical form (sorted, every byte but the
    unreserved ones escaped), which is also what the request sends."""
    return "&".join(f"{quote(k, safe='-._~')}={quote(v, safe='-._~')}" for k, v in sorted(params.items()))


def _hmac(key: bytes, msg: str) -> bytes:
    return hmac.new(key, msg.encode("utf-8"), hashlib.sha256).digest()


class Signer:
    """Signs S3 requests of one region with one set of credentials (the day's signing key
    cached)."""

    __slots__ = ("region", "service", "_key_day", "_key")

    def __init__(self, region: str, service: str = "s3") -> None:
        self.region = region
        self.service = service
        self._key_day: tuple[str, str] | None = None
        self._key = b""

    def _signing_key(self, secret: str, day: str) -> bytes:
        if self._key_day != (secret, day):
            k = _hmac(("AWS4" + secret).encode("utf-8"), day)
            k = _hmac(k, self.region)
            k = _hmac(k, self.service)
            self._key = _hmac(k, "aws4_request")
            self._key_day = (secret, day)
        return self._key

    def headers(self, method: str, host: str, quoted_path: str, creds: Credentials,
                now: float | None = None, query: str = "", payload_sha256: str = EMPTY_SHA256) -> dict[str, str]:
        """The headers that authenticate ``method`` of ``quoted_path`` (already escaped with
        :func:`quote_key`) with the canonical query string ``query`` (see :func:`canonical_query`;
        sent as is) on ``host`` (``name[:port]`` as sent in ``Host``) at time ``now`` (seconds
        since the epoch; default: the clock); ``payload_sha256``: the body's SHA-256 (hex)."""
        t = time.gmtime(time.time() if now is None else now)
        amz_date = time.strftime("%Y%m%dT%H%M%SZ", t)
        day = amz_date[:8]
        if creds.token:
            canonical_headers = (f"host:{host}\nx-amz-content-sha256:{payload_sha256}\n"
                                 f"x-amz-date:{amz_date}\nx-amz-security-token:{creds.token}\n")
            signed = "host;x-amz-content-sha256;x-amz-date;x-amz-security-token"
        else:
            canonical_headers = f"host:{host}\nx-amz-content-sha256:{payload_sha256}\nx-amz-date:{amz_date}\n"
            signed = "host;x-amz-content-sha256;x-amz-date"
        canonical = f"{method}\n{quoted_path}\n{query}\n{canonical_headers}\n{signed}\n{payload_sha256}"
        scope = f"{day}/{self.region}/{self.service}/aws4_request"
        to_sign = f"{_ALGORITHM}\n{amz_date}\n{scope}\n{hashlib.sha256(canonical.encode('utf-8')).hexdigest()}"
        signature = hmac.new(self._signing_key(creds.secret_key, day), to_sign.encode("utf-8"),
                             hashlib.sha256).hexdigest()
        out = {
            "x-amz-date": amz_date,
            "x-amz-content-sha256": payload_sha256,
            "Authorization": f"{_ALGORITHM} Credential={creds.access_key}/{scope}, "
                             f"SignedHeaders={signed}, Signature={signature}",
        }
        if creds.token:
            out["x-amz-security-token"] = creds.token
        return out


__all__ = ["Credentials", "EMPTY_SHA256", "Signer", "canonical_query", "quote_key"]
