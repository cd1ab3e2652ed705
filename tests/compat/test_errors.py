"""Issue 24 item 6: for each condition, lancejit's error is an instance of every builtin class
the reference's error is (side by side with pylance)."""

from __future__ import annotations

import pyarrow as pa
import pytest

from compat_helpers import assert_same


def _setup(lance, base):
    t = pa.table({"a": [1, 2, 3], "s": ["x", "y", "z"]})
    return t, lance.write_dataset(t, f"{base}/d")


CASES = {
    "missing dataset": lambda lance, base, t, ds: lance.dataset(f"{base}/nope"),
    "missing version": lambda lance, base, t, ds: lance.dataset(f"{base}/d", version=99),
    "missing tag": lambda lance, base, t, ds: lance.dataset(f"{base}/d", version="nosuchtag"),
    "create existing": lambda lance, base, t, ds: lance.write_dataset(t, f"{base}/d"),
    "bad mode": lambda lance, base, t, ds: lance.write_dataset(t, f"{base}/d", mode="bogus"),
    "bad filter syntax": lambda lance, base, t, ds: ds.to_table(filter="a >>> 1"),
    "unknown filter column": lambda lance, base, t, ds: ds.to_table(filter="zz > 1"),
    "unknown column": lambda lance, base, t, ds: ds.to_table(columns=["zz"]),
    "take out of range": lambda lance, base, t, ds: ds.take([10]),
    "take negative": lambda lance, base, t, ds: ds.take([-1]),
    "append wrong schema": lambda lance, base, t, ds: lance.write_dataset(pa.table({"zz": [1]}), f"{base}/d",
                                                                           mode="append"),
    "append wrong type": lambda lance, base, t, ds: lance.write_dataset(pa.table({"a": ["x"], "s": ["y"]}),
                                                                         f"{base}/d", mode="append"),
    "delete bad predicate": lambda lance, base, t, ds: ds.delete("zz = 1"),
    "update unknown column": lambda lance, base, t, ds: ds.update({"zz": "1"}),
    "drop unknown column": lambda lance, base, t, ds: ds.drop_columns(["zz"]),
    "alter unknown column": lambda lance, base, t, ds: ds.alter_columns({"path": "zz", "name": "q"}),
    "add existing column": lambda lance, base, t, ds: ds.add_columns({"a": "1"}),
    "checkout missing version": lambda lance, base, t, ds: ds.checkout_version(99),
    "tag missing version": lambda lance, base, t, ds: ds.tags.create("t", 99),
    "delete missing tag": lambda lance, base, t, ds: ds.tags.delete("nosuch"),
    "merge_insert bad key": lambda lance, base, t, ds: ds.merge_insert("zz"),
    "merge_insert matched fail": lambda lance, base, t, ds: ds.merge_insert("a").when_matched_fail()
    .when_not_matched_insert_all().execute(pa.table({"a": [3], "s": ["q"]})),
    "limit negative": lambda lance, base, t, ds: ds.to_table(limit=-1),
    "commit without read_version": lambda lance, base, t, ds: lance.LanceDataset.commit(
        f"{base}/d", lance.LanceOperation.Append([])),
    "empty write no schema": lambda lance, base, t, ds: lance.write_dataset([], f"{base}/e"),
    "bad data type": lambda lance, base, t, ds: lance.write_dataset(42, f"{base}/e"),
    "get_fragment missing": lambda lance, base, t, ds: ds.get_fragment(99),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_error_builtins(tmp_path, name):
    def case(lance, base):
        t, ds = _setup(lance, base)
        return CASES[name](lance, base, t, ds)

    assert_same(case, tmp_path, compare=lambda v: type(v).__name__ if v is not None else None)
