"""Acceptance 1 and 2 of issue 14: datasets as old Lance releases wrote them, made by editing
manifests the reference (pylance 14.0.2) writes, read by lancejit as the reference reads them:
``to_table``, ``count_rows``, ``take`` and ``take_rows`` equal for every version (or both refuse).
"""

from __future__ import annotations

import os
import sys

import numpy as np
import pyarrow as pa
import pytest

import lancejit
from lancejit.core.errors import CorruptFileError, NotFoundError
from lancejit.pb import table_pb2

lance = pytest.importorskip("lance")
medit = sys.modules["tests_manifest_edit"]
compare = sys.modules["tests_legacy_compare"]

KINDS = ["legacy", "2.0", "2.1", "stable"]


def clear_physical_rows(pb):
    for f in pb.fragments:
        f.physical_rows = 0


def clear_num_deleted(pb):
    for f in pb.fragments:
        if f.HasField("deletion_file"):
            f.deletion_file.num_deleted_rows = 0


def clear_both(pb):
    clear_physical_rows(pb)
    clear_num_deleted(pb)


def no_writer_version_live_counts(pb):
    """Lance issue 1531: a migration wrote the live row count as ``physical_rows``, in manifests
    that carry no writer version; the reference then ignores the recorded count."""
    pb.ClearField("writer_version")
    for f in pb.fragments:
        if f.HasField("deletion_file") and f.deletion_file.num_deleted_rows:
            f.physical_rows -= f.deletion_file.num_deleted_rows


QUIRKS = {
    "no-physical-rows": clear_physical_rows,
    "no-num-deleted-rows": clear_num_deleted,
    "no-counts-at-all": clear_both,
    "no-writer-version-wrong-counts": no_writer_version_live_counts,
}


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("quirk", list(QUIRKS))
def test_cleared_statistics_every_version(quirk, kind, fresh_copy):
    path = fresh_copy(kind)
    medit.edit_all(path, QUIRKS[quirk])
    outcome = compare.assert_same_as_reference(lance, path, seed=len(quirk))
    assert outcome == ["rows"] * len(outcome)


@pytest.mark.parametrize("kind", ["legacy", "2.1"])
def test_missing_file_without_physical_rows_raises_not_found(kind, fresh_copy):
    """Acceptance 2: nothing returns 0 rows for data it could not read."""
    path = fresh_copy(kind)
    medit.edit_all(path, clear_physical_rows)
    pb = medit.read_pb(medit.manifest_paths(path)[-1])
    os.remove(os.path.join(path, "data", pb.fragments[1].files[0].path))
    for call in (
        lambda ds: ds.count_rows(),
        lambda ds: ds.to_table(),
        lambda ds: list(ds.to_batches()),
        lambda ds: ds.take([0]),
        lambda ds: ds.take([350]),
        lambda ds: ds.take_rows([(pb.fragments[1].id << 32) | 1]),
        lambda ds: ds.count_rows("a > 5"),
        lambda ds: len(ds),
    ):
        with pytest.raises(NotFoundError):
            call(lancejit.dataset(path))
    with pytest.raises(Exception):
        lance.dataset(path).count_rows()


@pytest.mark.parametrize("kind", ["2.0", "legacy"])
@pytest.mark.parametrize("fmt", ["arrow-plain", "arrow-lz4", "arrow-zstd", "bitmap", "arrow-from-bitmap"])
def test_old_deletion_file_formats(fmt, kind, fresh_copy):
    """Deletion files in every format writers used: Arrow IPC (uncompressed, LZ4, ZSTD) and
    portable roaring bitmaps, with or without a recorded count."""
    path = fresh_copy(kind)

    def rewrite(pb):
        for f in pb.fragments:
            if not f.HasField("deletion_file"):
                continue
            if fmt == "bitmap":
                medit.rewrite_deletions(path, f, 1)
            elif fmt == "arrow-from-bitmap":
                if f.deletion_file.file_type == 1:
                    medit.rewrite_deletions(path, f, 0)
            else:
                medit.rewrite_deletions(path, f, 0, compression={"arrow-plain": None, "arrow-lz4": "lz4",
                                                                  "arrow-zstd": "zstd"}[fmt])
            f.deletion_file.num_deleted_rows = 0 if fmt == "arrow-plain" else f.deletion_file.num_deleted_rows

    medit.edit_all(path, rewrite)
    outcome = compare.assert_same_as_reference(lance, path)
    assert outcome == ["rows"] * len(outcome)


