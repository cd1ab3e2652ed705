"""Conflict rules (the Lance file format specification) as a table, and real races resolved by the committer."""

from __future__ import annotations

import os

import pytest
import tw_helpers as H

import lance
from lancejit.core.errors import CommitConflictError, RetryableCommitError
from lancejit.pb import table_pb2
from lancejit.table.commit import (
    Append,
    ConflictChecker,
    Delete,
    Merge,
    OtherOperation,
    Overwrite,
    Project,
    ReserveFragments,
    Restore,
    Transaction,
    Update,
    UpdateConfig,
    commit,
    latest_version,
    new_fragment,
    schema_fields,
)
from lancejit.pb import transaction_pb2


def _frag(fid: int, path: str = "a.lance", deletion_id: int | None = None) -> table_pb2.DataFragment:
    f = table_pb2.DataFragment(id=fid, physical_rows=10)
    f.files.add(path=path, fields=[0], column_indices=[0], file_major_version=2, file_minor_version=2)
    if deletion_id is not None:
        f.deletion_file.id = deletion_id
        f.deletion_file.num_deleted_rows = 1
    return f


OPS = {
    "append": Append((_frag(0),)),
    "overwrite": Overwrite((_frag(0),), ()),
    "delete0": Delete((_frag(0, deletion_id=9),)),
    "delete1": Delete((_frag(1, deletion_id=9),)),
    "delete0_files": Delete((_frag(0, path="other.lance", deletion_id=9),)),
    "delete0_removed": Delete((), (0,)),
    "update0": Update(updated_fragments=(_frag(0, deletion_id=9),), new_fragments=(_frag(0),)),
    "merge": Merge((_frag(0),), ()),
    "project": Project(()),
    "restore": Restore(1),
    "reserve": ReserveFragments(2),
    "config_a": UpdateConfig({"a": "1"}),
    "config_b": UpdateConfig({"b": "1"}),
    "overwrite_a": Overwrite((), (), config_upsert_values={"a": "2"}),
    "create_index": OtherOperation("create_index", transaction_pb2.Transaction.CreateIndex()),
    "unknown": OtherOperation("unknown", None),
    "rewrite0": OtherOperation("rewrite", transaction_pb2.Transaction.Rewrite(old_fragments=[_frag(0)])),
}

# (mine, theirs, rows_known) -> "ok" | "merge" | "retry" | "fail"
CASES = [
    ("append", "append", False, "ok"),
    ("append", "delete0", False, "ok"),
    ("append", "merge", False, "ok"),
    ("append", "overwrite", False, "fail"),
    ("append", "restore", False, "fail"),
    ("delete0", "append", False, "ok"),
    ("delete0", "create_index", False, "ok"),
    ("delete0", "project", False, "ok"),
    ("delete0", "delete1", False, "ok"),
    ("delete0", "delete0", False, "retry"),
    ("delete0", "delete0", True, "merge"),
    ("delete0", "update0", True, "merge"),
    ("delete0", "delete0_files", True, "retry"),
    ("delete0", "delete0_removed", True, "retry"),
    ("delete0", "rewrite0", True, "retry"),
    ("delete1", "rewrite0", True, "ok"),
    ("delete0", "merge", True, "retry"),
    ("delete0", "overwrite", True, "fail"),
    ("delete0", "restore", True, "fail"),
    ("update0", "delete1", False, "ok"),
    ("update0", "overwrite", False, "fail"),
    ("overwrite", "delete0", False, "ok"),
    ("overwrite", "overwrite", False, "ok"),
    ("overwrite_a", "config_a", False, "fail"),
    ("overwrite_a", "config_b", False, "ok"),
    ("merge", "append", False, "retry"),
    ("merge", "create_index", False, "ok"),
    ("merge", "project", False, "fail"),
    ("merge", "overwrite", False, "fail"),
    ("project", "merge", False, "retry"),
    ("project", "append", False, "ok"),
    ("project", "restore", False, "fail"),
    ("restore", "overwrite", False, "ok"),
    ("reserve", "append", False, "ok"),
    ("reserve", "overwrite", False, "fail"),
    ("config_a", "config_b", False, "ok"),
    ("config_a", "overwrite_a", False, "fail"),
    ("create_index", "overwrite", False, "retry"),
    ("append", "unknown", False, "fail"),
    ("delete0", "unknown", True, "fail"),
    ("overwrite", "unknown", False, "fail"),
]


def test_unknown_operation_parses_and_conflicts():
    # a transaction whose operation field (115, newer than our proto) lancejit does not know
    raw = Transaction(3, Append(())).to_pb()
    raw.ClearField("append")
    data = raw.SerializeToString() + b"\x9a\x07\x00"  # field 115, empty message
    txn = Transaction.parse(data)
    assert txn.operation.name == "unknown" and txn.read_version == 3
    with pytest.raises(CommitConflictError):
        ConflictChecker(Transaction(3, OPS["append"])).check(txn, 4)


@pytest.mark.parametrize("mine,theirs,rows_known,outcome", CASES)
def test_rules(mine, theirs, rows_known, outcome):
    txn = Transaction(1, OPS[mine])
    initial = {0: _frag(0), 1: _frag(1)}
    checker = ConflictChecker(txn, initial, rows_known=rows_known)
    other = Transaction(1, OPS[theirs])
    if outcome in ("ok", "merge"):
        checker.check(other, 2)
        assert bool(checker.needs_merge) == (outcome == "merge")
    elif outcome == "retry":
        with pytest.raises(RetryableCommitError):
            checker.check(other, 2)
    else:
        with pytest.raises(CommitConflictError) as info:
            checker.check(other, 2)
        assert not isinstance(info.value, RetryableCommitError)
    with pytest.raises(CommitConflictError):  # a version without a transaction: be conservative
        ConflictChecker(txn, initial, rows_known=rows_known).check(None, 2)


