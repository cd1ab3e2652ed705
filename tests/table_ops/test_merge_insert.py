"""merge_insert: lancejit's results (counts, rows, errors, row ids, transaction) equal pylance's
merge_insert on the same inputs; pylance reads every version lancejit writes."""

from __future__ import annotations

import asyncio

import numpy as np
import pyarrow as pa
import pytest

import lancejit
from lancejit.core.errors import InvalidInputError, LanceJitError, SchemaMismatchError
from lancejit.io import open_store
from lancejit.io.sync import run_sync
from lancejit.table.commit import Transaction, Update, load_manifest

import lance

SCHEMA = pa.schema([("id", pa.int64()), ("k2", pa.string()), ("v", pa.int64()), ("s", pa.string())])


def target(n: int, seed: int, null_keys: bool = False) -> pa.Table:
    rng = np.random.default_rng(seed)
    ids = np.arange(n, dtype=np.int64) * 2
    idl = [None if null_keys and i % 9 == 4 else int(x) for i, x in enumerate(ids)]
    return pa.table({
        "id": pa.array(idl, pa.int64()), "k2": pa.array([f"k{i % 3}" for i in range(n)]),
        "v": pa.array(rng.integers(0, 100, n), pa.int64()),
        "s": pa.array([None if i % 5 == 2 else f"t{i}" for i in range(n)]),
    }, schema=SCHEMA)


def source(ids: list, seed: int, k2: list | None = None) -> pa.Table:
    rng = np.random.default_rng(seed + 100)
    n = len(ids)
    return pa.table({
        "id": pa.array(ids, pa.int64()), "k2": pa.array(k2 if k2 is not None else [f"k{(i // 2) % 3}" for i in ids]
                                                        if all(i is not None for i in ids) else ["k0"] * n),
        "v": pa.array(rng.integers(0, 100, n), pa.int64()), "s": pa.array([f"src{i}" for i in range(n)]),
    }, schema=SCHEMA)


def _keys_of(n, null_keys=False):
    return [None if null_keys and i % 9 == 4 else 2 * i for i in range(n)]


# (name, on, builder steps, source ids (None = null key), target null keys, stable row ids)
CASES = [
    ("upsert", "id", [("update", None), ("insert",)], [4, 10, 11, 13, 60, 61], False, False),
    ("update_only", "id", [("update", None)], [0, 2, 40, 41], False, False),
    ("insert_only_dedup", "id", [("insert",)], [1, 2, 3, 3, 5, 400], False, False),
    ("delete_by_source", "id", [("update", None), ("insert",), ("delete", None)], [2, 8, 9], False, False),
    ("delete_by_source_expr", "id", [("delete", "v > 40")], [2, 8, 9], False, False),
    ("condition", "id", [("update", "target.v < source.v"), ("insert",)], list(range(0, 60, 2)) + [1], False,
     False),
    ("condition_dup_one_passes", "id", [("update", "source.s = 'src1'")], [4, 4, 6], False, False),
    ("null_keys", "id", [("update", None), ("insert",)], [None, 4, None, 8, 5], True, False),
    ("null_keys_delete", "id", [("update", None), ("insert",), ("delete", None)], [None, 4, 8], True, False),
    ("duplicate_source_keys", "id", [("update", None), ("insert",)], [4, 6, 4], False, False),
    ("multi_column_keys", ["id", "k2"], [("update", None), ("insert",)], [0, 2, 4, 6, 7], False, False),
    ("empty_source", "id", [("update", None), ("insert",)], [], False, False),
    ("stable_row_ids", "id", [("update", None), ("insert",)], [0, 6, 22, 23, 70], False, True),
    ("stable_row_ids_delete", "id", [("update", None), ("insert",), ("delete", "v < 50")], [0, 6, 22, 23], False,
     True),
    ("all_fragments_replaced", "id", [("update", None)], list(range(0, 60, 2)), False, False),
]


def _build(b, steps):
    for step in steps:
        if step[0] == "update":
            b = b.when_matched_update_all(step[1]) if step[1] is not None else b.when_matched_update_all()
        elif step[0] == "insert":
            b = b.when_not_matched_insert_all()
        else:
            b = b.when_not_matched_by_source_delete(step[1]) if step[1] is not None else \
                b.when_not_matched_by_source_delete()
    return b


def _sorted(t: pa.Table) -> pa.Table:
    return t.sort_by([("id", "ascending"), ("k2", "ascending"), ("v", "ascending"), ("s", "ascending")])


