"""The batched open of data files (lancejit.table.read.datafile.open_data_files): one tail read per
new file in one batch, metadata parsed inline, handles cached and equal to the one-file open;
errors name the file; the multi-file take built on it reads rows equal to pylance's, on local
disk (inline reads) and in a memory store (reads through the files' schedulers)."""

from __future__ import annotations

import os
import shutil

import numpy as np
import pyarrow as pa
import pytest

from lancejit.core.errors import CorruptFileError, NotFoundError
from lancejit.io.sync import run_sync
from lancejit.table import dataset
from lancejit.table.read.datafile import open_data_file, open_data_files

lance = pytest.importorskip("lance")

COLS = ["id", "x", "s"]


def _write(path: str, fragments: int, rows: int, seed: int = 0) -> str:
    shutil.rmtree(path, ignore_errors=True)
    n = fragments * rows
    rng = np.random.default_rng(seed)
    table = pa.table({
        "id": np.arange(n, dtype=np.int64),
        "x": pa.array([None if i % 7 == 3 else float(v) for i, v in enumerate(rng.standard_normal(n))]),
        "s": pa.array([f"s{i % 53}-{'z' * (i % 5)}" for i in range(n)]),
        "v": pa.FixedSizeListArray.from_arrays(pa.array(rng.standard_normal(n * 8).astype(np.float32)), 8),
    })
    lance.write_dataset(table, path, max_rows_per_file=rows, data_storage_version="2.2")
    return path


@pytest.fixture(scope="module")
def frags(tmp_path_factory):
    return _write(str(tmp_path_factory.mktemp("open_many") / "ds"), 12, 300)


def _files(ds):
    ctx = ds._ctx
    return ctx, [f.files[0] for f in ctx.manifest.fragments]


def test_batched_open_one_request_per_file_cached_and_equal(frags):
    ds = dataset(frags)
    ctx, files = _files(ds)
    ds.io_stats()  # (incremental counters: from here)
    picked = [files[3], files[0], files[3], files[7]]  # a repeat: opened once
    handles = run_sync(open_data_files(ctx, picked), store=ctx.store)
    assert ds.io_stats().read_iops == 3
    assert handles[0] is handles[2]
    for h, df in zip(handles, picked):
        assert h.data_file is df and h.num_rows == 300
        store, path = ctx.data_file_location(df)
        assert h.store is store and h.store_path == path and h.path == store.uri(path)
    # cached: the one-file open and a second batch return the same handles, no request
    ds.io_stats()
    assert run_sync(open_data_file(ctx, files[0]), store=ctx.store) is handles[1]
    again = run_sync(open_data_files(ctx, [files[7], files[0], files[5]]), store=ctx.store)
    assert again[0] is handles[3] and again[1] is handles[1]
    assert ds.io_stats().read_iops == 1  # only files[5] is new
    # same metadata as a file opened alone by another dataset object
    other = dataset(frags)
    octx, ofiles = _files(other)
    alone = run_sync(open_data_file(octx, ofiles[5]), store=octx.store)
    assert alone.reader.file_metadata.num_rows == again[2].reader.file_metadata.num_rows
    assert alone.reader.schema.equals(again[2].reader.schema)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_cold_takes_equal_pylance(frags, seed):
    rng = np.random.default_rng(seed)
    ref = lance.dataset(frags)
    ours = dataset(frags)
    for n in (1, 17, 150, 600):
        idx = rng.integers(0, 12 * 300, n)
        assert ours.take(idx, columns=COLS).equals(ref.take(idx, columns=COLS))
    idx = rng.permutation(12 * 300)[:700]
    assert dataset(frags).take(idx, columns=["s", "id"]).equals(ref.take(idx, columns=["s", "id"]))


def test_memory_store_opens_through_schedulers(frags):
    """A memory store has no inline tail reads: the tails are read through the schedulers."""
    import lancejit

    table = lance.dataset(frags).to_table()
    uri = f"memory://open-many-{os.getpid()}/ds"
    lancejit.write_dataset(table, uri, max_rows_per_file=250)
    idx = np.random.default_rng(5).integers(0, table.num_rows, 90)
    assert lancejit.dataset(uri).take(idx, columns=COLS).equals(table.take(idx).select(COLS))


def test_missing_and_damaged_files_are_named(tmp_path):
    path = _write(str(tmp_path / "ds"), 4, 200)
    data = sorted(os.listdir(os.path.join(path, "data")))
    ds = dataset(path)
    ctx, files = _files(ds)
    victim = os.path.join(path, "data", files[2].path)
    os.remove(victim)
    with pytest.raises(NotFoundError) as err:
        run_sync(open_data_files(ctx, files), store=ctx.store)
    assert files[2].path in str(err.value) and "missing" in str(err.value)
    with pytest.raises(NotFoundError):
        dataset(path).take([2 * 200 + 5], columns=COLS)
    # the first three are fine; a file of the wrong size is corrupt, named
    path2 = _write(str(tmp_path / "ds2"), 3, 200)
    ctx2, files2 = _files(dataset(path2))
    target = os.path.join(path2, "data", files2[1].path)
    with open(target, "r+b") as f:
        f.truncate(os.path.getsize(target) - 10)
    with pytest.raises(CorruptFileError) as err2:
        run_sync(open_data_files(ctx2, files2), store=ctx2.store)
    assert files2[1].path in str(err2.value)
    with pytest.raises(CorruptFileError):
        dataset(path2).take([205, 5], columns=COLS)
    assert data  # (files were written)


def test_footer_garbage_is_corrupt(tmp_path):
    path = _write(str(tmp_path / "ds"), 2, 100)
    ctx, files = _files(dataset(path))
    target = os.path.join(path, "data", files[1].path)
    size = os.path.getsize(target)
    with open(target, "r+b") as f:
        f.seek(size - 40)
        f.write(b"\xff" * 24)  # offsets past the file; version and magic kept
    with pytest.raises(CorruptFileError) as err:
        run_sync(open_data_files(ctx, files), store=ctx.store)
    assert files[1].path in str(err.value)


def test_collector_paused_over_batched_opens(knobs, frags, monkeypatch):
    """One collector policy for batched opens (datafile.collector_paused): a take admitting
    new files and a scan opening them pause it when the batch has at least ``gc_pause_files``
    files (here 2), same rows as pylance, and it is on again afterwards, also when an open
    fails."""
    import gc

    from lancejit.table.read import datafile

    seen = []
    real_disable = gc.disable

    def disable():
        seen.append(True)
        real_disable()

    knobs(gc_pause_files=2)
    monkeypatch.setattr(datafile.gc, "disable", disable)
    ref = lance.dataset(frags)
    rows = np.array([5, 301, 1800, 3500], dtype=np.int64)
    assert gc.isenabled()
    assert dataset(frags).take(rows, columns=COLS).equals(ref.take(rows, columns=COLS))
    assert gc.isenabled() and seen
    seen.clear()
    assert dataset(frags).to_table(columns=COLS).equals(ref.to_table(columns=COLS))
    assert gc.isenabled() and seen
    ds = dataset(frags)
    victim = ds._ctx.manifest.fragments[1].files[0].path
    src = os.path.join(frags, "data", victim)
    os.rename(src, src + ".x")
    try:
        with pytest.raises(NotFoundError):
            ds.take(rows, columns=COLS)
        assert gc.isenabled()
        with pytest.raises(NotFoundError):
            dataset(frags).to_table(columns=COLS)  # the whole table scan pauses (Scanner.to_table_async)
    finally:
        os.rename(src + ".x", src)
    assert gc.isenabled()
