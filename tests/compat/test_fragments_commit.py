"""Issue 24 item 3: the fragment and commit layer (``LanceFragment``, ``write_fragments``,
``LanceOperation``, ``LanceDataset.commit`` / ``commit_batch``, ``Transaction``,
``get_transactions`` / ``read_transaction``), side by side with pylance, and across the two
libraries (fragments written by one, committed by the other)."""

from __future__ import annotations

import json
import pickle

import pyarrow as pa
import pytest

import lance as ref_lance
import lancejit
from compat_helpers import assert_same


def _table(n: int, start: int = 0) -> pa.Table:
    return pa.table({"a": pa.array(range(start, start + n), pa.int64()),
                     "b": [f"s{i}" for i in range(start, start + n)]})


def _rows(ds) -> list:
    return ds.to_table().sort_by("a").to_pylist()


def _frag_shape(meta) -> tuple:
    """A fragment's metadata without file names and sizes (they differ between libraries)."""
    d = meta.to_json()
    files = [(f["fields"], f["column_indices"], f["file_major_version"], f["file_minor_version"]) for f in d["files"]]
    deletion = d["deletion_file"]
    return (d["id"], files, d["physical_rows"],
            None if deletion is None else (deletion["file_type"], deletion["num_deleted_rows"]))


def test_distributed_append(tmp_path):
    def case(lance, base):
        uri = f"{base}/ds"
        ds = lance.write_dataset(_table(5), uri)
        # "workers" write fragments; the "driver" commits them once
        frags = []
        for w in range(3):
            frags.extend(lance.fragment.write_fragments(_table(4, 100 * (w + 1)), uri, max_rows_per_file=3))
        frags = [lance.fragment.FragmentMetadata.from_json(json.dumps(f.to_json())) for f in frags]
        new = lance.LanceDataset.commit(uri, lance.LanceOperation.Append(frags), read_version=ds.version)
        return new.version, _rows(new), [_frag_shape(f.metadata) for f in new.get_fragments()], ds.version

    assert_same(case, tmp_path)


def test_create_with_fragments_and_overwrite(tmp_path):
    def case(lance, base):
        uri = f"{base}/new"
        f1 = lance.fragment.LanceFragment.create(uri, _table(2))
        f2 = lance.fragment.LanceFragment.create(uri, _table(2, 10))
        ds = lance.LanceDataset.commit(uri, lance.LanceOperation.Overwrite(_table(1).schema, [f1, f2]))
        return ds.version, _rows(ds), [f.fragment_id for f in ds.get_fragments()], ds.schema

    assert_same(case, tmp_path)


def test_write_fragments_transaction_and_commit_batch(tmp_path):
    def case(lance, base):
        uri = f"{base}/ds"
        ds = lance.write_dataset(_table(3), uri)
        t1 = lance.fragment.write_fragments(_table(2, 10), uri, return_transaction=True)
        t2 = lance.fragment.write_fragments(_table(2, 20), uri, return_transaction=True)
        shapes = (type(t1).__name__, type(t1.operation).__name__, t1.read_version)
        res = lance.LanceDataset.commit_batch(uri, [t1, t2])
        merged = res["merged"]
        t3 = lance.fragment.write_fragments(_table(1, 30), ds, return_transaction=True)
        after = lance.LanceDataset.commit(ds, t3)
        return (shapes, res["dataset"].version, _rows(res["dataset"]), type(merged.operation).__name__,
                len(merged.operation.fragments), after.version, _rows(after))

    assert_same(case, tmp_path)


def test_delete_through_fragments(tmp_path):
    def case(lance, base):
        uri = f"{base}/ds"
        ds = lance.write_dataset(_table(8), uri, max_rows_per_file=4)
        updated, removed = [], []
        for frag in ds.get_fragments():
            new = frag.delete("a >= 2 AND a < 6") if frag.fragment_id == 0 else frag.delete("a >= 4")
            if new is None:
                removed.append(frag.fragment_id)
            else:
                updated.append(new)
        op = lance.LanceOperation.Delete(updated, removed, "a >= 2 AND a < 6 OR a >= 4")
        new = lance.LanceDataset.commit(uri, op, read_version=ds.version)
        return new.version, _rows(new), [_frag_shape(f) for f in updated], removed

    assert_same(case, tmp_path)


def test_merge_columns_through_fragments(tmp_path):
    def case(lance, base):
        uri = f"{base}/ds"
        ds = lance.write_dataset(_table(6), uri, max_rows_per_file=3)
        frags, schema = [], None
        for frag in ds.get_fragments():
            new, schema = frag.merge_columns(lambda b: pa.record_batch({"c": pa.compute.multiply(b["a"], 2)}),
                                             columns=["a"])
            frags.append(new)
        new = lance.LanceDataset.commit(uri, lance.LanceOperation.Merge(frags, schema), read_version=ds.version)
        sql = [f.merge_columns({"d": "a + 1"})[0] for f in new.get_fragments()]
        schema2 = new.get_fragments()[0].merge_columns({"d": "a + 1"})[1]
        newer = lance.LanceDataset.commit(uri, lance.LanceOperation.Merge(sql, schema2), read_version=new.version)
        return new.version, _rows(new), newer.version, _rows(newer), newer.schema

    assert_same(case, tmp_path)


