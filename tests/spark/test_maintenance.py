"""Distributed maintenance: compaction and merge insert run by Spark tasks, committed once,
compared with pylance 14 doing the same locally on a copy of the same dataset."""

from __future__ import annotations

import shutil

import numpy as np
import pyarrow as pa
import pytest

import lance

import lancejit
import lancejit.spark
from lancejit.core.errors import RetryableCommitError


def _small_fragments(uri: str, stable: bool = False) -> None:
    rng = np.random.default_rng(5)
    for i in range(4):
        n = 30 + 7 * i
        t = pa.table({"id": pa.array(np.arange(i * 100, i * 100 + n), pa.int64()),
                      "x": rng.normal(size=n), "s": [f"v{j % 9}" if j % 5 else None for j in range(n)]})
        lance.write_dataset(t, uri, mode="append" if i else "create", max_rows_per_file=16,
                            enable_stable_row_ids=stable)
    lance.dataset(uri).delete("id % 3 = 0 AND id < 150")


def _layout(uri: str) -> list[int]:
    return [f.metadata.physical_rows for f in lance.dataset(uri).get_fragments()]


@pytest.mark.parametrize("stable", [False, True])
def test_distributed_compaction_equals_local(spark, tmp_path, stable):
    """The same plan, fragments and rows as ``ds.optimize.compact_files()`` run locally by
    lancejit, the same candidates and rows as pylance's (which writes each task as one file)."""
    ref, local, mine = (str(tmp_path / n) for n in ("ref.lance", "local.lance", "mine.lance"))
    _small_fragments(ref, stable)
    shutil.copytree(ref, local)
    shutil.copytree(ref, mine)
    before = lance.dataset(mine).to_table(with_row_id=stable)
    want = lance.dataset(ref).optimize.compact_files(target_rows_per_fragment=40)
    here = lancejit.dataset(local).optimize.compact_files(target_rows_per_fragment=40)
    got = lancejit.spark.compact_files(spark, mine, target_rows_per_fragment=40)
    assert got == here
    assert (got.fragments_removed, got.files_removed) == (want.fragments_removed, want.files_removed)
    assert _layout(mine) == _layout(local)
    assert lance.dataset(mine).to_table() == lance.dataset(ref).to_table() == lance.dataset(local).to_table()
    assert lance.dataset(mine).version == lance.dataset(ref).version == lance.dataset(local).version
    if stable:  # rows keep their ids: take_rows of ids taken before gives the same rows
        ids = before["_rowid"].to_pylist()
        again = lance.dataset(mine)._take_rows(ids).to_pylist()
        assert again == before.drop_columns(["_rowid"]).to_pylist()
    # nothing left to do: no new version
    assert lancejit.spark.compact_files(spark, mine, target_rows_per_fragment=40).fragments_added == 0
    assert lance.dataset(mine).version == lance.dataset(local).version


def test_compaction_split_keeps_the_conflict_rules(tmp_path):
    """plan / execute / commit (what the Spark tasks run): a deletion committed in a task's
    fragments meanwhile makes the commit retryable; the deleted rows never come back."""
    from lancejit.io.sync import run_sync
    from lancejit.table import dataset
    from lancejit.table.write.compaction import (
        CompactionOptions,
        commit_compaction_async,
        delete_rewritten,
        execute_compaction_task_async,
        plan_compaction_async,
    )

    uri = str(tmp_path / "split.lance")
    _small_fragments(uri)
    ds = dataset(uri)
    opts = CompactionOptions(target_rows_per_fragment=40)
    plan = run_sync(plan_compaction_async(ds, opts))
    results = [run_sync(execute_compaction_task_async(ds, t, opts)) for t in plan.tasks]
    lance.dataset(uri).delete("id = 1")
    with pytest.raises(RetryableCommitError):
        run_sync(commit_compaction_async(ds, results))
    run_sync(delete_rewritten(ds, results))
    assert 1 not in lance.dataset(uri).to_table()["id"].to_pylist()


def _target(uri: str, stable: bool = False) -> None:
    t = pa.table({"id": pa.array(list(range(60)) + [None, None], pa.int64()),
                  "name": [f"n{i}" for i in range(62)], "score": pa.array(np.arange(62) * 0.5)})
    lance.write_dataset(t, uri, max_rows_per_file=20, enable_stable_row_ids=stable)


def _source(spark):
    rows = [(i, f"new{i}", float(i) * 10) for i in [3, 7, 19, 20, 41, 59, 70, 71]] + [(None, "nullkey", 1.0)]
    return spark.createDataFrame(rows, "id LONG, name STRING, score DOUBLE").repartition(3)


def _sorted(uri: str) -> list:
    return sorted(lance.dataset(uri).to_table().to_pylist(), key=lambda r: (r["id"] is None, r["id"], r["name"]))


@pytest.mark.parametrize("case", ["upsert", "delete_by_source", "condition", "stable"])
def test_distributed_merge_insert_equals_pylance(spark, tmp_path, case):
    ref, mine = str(tmp_path / "ref.lance"), str(tmp_path / "mine.lance")
    _target(ref, stable=case == "stable")
    shutil.copytree(ref, mine)
    src = _source(spark)
    data = src.toArrow()
    b = lance.dataset(ref).merge_insert("id")
    kw = {}
    if case == "delete_by_source":
        b = b.when_matched_update_all().when_not_matched_insert_all().when_not_matched_by_source_delete("id > 30")
        kw = dict(when_not_matched_by_source_delete=True, delete_expr="id > 30")
    elif case == "condition":
        b = b.when_matched_update_all("target.score < 10").when_not_matched_insert_all()
        kw = dict(condition="target.score < 10")
    else:
        b = b.when_matched_update_all().when_not_matched_insert_all()
    want = b.execute(data)
    before = lance.dataset(mine).to_table(with_row_id=True) if case == "stable" else None
    got = lancejit.spark.merge_insert(src, mine, "id", **kw)
    assert got == {k: want[k] for k in ("num_inserted_rows", "num_updated_rows", "num_deleted_rows")}
    assert _sorted(mine) == _sorted(ref)
    assert lance.dataset(mine).version == lance.dataset(ref).version
    if before is not None:  # updated rows keep their row ids
        rid = dict(zip(before["id"].to_pylist(), before["_rowid"].to_pylist()))
        after = lance.dataset(mine).to_table(with_row_id=True)
        for i, r in zip(after["id"].to_pylist(), after["_rowid"].to_pylist()):
            if i in (3, 7, 19, 20, 41, 59):
                assert r == rid[i]


def test_merge_insert_ambiguous_and_partial_columns(spark, tmp_path):
    uri = str(tmp_path / "amb.lance")
    _target(uri)
    dup = spark.createDataFrame([(5, "a", 1.0), (5, "b", 2.0)], "id LONG, name STRING, score DOUBLE")
    with pytest.raises(Exception, match="Ambiguous merge inserts"):
        lancejit.spark.merge_insert(dup, uri, "id")
    assert lance.dataset(uri).version == 1
    # a source with only some columns updates those of matched rows, inserts nulls for the rest
    part = spark.createDataFrame([(5, 99.0), (500, 1.0)], "id LONG, score DOUBLE")
    ref = str(tmp_path / "amb-ref.lance")
    shutil.copytree(uri, ref)
    lance.dataset(ref).merge_insert("id").when_matched_update_all().when_not_matched_insert_all().execute(
        part.toArrow())
    lancejit.spark.merge_insert(part, uri, "id")
    assert _sorted(uri) == _sorted(ref)
