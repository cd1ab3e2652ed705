"""The shared emulator fixtures: API shape, and that pylance (the reference) and lancejit's stores
see the same objects through the same storage options."""

from __future__ import annotations

import pytest

from lancejit.io import join_path, open_store


def test_endpoint_api(s3_endpoint, gcs_endpoint):
    for ep, scheme in ((s3_endpoint, "s3"), (gcs_endpoint, "gs")):
        assert str(ep).startswith("http://127.0.0.1:")
        assert ep.uri("a/b") == f"{scheme}://{ep.bucket}/a/b"
        a, b = ep.new_root(), ep.new_root()
        assert a.uri != b.uri and a.uri.startswith(ep.uri()) and a.kind == ep.kind
        assert all(isinstance(v, str) for v in ep.storage_options.values())
        assert a.join("x", "/y/") == a.uri + "/x/y"


def test_any_store_root_is_fresh(any_store_root):
    assert any_store_root.kind in ("local", "memory", "s3", "gcs")
    assert "://" in any_store_root.uri or any_store_root.kind == "local"


@pytest.mark.s3
async def test_reference_dataset_on_s3_visible_to_lancejit(s3_endpoint):
    import lance
    import pyarrow as pa

    root = s3_endpoint.new_root()
    uri = root.join("ds.lance")
    lance.write_dataset(pa.table({"x": list(range(100))}), uri, storage_options=root.storage_options)
    store, path = open_store(uri, root.storage_options)
    listed = await store.list(join_path(path, "_versions"))
    assert len(listed) == 1 and listed[0].path.endswith(".manifest")
    size, tail = await store.read_tail(listed[0].path, 64 * 1024)
    assert size == listed[0].size and bytes(tail[-4:]) == b"LANC"
    ds = lance.dataset(uri, storage_options=root.storage_options)
    assert ds.count_rows() == 100