def test_project_restore_update_config(tmp_path):
    def case(lance, base):
        uri = f"{base}/ds"
        ds = lance.write_dataset(pa.table({"a": [1, 2], "b": ["x", "y"], "b1": ["c", "d"]}), uri)
        renamed = pa.schema([("a", pa.int64()), ("b0", pa.string()), ("b", pa.string())])
        schema = ds.lance_schema.__class__.from_pyarrow(renamed)
        p = lance.LanceDataset.commit(uri, lance.LanceOperation.Project(schema), read_version=1)
        r = lance.LanceDataset.commit(uri, lance.LanceOperation.Restore(1))
        cfg = lance.LanceOperation.UpdateConfig(config_updates=lance.LanceOperation.UpdateMap({"k": "v"}),
                                                table_metadata_updates=lance.LanceOperation.UpdateMap({"t": "1"}))
        u = lance.LanceDataset.commit(uri, cfg, read_version=r.version)
        return (p.version, p.schema.names, p.to_table().to_pylist(), r.version, r.schema.names, u.version,
                u.config(), u.metadata)

    assert_same(case, tmp_path)


def test_rewrite_groups(tmp_path):
    def case(lance, base):
        uri = f"{base}/ds"
        ds = lance.write_dataset(_table(6), uri, max_rows_per_file=2)
        old = [f.metadata for f in ds.get_fragments()[:2]]
        new = lance.fragment.write_fragments(_table(4), uri)
        op = lance.LanceOperation.Rewrite([lance.LanceOperation.RewriteGroup(old, new)], [])
        out = lance.LanceDataset.commit(uri, op, read_version=ds.version)
        return out.version, _rows(out), len(out.get_fragments())

    assert_same(case, tmp_path)


def test_commit_errors(tmp_path):
    cases = {
        "no_read_version": lambda lance, uri: lance.LanceDataset.commit(uri, lance.LanceOperation.Append([])),
        "bad_operation": lambda lance, uri: lance.LanceDataset.commit(uri, "append", read_version=1),
        "bad_fragments": lambda lance, uri: lance.LanceOperation.Append("x"),
        "transaction_and_message": lambda lance, uri: lance.LanceDataset.commit(
            uri, lance.Transaction(1, lance.LanceOperation.Append([])), commit_message="m"),
    }
    for name, fn in cases.items():
        def case(lance, base, fn=fn):
            uri = f"{base}/ds"
            lance.write_dataset(_table(2), uri)
            return fn(lance, uri)

        assert_same(case, tmp_path / name)


def test_transactions(tmp_path):
    def case(lance, base):
        uri = f"{base}/ds"
        ds = lance.write_dataset(_table(4), uri, commit_message="first", transaction_properties={"k": "v"})
        ds.delete("a = 1")
        ds.update({"b": "'z'"}, where="a = 2")
        ds.add_columns({"c": "a"})
        ds.drop_columns(["c"])
        ds.insert(_table(1, 9))
        txns = ds.get_transactions(10)
        first = ds.read_transaction(1)
        return ([(type(t.operation).__name__, t.read_version) for t in txns],
                first.transaction_properties, type(first).__name__,
                [_frag_shape(f) for f in first.operation.fragments])

    assert_same(case, tmp_path)


def test_fragment_reads(tmp_path):
    def case(lance, base):
        ds = lance.write_dataset(_table(10), f"{base}/ds", max_rows_per_file=5)
        ds.delete("a = 7")
        f = ds.get_fragment(1)
        return (f.fragment_id, f.count_rows(), f.count_rows("a > 6"), f.physical_rows, f.num_deletions,
                f.to_table(columns=["a"], filter="a > 5"), f.head(2), f.take([0, 2]),
                [b.num_rows for b in f.to_batches(batch_size=2)], f.scanner(columns=["b"], limit=1).to_table(),
                f.deletion_file() is not None, [d.fields for d in f.data_files()], _frag_shape(f.metadata),
                ds.get_fragment(99))

    assert_same(case, tmp_path)


def test_fragment_metadata_json_crosses_libraries(tmp_path):
    """Fragments written by lancejit commit through pylance and the other way round."""
    a, b = str(tmp_path / "a"), str(tmp_path / "b")
    ref_lance.write_dataset(_table(2), a)
    lancejit.write_dataset(_table(2), b)
    ours = lancejit.fragment.write_fragments(_table(3, 10), a)
    theirs = ref_lance.fragment.write_fragments(_table(3, 20), b)
    to_ref = [ref_lance.fragment.FragmentMetadata.from_json(json.dumps(f.to_json())) for f in ours]
    to_ours = [lancejit.fragment.FragmentMetadata.from_json(json.dumps(f.to_json())) for f in theirs]
    ref_lance.LanceDataset.commit(a, ref_lance.LanceOperation.Append(to_ref), read_version=1)
    lancejit.LanceDataset.commit(b, lancejit.LanceOperation.Append(to_ours), read_version=1)
    for uri, extra in ((a, 10), (b, 20)):
        want = pa.concat_tables([_table(2), _table(3, extra)]).to_pylist()
        assert ref_lance.dataset(uri).to_table().to_pylist() == want
        assert lancejit.dataset(uri).to_table().to_pylist() == want


