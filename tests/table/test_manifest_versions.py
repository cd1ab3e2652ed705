"""Manifests, versions, tags and feature flags of datasets written by pylance 14 (no data decoding)."""

from __future__ import annotations

import glob
import json
import os
import shutil
import struct

import pytest

from lancejit.core.errors import CorruptFileError, InvalidInputError, NotFoundError, NotSupportedError
from lancejit.pb import table_pb2
from lancejit.table import dataset
from lancejit.table.describe import describe
from lancejit.table.meta.manifest import decode_inline_transaction, decode_manifest_file, manifest_position
from lancejit.table.meta.naming import NamingScheme, manifest_name
from lancejit.table.meta.versions import WHOLE_MANIFEST_BYTES

lance = pytest.importorskip("lance")


def _manifest_files(path: str) -> list[str]:
    return sorted(glob.glob(os.path.join(path, "_versions", "*.manifest")))


def _rewrite(path: str, mutate) -> None:
    """Re-encode the manifest at ``path`` after ``mutate(pb)``, keeping the sections before it."""
    data = open(path, "rb").read()
    pos = manifest_position(data, len(data), path)
    pb = table_pb2.Manifest.FromString(data[pos + 4 : len(data) - 16])
    mutate(pb)
    body = pb.SerializeToString()
    out = data[:pos] + struct.pack("<I", len(body)) + body + struct.pack("<q", pos) + data[-8:]
    with open(path, "wb") as f:
        f.write(out)


def _copy(src: str, tmp_path, name: str = "copy") -> str:
    dst = str(tmp_path / name)
    shutil.copytree(src, dst)
    return dst


@pytest.mark.parametrize("kind", ["evolving", "stable", "v1names"])
def test_manifest_matches_reference(make_dataset, kind):
    path = make_dataset(kind, "2.1")
    ref = lance.dataset(path)
    ref_versions = {v["version"]: v for v in ref.versions()}
    assert sorted(ref_versions) == list(range(1, ref.version + 1))
    ours = dataset(path)
    assert ours.version == ref.version
    assert [v["version"] for v in ours.versions()] == sorted(ref_versions)
    for v in ours.versions():
        assert v["timestamp"] == ref_versions[v["version"]]["timestamp"]
        assert v["metadata"] == ref_versions[v["version"]]["metadata"]
    for version in ref_versions:
        r = lance.dataset(path, version=version)
        o = dataset(path, version=version)
        assert o.version == version
        assert o.data_storage_version == r.data_storage_version
        assert o.schema.equals(r.schema, check_metadata=True)
        assert o.has_stable_row_ids == (kind == "stable")
        rfrags = [f.metadata for f in r.get_fragments()]
        ofrags = o.get_fragments()
        assert [f.id for f in ofrags] == [f.id for f in rfrags]
        for of, rf in zip(ofrags, rfrags):
            assert of.physical_rows == rf.physical_rows
            assert of.has_row_ids == (kind == "stable")
            if rf.deletion_file is None:
                assert of.deletion_file() is None and of.num_deletions == 0
            else:
                assert of.num_deletions == rf.deletion_file.num_deleted_rows
                assert of.deletion_file().endswith(".arrow" if rf.deletion_file.file_type == "array" else ".bin")
            assert [df.path for df in of.files] == [df.path for df in rf.files]
            for odf, rdf in zip(of.files, rf.files):
                assert list(odf.fields) == list(rdf.fields)
                assert list(odf.column_indices) == list(rdf.column_indices)
                assert (odf.file_major_version, odf.file_minor_version) == (rdf.file_major_version, rdf.file_minor_version)
                assert odf.file_size_bytes == rdf.file_size_bytes


