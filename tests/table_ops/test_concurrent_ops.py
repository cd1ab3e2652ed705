"""Operations racing from the same read version (asyncio tasks): deletes on the same fragment are
merged, updates of the same rows are redone on the latest version, appends and deletes interleave;
and a property test of random operation sequences against pylance 14."""

from __future__ import annotations

import asyncio

import lance
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ops_helpers import make_table

import lancejit.table as lt


@pytest.mark.parametrize("stable", [False, True], ids=["addr", "stable"])
async def test_racing_deletes_and_updates(tmp_path, stable):
    uri = str(tmp_path / "ds")
    ds = await lt.write_dataset_async(make_table(0, 12), uri, max_rows_per_file=6, enable_stable_row_ids=stable)
    await ds.add_columns_async({"b": "a * 10"})
    v0 = ds.version
    # three deletes of different rows of the same fragments, all read at v0
    await asyncio.gather(ds.delete_async("a = 1"), ds.delete_async("a = 2"), ds.delete_async("a IN (3, 7)"))
    ref = lance.dataset(uri)
    assert ref.version == v0 + 3
    assert ref.to_table()["a"].to_pylist() == [0, 4, 5, 6, 8, 9, 10, 11]
    # two updates of the same row from the same read version: both apply, one after the other
    ds = await ds.latest_async()
    await asyncio.gather(ds.update_async({"b": "b + 1"}, where="a = 5"),
                         ds.update_async({"b": "b + 1"}, where="a = 5"))
    ref = lance.dataset(uri)
    rows = {r["a"]: r for r in ref.to_table(with_row_id=True).to_pylist()}
    assert rows[5]["b"] == 52 and len(rows) == 8
    if stable:
        assert rows[5]["_rowid"] == 5
    # an append and a delete racing
    ds = await ds.latest_async()
    await asyncio.gather(lt.write_dataset_async(make_table(100, 3).append_column("b", pa.array([7, 8, 9], pa.int64())), uri,
                                                mode="append"), ds.delete_async("a = 0"))
    got = lance.dataset(uri).to_table()
    assert sorted(got["a"].to_pylist()) == [4, 5, 6, 8, 9, 10, 11, 100, 101, 102]
    assert (await (await ds.latest_async()).to_table_async()).equals(lance.dataset(uri).to_table())


_ops = st.lists(
    st.one_of(
        st.tuples(st.just("append"), st.integers(1, 9)),
        st.tuples(st.just("delete"), st.integers(0, 6), st.integers(1, 5)),
        st.tuples(st.just("update"), st.integers(0, 6), st.integers(1, 5)),
        st.tuples(st.just("add"), st.integers(1, 3)),
    ),
    min_size=1, max_size=5,
)


@settings(max_examples=6, deadline=None, suppress_health_check=list(HealthCheck))
@given(ops=_ops, version=st.sampled_from(["2.0", "2.1", "2.2"]), stable=st.booleans())
def test_random_histories_match_pylance(tmp_path_factory, ops, version, stable):
    base = tmp_path_factory.mktemp("hist")
    ours, theirs = str(base / "ours"), str(base / "theirs")
    t = make_table(0, 10).select(["a", "s"])
    lt.write_dataset(t, ours, data_storage_version=version, max_rows_per_file=4, enable_stable_row_ids=stable)
    lance.write_dataset(t, theirs, data_storage_version=version, max_rows_per_file=4, enable_stable_row_ids=stable)
    nxt, added = 1000, 0
    for op in ops:
        cols = lance.dataset(theirs).schema.names
        if op[0] == "append":
            rows = make_table(nxt, op[1]).select(["a", "s"])
            for i in range(added):
                rows = rows.append_column(f"c{i}", pa.array([None] * op[1], pa.int64()))
            rows = rows.select(cols)
            nxt += op[1]
            lt.write_dataset(rows, ours, mode="append", max_rows_per_file=4)
            lance.write_dataset(rows, theirs, mode="append", max_rows_per_file=4)
        elif op[0] == "delete":
            pred = f"a % 7 = {op[1]} AND a > {op[2]}"
            lt.dataset(ours).delete(pred)
            lance.dataset(theirs).delete(pred)
        elif op[0] == "update":
            where = f"a % 5 = {op[1] % 5}"
            lt.dataset(ours).update({"s": f"'u{op[2]}'"}, where=where)
            lance.dataset(theirs).update({"s": f"'u{op[2]}'"}, where=where)
        else:
            expr = {f"c{added}": f"a * {op[1]}"}
            added += 1
            lt.dataset(ours).add_columns(expr)
            lance.dataset(theirs).add_columns(expr)
        g = lance.dataset(ours).to_table(with_row_id=True)
        e = lance.dataset(theirs).to_table(with_row_id=True)
        if not stable:  # fragment numbering matches, so addresses match; compare in scan order
            assert g.equals(e), op
        else:
            assert g.sort_by("_rowid").equals(e.sort_by("_rowid")), op
        assert lt.dataset(ours).to_table(with_row_id=True).equals(g), op
