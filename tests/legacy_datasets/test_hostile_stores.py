"""Path confinement on S3 and GCS: a manifest naming ``../`` or ``/``-rooted keys of another
dataset in the same bucket is refused, and no request addresses a key outside the dataset."""

from __future__ import annotations

import sys

import numpy as np
import pyarrow as pa
import pytest

import lancejit
from lancejit.core.errors import LanceJitError
from lancejit.io import open_store
from lancejit.io.fsspec_store import FsspecStore
from lancejit.io.registry import clear_store_cache
from lancejit.io.sync import run_sync

medit = sys.modules["tests_manifest_edit"]


def _edit_latest(store, root: str, fn) -> None:
    infos = run_sync(store.list(f"{root}/_versions", recursive=False))
    latest = sorted(i.path for i in infos if i.path.endswith(".manifest"))[0]  # V2 names: newest first
    data = bytes(run_sync(store.read_all(latest)))
    run_sync(store.put(latest, medit.edit_bytes(data, fn)))


@pytest.mark.parametrize("kind", [pytest.param("s3", marks=pytest.mark.s3), pytest.param("gcs", marks=pytest.mark.gcs)])
def test_bucket_traversal_refused(kind, request, monkeypatch):
    ep = request.getfixturevalue(f"{kind}_endpoint")
    base = ep.new_root()
    opts = base.storage_options
    clear_store_cache()
    lancejit.write_dataset(pa.table({"a": np.arange(10**6, 10**6 + 20)}), base.join("other"), storage_options=opts)
    lancejit.write_dataset(pa.table({"a": np.arange(50)}), base.join("ds"), storage_options=opts)
    store, other_root = open_store(base.join("other"), opts)
    other_file = run_sync(store.list(f"{other_root}/data"))[0].path  # key inside the bucket
    _, ds_root = open_store(base.join("ds"), opts)
    keys: list[str] = []
    orig = FsspecStore._key

    def recording_key(self, path):
        keys.append(path)
        return orig(self, path)

    for bad in (f"../../other/data/{other_file.rsplit('/', 1)[1]}", f"/{other_file}", other_file.replace(other_root, "..", 1),
                f"{kind.replace('gcs', 'gs')}://{ep.bucket}/{other_file}", "a/./b.lance"):
        _edit_latest(store, ds_root, lambda pb, bad=bad: setattr(pb.fragments[0].files[0], "path", bad))
        keys.clear()
        monkeypatch.setattr(FsspecStore, "_key", recording_key)
        try:
            with pytest.raises(LanceJitError):
                lancejit.dataset(base.join("ds"), storage_options=opts).to_table()
        finally:
            monkeypatch.setattr(FsspecStore, "_key", orig)
        outside = [k for k in keys if not k.strip("/").startswith(ds_root + "/")]
        assert not outside, (bad, outside)
