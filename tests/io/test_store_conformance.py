"""One set of object-store tests run against local, memory, S3 (moto) and GCS (fake-gcs-server)."""

from __future__ import annotations

import asyncio
import os

import numpy as np
import pytest

from lancejit.core.errors import AlreadyExistsError, CorruptFileError, InvalidInputError, NotFoundError
from lancejit.io import ObjectInfo, join_path, open_store


def _data(n: int, seed: int = 0) -> bytes:
    return np.random.default_rng(seed).integers(0, 256, n, dtype=np.uint8).tobytes()


def _open(root, name: str = "", **extra):
    opts = dict(root.storage_options)
    opts.update({k: str(v) for k, v in extra.items()})
    return open_store(root.join(name) if name else root.uri, opts)


async def test_put_then_read_ranges_exact(any_store_root):
    store, path = _open(any_store_root, "obj.bin")
    data = _data(10_000, seed=1)
    await store.put(path, data)
    ranges = [(0, 10), (5, 5), (9_990, 10_000), (100, 4_000), (3_000, 3_500), (0, 10), (7, 8)]
    before = store.stats.snapshot()
    out = await store.read_ranges(path, ranges)
    delta = store.stats.snapshot() - before
    assert [bytes(b) for b in out] == [data[s:e] for s, e in ranges]
    assert all(isinstance(b, memoryview) for b in out)
    assert delta.read_iops == sum(1 for s, e in ranges if e > s)  # one request per non-empty range
    assert delta.read_bytes == sum(e - s for s, e in ranges)


async def test_read_tail_one_request(any_store_root):
    store, path = _open(any_store_root, "tail.bin")
    data = _data(5_000, seed=2)
    await store.put(path, data)
    for nbytes in (1, 64, 4_999, 5_000, 1 << 20):
        before = store.stats.snapshot()
        size, tail = await store.read_tail(path, nbytes)
        delta = store.stats.snapshot() - before
        assert size == len(data)
        assert bytes(tail) == data[len(data) - min(nbytes, len(data)):]
        assert delta.read_iops == 1 and delta.num_requests == 1


async def test_empty_object(any_store_root):
    store, path = _open(any_store_root, "empty")
    await store.put(path, b"")
    assert await store.size(path) == 0
    size, tail = await store.read_tail(path, 100)
    assert size == 0 and bytes(tail) == b""
    assert [bytes(b) for b in await store.read_ranges(path, [(0, 0)])] == [b""]
    with pytest.raises(CorruptFileError):
        await store.read_ranges(path, [(0, 1)])


async def test_read_all_and_size(any_store_root):
    store, path = _open(any_store_root, "d/all.bin")
    data = _data(3_333, seed=3)
    await store.put(path, data)
    assert await store.size(path) == len(data)
    assert bytes(await store.read_all(path)) == data
    assert await store.exists(path)
    assert not await store.exists(join_path(path, "nope"))


async def test_missing_object_raises_not_found(any_store_root):
    store, path = _open(any_store_root, "missing.bin")
    for coro in (store.read_ranges(path, [(0, 4)]), store.read_tail(path, 10), store.size(path),
                 store.read_all(path)):
        with pytest.raises(NotFoundError) as info:
            await coro
        assert isinstance(info.value, FileNotFoundError)


async def test_range_past_eof_is_corrupt(any_store_root):
    store, path = _open(any_store_root, "short.bin")
    await store.put(path, _data(100))
    with pytest.raises(CorruptFileError):
        await store.read_ranges(path, [(90, 101)])
    with pytest.raises(CorruptFileError):
        await store.read_ranges(path, [(100, 120)])
    with pytest.raises(CorruptFileError):
        await store.read_ranges(path, [(0, 10), (500, 600)])
    with pytest.raises(InvalidInputError):
        await store.read_ranges(path, [(10, 5)])
    with pytest.raises(InvalidInputError):
        await store.read_ranges(path, [(-1, 5)])