def test_inline_transaction_and_framing(make_dataset):
    path = make_dataset("evolving", "2.1")
    for i, mf in enumerate(sorted(_manifest_files(path), reverse=True)):
        data = open(mf, "rb").read()
        m = decode_manifest_file(data, mf)
        assert m.version == i + 1
        assert m.writer_library == "lance"
        assert m.transaction_section is not None  # pylance 14 writes field 23
        txn = decode_inline_transaction(data, m, mf)
        assert txn.read_version == m.version - 1


def test_field_21_is_accepted(make_dataset, tmp_path):
    path = _copy(make_dataset("evolving", "2.1"), tmp_path)
    mf = os.path.join(path, "_versions", manifest_name(3, NamingScheme.V2))

    def move(pb):
        pb.transaction_section_deprecated = pb.transaction_section
        pb.ClearField("transaction_section")

    _rewrite(mf, move)
    data = open(mf, "rb").read()
    m = decode_manifest_file(data, mf)
    assert m.transaction_section is not None
    assert decode_inline_transaction(data, m, mf).read_version == 2
    assert dataset(path, version=3).version == 3


def test_large_manifest_needs_a_second_read(make_dataset, tmp_path):
    path = _copy(make_dataset("evolving", "2.1"), tmp_path)
    latest = lance.dataset(path).version
    mf = os.path.join(path, "_versions", manifest_name(latest, NamingScheme.V2))
    # 1.2 MB of schema metadata: a manifest over the 64 KiB first read of object stores and
    # over the 1 MiB local stores read at once
    big = os.urandom(600_000).hex().encode()

    _rewrite(mf, lambda pb: pb.schema_metadata.__setitem__("big", big))
    assert os.path.getsize(mf) > WHOLE_MANIFEST_BYTES
    ds = dataset(path)
    assert ds.schema.metadata[b"big"] == big
    assert ds.manifest.file_size == os.path.getsize(mf)
    ds.io_stats()
    again = ds.checkout_version(latest)  # by number: no listing, tail read + one more read
    assert again.schema.metadata[b"big"] == big
    stats = ds.io_stats()
    assert stats.read_iops == 2


def test_v1_names_and_version_by_number(make_dataset):
    path = make_dataset("v1names", "2.1")
    names = sorted(os.path.basename(p) for p in _manifest_files(path))
    assert names == sorted(f"{v}.manifest" for v in range(1, lance.dataset(path).version + 1))
    assert dataset(path).version == lance.dataset(path).version
    assert dataset(path, version=2).version == 2
    assert describe(dataset(path))["naming_scheme"] == "V1"


def test_mixed_naming_schemes_are_an_error(make_dataset, tmp_path):
    path = _copy(make_dataset("evolving", "2.1"), tmp_path)
    src = os.path.join(path, "_versions", manifest_name(1, NamingScheme.V2))
    shutil.copy(src, os.path.join(path, "_versions", "1.manifest"))
    with pytest.raises(CorruptFileError, match="naming schemes"):
        dataset(path)
    assert dataset(path, version=2).version == 2  # opening by number needs no listing


def test_version_hint_is_only_a_hint(make_dataset, tmp_path):
    path = _copy(make_dataset("evolving", "2.1"), tmp_path)
    latest = lance.dataset(path).version
    with open(os.path.join(path, "_versions", "latest_version_hint.json"), "w") as f:
        json.dump({"version": 2}, f)
    assert dataset(path).version == latest
    assert describe(dataset(path))["version_hint"] == 2
    os.remove(os.path.join(path, "_versions", "latest_version_hint.json"))
    assert dataset(path).version == latest


