"""The same datasets on memory, S3 (moto) and GCS (fake-gcs-server) read equal to local.

Datasets are written locally by pylance and copied into each store; on S3 the reference reads
them too (pylance cannot talk to fake-gcs-server, so on GCS lancejit is compared with itself
on local and with the reference on local).
"""

from __future__ import annotations

import os

import numpy as np
import pytest

from lancejit.io import join_path, open_store, run_sync
from lancejit.table import dataset
from lancejit.table.describe import describe

lance = pytest.importorskip("lance")

_s3 = pytest.param("s3", marks=pytest.mark.s3)
_gcs = pytest.param("gcs", marks=pytest.mark.gcs)


async def _upload(local: str, uri: str, options: dict[str, str]) -> None:
    store, root = open_store(uri, options)
    for dirpath, _, files in os.walk(local):
        for name in files:
            full = os.path.join(dirpath, name)
            rel = os.path.relpath(full, local).replace(os.sep, "/")
            with open(full, "rb") as f:
                await store.put(join_path(root, rel), f.read())


@pytest.fixture
def remote(request, tmp_path):
    """``(uri, storage_options)`` factory copying a local dataset into the requested store."""
    kind = request.param

    def make(local: str, name: str) -> tuple[str, dict[str, str]]:
        if kind == "memory":
            uri, opts = f"memory://tbl-{os.getpid()}-{id(request)}/{name}", {}
        else:
            ep = request.getfixturevalue(f"{kind}_endpoint")
            root = ep.new_root()
            uri, opts = root.join(name), dict(root.storage_options)
        run_sync(_upload(local, uri, opts))
        return uri, opts

    make.kind = kind
    return make


@pytest.mark.parametrize("remote", ["memory", _s3, _gcs], indirect=True)
@pytest.mark.parametrize("kind,version", [("evolving", "2.2"), ("stable", "2.1"), ("bigdel", "2.0")])
def test_remote_equals_local(remote, make_dataset, need_decoders, kind, version):
    need_decoders(version)
    local_path = make_dataset(kind, version)
    uri, opts = remote(local_path, f"{kind}_{version.replace('.', '_')}")
    local = dataset(local_path)
    ours = dataset(uri, storage_options=opts)
    ref = lance.dataset(uri, storage_options=opts) if remote.kind == "s3" else lance.dataset(local_path)
    assert ours.version == local.version == ref.version
    assert [v["version"] for v in ours.versions()] == [v["version"] for v in local.versions()]
    assert [(t.name, t.version) for t in ours.tags] == [(t.name, t.version) for t in local.tags]
    assert describe(ours)["fragments"] == describe(local)["fragments"]
    for v in range(1, ours.version + 1):
        o = ours.checkout_version(v)
        expected = lance.dataset(local_path, version=v).to_table(with_row_id=True, with_row_address=True)
        got = o.to_table(with_row_id=True, with_row_address=True)
        assert got.equals(expected), f"version {v}"
        assert got.equals(local.checkout_version(v).to_table(with_row_id=True, with_row_address=True))
        if remote.kind == "s3" and v == ours.version:
            assert got.equals(lance.dataset(uri, version=v, storage_options=opts).to_table(with_row_id=True, with_row_address=True))
    text = "a % 3 = 0 AND a > 200"
    assert ours.to_table(filter=text, columns=["a"]).equals(ref.to_table(filter=text, columns=["a"]))
    assert ours.count_rows(text) == ref.count_rows(text)
    n = ours.count_rows()
    idx = np.random.default_rng(1).integers(0, n, size=40)
    assert ours.take(idx).equals(ref.take(idx))
    ids = ref.to_table(columns=["a"], with_row_id=True)["_rowid"].to_numpy()[idx[:10]]
    assert ours.take_rows(ids).equals(ref._take_rows(ids.tolist()))
    fresh = dataset(uri, storage_options=opts)  # (small files read once are kept in memory)
    fresh.io_stats()
    fresh.take(idx[:5])
    assert fresh.io_stats().read_iops > 0


@pytest.mark.parametrize("remote", [_s3], indirect=True)
def test_reference_writes_on_s3(remote, s3_endpoint, need_decoders):
    """pylance writes directly to S3 (commits with put-if-absent); lancejit reads it there."""
    need_decoders("2.1")
    import pyarrow as pa

    root = s3_endpoint.new_root()
    uri, opts = root.join("direct"), dict(root.storage_options)
    t = pa.table({"a": np.arange(500, dtype=np.int64), "s": [f"v{i}" for i in range(500)]})
    ref = lance.write_dataset(t, uri, storage_options=opts, data_storage_version="2.1", max_rows_per_file=200)
    ref.delete("a % 5 = 0")
    ref = lance.dataset(uri, storage_options=opts)
    ours = dataset(uri, storage_options=opts)
    assert ours.version == ref.version == 2
    assert ours.to_table(with_row_address=True).equals(ref.to_table(with_row_address=True))
    assert ours.checkout_version(1).to_table().equals(lance.dataset(uri, version=1, storage_options=opts).to_table())