async def test_put_overwrites(any_store_root):
    store, path = _open(any_store_root, "over.bin")
    await store.put(path, b"first version")
    await store.put(path, b"second")
    assert bytes(await store.read_all(path)) == b"second"


async def test_put_if_absent(any_store_root):
    store, path = _open(any_store_root, "manifest")
    before = store.stats.snapshot()
    await store.put_if_absent(path, b"one")
    assert (store.stats.snapshot() - before).write_iops == 1
    with pytest.raises(AlreadyExistsError) as info:
        await store.put_if_absent(path, b"two")
    assert isinstance(info.value, FileExistsError)
    assert bytes(await store.read_all(path)) == b"one"


async def test_put_if_absent_race_has_one_winner(any_store_root):
    store, path = _open(any_store_root, "_versions/1.manifest")
    payloads = [f"writer-{i}".encode() * (i + 1) for i in range(16)]

    async def attempt(i: int) -> int | None:
        try:
            await store.put_if_absent(path, payloads[i])
            return i
        except AlreadyExistsError:
            return None

    results = await asyncio.gather(*(attempt(i) for i in range(16)))
    winners = [r for r in results if r is not None]
    assert len(winners) == 1
    assert bytes(await store.read_all(path)) == payloads[winners[0]]


async def test_list(any_store_root):
    store, root = _open(any_store_root)
    names = ["a.bin", "sub/b.bin", "sub/deeper/c.bin", "subx.bin"]
    for i, name in enumerate(names):
        await store.put(join_path(root, name), _data(10 + i, seed=i))
    before = store.stats.snapshot()
    listed = await store.list(root)
    assert (store.stats.snapshot() - before).list_iops == 1
    assert all(isinstance(info, ObjectInfo) for info in listed)
    assert [info.path for info in listed] == sorted(join_path(root, n) for n in names)
    assert [info.size for info in listed] == [10 + names.index(p) for p in sorted(names)]
    sub = await store.list(join_path(root, "sub"))
    assert [info.path for info in sub] == [join_path(root, "sub/b.bin"), join_path(root, "sub/deeper/c.bin")]
    flat = await store.list(join_path(root, "sub"), recursive=False)
    assert [info.path for info in flat] == [join_path(root, "sub/b.bin")]
    assert await store.list(join_path(root, "nothing-here")) == []
    # listed paths open directly
    assert bytes(await store.read_all(listed[0].path)) == _data(10, seed=0)


async def test_delete_and_delete_many(any_store_root):
    store, root = _open(any_store_root)
    paths = [join_path(root, f"x{i}") for i in range(5)]
    for p in paths:
        await store.put(p, b"x")
    await store.delete(paths[0])
    assert not await store.exists(paths[0])
    await store.delete(paths[0])  # deleting a missing object is fine
    await store.delete_many(paths[1:4] + [join_path(root, "never-existed")])
    assert [info.path for info in await store.list(root)] == [paths[4]]


async def test_writer_roundtrip(any_store_root):
    store, path = _open(any_store_root, "written/big.bin")
    data = _data(300_000, seed=7)
    writer = await store.open_writer(path)
    for pos in range(0, len(data), 70_001):
        await writer.write(data[pos:pos + 70_001])
    assert not await store.exists(path)  # nothing visible before close
    await writer.close()
    assert writer.bytes_written == len(data)
    assert bytes(await store.read_all(path)) == data


async def test_writer_abort_leaves_nothing(any_store_root):
    store, root = _open(any_store_root)
    path = join_path(root, "aborted.bin")
    writer = await store.open_writer(path)
    await writer.write(_data(50_000))
    await writer.abort()
    await writer.abort()  # idempotent
    assert not await store.exists(path)
    assert await store.list(root) == []
    if any_store_root.kind == "local":
        assert os.listdir(root) == []  # the temporary file is gone too


