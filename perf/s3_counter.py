"""A moto S3 server on 127.0.0.1 that counts the HTTP requests it serves.

Used by the perf scripts to count the reference's and lancejit's requests the same way,
server-side, independent of either library's own counters.  GET requests with a Range
header are range reads; their response bytes are summed.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
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
        """The timeline as text (see :func:`timeline_text`)."""
        with self.lock:
            return timeline_text(list(self.timeline))

    def snapshot(self) -> dict:
        with self.lock:
            return {"requests": dict(self.counts), "get": self.counts.get("GET", 0),
                    "bytes": self.bytes_out, "bytes_in": self.bytes_in, "kinds": dict(self.kinds),
                    "areas": dict(self.areas), "total": sum(self.counts.values())}


def timeline_text(timeline: list) -> str:
    """Requests as text: start and end (ms after the first request), concurrency at start,
    method, range, bytes, key."""
    rows = sorted(timeline, key=lambda r: r[3])
    if not rows:
        return "(no requests)"
    t0 = rows[0][3]
    lines = []
    for method, path, rng, start, end, nbytes in rows:
        live = sum(1 for r in rows if r[3] <= start < r[4])
        lines.append(f"{(start - t0) * 1e3:8.1f} {(end - t0) * 1e3:8.1f}  x{live:<2} {method:6} "
                     f"{rng or '-':28} {nbytes:>10,}  {path[-60:]}")
    return "\n".join(lines)


#: Paths of the counting server's own control requests (not counted): ``reset``,
#: ``snapshot``, ``timeline``.
CONTROL = "/_counter/"


class _CountingApp:
    def __init__(self, app, log: RequestLog) -> None:
        self.app, self.log = app, log

    def _control(self, what: str, start_response):
        if what == "reset":
            self.log.reset()
            body = b"{}"
        elif what == "snapshot":
            body = json.dumps(self.log.snapshot()).encode()
        else:
            with self.log.lock:
                body = json.dumps(list(self.log.timeline)).encode()
        start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(body)))])
        return [body]

    def __call__(self, environ, start_response):
        method = environ.get("REQUEST_METHOD", "?")
        path = environ.get("PATH_INFO", "")
        if path.startswith(CONTROL):
            return self._control(path[len(CONTROL):], start_response)
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


class RemoteLog:
    """The :class:`RequestLog` of a counting server in another process, over its control paths."""

    def __init__(self, endpoint: str) -> None:
        self.endpoint = endpoint

    def reset(self) -> None:
        requests.get(f"{self.endpoint}{CONTROL}reset")

    def snapshot(self) -> dict:
        return requests.get(f"{self.endpoint}{CONTROL}snapshot").json()

    def table(self) -> str:
        return timeline_text([tuple(r) for r in requests.get(f"{self.endpoint}{CONTROL}timeline").json()])


def _start_server(log: RequestLog):
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    server._server.app = _CountingApp(server._server.app, log)
    host, port = server.get_host_and_port()
    return server, f"http://{host}:{port}"


class CountingS3:
    """``with CountingS3() as s3:`` gives ``s3.endpoint``, ``s3.log`` and storage options.

    ``separate_process``: run the server in a child process (its Python threads then do not
    compete with the measured process for the GIL; counts come over control requests)."""

    def __init__(self, bucket: str = "perf", separate_process: bool = False) -> None:
        self.bucket = bucket
        self.separate_process = separate_process
        self.log: RequestLog | RemoteLog = RequestLog()

    def __enter__(self) -> "CountingS3":
        if self.separate_process:
            self._child = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--serve"],
                                           stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
            self.endpoint = self._child.stdout.readline().strip()
            self.log = RemoteLog(self.endpoint)
            self._server = None
        else:
            self._server, self.endpoint = _start_server(self.log)
        requests.put(f"{self.endpoint}/{self.bucket}")
        self.log.reset()
        return self

    def __exit__(self, *exc) -> None:
        if self._server is not None:
            self._server.stop()
        else:
            self._child.stdin.close()
            self._child.wait(timeout=30)

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


if __name__ == "__main__" and sys.argv[1:] == ["--serve"]:  # the child of CountingS3(separate_process=True)
    _server, _endpoint = _start_server(RequestLog())
    print(_endpoint, flush=True)
    sys.stdin.read()  # until the parent closes it
    _server.stop()
