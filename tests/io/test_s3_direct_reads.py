"""S3 reads over aiohttp with lancejit's own SigV4 signing (lancejit.io.s3_http, .sigv4):
signatures equal botocore's, reads against moto are exact and cost one request each, and odd
answers (200 to a ranged GET, redirects / 400) are handled (the store falls back to botocore)."""

from __future__ import annotations

import calendar
import time

import pytest

from lancejit.core.errors import CorruptFileError, NotFoundError
from lancejit.io.s3_store import S3Store
from lancejit.io.sigv4 import Credentials, Signer, quote_key


@pytest.mark.parametrize("token", [None, "FwoGZXIvYXdzE/+token=="])
@pytest.mark.parametrize("key", ["plain/key.lance", "dir with space/a+b%c~d_é😀.lance", "x/_versions/1.manifest"])
@pytest.mark.parametrize("method", ["GET", "HEAD"])
def test_signature_equals_botocore(token, key, method):
    from botocore.auth import S3SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials as BotoCredentials

    for host, region in (("127.0.0.1:9000", "us-west-2"), ("s3.eu-central-1.amazonaws.com", "eu-central-1")):
        path = quote_key(f"/bkt/{key}")
        req = AWSRequest(method=method, url=f"http://{host}{path}")
        S3SigV4Auth(BotoCredentials("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG", token), "s3", region).add_auth(req)
        now = calendar.timegm(time.strptime(req.headers["X-Amz-Date"], "%Y%m%dT%H%M%SZ"))
        ours = Signer(region).headers(method, host, path, Credentials("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG", token), now)
        assert ours["Authorization"] == req.headers["Authorization"]
        assert ours["x-amz-date"] == req.headers["X-Amz-Date"]
        if token:
            assert ours["x-amz-security-token"] == token


@pytest.mark.parametrize("token", [None, "FwoGZXIvYXdzE/+token=="])
@pytest.mark.parametrize("body", [b"", b"x", bytes(range(256)) * 40])
def test_put_signature_equals_botocore(token, body):
    """A PUT signs its payload's SHA-256 as botocore does over http."""
    import hashlib

    from botocore.auth import S3SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials as BotoCredentials

    host, region = "127.0.0.1:9000", "us-west-2"
    path = quote_key("/bkt/x/_deletions/3-1-77.arrow")
    req = AWSRequest(method="PUT", url=f"http://{host}{path}", data=body)
    S3SigV4Auth(BotoCredentials("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG", token), "s3", region).add_auth(req)
    now = calendar.timegm(time.strptime(req.headers["X-Amz-Date"], "%Y%m%dT%H%M%SZ"))
    ours = Signer(region).headers("PUT", host, path, Credentials("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG", token), now,
                                  payload_sha256=hashlib.sha256(body).hexdigest())
    assert ours["x-amz-content-sha256"] == req.headers["X-Amz-Content-SHA256"]
    assert ours["Authorization"] == req.headers["Authorization"]


def test_signing_key_cached_per_day():
    s = Signer("us-east-1")
    c = Credentials("a", "b")
    day1 = s.headers("GET", "h", "/b/k", c, now=0.0)
    key1 = s._key
    s.headers("GET", "h", "/b/k2", c, now=3600.0)
    assert s._key is key1
    day2 = s.headers("GET", "h", "/b/k", c, now=86400.0 * 2)
    assert s._key != key1 and day1["Authorization"] != day2["Authorization"]


@pytest.mark.s3
async def test_direct_reads_against_moto(s3_endpoint):
    from lancejit.io import open_store

    root = s3_endpoint.new_root()
    store, path = open_store(root.join("obj.bin"), root.storage_options)
    try:
        data = bytes(range(256)) * 1000
        await store.put(path, data)
        got = await store.read_ranges(path, [(0, 10), (1000, 5000), (255_990, 256_000), (7, 7)])
        assert [bytes(g) for g in got] == [data[0:10], data[1000:5000], data[255_990:256_000], b""]
        size, tail = await store.read_tail(path, 100)
        assert size == len(data) and bytes(tail) == data[-100:]
        size, tail = await store.read_tail(path, 10 ** 7)  # longer than the object
        assert size == len(data) and bytes(tail) == data
        assert await store.size(path) == len(data)
        assert bytes(await store.read_all(path)) == data
        assert store.direct_reads, "the direct path served every read"
        with pytest.raises(NotFoundError):
            await store.read_ranges(path + ".missing", [(0, 1)])
        with pytest.raises(NotFoundError):
            await store.size(path + ".missing")
        with pytest.raises(CorruptFileError):
            await store.read_ranges(path, [(len(data) - 5, len(data) + 5)])
        with pytest.raises(CorruptFileError):
            await store.read_ranges(path, [(len(data) + 10, len(data) + 20)])
    finally:
        await store.aclose()


