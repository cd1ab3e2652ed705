"""restore, tags and cleanup_old_versions on lancejit datasets, checked with pylance 14; update
details (literal values, every row, several output files, stable row ids)."""

from __future__ import annotations

import datetime as dt
import os
import time

import lance
import pyarrow as pa
import pytest
from ops_helpers import make_table

import lancejit.table as lt
from lancejit.core.errors import AlreadyExistsError, InvalidInputError, NotFoundError


def _history(uri):
    ds = lt.write_dataset(make_table(0, 10), uri, max_rows_per_file=4)       # v1
    ds = lt.write_dataset(make_table(10, 6), uri, mode="append")             # v2
    ds.delete("a < 3")                                                  # v3
    ds.update({"s": "'u'"}, where="a > 12")                     # v4
    ds.add_columns({"b": "a * 2"})                                      # v5
    return ds


def test_restore_and_tags(uri):
    ds = _history(uri)
    expected = {v: lance.dataset(uri, version=v).to_table() for v in range(1, 6)}
    ds.tags.create("two", 2)
    ds.create_tag("latest")
    with pytest.raises(AlreadyExistsError):
        ds.tags.create("two", 3)
    with pytest.raises(NotFoundError):
        ds.tags.create("nine", 9)
    ref_tags = lance.dataset(uri).tags.list()
    assert {k: v["version"] for k, v in ref_tags.items()} == {"two": 2, "latest": 5}
    assert [(t.name, t.version) for t in ds.tags] == [("latest", 5), ("two", 2)]
    assert ds.tags.list()["two"]["version"] == 2
    lance.dataset(uri).tags.create("theirs", 3)
    assert sorted(ds.tags.list()) == ["latest", "theirs", "two"]
    ds.tags.update("two", 1)
    assert lance.dataset(uri).tags.list()["two"]["version"] == 1
    ds.tags.delete("theirs")
    assert "theirs" not in lance.dataset(uri).tags.list()
    # checkout by tag, restore by tag and by number
    assert lt.dataset(uri, version="two").to_table().equals(expected[1])
    assert ds.restore("two") is None  # the reference's return; the object moves
    assert ds.version == 6 and lance.dataset(uri).to_table().equals(expected[1])
    r = lt.dataset(uri, version=3)
    r.restore()
    assert r.version == 7 and lance.dataset(uri).to_table().equals(expected[3])
    assert r.to_table().equals(expected[3])
    # pylance appends on top of the restore; history is intact
    lance.write_dataset(make_table(50, 2), uri, mode="append")
    assert lt.dataset(uri).to_table().equals(pa.concat_tables([expected[3], make_table(50, 2)]))
    for v, t in expected.items():
        assert lance.dataset(uri, version=v).to_table().equals(t)


def test_cleanup_keeps_what_kept_versions_need(uri):
    ds = _history(uri)
    ds.tags.create("keep", 3)
    expected = {v: lance.dataset(uri, version=v).to_table() for v in (3, 5)}
    # a stray file no manifest references, old enough to be removed, and a fresh one
    stray_old = os.path.join(uri, "data", "stray-old.lance")
    stray_new = os.path.join(uri, "data", "stray-new.lance")
    for p in (stray_old, stray_new):
        with open(p, "wb") as fh:
            fh.write(b"x" * 10)
    old = time.time() - 30 * 24 * 3600
    os.utime(stray_old, (old, old))
    time.sleep(0.01)
    with pytest.raises(InvalidInputError):  # tagged version 3 is older than the cutoff
        ds.cleanup_old_versions(dt.timedelta(0))
    stats = ds.cleanup_old_versions(dt.timedelta(0), error_if_tagged_old_versions=False)
    assert stats.old_versions == 3 and stats.bytes_removed > 0
    assert [v["version"] for v in lance.dataset(uri).versions()] == [3, 5]
    for v, t in expected.items():
        assert lance.dataset(uri, version=v).to_table().equals(t)
        assert lt.dataset(uri, version=v).to_table().equals(t)
    assert not os.path.exists(stray_old) and os.path.exists(stray_new)
    # every remaining data file is needed by version 3 or 5
    needed = {df.path for v in (3, 5) for f in lance.dataset(uri, version=v).get_fragments()
              for df in f.data_files()}
    assert set(os.listdir(os.path.join(uri, "data"))) == needed | {"stray-new.lance"}
    # nothing newer than the cutoff goes
    stats = lt.dataset(uri).cleanup_old_versions(dt.timedelta(days=1))
    assert stats.old_versions == 0 and stats.bytes_removed == 0
    stats = lt.dataset(uri).cleanup_old_versions(dt.timedelta(0), delete_unverified=True,
                                                 error_if_tagged_old_versions=False)
    assert not os.path.exists(stray_new)
    lance.dataset(uri).delete("a = 15")
    assert lt.dataset(uri).to_table().equals(lance.dataset(uri).to_table())


