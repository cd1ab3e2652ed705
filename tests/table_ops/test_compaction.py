"""Compaction (``ds.optimize.compact_files``) against pylance: the same candidate plan, equal rows,
pylance reads every version lancejit writes, stable row ids survive, conflict rules."""

from __future__ import annotations

import shutil

import numpy as np
import pyarrow as pa
import pytest
from ops_helpers import make_table

import lancejit
from lancejit.core.errors import CommitConflictError
from lancejit.io import open_store
from lancejit.io.sync import run_sync
from lancejit.table.commit import Transaction, load_manifest
from lancejit.table.commit.operations import ReserveFragments, Rewrite
from lancejit.table.write.compaction import CompactionOptions, plan_bins

import lance


def _dataset(uri: str, version: str, stable: bool, n: int = 400, per_file: int = 40) -> None:
    lance.write_dataset(make_table(0, n), uri, max_rows_per_file=per_file, data_storage_version=version,
                        enable_stable_row_ids=stable)
    ds = lance.dataset(uri)
    ds.delete("a % 11 = 3")                      # ~9% of every fragment: below the threshold
    ds.delete("a >= 120 AND a < 135")             # fragment 3: 37% deleted -> compact itself
    lance.write_dataset(make_table(n, 25), uri, mode="append", max_rows_per_file=per_file)


def _ops(uri: str, version: int):
    store, root = open_store(uri)
    return Transaction.parse(run_sync(load_manifest(store, root, version)).transaction).operation


@pytest.mark.parametrize("stable", [False, True])
@pytest.mark.parametrize("version", ["2.0", "2.1", "2.2"])
def test_compaction_matches_pylance(tmp_path, version, stable):
    jit_uri, ref_uri = str(tmp_path / "jit.lance"), str(tmp_path / "ref.lance")
    _dataset(jit_uri, version, stable)
    shutil.copytree(jit_uri, ref_uri)
    before = lancejit.dataset(jit_uri)
    old = before.to_table(with_row_id=True)
    old_versions = _versions(jit_uri) if stable else None
    v0 = before.version
    frags_before = len(before.get_fragments())

    kw = dict(target_rows_per_fragment=100, materialize_deletions_threshold=0.2)
    ref_m = lance.dataset(ref_uri).optimize.compact_files(**kw)
    jit_m = before.optimize.compact_files(**kw)
    # the same candidates and groups as the reference
    assert (jit_m.fragments_removed, jit_m.files_removed) == (ref_m.fragments_removed, ref_m.files_removed)
    assert jit_m.fragments_added == jit_m.files_added >= 1

    ds = lancejit.dataset(jit_uri)
    assert ds.version == v0 + 2 == lance.dataset(ref_uri).version
    assert isinstance(_ops(jit_uri, v0 + 1), ReserveFragments) and isinstance(_ops(jit_uri, v0 + 2), Rewrite)
    new = ds.to_table(with_row_id=True)
    # pylance reads every version lancejit wrote, equal to what lancejit reads
    for v in (v0 + 1, v0 + 2):
        assert lance.dataset(jit_uri, version=v).to_table(with_row_id=stable).equals(
            lancejit.dataset(jit_uri).checkout_version(v).to_table(with_row_id=stable))
    # same rows, same order as pylance's compaction, no deleted row back
    assert new.drop_columns(["_rowid"]).equals(lance.dataset(ref_uri).to_table())
    assert new.num_rows == old.num_rows
    assert new.sort_by("a").drop_columns(["_rowid"]).equals(old.sort_by("a").drop_columns(["_rowid"]))
    frags = ds.get_fragments()
    assert len(frags) < frags_before
    assert before.version == ds.version  # the object moved to the version it committed
    if stable:
        assert new.sort_by("a")["_rowid"].equals(old.sort_by("a")["_rowid"])
        ids = old["_rowid"].to_numpy()[::7]
        want = old.take(np.arange(0, old.num_rows, 7)).drop_columns(["_rowid"])
        assert ds.take_rows(ids).equals(want)
        assert lance.dataset(jit_uri)._take_rows(ids.tolist()).equals(want)
        # rows keep their created-at / last-updated-at versions (pylance 14's compaction writes
        # version 0 for some rows of masked bitmap segments; lancejit keeps the true ones)
        live = set(old["_rowid"].to_pylist())
        assert _versions(jit_uri) == [x for x in old_versions if x[0] in live]
    # a second compaction finds nothing to do and commits nothing
    again = lancejit.dataset(jit_uri).optimize.compact_files(**kw)
    assert (again.fragments_removed, again.fragments_added) == (0, 0)
    assert lancejit.dataset(jit_uri).version == v0 + 2
    # pylance keeps writing on top
    lance.dataset(jit_uri).delete("a = 1")
    assert lance.dataset(jit_uri).count_rows() == new.num_rows - 1


