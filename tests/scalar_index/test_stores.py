"""Scalar indices on every store: built by lancejit, used by filters, compaction remapping them,
on local disk, memory, the S3 emulator and the GCS emulator; and corrupt index files."""

from __future__ import annotations

import glob
import uuid

import numpy as np
import pyarrow as pa
import pytest

import lancejit
from lancejit.core import config
from lancejit.core.errors import CorruptFileError

FILTERS = ["id = 77", "id IN (1, 500, 1999, 2500)", "id BETWEEN 300 AND 340", "k = 3 AND id < 900",
           "NOT (k = 2) AND id < 100", "array_has_any(tags, ['t1']) AND id > 1900"]


def _table(n: int, start: int = 0) -> pa.Table:
    i = np.arange(start, start + n, dtype=np.int64)
    return pa.table({"id": i, "k": pa.array(i % 5, mask=i % 17 == 0),
                     "tags": pa.array([[f"t{x % 3}"] for x in i], pa.list_(pa.string()))})


def test_indices_on_every_store(any_store_root):
    uri = any_store_root.join("ix.lance")
    opts = any_store_root.storage_options
    ds = lancejit.write_dataset(_table(2000), uri, max_rows_per_file=500, storage_options=opts)
    ds = ds.create_scalar_index("id", "BTREE").create_scalar_index("k", "BITMAP") \
        .create_scalar_index("tags", "LABEL_LIST")
    ds.insert(_table(600, start=2000))
    ds.delete("id % 9 = 4")
    ds = lancejit.dataset(uri, storage_options=opts)
    m = ds.optimize.compact_files(target_rows_per_fragment=1200)
    assert m.fragments_removed >= 4
    ds = lancejit.dataset(uri, storage_options=opts)
    for text in FILTERS:
        ds.io_stats()
        got = ds.to_table(filter=text)
        assert ds.io_stats().index_searches > 0, text
        with config.override(scalar_indices=False):
            assert got.equals(ds.to_table(filter=text)), text
        assert ds.count_rows(text) == got.num_rows


def test_corrupt_index_files_raise_corrupt_file_error(tmp_path):
    path = str(tmp_path / "bad")
    ds = lancejit.write_dataset(_table(3000), path, max_rows_per_file=1000)
    ds = ds.create_scalar_index("k", "BITMAP")
    (ix,) = ds.list_indices()
    (f,) = glob.glob(f"{path}/_indices/{uuid.UUID(ix['uuid'])}/*.lance")
    raw = bytearray(open(f, "rb").read())
    # the bitmaps' bytes (the file's first data) overwritten with counts claiming huge sets
    raw[0:64] = (b"\xff\xff\xff\x7f" + b"\x01\x00\x00\x00" + b"\xff\xff\xff\x7f") * 5 + b"\x00" * 4
    open(f, "wb").write(bytes(raw))
    with pytest.raises(CorruptFileError):
        lancejit.dataset(path).to_table(filter="k = 3")
