"""The dataset demo (create, append, take, scan), writes to the memory store, and a commit lost
to an incompatible concurrent overwrite (data files removed, the other writer's version kept)."""

from __future__ import annotations

import os

import lance
import pyarrow as pa
import pytest
from ops_helpers import make_table

import lancejit.table as lt
from lancejit.core.errors import CommitConflictError
from lancejit.demo import sample_table
from lancejit.demo_dataset import run_dataset_demo


def test_dataset_demo(tmp_path):
    lines = []
    table = sample_table(3000)
    res = run_dataset_demo(str(tmp_path), table, take=50, max_rows_per_file=1000, out=lines.append)
    expected = pa.concat_tables([table, table.slice(0, 300)])
    ref = lance.dataset(res["uri"])
    assert res["rows"] == ref.count_rows() == 3300 and res["versions"] == ref.version == 2
    assert ref.to_table().equals(expected)
    assert res["taken"].equals(ref.take(res["indices"], columns=["id", "score", "label"]))
    assert res["scan_rows"] == 3300 and res["take_requests"] > 0 and res["scan_requests"] > 0
    assert any("read requests" in line for line in lines)


def test_memory_store(tmp_path):
    uri = f"memory://opsbucket/{tmp_path.name}/ds"
    ds = lt.write_dataset(make_table(0, 9), uri, max_rows_per_file=4)
    ds = lt.write_dataset(make_table(9, 3), uri, mode="append")
    ds.delete("a = 4")
    ds.add_columns({"b": "a + 1"})
    t = ds.to_table()
    assert t["a"].to_pylist() == [i for i in range(12) if i != 4]
    assert t["b"].to_pylist() == [i + 1 for i in range(12) if i != 4]


def test_lost_commit_removes_its_files(tmp_path):
    uri = str(tmp_path / "ds")
    lt.write_dataset(make_table(0, 5), uri)
    before = set(os.listdir(os.path.join(uri, "data")))
    replaced = make_table(100, 2)

    def racing():
        yield make_table(5, 5).to_batches()[0]
        # another writer overwrites the dataset while this append is in flight
        lance.write_dataset(replaced, uri, mode="overwrite")
        yield make_table(10, 5).to_batches()[0]

    with pytest.raises(CommitConflictError):
        lt.write_dataset(racing(), uri, mode="append", max_rows_per_file=5)
    ref = lance.dataset(uri)
    assert ref.version == 2 and ref.to_table().equals(replaced)
    theirs = {df.path for f in ref.get_fragments() for df in f.data_files()}
    assert set(os.listdir(os.path.join(uri, "data"))) == before | theirs
    assert lt.dataset(uri).to_table().equals(replaced)