def _versions(uri: str) -> list:
    """(row id, created-at, last-updated-at) sorted by row id for the latest version."""
    from lancejit.table.commit.rowid_writer import decode_version_runs
    from lancejit.table.meta.rowids import decode_row_id_sequence

    store, root = open_store(uri)
    m = run_sync(load_manifest(store, root)).manifest
    out = []
    for f in m.fragments:
        ids = decode_row_id_sequence(f.inline_row_ids, "x")
        c = decode_version_runs(f.inline_created_at_versions, f.physical_rows)
        u = decode_version_runs(f.inline_last_updated_at_versions, f.physical_rows)
        out += list(zip(ids.tolist(), c.tolist(), u.tolist()))
    return sorted(out)


def _reference_plan(phys, dels, keys, target, threshold):
    """The reference's plan_compaction, transcribed literally (test oracle); ``keys``: index set
    per fragment (-1: excluded)."""
    bins, cur, cur_key = [], None, None
    for i, (p, d, k) in enumerate(zip(phys, dels, keys)):
        itself = p > 0 and d / p > threshold
        cand = "self" if itself else ("nb" if p < target else None)
        if k < 0:
            cand = None
        if cand is None:
            if cur:
                bins.append(cur)
            cur = None
            continue
        if cur is not None and k != cur_key:
            bins.append(cur)
            cur = None
        if cur is None:
            cur, cur_key = [], k
        cur.append((i, cand, p - d))
    if cur:
        bins.append(cur)
    out = []
    for b in bins:
        if len(b) == 1 and b[0][1] == "nb":
            continue
        while True:
            n, rows = 0, 0
            while rows < target and n < len(b):
                rows += b[n][2]
                n += 1
            if sum(x[2] for x in b[n:]) >= target:
                out.append((b[0][0], b[n - 1][0] + 1))
                b = b[n:]
            else:
                out.append((b[0][0], b[-1][0] + 1))
                break
    return out


@pytest.mark.parametrize("seed", range(8))
def test_plan_bins_matches_reference_rules(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 60))
    phys = rng.choice([5, 50, 99, 100, 150, 400], n)
    dels = (phys * rng.choice([0, 0, 0.05, 0.3, 1.0], n)).astype(np.int64)
    keys = rng.choice([0, 0, 0, 1, 2, -1], n) if seed % 2 else np.zeros(n, np.int64)
    target, threshold = int(rng.choice([60, 100, 300])), 0.1
    got = plan_bins(phys, dels, keys, CompactionOptions(target, materialize_deletions_threshold=threshold))
    assert got == _reference_plan(phys.tolist(), dels.tolist(), keys.tolist(), target, threshold)


def test_stale_compaction_retries_and_never_resurrects(tmp_path):
    uri = str(tmp_path / "s.lance")
    lance.write_dataset(make_table(0, 200), uri, max_rows_per_file=20, enable_stable_row_ids=True)
    stale = lancejit.dataset(uri)
    lance.dataset(uri).delete("a < 30")                          # touches fragments 0 and 1
    lance.write_dataset(make_table(200, 20), uri, mode="append")  # lands next to it
    m = stale.optimize.compact_files(target_rows_per_fragment=1000)
    assert m.fragments_removed == 10  # re-planned on the latest version (9 live + appended)
    t = lancejit.dataset(uri).to_table()
    assert t["a"].to_pylist() == list(range(30, 220))
    assert lance.dataset(uri).to_table().equals(t)


def test_stale_compaction_without_retries_fails_cleanly(tmp_path):
    uri = str(tmp_path / "f.lance")
    lance.write_dataset(make_table(0, 100), uri, max_rows_per_file=10)
    stale = lancejit.dataset(uri)
    lance.dataset(uri).delete("a = 5")
    with pytest.raises(CommitConflictError):
        stale.optimize.compact_files(target_rows_per_fragment=1000, max_retries=0)
    ds = lancejit.dataset(uri)
    assert ds.to_table()["a"].to_pylist() == [i for i in range(100) if i != 5]
    assert len(ds.get_fragments()) == 10