@pytest.mark.s3
async def test_direct_puts_against_moto(s3_endpoint):
    """Single PUTs go over the direct client; a conditional PUT of an existing object is
    AlreadyExistsError unless the object holds the same bytes (a retried own write)."""
    from lancejit.core.errors import AlreadyExistsError
    from lancejit.io import open_store

    root = s3_endpoint.new_root()
    store, path = open_store(root.join("_versions/1.manifest"), root.storage_options)
    try:
        await store.put_if_absent(path, b"first")
        assert bytes(await store.read_all(path)) == b"first"
        await store.put_if_absent(path, b"first")  # same bytes: this writer's own object
        with pytest.raises(AlreadyExistsError):
            await store.put_if_absent(path, b"second")
        assert bytes(await store.read_all(path)) == b"first"
        await store.put(path, b"replaced")
        assert bytes(await store.read_all(path)) == b"replaced"
        small = bytes(range(256)) * 4096  # under a part: one PUT at close
        async with await store.open_writer(path + ".data") as w:
            await w.write(small)
        assert bytes(await store.read_all(path + ".data")) == small
        assert store.direct_reads
        assert (await store._handle(need_fs=False)).fs is None, "no botocore filesystem was needed"
    finally:
        await store.aclose()


async def _fake_s3(handler):
    from aiohttp import web

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", handler)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]
    return runner, f"http://127.0.0.1:{port}"


OBJECT = bytes(range(200)) * 50


def _ranged(request, body: bytes):
    from aiohttp import web

    rng = request.headers.get("Range", "")
    if not rng:
        return web.Response(body=body)
    a, _, b = rng[6:].partition("-")
    if not a:
        start, end = max(0, len(body) - int(b)), len(body)
    else:
        start, end = int(a), min(len(body), int(b) + 1)
    return web.Response(status=206, body=body[start:end],
                        headers={"Content-Range": f"bytes {start}-{end - 1}/{len(body)}"})


async def test_whole_object_answer_to_a_range_is_cut():
    """A server ignoring Range (200 with the whole object) still yields exactly the range."""
    from aiohttp import web

    async def handler(request):
        assert request.headers["Authorization"].startswith("AWS4-HMAC-SHA256 Credential=k/")
        if request.method == "HEAD":
            return web.Response(headers={"Content-Length": str(len(OBJECT))})
        return web.Response(body=OBJECT)

    runner, url = await _fake_s3(handler)
    store = S3Store("bkt", endpoint=url, region="us-east-1", key="k", secret="s")
    try:
        got = await store.read_ranges("a/b.bin", [(5, 17), (9000, 10000)])
        assert [bytes(g) for g in got] == [OBJECT[5:17], OBJECT[9000:10000]]
        size, tail = await store.read_tail("a/b.bin", 64)
        assert size == len(OBJECT) and bytes(tail) == OBJECT[-64:]
        assert await store.size("a/b.bin") == len(OBJECT)
        assert store.direct_reads
    finally:
        await store.aclose()
        await runner.cleanup()


@pytest.mark.parametrize("status", [403, 301])
async def test_refused_direct_request_falls_back_to_botocore(status):
    """An answer the direct client does not follow (a 301 region redirect) or a refusal
    (403) that botocore's own request does not get sends the store's reads back to botocore."""
    from aiohttp import web

    seen = []

    async def handler(request):
        boto = "botocore" in request.headers.get("User-Agent", "").lower()
        seen.append(boto)
        if not boto:
            return web.Response(status=status, body=b"<Error><Code>Refused</Code></Error>")
        if request.method == "HEAD":
            return web.Response(headers={"Content-Length": str(len(OBJECT))})
        return _ranged(request, OBJECT)

    runner, url = await _fake_s3(handler)
    store = S3Store("bkt", endpoint=url, region="us-east-1", key="k", secret="s")
    try:
        got = await store.read_ranges("a/b.bin", [(100, 300)])
        assert bytes(got[0]) == OBJECT[100:300]
        assert not store.direct_reads
        assert seen[0] is False and seen[-1] is True
        got = await store.read_ranges("a/b.bin", [(0, 3)])
        assert bytes(got[0]) == OBJECT[:3]
        assert seen[-1] is True
    finally:
        await store.aclose()
        await runner.cleanup()


async def test_refusal_of_both_clients_is_a_permission_error():
    from aiohttp import web

    from lancejit.core.errors import StoreError

    async def handler(request):
        return web.Response(status=403, body=b"<Error><Code>AccessDenied</Code></Error>")

    runner, url = await _fake_s3(handler)
    store = S3Store("bkt", endpoint=url, region="us-east-1", key="k", secret="s", max_retries=0)
    try:
        with pytest.raises(StoreError):
            await store.read_ranges("a/b.bin", [(0, 10)])
        assert store.direct_reads  # botocore was refused too: nothing learned
    finally:
        await store.aclose()
        await runner.cleanup()


