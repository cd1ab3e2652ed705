"""A fault-injecting HTTP proxy on 127.0.0.1 in front of an S3 or GCS emulator.

Every request is forwarded to the upstream emulator, except that every ``every``-th request
(counted across all connections) gets a fault, cycling through ``modes``:

* ``"503"`` / ``"500"`` / ``"429"``: an error answer (S3 XML ``SlowDown`` / ``InternalError``,
  or GCS JSON), the request not forwarded;
* ``"reset_before"``: the connection is reset (RST) before the request reaches the emulator;
* ``"reset_after"``: the request IS applied by the emulator, then the connection is reset
  before the answer (a write that landed but whose answer was lost);
* ``"truncate"``: the answer's headers promise the whole body, half of it is sent, then reset;
* ``"stall"``: the answer is held for ``stall_s`` seconds (a read that stalls) before it is sent.

``faults`` counts the faults injected by mode; ``requests`` counts all requests and
``requests_enabled`` those made while faults were enabled.
"""

from __future__ import annotations

import http.client
import itertools
import socket
import struct
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

MODES = ("503", "reset_after", "500", "reset_before", "429", "truncate", "stall")
_HOP = {"connection", "keep-alive", "transfer-encoding", "proxy-connection", "te", "trailer", "upgrade"}


class FaultProxy:
    def __init__(self, upstream: str, kind: str, *, every: int = 10, modes=MODES, stall_s: float = 2.0) -> None:
        parts = urlsplit(upstream)
        self.upstream = (parts.hostname, parts.port)
        self.kind = kind  # "s3" or "gcs": shape of error bodies
        self.every = every
        self.modes = tuple(modes)
        self.stall_s = stall_s
        self.enabled = False
        self.requests = 0
        self.requests_enabled = 0
        self.faults: Counter[str] = Counter()
        self._lock = threading.Lock()
        self._cycle = itertools.cycle(self.modes)
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args) -> None:  # quiet
                pass

            def _handle(self) -> None:
                proxy._serve(self)

            do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = do_PATCH = _handle

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    # ------------------------------------------------------------------ internals
    def _next_fault(self) -> str | None:
        with self._lock:
            self.requests += 1
            if not self.enabled:
                return None
            self.requests_enabled += 1
            if self.requests_enabled % self.every:
                return None
            mode = next(self._cycle)
            self.faults[mode] += 1
            return mode

    @staticmethod
    def _reset(h: BaseHTTPRequestHandler) -> None:
        h.close_connection = True
        try:
            h.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            h.connection.close()
        except OSError:
            pass

    def _error(self, h: BaseHTTPRequestHandler, status: int) -> None:
        if self.kind == "s3":
            code = {503: "SlowDown", 500: "InternalError", 429: "SlowDown"}[status]
            body = (f'<?xml version="1.0" encoding="UTF-8"?><Error><Code>{code}</Code>'
                    f"<Message>injected fault</Message><RequestId>x</RequestId></Error>").encode()
            ctype = "application/xml"
        else:
            body = f'{{"error": {{"code": {status}, "message": "injected fault"}}}}'.encode()
            ctype = "application/json"
        h.send_response(status)
        h.send_header("Content-Type", ctype)
        h.send_header("Content-Length", str(len(body)))
        h.end_headers()
        if h.command != "HEAD":
            h.wfile.write(body)

    def _serve(self, h: BaseHTTPRequestHandler) -> None:
        length = int(h.headers.get("Content-Length") or 0)
        body = h.rfile.read(length) if length else b""
        fault = self._next_fault()
        if fault in ("503", "500", "429"):
            return self._error(h, int(fault))
        if fault == "reset_before":
            return self._reset(h)
        conn = http.client.HTTPConnection(*self.upstream, timeout=30)
        try:
            headers = {k: v for k, v in h.headers.items() if k.lower() not in _HOP}
            conn.request(h.command, h.path, body=body if (body or length) else None, headers=headers)
            resp = conn.getresponse()
            data = resp.read()
            status, reason, resp_headers = resp.status, resp.reason, resp.getheaders()
        finally:
            conn.close()
        if fault == "reset_after":
            return self._reset(h)
        if fault == "stall":
            time.sleep(self.stall_s)
        h.send_response(status, reason)
        head = h.command == "HEAD"  # keeps the upstream's Content-Length (the object's size)
        for k, v in resp_headers:
            if k.lower() not in _HOP and (head or k.lower() != "content-length"):
                h.send_header(k, v)
        if not head:
            h.send_header("Content-Length", str(len(data)))
        h.end_headers()
        if h.command == "HEAD":
            return
        if fault == "truncate" and len(data) > 1:
            h.wfile.write(data[: len(data) // 2])
            h.wfile.flush()
            return self._reset(h)
        h.wfile.write(data)