def test_concurrent_compaction_and_append_both_land(tmp_path):
    import asyncio

    from lancejit.table.write.compaction import compact_files_async
    from lancejit.table import write_dataset_async

    uri = str(tmp_path / "a.lance")
    lance.write_dataset(make_table(0, 120), uri, max_rows_per_file=10)
    ds = lancejit.dataset(uri)

    async def both():
        await asyncio.gather(compact_files_async(ds, CompactionOptions(target_rows_per_fragment=60)),
                             write_dataset_async(make_table(120, 30), uri, "append"))

    run_sync(both())
    t = lancejit.dataset(uri).to_table()
    assert sorted(t["a"].to_pylist()) == list(range(150))
    assert lance.dataset(uri).to_table().equals(t)


def test_options_validation_and_empty(tmp_path):
    uri = str(tmp_path / "e.lance")
    lance.write_dataset(make_table(0, 10), uri)
    ds = lancejit.dataset(uri)
    with pytest.raises(ValueError):
        ds.optimize.compact_files(target_rows_per_fragment=0)
    m = ds.optimize.compact_files()
    assert (m.fragments_removed, m.fragments_added, m.files_removed, m.files_added) == (0, 0, 0, 0)
    lance.dataset(uri).delete("true")
    assert lancejit.dataset(uri).optimize.compact_files().fragments_removed == 0


def _frag(fid: int):
    from lancejit.pb import table_pb2

    return table_pb2.DataFragment(id=fid, physical_rows=10)


@pytest.mark.parametrize("theirs,outcome", [
    ("append", "ok"), ("reserve", "ok"), ("delete_same", "retry"), ("delete_other", "ok"),
    ("rewrite_same", "retry"), ("rewrite_other", "ok"), ("overwrite", "fail"), ("restore", "fail"),
    ("merge", "retry"),
])
def test_rewrite_conflict_rules(theirs, outcome):
    from lancejit.core.errors import RetryableCommitError
    from lancejit.table.commit import Append, ConflictChecker, Delete, Merge, Overwrite, Restore
    from lancejit.table.commit.operations import RewriteGroup

    ops = {
        "append": Append((_frag(0),)), "reserve": ReserveFragments(3),
        "delete_same": Delete((_frag(1),)), "delete_other": Delete((_frag(5),), (6,)),
        "rewrite_same": Rewrite((RewriteGroup((_frag(2), _frag(3)), (_frag(0),)),)),
        "rewrite_other": Rewrite((RewriteGroup((_frag(7),), (_frag(0),)),)),
        "overwrite": Overwrite((), ()), "restore": Restore(1), "merge": Merge((), ()),
    }
    mine = Transaction(1, Rewrite((RewriteGroup((_frag(1), _frag(2)), (_frag(9),)),)))
    # round trip through the protobuf keeps the groups
    back = Transaction.parse(mine.serialize()).operation
    assert [[f.id for f in g.old_fragments] for g in back.groups] == [[1, 2]]
    checker = ConflictChecker(mine)
    if outcome == "ok":
        checker.check(Transaction(1, ops[theirs]), 2)
    elif outcome == "retry":
        with pytest.raises(RetryableCommitError):
            checker.check(Transaction(1, ops[theirs]), 2)
    else:
        with pytest.raises(CommitConflictError) as info:
            checker.check(Transaction(1, ops[theirs]), 2)
        assert not isinstance(info.value, RetryableCommitError)
    # a delete racing with a committed rewrite of its fragment must redo its work
    if theirs == "delete_same":
        with pytest.raises(RetryableCommitError):
            ConflictChecker(Transaction(1, ops[theirs]), {1: _frag(1)}, rows_known=True).check(mine, 2)


def test_indexed_fragments_compact_apart_and_multi_file_fragments(tmp_path):
    """As in the reference: indexed fragments compact together (their index remapped), apart
    from the fragments no index covers."""
    uri = str(tmp_path / "i.lance")
    lance.write_dataset(make_table(0, 60), uri, max_rows_per_file=20)
    ds = lance.dataset(uri)
    ds.create_scalar_index("a", "BTREE")
    lance.write_dataset(make_table(60, 30), uri, mode="append", max_rows_per_file=10)
    lance.dataset(uri).add_columns({"b": "a * 2"})  # every fragment gets a second data file
    m = lancejit.dataset(uri).optimize.compact_files(target_rows_per_fragment=100)
    assert (m.fragments_removed, m.fragments_added, m.files_removed, m.files_added) == (6, 2, 12, 2)
    ds = lancejit.dataset(uri)
    assert [f.physical_rows for f in ds.get_fragments()] == [60, 30]
    t = ds.to_table()
    assert t["a"].to_pylist() == list(range(90)) and t["b"].to_pylist() == [2 * i for i in range(90)]
    ref = lance.dataset(uri)
    assert ref.to_table().equals(t)
    assert ref.to_table(filter="a >= 15 AND a < 75").equals(ds.to_table(filter="a >= 15 AND a < 75"))
    (ix,) = ref.list_indices()
    assert sorted(ix["fragment_ids"]) == [ds.get_fragments()[0].id]
    for flt in ("a = 17", "a < 5", "a >= 55"):
        assert ref.to_table(filter=flt).equals(ds.to_table(filter=flt))


