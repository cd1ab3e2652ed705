"""Large ranged S3 GETs from http:// endpoints received straight into their buffer
(lancejit.io.http_recv): exact bytes against moto and a scripted server, one request for a
plain 206; every other answer (errors, 200 with the whole object, chunked bodies) goes through
the general client; bodies cut short are retried; progress is reported in order."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from lancejit.core.errors import NotFoundError, StoreError
from lancejit.io import http_recv, s3_http
from lancejit.io.http_recv import NotPlain, parse_head
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


def _spy(monkeypatch) -> list[int]:
    calls: list[int] = []
    real = http_recv.get_into

    async def spy(host, port, head, progress=None, connect_timeout=None):
        calls.append(len(head))
        return await real(host, port, head, progress, connect_timeout)

    monkeypatch.setattr(http_recv, "get_into", spy)
    return calls


@pytest.mark.s3
@pytest.mark.parametrize("raw", [True, False])
async def test_big_ranges_against_moto(s3_endpoint, monkeypatch, raw):
    from lancejit.io import open_store

    monkeypatch.setattr(s3_http, "RAW_RECEIVE", raw)
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
        # (the 100-byte range goes through aiohttp unless this store already saw moto close)
        n0 = len(calls)
        assert n0 in ((4, 5) if raw else (0,))
        # moto closes every connection: once seen, small reads come this way too, one request each
        before = store.stats.snapshot().read_iops
        size, tail = await store.read_tail(path, 100)
        assert size == len(BIG) and bytes(tail) == BIG[-100:]
        assert [bytes(b) for b in await store.read_ranges(path, [(3, 9)])] == [BIG[3:9]]
        with pytest.raises(NotFoundError):
            await store.read_ranges(root.join("missing.bin").split("/", 3)[-1], [(0, 10)])
        assert len(calls) - n0 == (3 if raw else 0)
        # listings too (a GET with a query string)
        listed = await store.list(path.rsplit("/", 1)[0])
        assert [(o.path.rsplit("/", 1)[-1], o.size) for o in listed] == [("big.bin", len(BIG))]
        assert len(calls) - n0 == (4 if raw else 0)
        assert store.stats.snapshot().read_iops - before == 2  # (the refused one is not counted)
    finally:
        await store.aclose()


async def _server(mode: str, log: list[str]):
    from aiohttp import web

    async def handler(request):
        rng = request.headers.get("Range", "")
        a, _, b = rng[6:].partition("-")
        a, b = int(a), min(int(b), len(BIG) - 1)
        body = BIG[a:b + 1]
        log.append(mode)
        if mode == "missing":
            return web.Response(status=404, body=b"<Error><Code>NoSuchKey</Code></Error>")
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
        if mode == "stall":
            resp = web.StreamResponse(status=206, headers=headers)
            resp.content_length = len(body)
            await resp.prepare(request)
            await resp.write(body[:1000])
            await asyncio.sleep(1)
            return resp
        return web.Response(status=206, body=body, headers=headers)

    return await _fake_s3(handler)


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
        assert len(log) == requests and len(calls) >= 1
        assert store.retries == (1 if mode == "cut" else 0)
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
