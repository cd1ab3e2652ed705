"""A moto S3 server on 127.0.0.1 that counts the HTTP requests it serves.

Used by the perf scripts to count the reference's and lancejit's requests the same way,
server-side, independent of either library's own counters.  GET requests with a Range
header are range reads; their response bytes are summed.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from dataclasses import dataclass, field

import requests


@dataclass
class RequestLog:
    lock: threading.Lock = field(default_factory=threading.Lock)
    counts: Counter = field(default_factory=Counter)
    #: Requests by kind (``LIST``, ``GET range``, ``GET``, ``HEAD``, ``PUT``, ``DELETE``, ``POST``)
    #: and by the dataset area they touch (``data``, ``_deletions``, ``_transactions``,
    #: ``_versions``, ``list``, ``other``).
    kinds: Counter = field(default_factory=Counter)
    areas: Counter = field(default_factory=Counter)
    bytes_out: int = 0
    #: Request body bytes received (PUT / POST: what the clients wrote).
    bytes_in: int = 0
    #: One record per request: (method, path, Range header or "", start s, end s, bytes out);
    #: times are ``time.perf_counter()`` values (same clock as the client's).
    timeline: list = field(default_factory=list)

    def reset(self) -> None:
        with self.lock:
            self.counts.clear()
            self.kinds.clear()
            self.areas.clear()
            self.bytes_out = 0
            self.bytes_in = 0
            self.timeline.clear()

    def table(self) -> str:
        """The timeline as text: start and end (ms after the first request), concurrency at
        start, method, range, bytes, key."""
        with self.lock:
            rows = sorted(self.timeline, key=lambda r: r[3])
        if not rows:
            return "(no requests)"
        t0 = rows[0][3]
        lines = []
        for method, path, rng, start, end, nbytes in rows:
            live = sum(1 for r in rows if r[3] <= start < r[4])
            lines.append(f"{(start - t0) * 1e3:8.1f} {(end - t0) * 1e3:8.1f}  x{live:<2} {method:6} "
                         f"{rng or '-':28} {nbytes:>10,}  {path[-60:]}")
        return "\n".join(lines)

    def snapshot(self) -> dict:
        with self.lock:
            return {"requests": dict(self.counts), "get": self.counts.get("GET", 0),
                    "bytes": self.bytes_out, "bytes_in": self.bytes_in, "kinds": dict(self.kinds),
                    "areas": dict(self.areas), "total": sum(self.counts.values())}


class _CountingApp:
    def __init__(self, app, log: RequestLog) -> None:
        self.app, self.log = app, log

    def __call__(self, environ, start_response):
        method = environ.get("REQUEST_METHOD", "?")
        path = environ.get("PATH_INFO", "")
        counted = not path.startswith("/moto-api")
        start = time.perf_counter()
        body = self.app(environ, start_response)
        if not counted:
            return body
        chunks = list(body)
        nbytes = sum(len(c) for c in chunks)
        end = time.perf_counter()
        query = environ.get("QUERY_STRING", "")
        rng = environ.get("HTTP_RANGE", "")
        listing = method == "GET" and ("list-type" in query or "prefix=" in query or path.count("/") <= 1)
        kind = "LIST" if listing else ("GET range" if method == "GET" and rng else method)
        area = "list" if listing else next((a for a in ("/data/", "/_deletions/", "/_transactions/", "/_versions/")
                                            if a in path), "/other/").strip("/")
        try:
            received = int(environ.get("CONTENT_LENGTH") or 0)
        except ValueError:
            received = 0
        with self.log.lock:
            self.log.counts[method] += 1
            self.log.kinds[kind] += 1
            self.log.areas[area] += 1
            if method == "GET":
                self.log.bytes_out += nbytes
            if method in ("PUT", "POST"):
                self.log.bytes_in += received
            self.log.timeline.append((method, path, environ.get("HTTP_RANGE", ""), start, end, nbytes))
        return chunks


class CountingS3:
    """``with CountingS3() as s3:`` gives ``s3.endpoint``, ``s3.log`` and storage options."""

    def __init__(self, bucket: str = "perf") -> None:
        self.bucket = bucket
        self.log = RequestLog()

    def __enter__(self) -> "CountingS3":
        from moto.server import ThreadedMotoServer

        logging.getLogger("werkzeug").setLevel(logging.ERROR)
        self._server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
        self._server.start()
        self._server._server.app = _CountingApp(self._server._server.app, self.log)
        host, port = self._server.get_host_and_port()
        self.endpoint = f"http://{host}:{port}"
        requests.put(f"{self.endpoint}/{self.bucket}")
        self.log.reset()
        return self

    def __exit__(self, *exc) -> None:
        self._server.stop()

    @property
    def reference_options(self) -> dict[str, str]:
        """storage_options for pylance (object_store keys)."""
        return {"aws_endpoint": self.endpoint, "aws_access_key_id": "x",
                "aws_secret_access_key": "x", "aws_region": "us-east-1", "allow_http": "true"}

    @property
    def lancejit_options(self) -> dict[str, str]:
        return dict(self.reference_options)

    def upload(self, local_path: str, key: str) -> str:
        with open(local_path, "rb") as f:
            requests.put(f"{self.endpoint}/{self.bucket}/{key}", data=f.read())
        self.log.reset()
        return f"s3://{self.bucket}/{key}"
