"""Sync calls on local and memory stores run in the caller's thread (no bridge hop); object
stores keep the bridge thread.  Thread identity is asserted, never time."""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pyarrow as pa
import pytest

import lancejit
from lancejit.io import sync
from lancejit.io.sync import run_here, run_sync, runs_inline


class _Store:
    def __init__(self, scheme: str) -> None:
        self.scheme = scheme


async def _where(suspend: bool) -> int:
    if suspend:
        await asyncio.sleep(0.001)
        # a gather of tasks: they run on the caller's loop too
        ids = await asyncio.gather(*(asyncio.sleep(0, threading.get_ident()) for _ in range(3)))
        assert len(set(ids)) == 1
    return threading.get_ident()


@pytest.mark.parametrize("suspend", [False, True])
@pytest.mark.parametrize("scheme", ["file", "memory"])
def test_inline_stores_run_in_caller_thread(scheme, suspend):
    assert runs_inline(_Store(scheme))
    assert run_sync(_where(suspend), store=_Store(scheme)) == threading.get_ident()


def test_object_stores_use_the_bridge():
    assert not runs_inline(_Store("s3"))
    assert run_sync(_where(True), store=_Store("s3")) != threading.get_ident()
    assert run_sync(_where(False)) != threading.get_ident()  # no store: the bridge


def test_inline_errors_and_results_propagate():
    async def boom(suspend: bool) -> None:
        if suspend:
            await asyncio.sleep(0)
        raise KeyError("x")

    for suspend in (False, True):
        with pytest.raises(KeyError):
            run_sync(boom(suspend), store=_Store("file"))
    # the thread's loop is left reusable and not running
    assert run_here(_where(True)) == threading.get_ident()
    assert asyncio._get_running_loop() is None


def test_inside_a_running_loop_falls_back_to_the_bridge():
    async def caller() -> int:
        return run_sync(_where(False), store=_Store("file"))

    assert asyncio.run(caller()) != threading.get_ident()


def test_many_threads_each_inline():
    def job(_):
        return run_sync(_where(True), store=_Store("memory")) == threading.get_ident()

    with ThreadPoolExecutor(8) as pool:
        assert all(pool.map(job, range(64)))


def _dataset(tmp_path, uri):
    lance = pytest.importorskip("lance")
    rng = np.random.default_rng(0)
    n = 30_000
    table = pa.table({"id": np.arange(n, dtype=np.int64), "x": rng.standard_normal(n),
                      "s": pa.array([f"s{i}-{'y' * (i % 7)}" for i in range(n)])})
    lance.write_dataset(table, uri, data_storage_version="2.2", max_rows_per_file=10_000)
    return table


def test_dataset_and_file_reader_read_in_caller_thread(tmp_path, monkeypatch):
    import os

    uri = str(tmp_path / "ds")
    table = _dataset(tmp_path, uri)
    seen: list[int] = []
    orig = os.preadv

    def spy(fd, buffers, offset, *flags):  # every local read (ranges, tails, multi-file) is a preadv
        seen.append(threading.get_ident())
        return orig(fd, buffers, offset, *flags)

    monkeypatch.setattr(os, "preadv", spy)
    ds = lancejit.dataset(uri)
    idx = [29_999, 5, 5, 17_000]

    def work() -> bool:
        seen.clear()
        me = threading.get_ident()
        got = ds.take(idx, columns=["id", "x", "s"])
        assert got.equals(table.take(pa.array(idx)))
        assert ds.count_rows() == table.num_rows
        assert ds.to_table(columns=["id"], limit=3).column("id").to_pylist() == [0, 1, 2]
        return bool(seen) and set(seen) == {me}

    assert work()
    workers: set[int] = set()

    def concurrent(_) -> bool:
        workers.add(threading.get_ident())
        got = ds.take(idx, columns=["id", "x", "s"])
        return got.equals(table.take(pa.array(idx)))

    seen.clear()
    with ThreadPoolExecutor(4) as pool:  # concurrent callers, each on its own thread's loop
        assert all(pool.map(concurrent, range(16)))
    assert set(seen) <= workers  # every read ran in a calling thread, none on the bridge
    import glob

    f = lancejit.LanceFileReader(glob.glob(uri + "/data/*.lance")[0])
    seen.clear()
    assert f.take_rows([3, 1], columns=["id"]).column("id").to_pylist() is not None
    assert set(seen) == {threading.get_ident()}
    assert not sync.in_loop_thread()


_FORK_SCRIPT = r"""
import asyncio, os, sys, time
from lancejit.io.sync import run_sync

class Local:
    scheme = "file"

async def hop():
    # a wake-up from another thread (what a worker-thread read does)
    return await asyncio.to_thread(time.sleep, 0.001)

run_sync(hop(), store=Local())      # this thread's loop exists before the fork
run_sync(hop())                     # and the bridge loop
pid = os.fork()
if pid == 0:
    run_sync(hop(), store=Local())  # the child makes its own loops
    run_sync(hop())
    os._exit(0)
os.waitpid(pid, 0)
for _ in range(3):
    run_sync(hop(), store=Local())  # the parent's loops still wake up
    run_sync(hop())
print("ok")
"""


def test_fork_child_leaves_parent_loops_working():
    import subprocess
    import sys

    res = subprocess.run([sys.executable, "-c", _FORK_SCRIPT], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0 and res.stdout.strip().endswith("ok"), res.stderr[-2000:]


def test_iterator_dropped_after_its_thread_ended(tmp_path):
    """Engines (polars, DuckDB) pull batches from their own short-lived threads and drop the
    iterator elsewhere: it is closed there without an error reported ("Event loop is closed"
    from the read-ahead of a loop gone with its thread), and the dataset reads on."""
    import gc
    import sys

    path = str(tmp_path / "ds")
    n = 400_000
    lancejit.write_dataset(pa.table({"a": np.arange(n), "x": np.random.default_rng(0).random(n)}), path,
                           max_rows_per_file=40_000)
    ds = lancejit.dataset(path)
    caught: list = []
    hook, sys.unraisablehook = sys.unraisablehook, caught.append
    try:
        def pull(held: list) -> None:
            it = ds.to_batches(columns=["x"], batch_size=100_000)
            held.append((it, next(it).num_rows))

        for _ in range(2):
            held: list = []
            worker = threading.Thread(target=pull, args=(held,))
            worker.start()
            worker.join()
            assert held[0][1] == 100_000
            held.clear()
            gc.collect()
    finally:
        sys.unraisablehook = hook
    assert not caught, [str(c.exc_value) for c in caught]
    assert ds.to_table(columns=["a"])["a"].to_pylist() == list(range(n))
