"""Scans whose columns come back from the file reader in several chunks (small read windows):
live-row selection with deletions and filters keeps chunks (boolean filter, in a worker thread
for big units), batches are cut zero-copy at ``batch_size`` and chunk edges, and everything
reads equal to the reference."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

import lancejit.file.reader as file_reader
import lancejit.table as lt
import lancejit.table.read.late as late_module
import lancejit.table.read.scan as scan_module

lance = pytest.importorskip("lance")


def _table(n: int) -> pa.Table:
    rng = np.random.default_rng(7)
    a = np.arange(n, dtype=np.int64)
    vec = pa.FixedSizeListArray.from_arrays(pa.array(rng.standard_normal(n * 8).astype(np.float32)), 8)
    st = pa.StructArray.from_arrays([pa.array(a * 3), pa.array([f"q{i % 17}" for i in a])], names=["x", "y"])
    return pa.table({"a": a, "s": pa.array([None if i % 11 == 3 else f"s{i}" for i in a]), "vec": vec, "st": st})


@pytest.fixture
def small_windows(monkeypatch):
    # ~4 KiB of encoded data per column per read window: every column arrives in many chunks
    monkeypatch.setattr(file_reader, "SCAN_READ_BYTES", 4096)
    monkeypatch.setattr(late_module, "OFFLOAD_SELECT_ROWS", 0)  # the worker-thread selection path


@pytest.mark.parametrize("version", ["2.1", "2.2"])
def test_chunked_scan_with_deletions_and_filters(tmp_path, small_windows, version):
    uri = str(tmp_path / "ds")
    lance.write_dataset(_table(3000), uri, data_storage_version=version, max_rows_per_file=1200)
    lance.dataset(uri).delete("a % 13 = 2 OR (a >= 1500 AND a < 1700)")
    ref, ours = lance.dataset(uri), lt.dataset(uri)
    got = ours.to_table(with_row_id=True)
    assert got.equals(ref.to_table(with_row_id=True))
    chunked = ours.to_table(with_row_id=True, batch_size=100)  # units bigger than a batch: no copy
    assert chunked.equals(got)
    assert max(c.num_chunks for c in chunked.columns) > 1  # the chunked path was taken
    for text in ["a % 5 = 1", "a > 2900", "st.x > 600 AND s IS NOT NULL", "a < 0"]:
        assert ours.to_table(filter=text).equals(ref.to_table(filter=text)), text
        assert ours.to_table(filter=text, columns=["vec", "st.y"]).equals(
            ref.to_table(filter=text, columns=["vec", "st.y"])), text
    sizes = [b.num_rows for b in ours.to_batches(batch_size=100)]
    assert sum(sizes) == ref.count_rows() and max(sizes) <= 100
    assert ours.to_table(offset=777, limit=1000).equals(ref.to_table(offset=777, limit=1000))


def test_read_unit_returns_one_contiguous_batch(tmp_path, small_windows):
    """``read_unit`` (used by the Spark source) still hands back one RecordBatch per unit."""
    from lancejit.io import run_sync
    from lancejit.table.read.fragment import FragmentReader

    uri = str(tmp_path / "ds")
    lance.write_dataset(_table(900), uri, data_storage_version="2.1")
    lance.dataset(uri).delete("a % 4 = 0")
    ours = lt.dataset(uri)
    ctx = ours.context
    spec = ours._spec()
    frag = FragmentReader(ctx, ctx.manifest.fragments[0])
    batch = run_sync(scan_module.read_unit(ctx, frag, spec, 0, 900))
    assert isinstance(batch, pa.RecordBatch)
    assert pa.Table.from_batches([batch]).equals(lance.dataset(uri).to_table())
