"""LocalStore's descriptor/tail cache (lancejit.io.fd_cache): descriptors reused inside a hold,
reads inside the kept footer tail served from memory with no request (equal bytes), every
descriptor closed when the hold ends, files rewritten or removed seen by reads outside a hold."""

from __future__ import annotations

import asyncio
import os

import numpy as np
import pytest

from lancejit.core.errors import NotFoundError
from lancejit.io import LocalStore
from lancejit.io.fd_cache import FdCache


def _file(tmp_path, name: str, n: int, seed: int) -> tuple[str, bytes]:
    data = np.random.default_rng(seed).integers(0, 256, n, dtype=np.uint8).tobytes()
    path = str(tmp_path / name)
    with open(path, "wb") as f:
        f.write(data)
    return path, data


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_tail_reads_make_no_request_and_equal_bytes(tmp_path, seed):
    rng = np.random.default_rng(seed)
    size = int(rng.integers(70_000, 200_000))
    path, data = _file(tmp_path, "a.bin", size, seed)
    store = LocalStore()
    store.hold_files()
    try:
        got_size, tail = asyncio.run(store.read_tail(path, 65536))
        assert got_size == size and bytes(tail) == data[-65536:]
        fd = store._fds._entries[path].fd
        store.stats.incremental()
        lo = size - 65536
        reads = [[0, lo + 10, lo + 500, 0], [0, size - 100, size, 490]]  # both inside the tail
        out = np.empty(590, dtype=np.uint8)
        nreq, nbytes = store.read_files_into([(path, reads)], out)
        assert (nreq, nbytes) == (0, 0) and store.stats.incremental().read_iops == 0
        assert out.tobytes() == data[lo + 10:lo + 500] + data[size - 100:]
        # a read outside the tail: one request, on the same descriptor
        out2 = np.empty(1000, dtype=np.uint8)
        assert store.read_files_into([(path, [[0, 5, 1005, 0]])], out2) == (1, 1000)
        assert out2.tobytes() == data[5:1005]
        snap = store.stats.incremental()
        assert snap.read_iops == 1 and snap.read_bytes == 1000
        assert store._fds._entries[path].fd == fd  # reused, not reopened
        bufs = asyncio.run(store.read_ranges(path, [(lo, lo + 64), (0, 10)]))
        assert [bytes(b) for b in bufs] == [data[lo:lo + 64], data[:10]]
        assert store._fds._entries[path].fd == fd and len(store._fds) == 1
    finally:
        store.release_files()
    assert len(store._fds) == 0  # the last release closed everything


def test_outside_a_hold_nothing_is_kept_and_removed_files_are_seen(tmp_path):
    path, data = _file(tmp_path, "b.bin", 100_000, 3)
    store = LocalStore()
    asyncio.run(store.read_tail(path, 65536))
    assert len(store._fds) == 0
    store.hold_files()
    asyncio.run(store.read_tail(path, 65536))
    assert len(store._fds) == 1
    store.release_files()
    os.remove(path)
    with pytest.raises(NotFoundError):
        asyncio.run(store.read_ranges(path, [(0, 10)]))


def test_rewritten_file_seen_by_a_new_tail_read_and_by_put(tmp_path):
    path, data = _file(tmp_path, "c.bin", 90_000, 4)
    store = LocalStore()
    store.hold_files()
    try:
        asyncio.run(store.read_tail(path, 65536))
        other, new = _file(tmp_path, "c2.bin", 80_000, 5)
        os.replace(other, path)  # a standalone rewrite
        size, tail = asyncio.run(store.read_tail(path, 65536))  # a new reader: the new file
        assert size == 80_000 and bytes(tail) == new[-65536:]
        out = np.empty(100, dtype=np.uint8)
        store.read_files_into([(path, [[0, 0, 100, 0]])], out)
        assert out.tobytes() == new[:100]
        asyncio.run(store.put(path, b"xyz" * 10))  # the store's own write drops the entry
        assert path not in store._fds._entries
        assert bytes(asyncio.run(store.read_ranges(path, [(0, 6)]))[0]) == b"xyzxyz"
    finally:
        store.release_files()


def test_lru_bounds_and_in_use_entries_close_on_release(tmp_path):
    paths = [_file(tmp_path, f"f{i}.bin", 1000, i)[0] for i in range(3)]
    cache = FdCache(max_fds=2, max_tail_bytes=1500)
    cache.hold()
    first = cache.acquire(paths[0])  # in use while evicted
    cache.keep_tail(paths[0], first, 0, memoryview(b"a" * 1000))
    for p in paths[1:]:
        e = cache.acquire(p)
        cache.keep_tail(p, e, 0, memoryview(b"b" * 1000))
        cache.release(e)
    assert len(cache) == 2 and paths[0] not in cache._entries and first.dead
    assert cache._tail_bytes <= 1500
    assert os.pread(first.fd, 4, 0) == open(paths[0], "rb").read(4)  # still open for its user
    cache.release(first)
    with pytest.raises(OSError):
        os.fstat(first.fd)  # closed by its last user
    cache.unhold()
    assert len(cache) == 0


def test_fork_child_drops_inherited_entries(tmp_path):
    if not hasattr(os, "fork"):
        pytest.skip("no fork")
    path, _ = _file(tmp_path, "d.bin", 1000, 6)
    cache = FdCache()
    cache.hold()
    cache.release(cache.acquire(path))
    pid = os.fork()
    if pid == 0:  # pragma: no cover - child
        os._exit(0 if len(cache) == 0 and not cache.holding else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert len(cache) == 1  # the parent's entries untouched
    cache.unhold()
