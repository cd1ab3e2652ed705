"""Nested fields are matched to data-file columns by Lance field id at every level: renamed
struct children (``st.x -> st.xx``, inside lists too), dropped children and both together read
as the reference reads them (issue 5, bug: a renamed nested field read as nulls)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

import lancejit.table as lt
from lancejit.core.schema import LanceSchema
from lancejit.table.meta.fields import conform_array

lance = pytest.importorskip("lance")


def _table(n: int, start: int = 0, struct_nulls: bool = True) -> pa.Table:
    a = np.arange(start, start + n, dtype=np.int64)
    st = pa.StructArray.from_arrays(
        [pa.array(a * 10), pa.array([f"y{i}" for i in a]),
         pa.StructArray.from_arrays([pa.array(a.astype(np.float64) / 2)], names=["q"])],
        names=["x", "y", "inner"],
        mask=pa.array([struct_nulls and i % 9 == 4 for i in a]),
    )
    items = pa.StructArray.from_arrays([pa.array(np.repeat(a, 2).astype(np.int32)),
                                        pa.array([f"v{i}" for i in np.repeat(a, 2)])], names=["k", "v"])
    offsets = pa.array(np.arange(0, 2 * n + 1, 2, dtype=np.int32))
    ls = pa.ListArray.from_arrays(offsets, items)
    return pa.table({"a": a, "st": st, "ls": ls})


@pytest.mark.parametrize("version", ["2.0", "2.1", "2.2"])
def test_nested_renames_and_drops_match_reference(tmp_path, version):
    uri = str(tmp_path / "ds")
    nulls = version != "2.0"  # 2.0 files have no struct validity
    ds = lance.write_dataset(_table(700, struct_nulls=nulls), uri, data_storage_version=version,
                             max_rows_per_file=300)
    ds.delete("a % 13 = 1")
    ds = lance.dataset(uri)
    ds.alter_columns({"path": "st.x", "name": "xx"}, {"path": "st.inner.q", "name": "qq"},
                     {"path": "ls.item.v", "name": "vv"})
    ds = lance.dataset(uri)
    extra = _table(50, start=700, struct_nulls=nulls).cast(ds.schema)  # new names, same layout
    lance.write_dataset(extra, uri, mode="append",
                        data_storage_version=version)
    ref = lance.dataset(uri)
    ours = lt.dataset(uri)
    assert ours.schema == ref.schema
    assert ours.to_table().equals(ref.to_table())
    cols = ["a", "st.xx", "st.inner.qq"]
    assert ours.to_table(columns=cols).equals(ref.to_table(columns=cols))
    assert ours.to_table(filter="st.xx > 3000").equals(ref.to_table(filter="st.xx > 3000"))
    idx = np.random.default_rng(3).choice(ref.count_rows(), 60, replace=False)
    assert ours.take(idx).equals(ref.take(idx))
    # the version before the rename still reads with the old names
    before = lt.dataset(uri, version=2).to_table()
    assert before.equals(lance.dataset(uri, version=2).to_table())
    assert before.schema.field("st").type.field(0).name == "x"


def test_nested_drop_then_rename_by_lancejit(tmp_path):
    uri = str(tmp_path / "ds")
    lance.write_dataset(_table(120), uri, max_rows_per_file=50)
    ds = lt.dataset(uri)
    ds.drop_columns(["st.y"])
    ds.alter_columns({"path": "st.x", "name": "xx"})
    ref = lance.dataset(uri)
    ours = lt.dataset(uri)
    assert ours.to_table().equals(ref.to_table())
    assert ours.to_table(offset=30, limit=40).equals(ref.to_table(offset=30, limit=40))


def _tree(schema: pa.Schema) -> LanceSchema:
    return LanceSchema.from_arrow(schema)


@pytest.mark.parametrize("offset", [0, 3])
def test_conform_array_by_id_on_sliced_arrays(offset):
    """Plain pyarrow check of the rebuild: swapped child names keep their values (ids win over
    names), a child the file lacks is null, parent nulls and slicing are preserved."""
    t = _table(12).slice(offset, 7)
    file_schema = _tree(t.schema)
    fst = file_schema.field("st")
    # dataset: children renamed by swapping names x <-> y (ids unchanged), "inner" missing in file
    import dataclasses

    x, y, inner = fst.children
    ds_st = dataclasses.replace(fst, children=(dataclasses.replace(x, name="y"),
                                               dataclasses.replace(y, name="x"),
                                               dataclasses.replace(inner, id=999)))
    target = pa.struct([pa.field("y", pa.int64()), pa.field("x", pa.string()),
                        pa.field("inner", pa.struct([pa.field("q", pa.float64())]))])
    arr = t.column("st").combine_chunks()
    got = conform_array(arr, ds_st, fst, target)
    assert got.type == target
    assert got.is_null().to_pylist() == arr.is_null().to_pylist()
    want_y = arr.field(0).to_pylist()
    assert [None if v is None else v["y"] for v in got.to_pylist()] == [
        None if n else w for w, n in zip(want_y, arr.is_null().to_pylist())
    ]
    assert all(v is None or v["inner"] is None for v in got.to_pylist())
