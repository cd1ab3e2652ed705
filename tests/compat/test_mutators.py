"""Issue 24 items 1 and 2: a change made through a dataset object moves that object to the version
it committed, and returns what the reference returns (side by side with pylance)."""

from __future__ import annotations

from datetime import timedelta

import pyarrow as pa
import pytest

from compat_helpers import assert_same


def _table(n: int = 6, start: int = 0) -> pa.Table:
    return pa.table({"a": list(range(start, start + n)), "b": [f"s{i}" for i in range(start, start + n)]})


def _ds(lance, base, **kw):
    return lance.write_dataset(_table(), f"{base}/ds", max_rows_per_file=4, **kw)


def _state(ds):
    return ds.version, ds.count_rows(), ds.to_table().sort_by("a")


CHANGES = {
    "delete": lambda ds: ds.delete("a = 1"),
    "delete_none": lambda ds: ds.delete("a > 100"),
    "delete_kw": lambda ds: ds.delete("a < 3", conflict_retries=3, retry_timeout=timedelta(seconds=5)),
    "update": lambda ds: ds.update({"b": "'q'"}, where="a >= 4"),
    "update_all": lambda ds: ds.update(updates={"a": "a + 10"}),
    "merge_insert": lambda ds: ds.merge_insert("a").when_matched_update_all().when_not_matched_insert_all()
    .execute(pa.table({"a": [3, 40], "b": ["u", "v"]})),
    "merge_insert_fail_ok": lambda ds: ds.merge_insert("a").when_matched_fail().when_not_matched_insert_all()
    .execute(pa.table({"a": [50, 40], "b": ["u", "v"]})),
    "merge_insert_matched_delete": lambda ds: ds.merge_insert("a").when_matched_delete()
    .execute(pa.table({"a": [1, 2], "b": ["u", "v"]})),
    "merge_insert_retry_args": lambda ds: ds.merge_insert("a").when_not_matched_insert_all()
    .conflict_retries(2).retry_timeout(timedelta(seconds=3)).execute(pa.table({"a": [9], "b": ["z"]})),
    "add_columns_sql": lambda ds: ds.add_columns({"c": "a * 2"}),
    "add_columns_fn": lambda ds: ds.add_columns(lambda b: pa.record_batch({"d": pa.array([1] * b.num_rows)}),
                                                read_columns=["a"], batch_size=2),
    "add_columns_field": lambda ds: ds.add_columns(pa.field("n", pa.float32())),
    "drop_columns": lambda ds: ds.drop_columns(["b"]),
    "alter_columns": lambda ds: ds.alter_columns({"path": "b", "name": "bb"}),
    "insert": lambda ds: ds.insert(_table(2, 100)),
    "insert_overwrite": lambda ds: ds.insert(_table(2, 100), mode="overwrite"),
    "compact": lambda ds: _metrics(ds.optimize.compact_files()),
    "update_config": lambda ds: ds.update_config({"k": "v"}),
    "update_metadata": lambda ds: ds.update_metadata({"k": "v"}),
    "update_schema_metadata": lambda ds: ds.update_schema_metadata({"k": "v"}),
    "update_field_metadata": lambda ds: ds.update_field_metadata({"a": {"k": "v"}}),
    "delete_config_keys": lambda ds: (ds.update_config({"k": "v", "j": "w"}), ds.delete_config_keys(["k"]))[1],
}


def _metrics(m):
    return (m.fragments_removed, m.fragments_added, m.files_removed, m.files_added)


@pytest.mark.parametrize("name", sorted(CHANGES))
def test_change_moves_the_object(tmp_path, name):
    change = CHANGES[name]

    def case(lance, base):
        ds = _ds(lance, base)
        ds.delete("a = 5")  # a deletion to materialize, two fragments to merge
        ret = change(ds)
        return ret, _state(ds), _state(lance.dataset(f"{base}/ds")), ds.config(), ds.schema

    assert_same(case, tmp_path)


def test_restore_moves_the_object(tmp_path):
    def case(lance, base):
        ds = _ds(lance, base)
        ds.delete("a = 1")
        old = lance.dataset(f"{base}/ds", version=1)
        ret = old.restore()
        return ret, _state(old), _state(lance.dataset(f"{base}/ds")), _state(ds)

    assert_same(case, tmp_path)


def test_checkout_returns_a_new_object_and_checkout_latest_moves(tmp_path):
    def case(lance, base):
        ds = _ds(lance, base)
        ds.delete("a = 1")
        one = ds.checkout_version(1)
        before = (one.version, ds.version)
        one.checkout_latest()
        return before, one.version, ds.latest_version

    assert_same(case, tmp_path)


def test_change_after_checkout_of_old_version_fails_like_the_reference(tmp_path):
    def case(lance, base):
        ds = _ds(lance, base)
        old = lance.dataset(f"{base}/ds", version=1)
        ds.delete("a = 1")
        old.restore()
        return ds.insert(_table(1, 50))  # conflicts with the concurrent Restore

    assert_same(case, tmp_path)