def _two_copies(tmp_path, tbl, stable):
    out = []
    for name in ("ref", "jit"):
        uri = str(tmp_path / f"{name}.lance")
        lance.write_dataset(tbl, uri, max_rows_per_file=8, enable_stable_row_ids=stable)
        out.append(uri)
    return out


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_merge_insert_matches_pylance(tmp_path, case, seed):
    name, on, steps, ids, null_keys, stable = case
    tbl = target(30, seed, null_keys)
    src = source(ids, seed)
    if name == "multi_column_keys":
        src = source(ids, seed, k2=["k0", "k1", "k2", "k0", "k1"])
    ref_uri, jit_uri = _two_copies(tmp_path, tbl, stable)
    ref_err = jit_err = None
    try:
        ref_res = _build(lance.dataset(ref_uri).merge_insert(on), steps).execute(src)
    except Exception as exc:  # noqa: BLE001 - pylance raises OSError / ValueError
        ref_err = exc
    try:
        jit_res = _build(lancejit.dataset(jit_uri).merge_insert(on), steps).execute(src)
    except LanceJitError as exc:
        jit_err = exc
    assert (ref_err is None) == (jit_err is None), (ref_err, jit_err)
    if ref_err is not None:
        assert isinstance(jit_err, InvalidInputError)
        assert lancejit.dataset(jit_uri).version == 1
        return
    assert jit_res == ref_res
    ref_ds, jit_ds = lance.dataset(ref_uri), lancejit.dataset(jit_uri)
    assert jit_ds.version == ref_ds.version == 2
    got = jit_ds.to_table(with_row_id=stable)
    # pylance reads what lancejit wrote, equal to what lancejit reads
    assert lance.dataset(jit_uri).to_table(with_row_id=stable).equals(got)
    assert _sorted(got.select(SCHEMA.names)).equals(_sorted(ref_ds.to_table()))
    if stable:  # updated rows keep their ids, as in pylance; inserted rows get fresh ones
        ref_t = ref_ds.to_table(with_row_id=True)
        ref_ids = dict(zip(ref_t["id"].to_pylist(), ref_t["_rowid"].to_pylist()))
        jit_ids = dict(zip(got["id"].to_pylist(), got["_rowid"].to_pylist()))
        kept = {k for k in ref_ids if k is not None and ref_ids[k] < 30}
        assert {k: jit_ids[k] for k in kept} == {k: ref_ids[k] for k in kept}
        assert sorted(jit_ids.values()) == sorted(ref_ids.values())
    # the reference's transaction kind
    store, root = open_store(jit_uri)
    lm = run_sync(load_manifest(store, root, 2))
    op = Transaction.parse(lm.transaction).operation
    assert isinstance(op, Update) and op.update_mode == 0 and op.fields_modified == ()
    assert op.fields_for_preserving_frag_bitmap == (0, 1, 2, 3)


def test_subset_columns_update_and_insert(tmp_path):
    tbl = target(20, 3)
    ref_uri, jit_uri = _two_copies(tmp_path, tbl, False)
    src = pa.table({"id": pa.array([4, 6, 99], pa.int64()), "v": pa.array([-1, -2, -3], pa.int64())})
    ref = lance.dataset(ref_uri).merge_insert("id").when_matched_update_all().when_not_matched_insert_all().execute(src)
    jit = lancejit.dataset(jit_uri).merge_insert("id").when_matched_update_all().when_not_matched_insert_all() \
        .execute(src)
    assert jit == ref
    assert _sorted(lancejit.dataset(jit_uri).to_table()).equals(_sorted(lance.dataset(ref_uri).to_table()))
    assert _sorted(lance.dataset(jit_uri).to_table()).equals(_sorted(lance.dataset(ref_uri).to_table()))


def test_source_kinds_and_errors(tmp_path):
    uri = str(tmp_path / "d.lance")
    lance.write_dataset(target(10, 0), uri)
    ds = lancejit.dataset(uri)
    src = source([0, 100], 0)
    r = ds.merge_insert("id").when_matched_update_all().when_not_matched_insert_all().execute(src.to_batches()[0])
    assert r == {"num_inserted_rows": 1, "num_updated_rows": 1, "num_deleted_rows": 0}
    r = lancejit.dataset(uri).merge_insert("id").when_not_matched_insert_all().execute(src.to_reader())
    assert r["num_inserted_rows"] == 0
    r = lancejit.dataset(uri).merge_insert("id").when_not_matched_insert_all().execute(source([101], 0).to_pandas())
    assert r["num_inserted_rows"] == 1
    with pytest.raises(InvalidInputError):
        lancejit.dataset(uri).merge_insert("id").execute(src)  # nothing configured
    with pytest.raises(InvalidInputError):
        lancejit.dataset(uri).merge_insert("nope")
    with pytest.raises(SchemaMismatchError):
        lancejit.dataset(uri).merge_insert("id").when_matched_update_all().execute(src.cast(
            pa.schema([("id", pa.int32()), ("k2", pa.string()), ("v", pa.int64()), ("s", pa.string())])))
    assert lance.dataset(uri).count_rows() == 12