async def test_writer_context_manager_aborts_on_error(any_store_root):
    store, path = _open(any_store_root, "ctx.bin")
    with pytest.raises(RuntimeError):
        async with await store.open_writer(path) as writer:
            await writer.write(b"partial")
            raise RuntimeError("boom")
    assert not await store.exists(path)
    async with await store.open_writer(path) as writer:
        await writer.write(b"complete")
    assert bytes(await store.read_all(path)) == b"complete"


@pytest.mark.parametrize("store_root", ["s3", "gcs"], indirect=True)
async def test_multipart_writer(store_root):
    """Several parts: S3 multipart (5 MiB parts) and GCS resumable (256 KiB chunks)."""
    part = 5 * 1024 * 1024 if store_root.kind == "s3" else 256 * 1024
    store, path = _open(store_root, "multi.bin", part_size=part)
    data = _data(2 * part + 12_345, seed=9)
    before = store.stats.snapshot()
    writer = await store.open_writer(path)
    for pos in range(0, len(data), 1_000_000):
        await writer.write(data[pos:pos + 1_000_000])
    assert not await store.exists(path)
    await writer.close()
    delta = store.stats.snapshot() - before
    assert delta.written_bytes == len(data)
    # S3: create + 3 parts + complete; GCS: initiate + 2 chunks + final chunk
    assert delta.write_iops == (5 if store_root.kind == "s3" else 4)
    assert bytes(await store.read_all(path)) == data
    # abort after parts were sent: nothing published
    path2 = join_path(path + "-dir", "aborted.bin")
    writer = await store.open_writer(path2)
    await writer.write(data)
    await writer.abort()
    assert not await store.exists(path2)


async def test_file_scheduler_on_every_store(any_store_root):
    """Coalesced reads through the scheduler: exact bytes, physical requests = the plan's."""
    from lancejit.io import FileScheduler, plan_reads

    store, path = _open(any_store_root, "sched.bin")
    data = _data(40_000, seed=11)
    await store.put(path, data)
    sched = FileScheduler(store, path)
    ranges = [(30_000, 30_100), (0, 100), (150, 300), (20_000, 20_001), (39_990, 40_000), (5, 5)]
    before = store.stats.snapshot()
    out = await sched.read_ranges(ranges)
    delta = store.stats.snapshot() - before
    assert [bytes(b) for b in out] == [data[s:e] for s, e in ranges]
    plan = plan_reads(ranges, store.config.block_size, store.config.max_request_size)
    assert delta.read_iops == plan.num_requests
    size, tail = await sched.read_tail(64)
    assert size == len(data) and bytes(tail) == data[-64:]


@pytest.mark.parametrize("store_root", ["s3", "gcs"], indirect=True)
async def test_listing_bucket_root_then_stat(store_root):
    """gcsfs caches root listings badly (stores.md): listing the bucket must not break lookups."""
    store, path = _open(store_root, "after-root-list.bin")
    await store.put(path, b"abc")
    listed = await store.list("")
    assert path in [info.path for info in listed]
    assert await store.size(path) == 3
    assert await store.exists(path)
    assert bytes((await store.read_ranges(path, [(1, 3)]))[0]) == b"bc"


@pytest.mark.parametrize("store_root", ["s3", "gcs"], indirect=True)
async def test_listing_pages(store_root, monkeypatch):
    from lancejit.io import fsspec_store

    monkeypatch.setattr(fsspec_store, "LIST_PAGE_SIZE", 2)
    store, root = _open(store_root)
    paths = [join_path(root, f"p/{i:02d}") for i in range(5)]
    await asyncio.gather(*(store.put(p, b"x" * i) for i, p in enumerate(paths)))
    before = store.stats.snapshot()
    listed = await store.list(join_path(root, "p"))
    assert [i.path for i in listed] == paths and [i.size for i in listed] == list(range(5))
    assert (store.stats.snapshot() - before).list_iops == 3  # pages of 2, 2, 1