def test_tags(make_dataset, tmp_path):
    path = _copy(make_dataset("evolving", "2.1"), tmp_path)
    ref = lance.dataset(path)
    ours = dataset(path)
    assert {t.name: t.version for t in ours.tags} == {k: v["version"] for k, v in ref.tags.list().items()}
    assert ours.list_tags()["evolved"]["version"] == 4
    assert dataset(path, version="evolved").version == 4
    assert ours.checkout_version("created").version == 1
    tags_by_version = {v["version"]: v["tag"] for v in ours.versions()}
    assert tags_by_version[1] == "created" and tags_by_version[4] == "evolved" and tags_by_version[2] is None
    # snake_case keys (as the format docs show them)
    with open(os.path.join(path, "_refs", "tags", "snake.json"), "w") as f:
        json.dump({"branch": None, "version": 3, "manifest_size": 123, "created_at": "x", "metadata": {}}, f)
    snake = [t for t in dataset(path).tags if t.name == "snake"][0]
    assert (snake.version, snake.manifest_size, snake.created_at) == (3, 123, "x")
    assert dataset(path, version="snake").version == 3
    with pytest.raises(NotFoundError, match="no tag 'nope'"):
        dataset(path, version="nope")
    with pytest.raises(InvalidInputError):
        dataset(path, version="../x")


def test_missing_version_and_dataset(make_dataset, tmp_path):
    path = make_dataset("evolving", "2.1")
    with pytest.raises(NotFoundError, match="no version 99"):
        dataset(path, version=99)
    with pytest.raises(NotFoundError):
        dataset(str(tmp_path / "nothing_here"))


def test_unknown_reader_feature_flag(make_dataset, tmp_path):
    path = _copy(make_dataset("evolving", "2.1"), tmp_path)
    latest = lance.dataset(path).version
    mf = os.path.join(path, "_versions", manifest_name(latest, NamingScheme.V2))

    def flag(pb):
        pb.reader_feature_flags |= 128

    _rewrite(mf, flag)
    with pytest.raises(NotSupportedError) as info:
        dataset(path)
    msg = str(info.value)
    assert path in msg and f"version {latest}" in msg and os.path.basename(mf) in msg
    assert dataset(path, version=latest - 1).version == latest - 1  # older versions still open
    # known flags (deletion files, stable row ids, base paths...) are fine
    _rewrite(mf, lambda pb: setattr(pb, "reader_feature_flags", 1 | 2 | 4 | 8 | 32))
    assert dataset(path).version == latest


@pytest.mark.parametrize(
    "damage",
    ["magic", "length", "protobuf", "truncated", "position"],
)
def test_damaged_manifest(make_dataset, tmp_path, damage):
    path = _copy(make_dataset("evolving", "2.1"), tmp_path)
    latest = lance.dataset(path).version
    mf = os.path.join(path, "_versions", manifest_name(latest, NamingScheme.V2))
    data = bytearray(open(mf, "rb").read())
    pos = manifest_position(bytes(data), len(data), mf)
    if damage == "magic":
        data[-4:] = b"XXXX"
    elif damage == "length":
        data[pos : pos + 4] = struct.pack("<I", 7)
    elif damage == "protobuf":
        data[pos + 4 : len(data) - 16] = b"\xff" * (len(data) - 16 - pos - 4)
    elif damage == "truncated":
        data = data[:10]
    elif damage == "position":
        data[-16:-8] = struct.pack("<q", len(data) * 3)
    open(mf, "wb").write(bytes(data))
    for version in (None, latest):
        with pytest.raises(CorruptFileError) as info:
            dataset(path, version=version)
        msg = str(info.value)
        assert path in msg and f"version {latest}" in msg and os.path.basename(mf) in msg


def test_describe(make_dataset):
    path = make_dataset("bigdel", "2.1")
    d = describe(dataset(path))
    assert d["version"] == d["latest_version"] == 3
    assert [v["version"] for v in d["versions"]] == [1, 2, 3]
    kinds = [f["deletion_file"]["type"] for f in d["fragments"]]
    assert kinds == ["bitmap", "arrow"]
    assert [f["rows"] for f in d["fragments"]] == [600, 5998]
    assert d["reader_feature_flags"] == ["deletion_files"]
    assert all(f["files"][0]["file_version"] == "2.1" for f in d["fragments"])
    json.dumps(d)