def test_duplicate_fragment_ids_refused(tmp_path):
    """Two fragments with one id.  The reference's own reads of such a manifest disagree with
    each other (``count_rows`` 500, ``to_table`` 400 rows, ``take([450])`` the row at 250) and
    its ``Dataset::validate`` calls it corrupt ("Duplicate fragment id"): lancejit refuses it
    with CorruptFileError on every read path."""
    path = str(tmp_path / "dup")
    lance.write_dataset(pa.table({"a": np.arange(500), "f": np.arange(500) * 0.5}), path,
                        max_rows_per_file=200, data_storage_version="2.0")

    def dup(pb):
        pb.fragments[2].id = pb.fragments[1].id

    medit.edit_all(path, dup)
    ref = lance.dataset(path)
    assert (ref.count_rows(), ref.to_table().num_rows) == (500, 400)  # the reference's inconsistency
    for call in (lambda ds: ds.count_rows(), lambda ds: ds.to_table(), lambda ds: ds.take([450])):
        with pytest.raises(CorruptFileError):
            call(lancejit.dataset(path))


def test_duplicate_field_ids_from_old_schema_evolution(tmp_path):
    """lance 0.10.5 'corrupt_schema': a column added later reused an existing field id, so two
    data files of a fragment both claim it.  lancejit reads what the reference reads."""
    path = str(tmp_path / "dupfield")
    lance.write_dataset(pa.table({"a": np.arange(300), "b": np.arange(300) * 2}), path,
                        max_rows_per_file=200, data_storage_version="2.0")
    ds = lance.dataset(path)
    ds.add_columns({"c": "a * 3"})

    def dup(pb):
        c = [f for f in pb.fields if f.name == "c"][0]
        old = c.id
        c.id = [f for f in pb.fields if f.name == "b"][0].id
        for frag in pb.fragments:
            for df in frag.files:
                df.fields[:] = [c.id if x == old else x for x in df.fields]

    medit.edit_latest(path, dup)
    kind, ref = compare.reference_reads(lance, path, 2, [0, 250], [])
    mine_kind, mine = compare.lancejit_reads(path, 2, [0, 250], [])
    print("reference:", kind, "lancejit:", mine_kind)
    if kind != "ok":
        assert mine_kind == "lancejit-error", mine
        return
    assert mine_kind == "ok", mine
    assert mine["table"].equals(ref["table"]), (mine["table"].slice(0, 3), ref["table"].slice(0, 3))
    assert mine["take"].equals(ref["take"])


def _strip_index_details(path: str) -> None:
    """Re-write the latest manifest's index section with every entry's ``index_details`` cleared
    (indices written before details existed)."""
    mpath = medit.manifest_paths(path)[-1]
    pb = medit.read_pb(mpath)
    raw = open(mpath, "rb").read()
    import struct

    (n,) = struct.unpack_from("<I", raw, pb.index_section)
    sec = table_pb2.IndexSection()
    sec.ParseFromString(raw[pb.index_section + 4 : pb.index_section + 4 + n])
    for idx in sec.indices:
        idx.ClearField("index_details")
    medit.add_index_section(mpath, sec.SerializeToString())


def test_datasets_with_indices_of_every_kind(tmp_path):
    """Scalar (btree, bitmap), full-text (inverted) and vector (IVF_PQ) indices, then the same
    manifest with index details cleared: the rows read equal the reference's, indices unused."""
    path = str(tmp_path / "indexed")
    n = 600
    rng = np.random.default_rng(3)
    vec = pa.FixedSizeListArray.from_arrays(pa.array(rng.standard_normal(n * 8).astype(np.float32)), 8)
    t = pa.table({"a": np.arange(n), "cat": pa.array([f"c{i % 5}" for i in range(n)]),
                  "text": pa.array([f"word{i % 7} other{i % 3}" for i in range(n)]), "vec": vec})
    lance.write_dataset(t, path, max_rows_per_file=250)
    ds = lance.dataset(path)
    ds.create_scalar_index("a", "BTREE")
    ds.create_scalar_index("cat", "BITMAP")
    ds.create_scalar_index("text", "INVERTED")
    ds.create_index("vec", "IVF_PQ", num_partitions=2, num_sub_vectors=2)
    lance.dataset(path).delete("a % 50 = 7")
    assert len(lance.dataset(path).describe_indices()) == 4
    compare.assert_same_as_reference(lance, path, expect_refusal=False)
    _strip_index_details(path)
    assert lancejit.dataset(path).to_table().equals(lance.dataset(path).to_table())
    compare.assert_same_as_reference(lance, path, versions=[lance.dataset(path).version], expect_refusal=False)
