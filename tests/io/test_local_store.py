"""Local-store specifics: directories, temp files, file:// URIs, batch hand-offs."""

from __future__ import annotations

import os

import pytest

from lancejit.core.errors import AlreadyExistsError, StoreError
from lancejit.io import LocalStore, open_store


async def test_directory_is_not_an_object(tmp_path):
    store = LocalStore()
    (tmp_path / "d").mkdir()
    d = str(tmp_path / "d")
    with pytest.raises(StoreError):
        await store.size(d)
    with pytest.raises(StoreError):
        await store.read_ranges(d, [(0, 1)])
    assert not await store.exists(d)


async def test_put_creates_parents_and_leaves_no_temp_files(tmp_path):
    store = LocalStore()
    path = str(tmp_path / "a" / "b" / "c.bin")
    await store.put(path, b"xyz")
    await store.put_if_absent(str(tmp_path / "a" / "m"), b"1")
    with pytest.raises(AlreadyExistsError):
        await store.put_if_absent(str(tmp_path / "a" / "m"), b"2")
    assert sorted(os.listdir(tmp_path / "a")) == ["b", "m"]
    assert os.listdir(tmp_path / "a" / "b") == ["c.bin"]


async def test_writer_invisible_until_close_and_listing_skips_temp(tmp_path):
    store = LocalStore()
    path = str(tmp_path / "w.bin")
    writer = await store.open_writer(path)
    await writer.write(b"x" * (3 << 20))  # crosses the 1 MiB flush threshold
    assert not os.path.exists(path)
    assert await store.list(str(tmp_path)) == []  # the temp file is not an object
    await writer.close()
    assert os.path.getsize(path) == 3 << 20
    assert [i.path for i in await store.list(str(tmp_path))] == [path]


@pytest.mark.parametrize("idle", [True, False])
async def test_batch_is_one_handoff(tmp_path, monkeypatch, idle):
    """Many ranges: one worker call (none when no core is idle: read inline), one counted read
    per range."""
    import lancejit.io.local as local

    monkeypatch.setattr(local, "idle_core", lambda: idle)
    path = str(tmp_path / "f.bin")
    with open(path, "wb") as f:
        f.write(bytes(range(256)) * 100)
    store = LocalStore()
    store.inline_read_bytes = 0  # small batches are read inline; force the worker path here
    calls = []
    real_submit = store.executor.submit

    def counting_submit(fn, *args):
        calls.append(fn)
        return real_submit(fn, *args)

    store.executor.submit = counting_submit
    ranges = [(i * 97, i * 97 + 13) for i in range(200)]
    out = await store.read_ranges(path, ranges)
    assert len(calls) == (1 if idle else 0)
    assert store.stats.snapshot().read_iops == 200
    data = open(path, "rb").read()
    assert [bytes(b) for b in out] == [data[s:e] for s, e in ranges]
    assert all(b.readonly for b in out)


async def test_file_uri(tmp_path):
    store, path = open_store((tmp_path / "u.bin").as_uri())
    await store.put(path, b"hello")
    assert (tmp_path / "u.bin").read_bytes() == b"hello"
    assert store.uri(path) == (tmp_path / "u.bin").as_uri()


async def test_errors_keep_their_cause(tmp_path):
    store = LocalStore()
    with pytest.raises(StoreError) as info:
        await store.size(str(tmp_path))
    assert isinstance(info.value.__cause__, IsADirectoryError)
    assert "directory" in str(info.value)


@pytest.mark.parametrize("n", [0, 3, 300])
async def test_flat_listing_inline_or_in_a_worker(tmp_path, monkeypatch, n):
    """Small non-recursive listings run inline (no worker hand-off), large ones in a worker;
    both list the same objects (files only, sorted, one list request)."""
    import lancejit.io.local as local

    d = tmp_path / "d"
    (d / "sub").mkdir(parents=True)
    (d / "sub" / "deep.bin").write_bytes(b"z")
    for i in range(n):
        (d / f"f{i:04d}.bin").write_bytes(b"x" * i)
    store = LocalStore()
    submitted = []
    real_submit = store.executor.submit
    monkeypatch.setattr(store.executor, "submit", lambda fn, *a: submitted.append(fn) or real_submit(fn, *a))
    before = store.stats.snapshot().list_iops
    got = await store.list(str(d), recursive=False)
    assert [(os.path.basename(i.path), i.size) for i in got] == [(f"f{i:04d}.bin", i) for i in range(n)]
    assert store.stats.snapshot().list_iops - before == 1
    assert bool(submitted) == (n + 1 > local.INLINE_LIST_ENTRIES)
    assert await store.list(str(tmp_path / "missing"), recursive=False) == []
    assert await store.list(str(d / "sub" / "deep.bin"), recursive=False) == []
