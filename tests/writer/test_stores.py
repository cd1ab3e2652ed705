"""The writer streams to every store: the bytes equal a local write; failures leave nothing."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

lance_file = pytest.importorskip("lance.file")

from lancejit.core.errors import SchemaMismatchError  # noqa: E402
from lancejit.file.writer import LanceFileWriter  # noqa: E402
from lancejit.io import open_store, run_sync  # noqa: E402


def _table(n: int) -> pa.Table:
    rng = np.random.default_rng(11)
    return pa.table({
        "x": pa.array(rng.standard_normal(n)),
        "s": pa.array([f"row-{i}-{rng.integers(1 << 20)}" for i in range(n)]),
    })


def _read_bytes(uri: str, options) -> bytes:
    store, path = open_store(uri, options)
    return bytes(run_sync(store.read_all(path)))


def _exists(uri: str, options) -> bool:
    store, path = open_store(uri, options)
    return run_sync(store.exists(path))


def test_write_to_every_store(any_store_root, tmp_path):
    t = _table(60_000)  # ~2 MB, several pages and multipart-sized writes
    local = tmp_path / "ref.lance"
    with LanceFileWriter(str(local), t.schema, max_page_bytes=256 * 1024) as w:
        for b in t.to_batches(max_chunksize=10_000):
            w.write_batch(b)
    uri = any_store_root.join("data", "f.lance")
    opts = any_store_root.storage_options
    with LanceFileWriter(uri, t.schema, storage_options=opts, max_page_bytes=256 * 1024) as w:
        for b in t.to_batches(max_chunksize=10_000):
            w.write_batch(b)
    remote = _read_bytes(uri, opts)
    assert remote == local.read_bytes()
    copy = tmp_path / "copy.lance"
    copy.write_bytes(remote)
    assert lance_file.LanceFileReader(str(copy)).read_all().to_table().equals(t)


def test_schema_mismatch_leaves_no_object(any_store_root):
    t = _table(1000)
    uri = any_store_root.join("bad.lance")
    opts = any_store_root.storage_options
    w = LanceFileWriter(uri, t.schema, storage_options=opts)
    w.write_batch(t)
    with pytest.raises(SchemaMismatchError):
        w.write_batch(pa.table({"x": pa.array([1])}))
    assert not _exists(uri, opts)


@pytest.mark.parametrize("store_root", ["s3", "gcs"], indirect=True)
def test_multipart_upload(store_root, tmp_path):
    """A file larger than one upload part (8 MiB) streams as a multipart / resumable upload."""
    rng = np.random.default_rng(12)
    t = pa.table({"x": pa.array(rng.standard_normal(1_200_000))})  # ~9.6 MB, incompressible
    local = tmp_path / "ref.lance"
    with LanceFileWriter(str(local), t.schema) as w:
        for b in t.to_batches(max_chunksize=300_000):
            w.write_batch(b)
    uri = store_root.join("big.lance")
    opts = store_root.storage_options
    store, _ = open_store(uri, opts)
    assert local.stat().st_size > store.part_size
    with LanceFileWriter(uri, t.schema, storage_options=opts) as w:
        for b in t.to_batches(max_chunksize=300_000):
            w.write_batch(b)
    assert _read_bytes(uri, opts) == local.read_bytes()
