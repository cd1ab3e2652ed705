"""write_dataset and the row/schema operations on S3 (moto) and GCS (fake-gcs-server); pylance
reads the S3 result."""

from __future__ import annotations

import lance
import pytest
from ops_helpers import make_table

import lancejit.table as lt


@pytest.mark.parametrize("store_root", ["s3", "gcs"], indirect=True)
def test_ops_on_cloud_store(store_root):
    uri = store_root.join("ops.lance")
    opts = store_root.storage_options or None
    ds = lt.write_dataset(make_table(0, 9), uri, max_rows_per_file=4, storage_options=opts)
    ds = lt.write_dataset(make_table(9, 4), uri, mode="append", storage_options=opts)
    ds.delete("a IN (1, 10)")
    ds.update({"s": "'u'"}, where="a = 3")
    ds.add_columns({"b": "a * 2"})
    ds.tags.create("mine", 2)
    got = lt.dataset(uri, storage_options=opts).to_table()
    assert got.num_rows == 11
    rows = {r["a"]: r for r in got.to_pylist()}
    assert rows[3]["s"] == "u" and rows[12]["b"] == 24 and 1 not in rows and 10 not in rows
    assert lt.dataset(uri, version="mine", storage_options=opts).count_rows() == 13
    if store_root.kind == "s3":
        ref = lance.dataset(uri, storage_options=opts)
        assert ref.version == ds.version and ref.to_table().sort_by("a").equals(got.sort_by("a"))
        assert ref.tags.list()["mine"]["version"] == 2
