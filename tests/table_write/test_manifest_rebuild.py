"""The manifest builder reproduces pylance 14's manifests: for every version of datasets pylance
wrote (create, append, delete, add_columns, update, drop_columns, overwrite, restore; stable row
ids; V1 names), applying that version's own transaction to the previous manifest gives the same
protobuf (all but writer_version), and re-framing a manifest gives the same bytes."""

from __future__ import annotations

import os

import pyarrow as pa
import pytest

import lance
from lancejit.pb import table_pb2
from lancejit.table.commit import Transaction, build_manifest, parse_manifest_file, serialize_manifest
from lancejit.table.commit.manifest_writer import ManifestWriteConfig
from lancejit.table.meta.naming import parse_manifest_name


def _evolving(path: str, version: str, stable: bool, v2_paths: bool) -> None:
    """Versions 1-12: create, append, delete, add_columns, update, drop_columns, delete (a whole
    fragment), overwrite, append, restore(4), merge_insert upsert, merge_insert update."""
    kw = dict(data_storage_version=version, max_rows_per_file=120)
    if stable:
        kw["enable_stable_row_ids"] = True
    if not v2_paths:
        kw["enable_v2_manifest_paths"] = False
    t = pa.table({"a": pa.array(range(300), pa.int64()), "s": [f"s{i}" for i in range(300)]})
    lance.write_dataset(t, path, **kw)
    lance.write_dataset(pa.table({"a": pa.array(range(300, 400), pa.int64()), "s": ["x"] * 100}), path,
                        mode="append", max_rows_per_file=120)
    ds = lance.dataset(path)
    ds.delete("a % 17 = 3")
    ds = lance.dataset(path)
    ds.add_columns({"b": "a * 2"})
    ds = lance.dataset(path)
    ds.update({"s": "'upd'"}, where="a >= 100 AND a < 130")
    ds = lance.dataset(path)
    ds.drop_columns(["s"])
    ds = lance.dataset(path)
    ds.delete("a < 120")  # removes the whole first fragment
    lance.write_dataset(pa.table({"a": pa.array([1, 2], pa.int64()), "b": pa.array([2, 4], pa.int64())}), path,
                        mode="overwrite")
    lance.write_dataset(pa.table({"a": pa.array([3], pa.int64()), "b": pa.array([6], pa.int64())}), path,
                        mode="append")
    lance.dataset(path, version=4).restore()
    # merge_insert: Update with moved rows plus inserted rows (partial row ids), then update only
    up = pa.table({"a": pa.array([5, 150, 1000, 1001], pa.int64()), "s": ["u", "u", "n", "n"],
                   "b": pa.array([0, 0, 0, 0], pa.int64())})
    lance.dataset(path).merge_insert("a").when_matched_update_all().when_not_matched_insert_all().execute(up)
    up = pa.table({"a": pa.array([7, 8], pa.int64()), "s": ["v", "v"], "b": pa.array([1, 1], pa.int64())})
    lance.dataset(path).merge_insert("a").when_matched_update_all().execute(up)


@pytest.mark.parametrize(
    "version,stable,v2_paths",
    [("2.2", True, True), ("2.1", False, True), ("2.0", False, False), ("2.2", False, False)],
)
def test_rebuild_matches_pylance(tmp_path, version, stable, v2_paths):
    path = str(tmp_path / "ds")
    _evolving(path, version, stable, v2_paths)
    loaded = {}
    for name in os.listdir(os.path.join(path, "_versions")):
        parsed = parse_manifest_name(name)
        if parsed is None:
            continue
        data = open(os.path.join(path, "_versions", name), "rb").read()
        lm = parse_manifest_file(data, name)
        again = table_pb2.Manifest()
        again.CopyFrom(lm.manifest)
        assert serialize_manifest(again, transaction=lm.transaction, index_section=lm.index_section) == data
        loaded[parsed[0]] = lm
    assert sorted(loaded) == list(range(1, 13))
    for v in sorted(loaded):
        lm = loaded[v]
        txn = Transaction.parse(lm.transaction)
        # the transaction converts back to the very bytes it came from
        assert txn.serialize() == lm.transaction, (v, txn.operation.name)
        prev = loaded[v - 1].manifest if v > 1 else None
        src = loaded[txn.operation.version].manifest if txn.operation.name == "Restore" else None
        ts = lm.manifest.timestamp.seconds * 10**9 + lm.manifest.timestamp.nanos
        cfg = ManifestWriteConfig(enable_stable_row_ids=stable and prev is None, timestamp_ns=ts)
        mine = build_manifest(prev, txn, transaction_file=lm.manifest.transaction_file, config=cfg,
                              restore_source=src)
        ref = table_pb2.Manifest()
        ref.CopyFrom(lm.manifest)
        assert mine.writer_version.library == "lancejit"
        for m in (mine, ref):
            m.ClearField("writer_version")
            m.ClearField("transaction_section")
        assert mine == ref, (v, txn.operation.name)