@pytest.mark.parametrize("stable", [False, True])
def test_concurrent_merge_inserts_different_keys_both_land(tmp_path, stable):
    uri = str(tmp_path / "c.lance")
    lance.write_dataset(target(40, 0), uri, max_rows_per_file=10, enable_stable_row_ids=stable)
    base = lancejit.dataset(uri)

    async def both():
        a = base.merge_insert("id").when_matched_update_all().when_not_matched_insert_all()
        b = base.merge_insert("id").when_matched_update_all().when_not_matched_insert_all()
        return await asyncio.gather(a.execute_async(source([0, 2, 1000], 1)),     # fragment 0 + insert
                                    b.execute_async(source([4, 70, 2000], 2)))    # fragment 0 and 3 + insert

    from lancejit.io.sync import run_sync as rs
    res = rs(both())
    assert [r["num_updated_rows"] for r in res] == [2, 2]
    ds = lancejit.dataset(uri)
    assert ds.version == 3
    t = ds.to_table()
    assert t.num_rows == 42 and len(set(t["id"].to_pylist())) == 42
    expect = {r["id"]: r["v"] for r in source([0, 2, 1000], 1).to_pylist() + source([4, 70, 2000], 2).to_pylist()}
    got = {r["id"]: r["v"] for r in t.to_pylist() if r["id"] in expect}
    assert got == expect
    assert lance.dataset(uri).to_table().equals(t)


def _mp_worker(uri: str, offset: int) -> None:
    import lancejit as lj

    for i in range(3):
        key = offset + 4 * i  # both workers update rows of the same fragments, never the same row
        src = pa.table({"id": pa.array([key, 10_000 + offset * 100 + i], pa.int64()), "k2": ["w", "w"],
                        "v": pa.array([-key, -1], pa.int64()), "s": ["mp", "mp"]}, schema=SCHEMA)
        lj.dataset(uri).merge_insert("id").when_matched_update_all().when_not_matched_insert_all().execute(src)


def test_two_processes_merge_insert_concurrently(tmp_path):
    import multiprocessing as mp

    uri = str(tmp_path / "mp.lance")
    lance.write_dataset(target(40, 0), uri, max_rows_per_file=20)
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=_mp_worker, args=(uri, off)) for off in (0, 2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    assert [p.exitcode for p in procs] == [0, 0]
    ds = lancejit.dataset(uri)
    assert ds.version == 7
    t = ds.to_table()
    assert t.num_rows == 46 and len(set(t["id"].to_pylist())) == 46
    updated = {r["id"]: r["v"] for r in t.to_pylist() if r["s"] == "mp" and r["id"] < 10_000}
    assert updated == {k: -k for k in [0, 4, 8, 2, 6, 10]}
    assert lance.dataset(uri).to_table().equals(t)


def test_bad_inputs_fail_cleanly_without_commit(tmp_path):
    from lancejit.core.errors import NotSupportedError

    uri = str(tmp_path / "b.lance")
    t = pa.table({"id": pa.array([1, 2], pa.int64()), "st": pa.array([{"x": 1}, {"x": 2}])})
    lance.write_dataset(t, uri)
    lance.dataset(uri).delete("true")
    r = lancejit.dataset(uri).merge_insert("id").when_matched_update_all().when_not_matched_insert_all().execute(t)
    assert r == {"num_inserted_rows": 2, "num_updated_rows": 0, "num_deleted_rows": 0}
    assert lance.dataset(uri).to_table().equals(t)
    ds = lancejit.dataset(uri)
    for bad in (None, 5, "x"):
        with pytest.raises(InvalidInputError):
            ds.merge_insert("id").when_not_matched_insert_all().execute(bad)
    with pytest.raises(NotSupportedError):
        ds.merge_insert("st").when_matched_update_all().execute(t)
    with pytest.raises(InvalidInputError):
        ds.merge_insert("id").when_matched_update_all("target.nope > 1").execute(t.slice(0, 0))
    with pytest.raises(InvalidInputError):
        ds.merge_insert("id").when_not_matched_by_source_delete("nope > 1").execute(t)
    with pytest.raises(NotSupportedError):  # as in the reference
        ds.merge_insert("id").when_not_matched_by_source_delete().execute(t.select(["id"]))
    assert lancejit.dataset(uri).version == ds.version


@pytest.mark.parametrize("seed", range(5))
def test_integer_join_equals_arrow_hash_join(seed):
    from lancejit.table.write.merge_insert import _join_acero, _join_integers, _valid_keys

    rng = np.random.default_rng(seed)
    big = np.int64(2**62)  # beyond float64 precision
    def col(n, hi):
        vals = rng.integers(0, hi, n) + big
        return pa.chunked_array([pa.array([None if rng.random() < 0.1 else int(v) for v in vals[: n // 2]], pa.int64()),
                                 pa.array([int(v) for v in vals[n // 2:]], pa.int64())])
    src = pa.table({"k": col(int(rng.integers(0, 40)), 30)})
    tgt = pa.table({"k": col(int(rng.integers(0, 200)), 30)})
    sv, tv = _valid_keys(src, ["k"]), _valid_keys(tgt, ["k"])
    got = _join_integers(src.column("k"), sv, tgt.column("k"), tv)
    want = _join_acero(src, sv, tgt, tv, ["k"])
    assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])
