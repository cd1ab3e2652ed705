"""Datasets created and changed by lancejit's committer, read by pylance 14.0.2 at every version,
and datasets changed alternately by pylance and lancejit."""

from __future__ import annotations

import json
import os

import numpy as np
import pyarrow as pa
import pytest
import tw_helpers as H

import lance
from lancejit.io.sync import run_sync
from lancejit.table.commit import (
    Overwrite,
    Restore,
    commit,
    create_tag,
    delete_tag,
    latest_version,
    list_tags,
    load_manifest,
    new_fragment,
    schema_fields,
)
from lancejit.table.commit.deletion_writer import BITMAP_THRESHOLD


def _sorted(t: pa.Table) -> pa.Table:
    return t.sort_by("a")


async def _create(store, root, tables, **kw) -> int:
    frags = []
    for t in tables:
        df = await H.write_data_file(store, root, t)
        frags.append(new_fragment([df], t.num_rows))
    fields, meta = schema_fields(tables[0].schema)
    return await commit(store, root, Overwrite(tuple(frags), fields, meta), 0, **kw)


async def _delete_where(store, root, mask_fn) -> tuple[int, dict]:
    """Delete rows whose ``a`` matches ``mask_fn`` (reads ``a`` with pylance); returns version."""
    rv = (await load_manifest(store, root)).manifest.version
    op, affected = await H.prepare_delete(store, root, rv, mask_fn)
    v = await commit(store, root, op, rv, affected_rows=affected)
    return v, affected


@pytest.mark.parametrize("v2_paths", [True, False], ids=["v2names", "v1names"])
async def test_lifecycle_read_by_pylance(local_ds, v2_paths):
    store, root, uri = local_ds
    t1, t2 = H.make_table(0, 300), H.make_table(300, 200)
    expected = {}
    v = await _create(store, root, [t1, t2], enable_v2_manifest_paths=v2_paths)
    assert v == 1
    expected[1] = pa.concat_tables([t1, t2])
    t3 = H.make_table(500, 7000)
    v = await H.append_rows(store, root, t3)
    assert v == 2
    expected[2] = pa.concat_tables([expected[1], t3])
    # small delete (arrow files) then a big one on the 7000-row fragment (roaring bitmap)
    v, _ = await _delete_where(store, root, lambda a: a % 13 == 1)
    expected[3] = expected[2].filter(pa.array(expected[2]["a"].to_numpy() % 13 != 1))
    v, _ = await _delete_where(store, root, lambda a: (a >= 500) & (a % 10 != 0))
    e = expected[3]["a"].to_numpy()
    expected[4] = expected[3].filter(pa.array(~((e >= 500) & (e % 10 != 0))))
    # whole fragment deleted -> removed
    v, _ = await _delete_where(store, root, lambda a: a < 300)
    e = expected[4]["a"].to_numpy()
    expected[5] = expected[4].filter(pa.array(e >= 300))
    t4 = H.make_table(9000, 50)
    fields, meta = schema_fields(t4.schema)
    df = await H.write_data_file(store, root, t4)
    v = await commit(store, root, Overwrite((new_fragment([df], 50),), fields, meta), 5)
    expected[6] = t4
    v = await commit(store, root, Restore(4), 6)
    expected[7] = expected[4]
    assert v == 7
    await create_tag(store, root, "before", 2)
    await create_tag(store, root, "gone", 3)
    await delete_tag(store, root, "gone")

    names = os.listdir(os.path.join(uri, "_versions"))
    assert ("1.manifest" in names) == (not v2_paths)
    assert json.loads(open(os.path.join(uri, "_versions", "latest_version_hint.json")).read()) == {"version": 7}
    ds = lance.dataset(uri)
    assert ds.version == 7
    assert [x["version"] for x in ds.versions()] == list(range(1, 8))
    for ver, exp in expected.items():
        got = lance.dataset(uri, version=ver).to_table()
        assert _sorted(got).equals(_sorted(exp)), ver
    assert ds.tags.list()["before"]["version"] == 2
    assert "gone" not in ds.tags.list()
    assert lance.dataset(uri, version="before").count_rows() == expected[2].num_rows
    assert [t.name for t in await list_tags(store, root)] == ["before"]
    # both deletion-file kinds were written
    kinds = {n.rsplit(".", 1)[1] for n in os.listdir(os.path.join(uri, "_deletions"))}
    assert kinds == {"arrow", "bin"}
    m4 = (await load_manifest(store, root, 4)).manifest
    big = [f for f in m4.fragments if f.deletion_file.num_deleted_rows > BITMAP_THRESHOLD]
    assert big and big[0].deletion_file.file_type == 1
    assert m4.reader_feature_flags == 1 and m4.writer_version.library == "lancejit"
    assert (await load_manifest(store, root, 5)).manifest.max_fragment_id == 2