async def _dataset(local_ds, fragments=((0, 50), (50, 50))):
    store, root, uri = local_ds
    frags = []
    for start, n in fragments:
        t = H.make_table(start, n)
        frags.append(new_fragment([await H.write_data_file(store, root, t)], n))
    fields, meta = schema_fields(t.schema)
    await commit(store, root, Overwrite(tuple(frags), fields, meta), 0)
    return store, root, uri


def _keys(uri, version=None) -> list[int]:
    return sorted(lance.dataset(uri, version=version).to_table(columns=["a"])["a"].to_pylist())


async def test_delete_after_overwrite_fails_and_dataset_intact(local_ds):
    store, root, uri = await _dataset(local_ds)
    op, affected = await H.prepare_delete(store, root, 1, lambda a: a < 10)
    t = H.make_table(1000, 5)
    fields, meta = schema_fields(t.schema)
    await commit(store, root, Overwrite((new_fragment([await H.write_data_file(store, root, t)], 5),), fields, meta), 1)
    with pytest.raises(CommitConflictError) as info:
        await commit(store, root, op, 1, affected_rows=affected)
    assert not isinstance(info.value, RetryableCommitError)
    assert await latest_version(store, root) == 2
    assert _keys(uri) == list(range(1000, 1005))
    assert _keys(uri, 1) == list(range(100))


async def test_append_after_overwrite_fails(local_ds):
    store, root, uri = await _dataset(local_ds)
    df = await H.write_data_file(store, root, H.make_table(500, 3))
    t = H.make_table(1000, 5)
    fields, meta = schema_fields(t.schema)
    await commit(store, root, Overwrite((new_fragment([await H.write_data_file(store, root, t)], 5),), fields, meta), 1)
    with pytest.raises(CommitConflictError):
        await commit(store, root, Append((new_fragment([df], 3),)), 1)
    assert _keys(uri) == list(range(1000, 1005))


async def test_concurrent_deletes_same_fragment_are_merged(local_ds):
    store, root, uri = await _dataset(local_ds)
    op_a, aff_a = await H.prepare_delete(store, root, 1, lambda a: a % 5 == 0)
    op_b, aff_b = await H.prepare_delete(store, root, 1, lambda a: a % 5 == 1)
    assert await commit(store, root, op_a, 1, affected_rows=aff_a) == 2
    # without the affected rows the committer cannot rebase: the caller must redo
    with pytest.raises(RetryableCommitError):
        await commit(store, root, op_b, 1)
    assert await commit(store, root, op_b, 1, affected_rows=aff_b) == 3
    assert _keys(uri) == [i for i in range(100) if i % 5 not in (0, 1)]
    # the merged deletion files are named after the version they were rebased on
    names = os.listdir(os.path.join(uri, "_deletions"))
    assert any(n.startswith("0-2-") for n in names) and any(n.startswith("1-2-") for n in names)


async def test_concurrent_deletes_same_rows_retry(local_ds):
    store, root, uri = await _dataset(local_ds)
    op_a, aff_a = await H.prepare_delete(store, root, 1, lambda a: a < 3)
    op_b, aff_b = await H.prepare_delete(store, root, 1, lambda a: a == 2)
    await commit(store, root, op_a, 1, affected_rows=aff_a)
    with pytest.raises(RetryableCommitError):
        await commit(store, root, op_b, 1, affected_rows=aff_b)
    assert _keys(uri) == list(range(3, 100))


async def test_delete_rebased_on_pylance_delete_and_append(local_ds):
    store, root, uri = await _dataset(local_ds)
    op, aff = await H.prepare_delete(store, root, 1, lambda a: (a > 40) & (a < 60))
    lance.dataset(uri).delete("a < 5 OR a = 55")  # pylance, on both fragments
    lance.write_dataset(H.make_table(200, 4), uri, mode="append")
    with pytest.raises(RetryableCommitError):  # both deleted row 55
        await commit(store, root, op, 1, affected_rows=aff)
    op, aff = await H.prepare_delete(store, root, 1, lambda a: (a > 40) & (a < 60) & (a != 55))
    assert await commit(store, root, op, 1, affected_rows=aff) == 4
    expect = [i for i in range(100) if not (i < 5 or 40 < i < 60)] + [200, 201, 202, 203]
    assert _keys(uri) == expect


async def test_delete_whole_fragment_and_merge_into_full(local_ds):
    store, root, uri = await _dataset(local_ds, fragments=((0, 10), (10, 10)))
    op_a, aff_a = await H.prepare_delete(store, root, 1, lambda a: a < 5)
    op_b, aff_b = await H.prepare_delete(store, root, 1, lambda a: (a >= 5) & (a < 12))
    await commit(store, root, op_a, 1, affected_rows=aff_a)
    assert await commit(store, root, op_b, 1, affected_rows=aff_b) == 3
    ds = lance.dataset(uri)
    assert [f.fragment_id for f in ds.get_fragments()] == [1]  # fragment 0 fully deleted -> dropped
    assert _keys(uri) == list(range(12, 20))
