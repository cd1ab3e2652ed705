"""S3 reads over lancejit's own kept connections (lancejit.io.http_recv): exact bytes against moto
and scripted servers (HTTP and HTTPS), one request per plain answer, connections kept and reused
(a kept connection the server closed meanwhile is replaced without a retry of the read), HEAD
answers without a body; chunked answers go through aiohttp, bodies cut short are retried,
progress is reported in order; the proxy environment is read as urllib reads it."""

from __future__ import annotations

import asyncio
import datetime
import ssl
import urllib.request

import numpy as np
import pytest

from lancejit.core.errors import NotFoundError, StoreError
from lancejit.io import http_recv, s3_http
from lancejit.io.http_recv import HttpPool, NotPlain, env_proxied, parse_head
from lancejit.io.s3_store import S3Store
from tests.io.test_s3_direct_reads import _fake_s3

BIG = np.random.default_rng(11).integers(0, 256, 3 * 1024 * 1024 + 17, dtype=np.uint8).tobytes()


def test_parse_head():
    status, headers = parse_head(b"HTTP/1.1 206 Partial Content\r\nContent-Length: 10\r\n"
                                 b"Content-Range: bytes 0-9/100\r\nX-Odd:  spaced : value ")
    assert status == 206
    assert headers == {"content-length": "10", "content-range": "bytes 0-9/100", "x-odd": "spaced : value"}
    with pytest.raises(NotPlain):
        parse_head(b"SSH-2.0-OpenSSH")


@pytest.mark.parametrize("env", [
    {}, {"http_proxy": "http://p:3128"}, {"HTTPS_PROXY": "http://p:3128"},
    {"https_proxy": "http://p:3128", "no_proxy": "example.com,.internal"},
    {"HTTP_PROXY": "http://a:1", "http_proxy": "", "NO_PROXY": "*"},
    {"http_proxy": "http://p:1", "no_proxy": " S3.Example.com , other"},
    {"http_proxy": "http://p:1", "REQUEST_METHOD": "GET"},
])
def test_proxy_environment_as_urllib_reads_it(monkeypatch, env):
    for name in list(__import__("os").environ):
        if name.lower().endswith("_proxy") or name == "REQUEST_METHOD":
            monkeypatch.delenv(name)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    for scheme in ("http", "https"):
        for host in ("s3.example.com", "bucket.internal", "127.0.0.1", "other", "xother"):
            proxies = urllib.request.getproxies_environment()
            expect = scheme in proxies and not urllib.request.proxy_bypass_environment(host, proxies)
            assert env_proxied(scheme, host) == expect, (scheme, host)


def _spy(monkeypatch) -> list[int]:
    calls: list[int] = []
    real = HttpPool.request

    async def spy(self, head, **kw):
        calls.append(len(head))
        return await real(self, head, **kw)

    monkeypatch.setattr(HttpPool, "request", spy)
    return calls


@pytest.mark.s3
@pytest.mark.parametrize("direct", [True, False])
async def test_reads_against_moto(s3_endpoint, monkeypatch, direct):
    from lancejit.io import open_store

    monkeypatch.setattr(s3_http, "DIRECT", direct)
    calls = _spy(monkeypatch)
    root = s3_endpoint.new_root()
    store, path = open_store(root.join("big.bin"), root.storage_options)
    await store.put(path, BIG)
    try:
        ranges = [(0, 1 << 20), (5, 2_500_000), (len(BIG) - (1 << 20) - 3, len(BIG)), (100, 200)]
        got = await store.read_ranges(path, ranges)
        assert [bytes(g) for g in got] == [BIG[a:b] for a, b in ranges]
        seen: list[int] = []
        view = await store.read_streaming(path, 1000, 3_000_000, lambda v, n: seen.append(n))
        assert bytes(view) == BIG[1000:3_000_000]
        assert seen == sorted(seen) and seen[-1] == 2_999_000
        before = store.stats.snapshot().read_iops
        size, tail = await store.read_tail(path, 100)
        assert size == len(BIG) and bytes(tail) == BIG[-100:]
        assert [bytes(b) for b in await store.read_ranges(path, [(3, 9)])] == [BIG[3:9]]
        assert await store.size(path) == len(BIG)
        with pytest.raises(NotFoundError):
            await store.read_ranges(root.join("missing.bin").split("/", 3)[-1], [(0, 10)])
        listed = await store.list(path.rsplit("/", 1)[0])  # a GET with a query string
        assert [(o.path.rsplit("/", 1)[-1], o.size) for o in listed] == [("big.bin", len(BIG))]
        assert store.stats.snapshot().read_iops - before == 2
        assert len(calls) == (10 if direct else 0)
        assert store.direct_reads
    finally:
        await store.aclose()