@pytest.mark.parametrize("version", ["2.0", "2.2"])
def test_update_stable_row_ids_like_pylance(tmp_path, version):
    ours, theirs = str(tmp_path / "ours"), str(tmp_path / "theirs")
    t = make_table(0, 30)
    lt.write_dataset(t, ours, data_storage_version=version, enable_stable_row_ids=True, max_rows_per_file=8)
    lance.write_dataset(t, theirs, data_storage_version=version, enable_stable_row_ids=True, max_rows_per_file=8)
    steps = [
        ("update", {"a": 7}, "a % 5 = 0"),       # a Python value
        ("delete", "a = 7 AND s IS NULL"),
        ("update", {"s": "'all'"}, None),        # every row moves
        ("delete", "st.x > 25"),
    ]
    ds = lt.dataset(ours)
    for step in steps:
        if step[0] == "update":
            ds.update(step[1], where=step[2], max_rows_per_file=7)
            lance.dataset(theirs).update({k: str(v) for k, v in step[1].items()}, where=step[2])
        else:
            ds.delete(step[1])
            lance.dataset(theirs).delete(step[1])
        g = lance.dataset(ours).to_table(with_row_id=True).sort_by("_rowid")
        e = lance.dataset(theirs).to_table(with_row_id=True).sort_by("_rowid")
        assert g.equals(e), step
        assert ds.to_table(with_row_id=True).sort_by("_rowid").equals(e)
        # take by stable row id agrees too
        ids = e["_rowid"].to_pylist()[::3]
        exp_rows = lance.dataset(theirs)._take_rows(ids)
        assert lance.dataset(ours)._take_rows(ids).equals(exp_rows)
        assert lt.dataset(ours).take_rows(ids).equals(exp_rows)
    # the last full update wrote several files (max_rows_per_file=7)
    assert len(lance.dataset(ours).get_fragments()) >= 3


async def test_async_api(tmp_path):
    uri = str(tmp_path / "ds")
    ds = await lt.write_dataset_async(make_table(0, 8), uri, max_rows_per_file=3)
    await ds.delete_async("a = 1")
    await ds.update_async({"a": "a + 100"}, where="a = 2")
    await ds.add_columns_async({"z": "a - 1"})
    await ds.drop_columns_async(["l"])
    await ds.alter_columns_async({"path": "z", "name": "zz"})
    await ds.restore_async(2)
    assert ds.version == 7
    assert (await ds.to_table_async()).equals(lance.dataset(uri).to_table())
    assert lance.dataset(uri).to_table()["a"].to_pylist() == [0, 2, 3, 4, 5, 6, 7]
    await ds.tags.create_async("t", 3)
    assert lance.dataset(uri).tags.list()["t"]["version"] == 3


def test_bad_arguments(uri):
    ds = lt.write_dataset(make_table(0, 4), uri)
    with pytest.raises(InvalidInputError):
        ds.delete("no_such_col = 1")
    with pytest.raises(InvalidInputError):
        ds.update({"nope": "1"})
    with pytest.raises(InvalidInputError):
        ds.drop_columns(["nope"])
    with pytest.raises(InvalidInputError):
        ds.alter_columns({"path": "a", "name": "s"})
    with pytest.raises(InvalidInputError):
        lt.write_dataset(make_table(0, 1), uri, mode="upsert")
    assert lance.dataset(uri).version == 1


def test_failed_changes_leave_no_files(uri):
    ds = lt.write_dataset(make_table(0, 12), uri, max_rows_per_file=4)
    before = sorted(os.listdir(os.path.join(uri, "data")))
    calls = []

    def flaky(batch):
        calls.append(batch.num_rows)
        if len(calls) == 2:
            raise RuntimeError("boom")
        return pa.record_batch({"z": batch["a"]})

    with pytest.raises(RuntimeError, match="boom"):
        ds.add_columns(flaky, read_columns=["a"])
    with pytest.raises(InvalidInputError):
        ds.update({"a": "s + 1"})  # string + int cannot be evaluated
    with pytest.raises(InvalidInputError):
        ds.add_columns({"q": "a +"})
    assert sorted(os.listdir(os.path.join(uri, "data"))) == before
    assert lance.dataset(uri).version == 1
    assert lance.dataset(uri).to_table().equals(make_table(0, 12))


def test_field_ids_after_drop_and_add_like_pylance(tmp_path):
    from ops_helpers import manifest_meta, manifest_shape

    ours, theirs = str(tmp_path / "ours"), str(tmp_path / "theirs")
    t = pa.table({"a": [1, 2, 3], "b": [4, 5, 6]})
    ds = lt.write_dataset(t, ours)
    ref = lance.write_dataset(t, theirs)
    for step in (("drop", ["b"]), ("add", {"c": "a * 10"}), ("drop", ["c"]), ("add", {"d": "a + 1"}),
                 ("empty_update", None)):
        if step[0] == "drop":
            ds.drop_columns(step[1])
            ref.drop_columns(step[1])
        elif step[0] == "add":
            ds.add_columns(step[1])
            ref.add_columns(step[1])
        else:
            ds.update({"a": "0"}, where="a > 100")
            ref.update({"a": "0"}, where="a > 100")
        v = ds.version
        assert lance.dataset(theirs).version == v
        assert manifest_meta(ours, v) == manifest_meta(theirs, v), step
        assert manifest_shape(ours, v) == manifest_shape(theirs, v), step
        assert lance.dataset(ours).to_table().equals(lance.dataset(theirs).to_table())
        assert ds.to_table().equals(lance.dataset(theirs).to_table())
