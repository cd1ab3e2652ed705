"""Issue 24 item 5: filters the reference takes (functions, binary literals, row ids), datasets
that pickle, writes from scans: the same results as pylance, no raw exception."""

from __future__ import annotations

import pickle

import pyarrow as pa
import pytest

from compat_helpers import assert_same

FILTERS = [
    "regexp_match(s, '^b')", "regexp_match(s, 'an') IS NOT NULL", "regexp_like(s, '^b')",
    "regexp_match(s, 'A', 'i')", "regexp_count(s, 'a') > 1",
    "b = X'ff'", "b = X'0102'", "b <> X'ff'",
    "_rowid < 2", "_rowaddr >= 1", "_rowid IN (0, 3)", "_rowid > 0 AND a < 4",
    "array_has_any(l, [1, 3])", "array_has_all(l, [1, 2])", "array_contains(l, 3)", "array_has(l, 3)",
    "array_has(ls, 'z')", "list_has(l, 1)", "list_contains(l, 2)", "array_has_any(ls, ['x', 'q'])",
    "array_length(l) > 1", "cardinality(l) = 2",
    "starts_with(s, 'b')", "ends_with(s, 'y')", "contains(s, 'an')", "lower(s) = 'apple'",
    "upper(s) LIKE 'A%'", "length(s) > 5", "octet_length(s) = 5", "strpos(s, 'an') > 0", "abs(a - 3) = 1",
    "coalesce(s, 'z') = 'z'", "s IS DISTINCT FROM 'apple'", "s IS NOT DISTINCT FROM NULL",
    "flag IS TRUE", "flag IS NOT TRUE", "flag IS FALSE", "flag IS NOT FALSE", "flag = true",
]


def _table() -> pa.Table:
    return pa.table({
        "a": [1, 2, 3, 4],
        "s": ["apple", "banana", "cherry", None],
        "b": pa.array([b"\x01\x02", b"\xff", b"", None]),
        "l": [[1, 2], [3], [], None],
        "ls": [["x", "y"], ["z"], [], None],
        "flag": [True, False, None, True],
    })


@pytest.mark.parametrize("text", FILTERS)
def test_filter_like_the_reference(tmp_path, text):
    def case(lance, base):
        ds = lance.write_dataset(_table(), f"{base}/ds", max_rows_per_file=3)
        return (ds.to_table(filter=text).column("a").to_pylist(), ds.count_rows(text),
                ds.to_table(columns=["a"], filter=text, limit=1).to_pylist())

    assert_same(case, tmp_path)


def test_rowid_filter_on_stable_ids_after_delete(tmp_path):
    def case(lance, base):
        ds = lance.write_dataset(_table(), f"{base}/ds", max_rows_per_file=2, enable_stable_row_ids=True)
        ds.delete("a = 1")
        ds.update({"a": "a * 10"}, where="a = 2")
        return ds.to_table(filter="_rowid >= 1 AND _rowid <= 2").to_pylist()

    assert_same(case, tmp_path)


def test_dataset_pickles(tmp_path):
    def case(lance, base):
        ds = lance.write_dataset(_table(), f"{base}/ds")
        ds.delete("a = 2")
        old = lance.dataset(f"{base}/ds", version=1)
        a, b = pickle.loads(pickle.dumps(ds)), pickle.loads(pickle.dumps(old))
        return a.version, a.to_table().to_pylist(), b.version, b.count_rows()

    assert_same(case, tmp_path)


def test_write_from_own_scan(tmp_path):
    def case(lance, base):
        src = lance.write_dataset(_table(), f"{base}/src", max_rows_per_file=2)
        out = lance.write_dataset(src.to_batches(), f"{base}/dst", src.schema)
        return out.to_table().to_pylist()

    assert_same(case, tmp_path)