async def test_stable_row_ids_match_pylance(local_ds):
    store, root, uri = local_ds
    await _create(store, root, [H.make_table(0, 100), H.make_table(100, 50)], enable_stable_row_ids=True)
    await H.append_rows(store, root, H.make_table(150, 30))
    await _delete_where(store, root, lambda a: a % 3 == 0)
    m = (await load_manifest(store, root)).manifest
    assert m.reader_feature_flags == 3 and m.next_row_id == 180
    ds = lance.dataset(uri)
    got = ds.to_table(with_row_id=True)
    # rows were never moved: the row id of key a is a
    assert np.array_equal(got["_rowid"].to_numpy(), got["a"].to_numpy().astype(np.uint64))
    # pylance appends with stable row ids on our dataset: it continues from our next_row_id
    lance.write_dataset(H.make_table(180, 20), uri, mode="append")
    got = lance.dataset(uri).to_table(with_row_id=True)
    assert np.array_equal(np.sort(got["_rowid"].to_numpy()), np.sort(got["a"].to_numpy().astype(np.uint64)))
    # and we append after pylance
    await H.append_rows(store, root, H.make_table(200, 5))
    got = lance.dataset(uri).to_table(with_row_id=True)
    assert np.array_equal(np.sort(got["_rowid"].to_numpy()), np.sort(got["a"].to_numpy().astype(np.uint64)))
    assert got.num_rows == 205 - 60
    # lancejit's reader agrees with pylance on the row ids
    from lancejit.table import dataset as lj_dataset

    mine = lj_dataset(uri).to_table(with_row_id=True).sort_by("a")
    theirs = got.sort_by("a")
    assert mine["_rowid"].to_pylist() == theirs["_rowid"].to_pylist()


async def test_alternating_with_pylance(local_ds):
    store, root, uri = local_ds
    lance.write_dataset(H.make_table(0, 100), uri, max_rows_per_file=40, enable_v2_manifest_paths=False)
    await H.append_rows(store, root, H.make_table(100, 10))
    ds = lance.dataset(uri)
    ds.delete("a < 5")
    lance.write_dataset(H.make_table(110, 10), uri, mode="append")
    await H.append_rows(store, root, H.make_table(120, 10))
    await _delete_where(store, root, lambda a: a % 2 == 1)
    ds = lance.dataset(uri)
    ds.delete("a = 6")
    await H.append_rows(store, root, H.make_table(130, 10))
    got = lance.dataset(uri).to_table()
    a = np.arange(140)
    keep = ((a >= 5) & (a % 2 == 0) & (a != 6)) | (a >= 130)
    assert sorted(got["a"].to_pylist()) == a[keep].tolist()
    assert lance.dataset(uri).version == 8
    assert sorted(os.listdir(os.path.join(uri, "_versions")))[:3] == ["1.manifest", "2.manifest", "3.manifest"]
    # fragment ids never reused
    ids = [f.id for f in (await load_manifest(store, root)).manifest.fragments]
    assert len(ids) == len(set(ids))


def test_sync_api(tmp_path):
    from lancejit.io import open_store
    from lancejit.table.commit import commit_sync

    uri = str(tmp_path / "s.lance")
    store, root = open_store(uri)
    t = H.make_table(0, 10)
    df = run_sync(H.write_data_file(store, root, t))
    fields, meta = schema_fields(t.schema)
    assert commit_sync(uri, Overwrite((new_fragment([df], 10),), fields, meta), 0) == 1
    assert run_sync(latest_version(store, root)) == 1
    assert lance.dataset(uri).to_table().equals(t)
