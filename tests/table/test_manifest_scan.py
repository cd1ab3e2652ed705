"""Manifests decoded through the wire-format kernels equal the protobuf decoding, on datasets the
reference wrote (every version: deletions, stable row ids, V1 names, evolving schemas)."""

from __future__ import annotations

import os

import numpy as np
import pytest

import lancejit
from lancejit.table.meta import manifest_scan
from lancejit.table.meta.fragment_list import FragmentList
from lancejit.table.meta.manifest import decode_manifest_file
from lancejit.table.meta.manifest_scan import RawFragments

KINDS = [("evolving", "2.1"), ("stable", "2.1"), ("v1names", "2.0"), ("bigdel", "2.1"), ("mixed", "2.1"),
         ("evolving", "legacy")]


def _manifest_files(path: str) -> list[str]:
    vdir = os.path.join(path, "_versions")
    return sorted(os.path.join(vdir, n) for n in os.listdir(vdir) if n.endswith(".manifest"))


def _decode(path: str, kernels: bool, monkeypatch) -> object:
    monkeypatch.setattr(manifest_scan, "kernels_ready", lambda: kernels)
    with open(path, "rb") as f:
        return decode_manifest_file(f.read(), path)


@pytest.mark.parametrize("kind,version", KINDS)
def test_kernel_decoding_equals_protobuf(make_dataset, kind, version, monkeypatch):
    files = _manifest_files(make_dataset(kind, version))
    assert files
    for path in files:
        scanned = _decode(path, True, monkeypatch)
        plain = _decode(path, False, monkeypatch)
        assert isinstance(scanned.fragments._pb, RawFragments)
        assert not isinstance(plain.fragments._pb, RawFragments)
        # counts first (no fragment converted yet), then every field and fragment
        for a, b in zip(scanned.fragments.counts(), plain.fragments.counts()):
            np.testing.assert_array_equal(a, b)
        assert scanned == plain
        assert isinstance(scanned.fragments, FragmentList)


@pytest.mark.parametrize("kernels", [True, False])
def test_open_and_count_either_way(make_dataset, kernels, monkeypatch):
    """The public path: open every version and count, with and without the kernels."""
    import lance

    path = make_dataset("evolving", "2.1")
    monkeypatch.setattr(manifest_scan, "kernels_ready", lambda: kernels)
    for v in lance.dataset(path).versions():
        n = v["version"]
        ds = lancejit.dataset(path, version=n)
        assert isinstance(ds.manifest.fragments._pb, RawFragments) is kernels
        assert ds.count_rows() == lance.dataset(path, version=n).count_rows()


def test_schema_converted_once_per_schema(make_dataset, monkeypatch):
    """Versions whose schema bytes are equal share one conversion; a changed schema gets its own."""
    import importlib

    import lance

    dataset_mod = importlib.import_module("lancejit.table.meta.open")
    monkeypatch.setattr(manifest_scan, "kernels_ready", lambda: True)
    monkeypatch.setattr(dataset_mod, "_SCHEMAS", {})
    path = make_dataset("evolving", "2.1")
    by_key: dict[bytes, object] = {}
    for v in lance.dataset(path).versions():
        ds = lancejit.dataset(path, version=v["version"])
        key = ds.manifest.schema_key
        assert key is not None
        assert ds.schema == lance.dataset(path, version=v["version"]).schema
        if key in by_key:
            assert ds.schema is by_key[key]
        by_key[key] = ds.schema
    assert 1 < len(by_key) < len(lance.dataset(path).versions())
    assert len(dataset_mod._SCHEMAS) == len(by_key)


@pytest.fixture(scope="module")
def big_manifest(tmp_path_factory):
    """A dataset whose latest manifest file is over 64 KiB (1,000 one-row fragments)."""
    import lance
    import pyarrow as pa

    path = str(tmp_path_factory.mktemp("bigmf") / "ds")
    lance.write_dataset(pa.table({"a": np.arange(1000)}), path, max_rows_per_file=1, data_storage_version="2.1")
    return path


@pytest.mark.parametrize("kernels", [True, False])
def test_open_reads_a_listed_manifest_in_one_request(big_manifest, kernels, monkeypatch):
    """Opening lists once and reads the manifest once, even when it is larger than the 64 KiB
    first read of a manifest of unknown size on an object store (local stores read up to 1 MiB
    of a manifest at once)."""
    import lance

    monkeypatch.setattr(manifest_scan, "kernels_ready", lambda: kernels)
    assert os.path.getsize(_manifest_files(big_manifest)[-1]) > 64 * 1024
    ds = lancejit.dataset(big_manifest)
    stats = ds.io_stats()
    assert (stats.list_iops, stats.read_iops) == (1, 1)
    assert ds.count_rows() == lance.dataset(big_manifest).count_rows()
    assert ds.io_stats().read_iops == 0
    again = lancejit.dataset(big_manifest, version=ds.version)  # by number: no listing
    assert again.io_stats().read_iops == 1
    assert again.count_rows() == ds.count_rows()