def test_stable_row_ids_indexed_fragments_compact(tmp_path):
    uri = str(tmp_path / "jit.lance")
    lance.write_dataset(make_table(0, 60), uri, max_rows_per_file=20, enable_stable_row_ids=True)
    lance.dataset(uri).create_scalar_index("a", "BTREE")
    lance.write_dataset(make_table(60, 30), uri, mode="append", max_rows_per_file=10)
    m = lancejit.dataset(uri).optimize.compact_files(target_rows_per_fragment=100)
    assert (m.fragments_removed, m.fragments_added) == (6, 2)
    cases = {"a >= 15 AND a < 75": range(15, 75), "a = 70": [70], "a < 3": range(3)}
    for flt, keep in cases.items():
        want = make_table(0, 90).take(pa.array(list(keep)))
        assert lance.dataset(uri).to_table(filter=flt).sort_by("a").equals(want)
        assert lancejit.dataset(uri).to_table(filter=flt).sort_by("a").equals(want)


@pytest.mark.parametrize("stable", [False, True])
def test_concurrent_compaction_and_merge_insert(tmp_path, stable):
    import asyncio

    from lancejit.table.write.compaction import compact_files_async

    uri = str(tmp_path / "cm.lance")
    lance.write_dataset(make_table(0, 100), uri, max_rows_per_file=10, enable_stable_row_ids=stable)
    ds = lancejit.dataset(uri)
    ids_before = ds.to_table(columns=["a"], with_row_id=True)
    src = make_table(95, 10)  # updates rows 95..99 (last fragment), inserts 100..104
    src = src.set_column(1, "s", pa.array([f"new{i}" for i in range(10)]))

    async def both():
        b = ds.merge_insert("a").when_matched_update_all().when_not_matched_insert_all()
        return await asyncio.gather(compact_files_async(ds, CompactionOptions(target_rows_per_fragment=1000)),
                                    b.execute_async(src))

    metrics, counts = run_sync(both())
    assert counts == {"num_inserted_rows": 5, "num_updated_rows": 5, "num_deleted_rows": 0}
    t = lancejit.dataset(uri).to_table(with_row_id=stable)
    assert sorted(t["a"].to_pylist()) == list(range(105))
    got = {r["a"]: r["s"] for r in t.to_pylist() if r["a"] >= 95}
    assert got == {95 + i: f"new{i}" for i in range(10)}
    assert lance.dataset(uri).to_table(with_row_id=stable).equals(t)
    if stable:  # every original row keeps its id through both operations
        now = dict(zip(t["a"].to_pylist(), t["_rowid"].to_pylist()))
        assert all(now[a] == rid for a, rid in zip(ids_before["a"].to_pylist(), ids_before["_rowid"].to_pylist()))


def test_reference_keyword_arguments(tmp_path):
    from lancejit.core.errors import NotSupportedError

    jit_uri, ref_uri = str(tmp_path / "jit.lance"), str(tmp_path / "ref.lance")
    lance.write_dataset(make_table(0, 100), jit_uri, max_rows_per_file=10)
    shutil.copytree(jit_uri, ref_uri)
    kw = dict(target_rows_per_fragment=None, materialize_deletions=None, excluded_fragment_ids=[4, 5])
    ref = lance.dataset(ref_uri).optimize.compact_files(**kw)
    jit = lancejit.dataset(jit_uri).optimize.compact_files(**kw)
    assert (jit.fragments_removed, jit.fragments_added) == (ref.fragments_removed, ref.fragments_added) == (8, 2)
    assert lance.dataset(jit_uri).to_table().equals(lance.dataset(ref_uri).to_table())
    with pytest.raises(NotSupportedError):
        lancejit.dataset(jit_uri).optimize.compact_files(defer_index_remap=True)