async def _server(mode: str, log: list[str], ssl_context: ssl.SSLContext | None = None):
    from aiohttp import web

    async def handler(request):
        log.append(request.method)
        if mode == "missing":
            return web.Response(status=404, body=b"<Error><Code>NoSuchKey</Code></Error>")
        if request.method == "HEAD":
            return web.Response(headers={"Content-Length": str(len(BIG))})
        rng = request.headers.get("Range", "")
        a, _, b = rng[6:].partition("-")
        a, b = int(a), min(int(b), len(BIG) - 1)
        body = BIG[a:b + 1]
        if mode == "whole":
            return web.Response(status=200, body=BIG)
        headers = {"Content-Range": f"bytes {a}-{b}/{len(BIG)}"}
        if mode == "chunked":
            resp = web.StreamResponse(status=206, headers=headers)
            resp.enable_chunked_encoding()
            await resp.prepare(request)
            for i in range(0, len(body), 300_000):
                await resp.write(body[i:i + 300_000])
            await resp.write_eof()
            return resp
        if mode == "cut" and len(log) == 1:  # the first answer stops half-way
            resp = web.StreamResponse(status=206, headers=headers)
            resp.content_length = len(body)
            await resp.prepare(request)
            await resp.write(body[: len(body) // 2])
            request.transport.close()
            return resp
        if mode == "stale":  # every answer says keep-alive, then the server drops the connection
            transport = request.transport
            asyncio.get_running_loop().call_later(0.05, transport.close)
        if mode == "stall":
            resp = web.StreamResponse(status=206, headers=headers)
            resp.content_length = len(body)
            await resp.prepare(request)
            await resp.write(body[:1000])
            await asyncio.sleep(1)
            return resp
        return web.Response(status=206, body=body, headers=headers)

    if ssl_context is None:
        return await _fake_s3(handler)
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", handler)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "localhost", 0, ssl_context=ssl_context)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]
    return runner, f"https://localhost:{port}"


@pytest.mark.parametrize("mode,requests", [("plain", 1), ("whole", 1), ("chunked", 2), ("cut", 2)])
async def test_answers_of_a_scripted_server(monkeypatch, mode, requests):
    calls = _spy(monkeypatch)
    log: list[str] = []
    runner, url = await _server(mode, log)
    store = S3Store("bkt", endpoint=url, region="us-east-1", key="k", secret="s", max_retries=2)
    try:
        seen: list[int] = []
        a, b = 7, 2_000_007
        view = await store.read_streaming("a/b.bin", a, b, lambda v, n: seen.append(n))
        assert bytes(view) == BIG[a:b]
        # (a retried attempt reports from its own start; 200 and chunked answers: no progress)
        assert mode in ("whole", "chunked") or seen[-1] == b - a
        assert mode == "cut" or seen == sorted(seen)
        assert len(log) == requests and len(calls) == (1 if mode == "chunked" else requests)
        assert store.retries == (1 if mode == "cut" else 0)
    finally:
        await store.aclose()
        await runner.cleanup()


class _RawServer:
    """An HTTP/1.1 server answering ranged GETs and HEADs of ``BIG`` with keep-alive; ``mode``:
    "keep", "drop" (a connection's second request is not answered: the connection is closed, as a
    server closing an idle connection just as the request arrives) or "close" (every answer says
    ``Connection: close``)."""

    def __init__(self, mode: str) -> None:
        self.mode = mode
        self.connections = 0
        self.answered: list[str] = []

    async def start(self) -> int:
        self.server = await asyncio.start_server(self.serve, "127.0.0.1", 0)
        return self.server.sockets[0].getsockname()[1]

    async def serve(self, reader, writer) -> None:
        self.connections += 1
        served = 0
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                lines = head.decode().split("\r\n")
                method = lines[0].split()[0]
                if self.mode == "drop" and served:
                    writer.close()
                    return
                rng = next((ln.split(":", 1)[1].strip() for ln in lines if ln.lower().startswith("range:")), "")
                close = "Connection: close\r\n" if self.mode == "close" else ""
                if method == "HEAD":
                    writer.write(f"HTTP/1.1 200 OK\r\nContent-Length: {len(BIG)}\r\n{close}\r\n".encode())
                else:
                    a, _, b = rng[6:].partition("-")
                    body = BIG[int(a):int(b) + 1]
                    writer.write(f"HTTP/1.1 206 Partial Content\r\nContent-Length: {len(body)}\r\n"
                                 f"Content-Range: bytes {a}-{b}/{len(BIG)}\r\n{close}\r\n".encode() + body)
                await writer.drain()
                self.answered.append(method)
                served += 1
                if close:
                    writer.close()
                    return
        except (asyncio.IncompleteReadError, ConnectionError):
            writer.close()

    async def stop(self) -> None:
        self.server.close()
        await self.server.wait_closed()


@pytest.mark.parametrize("mode,connections", [("keep", 1), ("drop", 4), ("close", 4)])
async def test_kept_connections(monkeypatch, mode, connections):
    """Sequential reads share one kept connection; a kept connection the server drops is
    replaced without a retry of the read; ``Connection: close`` answers are not kept."""
    calls = _spy(monkeypatch)
    server = _RawServer(mode)
    port = await server.start()
    store = S3Store("bkt", endpoint=f"http://127.0.0.1:{port}", region="us-east-1", key="k", secret="s",
                    max_retries=0)
    try:
        for i in range(3):
            got = await store.read_ranges("a/b.bin", [(i * 10, i * 10 + 5)])
            assert bytes(got[0]) == BIG[i * 10:i * 10 + 5]
        assert await store.size("a/b.bin") == len(BIG)
        assert server.answered == ["GET"] * 3 + ["HEAD"] and store.retries == 0 and len(calls) == 4
        assert server.connections == connections
    finally:
        await store.aclose()
        await server.stop()


async def test_pool_limits_its_connections():
    server = _RawServer("keep")
    port = await server.start()
    pool = HttpPool("127.0.0.1", port, tls=False, limit=3, connect_timeout=5)
    try:
        heads = [f"GET /bkt/k HTTP/1.1\r\nHost: x\r\nRange: bytes=0-{n}\r\n\r\n".encode() for n in range(12)]
        got = await asyncio.gather(*(pool.request(h) for h in heads))
        assert [(g[0], bytes(g[2])) for g in got] == [(206, BIG[:n + 1]) for n in range(12)]
        status, headers, body = await pool.request(b"HEAD /bkt/k HTTP/1.1\r\nHost: x\r\n\r\n", no_body=True)
        assert status == 200 and headers["content-length"] == str(len(BIG)) and bytes(body) == b""
        assert pool.connections == server.connections <= 3
    finally:
        pool.close()
        await server.stop()


def _self_signed(tmp_path) -> tuple[str, str]:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost")]), critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    cert_path, key_path = str(tmp_path / "cert.pem"), str(tmp_path / "key.pem")
    with open(cert_path, "wb") as f:
        f.write(cert.public_bytes(serialization.Encoding.PEM))
    with open(key_path, "wb") as f:
        f.write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                  serialization.NoEncryption()))
    return cert_path, key_path