async def test_transient_answers_are_retried():
    """503 SlowDown twice, then the data: one read, two retries."""
    from aiohttp import web

    answers = [503, 503]

    async def handler(request):
        if answers:
            return web.Response(status=answers.pop(), body=b"<Error><Code>SlowDown</Code></Error>")
        return _ranged(request, OBJECT)

    runner, url = await _fake_s3(handler)
    store = S3Store("bkt", endpoint=url, region="us-east-1", key="k", secret="s", max_retries=3)
    try:
        got = await store.read_ranges("a/b.bin", [(10, 20)])
        assert bytes(got[0]) == OBJECT[10:20]
        assert store.retries == 2
    finally:
        await store.aclose()
        await runner.cleanup()


@pytest.mark.s3
async def test_streamed_reads_through_the_coalescer(s3_endpoint, monkeypatch):
    """Scan-like same-tick reads on S3 stream their pieces: every caller gets exact bytes,
    progress is reported while the body arrives, one GET per piece."""
    import asyncio

    import numpy as np

    from lancejit.io import fsspec_store, open_store
    from lancejit.io.coalesce import CoalescingReader
    from lancejit.io.scheduler import FileScheduler

    monkeypatch.setattr(fsspec_store, "PREFERRED_READ_BYTES", 8 * 1024 * 1024)
    root = s3_endpoint.new_root()
    store, path = open_store(root.join("big.bin"), root.storage_options)
    data = np.random.default_rng(5).integers(0, 256, 12 * 1024 * 1024, dtype=np.uint8).tobytes()
    await store.put(path, data)
    try:
        seen: list[int] = []
        view = await store.read_streaming(path, 1000, 3_000_000, lambda v, n: seen.append(n))
        assert bytes(view) == data[1000:3_000_000]
        assert seen == sorted(seen) and seen[-1] == 2_999_000 and len(seen) > 1

        sched = FileScheduler(store, path)
        reader = CoalescingReader(sched)
        per = 1_000_000
        asks = [[(u * per, (u + 1) * per), (6_000_000 + u * per, 6_000_000 + (u + 1) * per)] for u in range(6)]
        before = store.stats.snapshot().read_iops
        got = await asyncio.gather(*(reader.read_ranges(a) for a in asks))
        for a, bufs in zip(asks, got):
            assert [bytes(b) for b in bufs] == [data[s:e] for s, e in a]
        assert store.stats.snapshot().read_iops - before == 2  # 12 MB in two ~6 MB pieces
        assert sched.stats is None or sched.stats.snapshot().read_iops >= 2
    finally:
        await store.aclose()


def test_query_signature_equals_botocore():
    """ListObjectsV2 requests: the canonical query string signs as botocore's."""
    from botocore.auth import S3SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials as BotoCredentials

    from lancejit.io.sigv4 import canonical_query

    params = {"list-type": "2", "prefix": "ds/a b+c/é~_", "max-keys": "1000", "encoding-type": "url",
              "delimiter": "/", "continuation-token": "1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM="}
    query = canonical_query(params)
    req = AWSRequest(method="GET", url=f"http://127.0.0.1:9000/bkt?{query}")
    S3SigV4Auth(BotoCredentials("AK", "SK"), "s3", "us-east-1").add_auth(req)
    now = calendar.timegm(time.strptime(req.headers["X-Amz-Date"], "%Y%m%dT%H%M%SZ"))
    ours = Signer("us-east-1").headers("GET", "127.0.0.1:9000", "/bkt", Credentials("AK", "SK"), now, query=query)
    assert ours["Authorization"] == req.headers["Authorization"]


@pytest.mark.s3
async def test_direct_listing_equals_botocore_listing(s3_endpoint, monkeypatch):
    """Keys with spaces, '+', '%', unicode; recursive and not; pages of 3."""
    import asyncio

    from lancejit.io import fsspec_store, open_store

    monkeypatch.setattr(fsspec_store, "LIST_PAGE_SIZE", 3)
    root = s3_endpoint.new_root()
    store, base = open_store(root.join("lst"), root.storage_options)
    names = ["a b.txt", "c+d.txt", "e%20f.txt", "ü/ñ.bin", "sub/x.bin", "sub/deeper/y.bin", "z~_-.bin"]
    await asyncio.gather(*(store.put(f"{base}/{n}", n.encode()) for n in names))
    try:
        got = {}
        for direct in (True, False):
            store.direct_reads = direct
            got[direct] = (await store.list(base), await store.list(base, recursive=False))
        assert got[True] == got[False]
        listed = [i.path for i in got[True][0]]
        assert listed == sorted(f"{base}/{n}" for n in names)
        assert {i.path for i in got[True][1]} == {f"{base}/{n}" for n in names if "/" not in n}
        assert all(i.size == len(i.path.rsplit("/lst/", 1)[1].encode()) for i in got[True][0])
        assert all(i.etag and i.mtime for i in got[True][0])
    finally:
        store.direct_reads = True
        await store.aclose()
