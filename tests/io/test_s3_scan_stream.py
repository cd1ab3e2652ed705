"""Scans on S3 (moto): big reads stream their pieces through a data file's reader (callers
answered as their bytes arrive), each column of a unit is decoded off the event loop with no
extra request, and the rows equal the reference's."""

from __future__ import annotations

import threading

import numpy as np
import pyarrow as pa
import pytest

from lancejit.io import fsspec_store, run_sync
from lancejit.io.coalesce import SOLO_BYTES
from lancejit.io.s3_store import S3Store
from lancejit.table import dataset
from tests.table.test_stores import _upload

lance = pytest.importorskip("lance")

pytestmark = pytest.mark.s3


def _table(rows: int, seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    ids = np.arange(rows, dtype=np.int64)
    return pa.table({
        "id": ids,
        "x": rng.uniform(-1, 1, rows),
        "s": pa.array([f"user-{i * 7919 % 100003}" for i in range(rows)]),
    })


@pytest.mark.parametrize("seed,rows,version", [(1, 300_000, "2.1"), (2, 170_001, "2.0"), (3, 250_000, "2.2")])
def test_scan_streams_and_equals_reference(s3_endpoint, tmp_path, monkeypatch, seed, rows, version):
    local = str(tmp_path / "ds")
    lance.write_dataset(_table(rows, seed), local, data_storage_version=version, max_rows_per_file=rows)
    root = s3_endpoint.new_root()
    uri, opts = root.join("ds"), dict(root.storage_options)
    run_sync(_upload(local, uri, opts))
    want = lance.dataset(uri, storage_options=opts).to_table()

    # default pieces: decoding each column on its own costs no extra request
    iops = {}
    for off_loop in (False, True, False):
        monkeypatch.setattr(S3Store, "decode_off_loop", off_loop)
        ours = dataset(uri, storage_options=opts)
        assert ours.to_table().equals(want)
        iops[off_loop] = ours.io_stats().read_iops  # (the last run is warm, as the True one)
    assert iops[True] <= iops[False]
    monkeypatch.undo()

    # small pieces, so this few-MB file is read as several streamed GETs
    monkeypatch.setattr(fsspec_store, "PREFERRED_READ_BYTES", 1 << 20)
    streamed: list[int] = []
    decode_threads: set[str] = set()
    real_stream = S3Store.read_streaming

    async def spy(self, path, start, end, progress):
        streamed.append(end - start)
        return await real_stream(self, path, start, end, progress)

    monkeypatch.setattr(S3Store, "read_streaming", spy)
    from lancejit.encoding.v21 import context as v21_context

    real_decode = v21_context.ColumnContext.decode

    async def decode_spy(self, nbytes, fn, *args):
        def run(*a):
            decode_threads.add(threading.current_thread().name)
            return fn(*a)

        return await real_decode(self, nbytes, run, *args)

    monkeypatch.setattr(v21_context.ColumnContext, "decode", decode_spy)
    from lancejit.core import cores

    monkeypatch.setattr(cores, "idle_core", lambda: True)  # (no idle core: decoded inline)
    monkeypatch.setattr(v21_context, "idle_core", lambda: True)
    assert dataset(uri, storage_options=opts).to_table().equals(want)
    if version != "2.0":  # (2.0 columns read in steps of their own)
        assert streamed and max(streamed) >= SOLO_BYTES
        assert decode_threads and "lancejit-io-loop" not in decode_threads


def test_streaming_looks_through_a_forwarding_reader():
    """A coalescing reader over a data file's forwarding reader streams through the file's
    scheduler unless the file is held whole in memory."""
    from lancejit.core.config import CLOUD_IO
    from lancejit.io.coalesce import CoalescingReader
    from lancejit.io.scheduler import FileScheduler

    class Streaming(S3Store):
        pass

    store = Streaming("bkt", endpoint="http://127.0.0.1:1", key="k", secret="s", config=CLOUD_IO)
    sched = FileScheduler(store, "a/b.lance")

    class Wrapper:
        def __init__(self, inner, whole=None):
            self.inner, self.whole, self.store = inner, whole, getattr(inner, "store", None)

    assert CoalescingReader(sched)._can_stream()
    assert CoalescingReader(Wrapper(sched))._can_stream()
    assert CoalescingReader(Wrapper(sched))._scheduler() is sched
    assert not CoalescingReader(Wrapper(sched, whole=memoryview(b"x")))._can_stream()
    assert not CoalescingReader(Wrapper(object()))._can_stream()