async def test_https_endpoint(tmp_path, monkeypatch):
    pytest.importorskip("cryptography")
    cert, key = _self_signed(tmp_path)
    server_ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_ctx.load_cert_chain(cert, key)
    monkeypatch.setattr(http_recv, "_SSL", ssl.create_default_context(cafile=cert))
    calls = _spy(monkeypatch)
    log: list[str] = []
    runner, url = await _server("plain", log, server_ctx)
    store = S3Store("bkt", endpoint=url, region="us-east-1", key="k", secret="s", max_retries=0)
    try:
        got = await store.read_ranges("a/b.bin", [(0, 100), (2_000_000, 3_000_000)])
        assert [bytes(g) for g in got] == [BIG[:100], BIG[2_000_000:3_000_000]]
        assert await store.size("a/b.bin") == len(BIG)
        assert len(calls) == len(log) == 3
    finally:
        await store.aclose()
        await runner.cleanup()
    # a certificate the client does not trust: refused, not read
    monkeypatch.setattr(http_recv, "_SSL", ssl.create_default_context())
    runner, url = await _server("plain", log, server_ctx)
    store = S3Store("bkt", endpoint=url, region="us-east-1", key="k", secret="s", max_retries=0)
    try:
        with pytest.raises(StoreError):
            await store.read_ranges("a/b.bin", [(0, 100)])
    finally:
        await store.aclose()
        await runner.cleanup()


async def test_missing_object_and_timeout(monkeypatch):
    log: list[str] = []
    runner, url = await _server("missing", log)
    store = S3Store("bkt", endpoint=url, region="us-east-1", key="k", secret="s", max_retries=0)
    try:
        with pytest.raises(NotFoundError):
            await store.read_ranges("a/b.bin", [(0, 2_000_000)])
        with pytest.raises(NotFoundError):
            await store.size("a/b.bin")
    finally:
        await store.aclose()
        await runner.cleanup()

    log.clear()
    runner, url = await _server("stall", log)
    store = S3Store("bkt", endpoint=url, region="us-east-1", key="k", secret="s", max_retries=0, timeout=0.3)
    try:
        with pytest.raises(StoreError) as info:
            await store.read_ranges("a/b.bin", [(0, 2_000_000)])
        assert isinstance(info.value.__cause__, TimeoutError)
    finally:
        await store.aclose()
        await runner.cleanup()
