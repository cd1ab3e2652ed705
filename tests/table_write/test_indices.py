"""Commits on datasets with indices (built by pylance): the index list follows the reference's
rules and pylance's indexed queries stay correct."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import tw_helpers as H
from pyroaring import BitMap

import lance
from lancejit.io import open_store
from lancejit.pb import table_pb2
from lancejit.table.commit import Project, Update, commit, delete_rows, load_manifest, new_fragment


def _indices(lm) -> dict[str, list[int]]:
    if lm.index_section is None:
        return {}
    sec = table_pb2.IndexSection.FromString(lm.index_section)
    return {ix.name: sorted(BitMap.deserialize(ix.fragment_bitmap)) for ix in sec.indices}


async def test_project_and_update_keep_indices_consistent(tmp_path):
    uri = str(tmp_path / "ix.lance")
    lance.write_dataset(H.make_table(0, 80), uri, max_rows_per_file=40)
    ds = lance.dataset(uri)
    ds.create_scalar_index("a", "BTREE")
    ds.create_scalar_index("s", "BTREE")
    store, root = open_store(uri)
    lm = await load_manifest(store, root)
    assert _indices(lm) == {"a_idx": [0, 1], "s_idx": [0, 1]}

    # append: indices unchanged, the new fragment is simply not indexed
    v = await H.append_rows(store, root, H.make_table(80, 10))
    assert _indices(await load_manifest(store, root)) == {"a_idx": [0, 1], "s_idx": [0, 1]}

    # drop column s: its index goes
    lm = await load_manifest(store, root)
    v = await commit(store, root, Project(tuple(f for f in lm.manifest.fields if f.name != "s")), v)
    assert _indices(await load_manifest(store, root)) == {"a_idx": [0, 1]}
    assert [ix.name for ix in lance.dataset(uri).describe_indices()] == ["a_idx"]

    # update a (row a=3 of fragment 0 becomes a=777): fragment 0 leaves a_idx's bitmap
    lm = await load_manifest(store, root)
    frag0 = lm.manifest.fragments[0]
    updated = await delete_rows(store, root, frag0, v, np.array([3]))
    t = pa.table({"a": pa.array([777], pa.int64()), "f": [1.5]})
    df = await H.write_data_file(store, root, t, field_ids=[0, 2])
    v = await commit(store, root, Update(updated_fragments=(updated,), new_fragments=(new_fragment([df], 1),),
                                         fields_modified=(0,)), v)
    assert _indices(await load_manifest(store, root)) == {"a_idx": [1]}
    ds = lance.dataset(uri)
    assert ds.count_rows("a = 777") == 1
    assert ds.count_rows("a = 3") == 0
    assert ds.count_rows("a = 5") == 1 and ds.count_rows("a = 85") == 1
    assert ds.count_rows() == 90