def test_fragments_pickle(tmp_path):
    ds = lancejit.write_dataset(_table(4), str(tmp_path / "ds"), max_rows_per_file=2)
    frag = ds.get_fragments()[1]
    again = pickle.loads(pickle.dumps(frag))
    assert again.fragment_id == 1 and again.to_table().equals(frag.to_table())
    meta = pickle.loads(pickle.dumps(frag.metadata))
    assert meta == frag.metadata
    metas = lancejit.fragment.write_fragments(_table(2, 50), str(tmp_path / "ds"))
    assert pickle.loads(pickle.dumps(metas)) == metas


@pytest.mark.parametrize("stable", [False, True])
def test_commit_keeps_row_ids(tmp_path, stable):
    def case(lance, base):
        uri = f"{base}/ds"
        ds = lance.write_dataset(_table(4), uri, enable_stable_row_ids=stable)
        frags = lance.fragment.write_fragments(_table(2, 10), uri)
        new = lance.LanceDataset.commit(uri, lance.LanceOperation.Append(frags), read_version=ds.version)
        return new.to_table(with_row_id=True).to_pylist(), new.has_stable_row_ids

    assert_same(case, tmp_path)


def test_distributed_writer_keywords(tmp_path):
    """lancejit's keywords for distributed writers (the reference has none), read back by the
    reference: ``write_fragments(name_prefix=)`` names a job's files; a ``LanceSchema`` fixes
    the field ids every worker writes (a new column included); ``commit(create_only=)`` never
    overwrites; ``commit(data_storage_version=)`` is what an Overwrite records."""
    from lancejit.core.errors import AlreadyExistsError, InvalidInputError, SchemaMismatchError
    from lancejit.core.schema import LanceField, LanceSchema

    uri = str(tmp_path / "ds")
    ref_lance.write_dataset(_table(3), uri, data_storage_version="2.0")
    frags = lancejit.fragment.write_fragments(_table(7, 10), uri, name_prefix="job7-", max_rows_per_file=3)
    assert [f.physical_rows for f in frags] == [3, 3, 1]
    assert all(df.path.startswith("job7-") for f in frags for df in f.files)
    lancejit.LanceDataset.commit(uri, lancejit.LanceOperation.Append(frags), read_version=1)
    assert _rows(ref_lance.dataset(uri)) == _table(3).to_pylist() + _table(7, 10).to_pylist()
    with pytest.raises(InvalidInputError):
        lancejit.fragment.write_fragments(_table(1), uri, name_prefix="a/b")

    current = lancejit.dataset(uri).lance_schema
    wider = LanceSchema(current.fields + (LanceField.from_arrow(pa.field("c", pa.float64()), next_id=[2]),))
    data = _table(2, 50).append_column("c", pa.array([0.5, 1.5]))
    new = lancejit.fragment.write_fragments(data, uri, wider)
    assert [df.fields for f in new for df in f.files] == [[0, 1, 2]]
    clash = LanceSchema((LanceField.from_arrow(pa.field("a", pa.int64()), next_id=[5]),))
    with pytest.raises(SchemaMismatchError):
        lancejit.fragment.write_fragments(_table(1).select(["a"]), uri, clash)
    reused = LanceSchema((LanceField.from_arrow(pa.field("z", pa.int64()), next_id=[1]),))
    with pytest.raises(SchemaMismatchError):
        lancejit.fragment.write_fragments(pa.table({"z": pa.array([1], pa.int64())}), uri, reused)

    other = str(tmp_path / "other")
    made = lancejit.fragment.write_fragments(_table(2), other, mode="create", data_storage_version="2.1")
    op = lancejit.LanceOperation.Overwrite(_table(1).schema, made)
    lancejit.LanceDataset.commit(other, op, create_only=True)
    with pytest.raises(AlreadyExistsError):
        lancejit.LanceDataset.commit(other, op, create_only=True)
    assert ref_lance.dataset(other).version == 1 and ref_lance.dataset(other).data_storage_version == "2.1"
    redo = lancejit.fragment.write_fragments(_table(2), uri, mode="overwrite", data_storage_version="2.1")
    lancejit.LanceDataset.commit(uri, lancejit.LanceOperation.Overwrite(_table(1).schema, redo), read_version=2,
                                 data_storage_version="2.1")
    assert ref_lance.dataset(uri).data_storage_version == "2.1" and _rows(ref_lance.dataset(uri)) == _table(2).to_pylist()
