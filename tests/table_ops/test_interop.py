"""Mixed writers: pylance 14 changes datasets lancejit made (and lancejit reads the result
exactly), lancejit changes datasets pylance made (and pylance reads the result exactly)."""

from __future__ import annotations

import os

import lance
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from ops_helpers import make_table

import lancejit.table as lt


def _same(uri, with_row_id=True):
    ref = lance.dataset(uri)
    ours = lt.dataset(uri)
    assert ours.version == ref.version
    assert ours.schema == ref.schema
    exp = ref.to_table(with_row_id=with_row_id)
    assert ours.to_table(with_row_id=with_row_id).equals(exp)
    return exp


@pytest.mark.parametrize("stable", [False, True], ids=["addr", "stable"])
@pytest.mark.parametrize("version", ["2.0", "2.1", "2.2"])
def test_pylance_changes_lancejit_dataset(tmp_path, version, stable):
    uri = str(tmp_path / "ds")
    lt.write_dataset(make_table(0, 20), uri, data_storage_version=version, max_rows_per_file=6,
                     enable_stable_row_ids=stable)
    ds = lance.write_dataset(make_table(20, 7), uri, mode="append", max_rows_per_file=6)
    _same(uri)
    ds.delete("a % 4 = 1")
    _same(uri)
    ds.add_columns({"b": "a * 3"})
    _same(uri)
    ds.update({"s": "'pl'"}, where="a > 22")
    _same(uri)
    # lancejit continues on top of pylance's versions
    ours = lt.dataset(uri)
    ours.delete("a < 3")
    ours.update({"b": "b + 1"}, where="a = 10")
    head = lance.dataset(uri).to_table(columns=["a", "s", "st", "l", "b"], limit=2)
    lt.write_dataset(head, uri, mode="append")
    exp = _same(uri)
    a = exp.column("a").to_pylist()
    assert sorted(a) == sorted([i for i in range(27) if i % 4 != 1 and i >= 3] + head["a"].to_pylist())
    assert lance.dataset(uri).data_storage_version == version


@pytest.mark.parametrize("stable", [False, True], ids=["addr", "stable"])
@pytest.mark.parametrize("version", ["2.0", "2.1", "2.2"])
def test_lancejit_changes_pylance_dataset(tmp_path, version, stable):
    uri = str(tmp_path / "ds")
    ref = lance.write_dataset(make_table(0, 20), uri, data_storage_version=version, max_rows_per_file=6,
                              enable_stable_row_ids=stable)
    ref.delete("a = 2")
    ds = lt.write_dataset(make_table(20, 8), uri, mode="append", max_rows_per_file=5)
    assert ds.data_storage_version == version
    ds.delete("a >= 5 AND a < 8")
    ds.update({"s": "'x'", "a": "a * 100"}, where="a > 25")
    ds.add_columns({"c": "a + 1"})
    exp = _same(uri)
    got = {r["a"]: r for r in exp.to_pylist()}
    assert set(got) == {i for i in range(26) if i not in (2, 5, 6, 7)} | {2600, 2700}
    assert got[2600]["s"] == "x" and got[2600]["c"] == 2601
    if stable:  # updated rows keep their stable ids
        assert got[2600]["_rowid"] == 26 and got[2700]["_rowid"] == 27
    # pylance goes on
    lance.dataset(uri).delete("a = 0")
    lance.dataset(uri).add_columns({"d": "c * 2"})
    _same(uri)


def test_large_deletion_uses_bitmap_and_stays_cumulative(tmp_path):
    uri = str(tmp_path / "ds")
    n = 12_000
    t = pa.table({"a": np.arange(n, dtype=np.int64)})
    lt.write_dataset(t, uri)
    ds = lt.dataset(uri)
    ds.delete("a % 3 = 0")  # 4 000 rows: Arrow file
    names = os.listdir(os.path.join(uri, "_deletions"))
    assert len(names) == 1 and names[0].endswith(".arrow")
    ds.delete("a % 3 = 1")  # cumulative 8 000 rows: bitmap
    names = sorted(os.listdir(os.path.join(uri, "_deletions")))
    assert len(names) == 2 and sum(x.endswith(".bin") for x in names) == 1
    frag = lance.dataset(uri).get_fragments()[0]
    assert frag.count_rows() == 4000
    exp = np.arange(n)[np.arange(n) % 3 == 2]
    assert lance.dataset(uri).to_table()["a"].to_numpy().tolist() == exp.tolist()
    assert ds.to_table()["a"].to_numpy().tolist() == exp.tolist()
    # deleting every remaining row removes the fragment
    ds.delete("a >= 0")
    assert lance.dataset(uri).get_fragments() == [] and ds.count_rows() == 0
    assert lance.dataset(uri, version=3).count_rows() == 4000


