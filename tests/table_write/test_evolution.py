"""Schema evolution and updates committed by lancejit (Merge = add columns, Project = drop
columns, Update = rewrite rows keeping stable row ids), read by pylance 14."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute  # noqa: F401
import pytest
import tw_helpers as H

import lance
from lancejit.core.schema import LanceField
from lancejit.pb import table_pb2
from lancejit.table.commit import (
    Merge,
    Project,
    Update,
    commit,
    delete_rows,
    encode_row_id_sequence,
    load_manifest,
    new_fragment,
    Overwrite,
    schema_fields,
)


@pytest.mark.parametrize("stable", [True, False], ids=["stable", "addresses"])
async def test_merge_project_update(local_ds, stable):
    store, root, uri = local_ds
    frags = []
    for start in (0, 40):
        t = H.make_table(start, 40)
        frags.append(new_fragment([await H.write_data_file(store, root, t)], 40))
    fields, meta = schema_fields(t.schema)
    await commit(store, root, Overwrite(tuple(frags), fields, meta), 0, enable_stable_row_ids=stable)

    # v2: add column b = a * 2 (one new data file per fragment, field id 3)
    lm = (await load_manifest(store, root)).manifest
    new_field = LanceField.from_arrow(pa.field("b", pa.int64()), next_id=[3])
    merged = []
    for frag in lm.fragments:
        a = lance.dataset(uri).get_fragment(frag.id).to_table(columns=["a"])["a"].to_numpy()
        bt = pa.table({"b": a * 2})
        df = await H.write_data_file(store, root, bt)
        del df.fields[:]
        df.fields.append(3)
        f = table_pb2.DataFragment()
        f.CopyFrom(frag)
        f.files.append(df)
        merged.append(f)
    schema = tuple(lm.fields) + (new_field.to_pb(),)
    assert await commit(store, root, Merge(tuple(merged), schema, dict(lm.schema_metadata)), 1) == 2

    # v3: drop column s
    lm = (await load_manifest(store, root)).manifest
    assert await commit(store, root, Project(tuple(f for f in lm.fields if f.name != "s")), 2) == 3

    # v4: update f = -1 where 10 <= a < 20 (rows move to a new fragment)
    lm = (await load_manifest(store, root)).manifest
    frag0 = lm.fragments[0]
    updated = await delete_rows(store, root, frag0, 3, np.arange(10, 20))
    a = np.arange(10, 20, dtype=np.int64)
    nt = pa.table({"a": a, "f": np.full(10, -1.0), "b": a * 2})
    df = await H.write_data_file(store, root, nt)
    del df.fields[:]
    df.fields.extend([0, 2, 3])
    nf = new_fragment([df], 10, row_ids=encode_row_id_sequence(a.astype(np.uint64)) if stable else None)
    v = await commit(store, root, Update(updated_fragments=(updated,), new_fragments=(nf,), fields_modified=(2,)), 3)
    assert v == 4

    ds = lance.dataset(uri)
    assert ds.schema.names == ["a", "f", "b"]
    got = ds.to_table(with_row_id=True).sort_by("a")
    a_all = np.arange(80)
    assert got["a"].to_pylist() == a_all.tolist()
    assert got["b"].to_pylist() == (a_all * 2).tolist()
    f_exp = np.where((a_all >= 10) & (a_all < 20), -1.0, a_all * 0.5)
    assert got["f"].to_pylist() == f_exp.tolist()
    if stable:
        assert got["_rowid"].to_pylist() == a_all.tolist()  # updated rows kept their ids
        m = (await load_manifest(store, root)).manifest
        assert m.next_row_id == 80 and m.max_fragment_id == 2
    assert lance.dataset(uri, version=2).to_table().column_names == ["a", "s", "f", "b"]
    assert lance.dataset(uri, version=3).count_rows() == 80
    # pylance keeps evolving our dataset, and we read its manifest back for the next commit
    ds.add_columns({"c": "a + 1"})
    row = pa.table({"a": pa.array([100], pa.int64()), "f": [0.0], "b": pa.array([200], pa.int64()),
                    "c": pa.array([101], pa.int64())})
    assert await H.append_rows(store, root, row, field_ids=[0, 2, 3, 4]) == 6
    got = lance.dataset(uri).to_table()
    assert got.num_rows == 81
    assert got.filter(pa.compute.equal(got["a"], 100)).equals(row)
