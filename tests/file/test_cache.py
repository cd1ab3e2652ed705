"""The search cache: bounded in bytes, never stale after a rewrite, shared loads."""

from __future__ import annotations

import asyncio

import lance
import numpy as np
import pyarrow as pa
import pytest

from lancejit.file.cache import FileCache, SearchCache, default_cache, estimate_nbytes, file_key
from lancejit.file.reader import LanceFileReader


def _write(path, table, version="2.2"):
    with lance.file.LanceFileWriter(str(path), version=version) as w:
        w.write_batch(table)


def test_hit_returns_same_metadata_without_parsing(samples):
    cache = SearchCache()
    a = LanceFileReader(str(samples[("2.1", "nested")]), cache=cache)
    assert cache.misses >= 1
    hits = cache.hits
    b = LanceFileReader(str(samples[("2.1", "nested")]), cache=cache)
    assert b.file_metadata is a.file_metadata
    assert cache.hits == hits + 1
    assert cache.size_bytes > 0


def test_rewritten_file_is_not_served_stale(tmp_path):
    path = tmp_path / "f.lance"
    cache = SearchCache()
    _write(path, pa.table({"a": pa.array(np.arange(100, dtype=np.int64))}))
    first = LanceFileReader(str(path), cache=cache)
    assert first.num_rows == 100
    first.file_metadata.cache.put("decoder-state", b"x" * 10)
    # same size, same schema, different contents
    _write(path, pa.table({"a": pa.array(np.arange(100, dtype=np.int64) * 7)}))
    second = LanceFileReader(str(path), cache=cache)
    assert second.file_metadata is not first.file_metadata
    assert second.file_metadata.cache.get("decoder-state") is None
    # different rows and schema
    _write(path, pa.table({"b": pa.array(["x"] * 5)}), version="2.0")
    third = LanceFileReader(str(path), cache=cache)
    assert (third.num_rows, third.schema.names, third.version) == (5, ["b"], "2.0")


def test_key_depends_on_uri_size_and_tail():
    k = file_key("file:///a", 10, b"tail")
    assert k == file_key("file:///a", 10, b"tail")
    assert k != file_key("file:///b", 10, b"tail")
    assert k != file_key("file:///a", 11, b"tail")
    assert k != file_key("file:///a", 10, b"tall")


def test_bounded_in_bytes():
    cache = SearchCache(capacity_bytes=10_000)
    for i in range(100):
        cache.put(("k", i), np.zeros(100, dtype=np.int64))  # ~864 bytes each
        assert cache.size_bytes <= 10_000
    assert 5 <= len(cache) <= 12
    assert cache.get(("k", 99)) is not None  # most recent kept
    assert cache.get(("k", 0)) is None  # oldest evicted
    cache.put("huge", np.zeros(10_000, dtype=np.int64))  # larger than the whole cache: skipped
    assert cache.get("huge") is None


def test_lru_order():
    cache = SearchCache(capacity_bytes=3 * 200)
    for name in "abc":
        cache.put(name, name, nbytes=200)
    assert cache.get("a") == "a"  # touch a: b is now the oldest
    cache.put("d", "d", nbytes=200)
    assert cache.get("b") is None and cache.get("a") == "a" and cache.get("d") == "d"


def test_file_views_are_separate():
    cache = SearchCache()
    one, two = cache.file(("u", 1, b"1")), cache.file(("u", 1, b"2"))
    one.put("dict", "first")
    assert one.get("dict") == "first" and two.get("dict") is None


def test_estimate_nbytes():
    assert estimate_nbytes(np.zeros(1000, dtype=np.int32)) >= 4000
    assert estimate_nbytes(pa.array(np.arange(1000))) >= 8000
    assert estimate_nbytes(b"x" * 500) >= 500
    assert estimate_nbytes((np.zeros(10), b"y" * 100)) >= 180


async def test_get_or_load_shares_one_load():
    view = FileCache(SearchCache(), ("k",))
    calls = 0
    gate = asyncio.Event()

    async def loader():
        nonlocal calls
        calls += 1
        await gate.wait()
        return np.arange(5)

    tasks = [asyncio.ensure_future(view.get_or_load("x", loader)) for _ in range(5)]
    await asyncio.sleep(0)
    gate.set()
    results = await asyncio.gather(*tasks)
    assert calls == 1
    assert all(r is results[0] for r in results)
    assert await view.get_or_load("x", loader) is results[0]
    assert calls == 1


async def test_get_or_load_errors_are_not_cached():
    view = FileCache(SearchCache(), ("k",))
    attempts = 0

    async def failing():
        nonlocal attempts
        attempts += 1
        raise ValueError("boom")

    for _ in range(2):
        with pytest.raises(ValueError, match="boom"):
            await view.get_or_load("x", failing)
    assert attempts == 2

    async def ok():
        return "value"

    assert await view.get_or_load("x", ok) == "value"


async def test_cancelled_loader_lets_waiters_retry():
    view = FileCache(SearchCache(), ("k",))
    started = asyncio.Event()
    block = asyncio.Event()

    async def slow():
        started.set()
        await block.wait()
        return "slow"

    owner = asyncio.ensure_future(view.get_or_load("x", slow))
    await started.wait()

    async def fast():
        return "fast"

    waiter = asyncio.ensure_future(view.get_or_load("x", fast))
    await asyncio.sleep(0)
    owner.cancel()
    assert await waiter == "fast"  # the waiter was not cancelled: it loaded by itself
    with pytest.raises(asyncio.CancelledError):
        await owner


def test_default_cache_is_process_wide():
    assert default_cache() is default_cache()