def test_add_columns_forms(tmp_path):
    uri = str(tmp_path / "ds")
    t = make_table(0, 17)
    ds = lt.write_dataset(t, uri, max_rows_per_file=5)
    ds.delete("a IN (3, 4, 11)")
    live = ds.to_table()
    # aligned Arrow table (rows after deletions, scan order)
    extra = pa.table({"t": pa.array([f"t{i}" for i in live["a"].to_pylist()])})
    ds.add_columns(extra)
    # function over batches
    ds.add_columns(lambda b: pa.record_batch({"f": pc.multiply(b["a"], 2)}), read_columns=["a"])
    # SQL on a nested field, and all-null columns from a field
    ds.add_columns({"nx": "st.x + a"})
    ds.add_columns(pa.field("n", pa.float32()))
    ref = lance.dataset(uri).to_table()
    assert ds.to_table().equals(ref)
    rows = ref.to_pylist()
    assert [r["t"] for r in rows] == [f"t{r['a']}" for r in rows]
    assert all(r["f"] == 2 * r["a"] and r["nx"] == 2 * r["a"] and r["n"] is None for r in rows)
    assert ref.schema.field("n").type == pa.float32()
    with pytest.raises(Exception):
        ds.add_columns({"a": "a + 1"})
    with pytest.raises(Exception):
        ds.add_columns(pa.table({"q": [1, 2]}))


def test_drop_nested_and_rename_nested(tmp_path):
    uri, theirs = str(tmp_path / "ds"), str(tmp_path / "ref")
    t = make_table(0, 9)
    for u, w in ((uri, lt.write_dataset), (theirs, lance.write_dataset)):
        w(t, u, max_rows_per_file=4)
    ds = lt.dataset(uri)
    ds.drop_columns(["st.y"])
    ds.alter_columns({"path": "st.x", "name": "xx"}, {"path": "l", "name": "ll"})
    ref = lance.dataset(theirs)
    ref.drop_columns(["st.y"])
    ref.alter_columns({"path": "st.x", "name": "xx"}, {"path": "l", "name": "ll"})
    assert lance.dataset(uri).to_table().equals(lance.dataset(theirs).to_table())
    assert lance.dataset(uri).schema == lance.dataset(theirs).schema
    ours = lt.dataset(uri)
    assert ours.schema == lance.dataset(theirs).schema
    cols = ["a", "s", "ll"]  # see test_lancejit_reads_nested_rename for st.xx
    assert ours.to_table(columns=cols).equals(lance.dataset(theirs).to_table(columns=cols))


def test_lancejit_reads_nested_rename(tmp_path):
    uri = str(tmp_path / "ref")
    lance.write_dataset(make_table(0, 5), uri).alter_columns({"path": "st.x", "name": "xx"})
    assert lt.dataset(uri).to_table().equals(lance.dataset(uri).to_table())


def test_data_files_carry_dataset_field_ids(tmp_path):
    """Like the reference's, a data file's own schema uses the dataset's field ids (so a new
    column's file says id 5, not 0)."""
    from lancejit.file.reader import LanceFileReader

    uri = str(tmp_path / "ds")
    ds = lt.write_dataset(make_table(0, 4), uri)
    ds.drop_columns(["s"])
    ds.add_columns({"z": "a + 1"})
    ds = lt.write_dataset(make_table(4, 2).drop_columns(["s"]).append_column("z", pa.array([5, 6])), uri,
                          mode="append")
    frags = lance.dataset(uri).get_fragments()
    ids = {}
    for frag in frags:
        for df in frag.data_files():
            r = LanceFileReader(os.path.join(uri, "data", df.path))
            ids[df.path] = [(f.name, f.id) for f in r.file_metadata.schema.fields if f.parent_id == -1]
    got = sorted(ids.values())
    assert got == sorted([[("a", 0), ("s", 1), ("st", 2), ("l", 5)], [("z", 7)],
                          [("a", 0), ("st", 2), ("l", 5), ("z", 7)]])
