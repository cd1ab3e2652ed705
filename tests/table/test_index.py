"""The per-version dataset index (lancejit/table/index.py) and the take planning over it.

Property tests check the vectorized offset mapping and grouping against plain Python models;
dataset tests (1 and 7 fragments, deletions, stable row ids) check takes and counts against
the reference (pylance), and that no data or deletion file is read to count rows.
"""

from __future__ import annotations

import shutil
from types import SimpleNamespace

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings, strategies as st

from lancejit.core.errors import RowIndexError
from lancejit.io.sync import run_sync
from lancejit.table import dataset
from lancejit.table.meta.deletion import physical_of_logical
from lancejit.table.read.version_index import DatasetIndex, dataset_index
from lancejit.table.read.take import _groups

lance = pytest.importorskip("lance")


# ---------------------------------------------------------------------------- pure planning
def _fake_index(live: list[int], physical: list[int] | None = None, ids: list[int] | None = None) -> DatasetIndex:
    n = len(live)
    ids = ids if ids is not None else list(range(n))
    frags = tuple(SimpleNamespace(id=i, deletion_file=None, physical_rows=p)
                  for i, p in zip(ids, physical or live))
    return DatasetIndex(None, frags, np.array(physical or live, dtype=np.int64), np.array(live, dtype=np.int64))


@settings(max_examples=150, deadline=None)
@given(st.lists(st.integers(0, 6), min_size=1, max_size=12), st.data())
def test_locate_matches_python(live, data):
    total = sum(live)
    index = _fake_index(live)
    assert index.total_rows == total
    if total == 0:
        return
    offsets = np.array(data.draw(st.lists(st.integers(0, total - 1), min_size=1, max_size=30)), dtype=np.int64)
    pos, local = index.locate(offsets)
    expected = []
    for o in offsets.tolist():
        start = 0
        for p, n in enumerate(live):
            if o < start + n:
                expected.append((p, o - start))
                break
            start += n
    assert list(zip(pos.tolist(), local.tolist())) == expected


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 5), st.integers(0, 40)), min_size=1, max_size=40))
def test_groups_rebuild_requests(requests):
    """Concatenating the groups' offsets and indexing by positions gives back every request,
    in request order; each group is one fragment's sorted unique offsets."""
    index = _fake_index([41] * 6)
    pos = np.array([p for p, _ in requests], dtype=np.int64)
    off = np.array([o for _, o in requests], dtype=np.int64)
    groups, positions = _groups(index, pos, off)
    flat_pos = np.concatenate([np.full(len(o), r.id) for r, o in groups])
    flat_off = np.concatenate([o for _, o in groups])
    assert flat_pos[positions].tolist() == pos.tolist()
    assert flat_off[positions].tolist() == off.tolist()
    for _, o in groups:
        assert o.tolist() == sorted(set(o.tolist()))
    assert [r.id for r, _ in groups] == sorted({p for p, _ in requests})
    assert len({id(r) for r, _ in groups}) == len(groups)


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 60), st.data())
def test_physical_of_logical_matches_python(n, data):
    deleted = np.array(sorted(data.draw(st.sets(st.integers(0, n - 1), max_size=n - 1))), dtype=np.uint32)
    live = [i for i in range(n) if i not in set(deleted.tolist())]
    logical = np.array(data.draw(st.lists(st.integers(0, len(live) - 1), max_size=20)), dtype=np.int64)
    assert physical_of_logical(logical, deleted).tolist() == [live[i] for i in logical.tolist()]


def test_positions_of_unsorted_ids():
    index = _fake_index([3, 4, 5], ids=[7, 2, 30])
    pos, found = index.positions_of(np.array([2, 30, 7, 5, 31, 0]))
    assert found.tolist() == [True, True, True, False, False, False]
    assert pos[found].tolist() == [1, 2, 0]
    assert index.reader(1) is index.reader(1)
    assert index.reader(1).physical_rows == 4


# ---------------------------------------------------------------------------- datasets
def _table(n: int) -> pa.Table:
    a = np.arange(n, dtype=np.int64)
    return pa.table({
        "a": a,
        "s": pa.array([None if i % 9 == 4 else f"s{i}" for i in a]),
        "f": pa.array(a * 0.5),
    })


@pytest.fixture(scope="module")
def frag_datasets(tmp_path_factory):
    """(layout name) -> path: 1 fragment, 7 fragments, 7 fragments with deletions, 7 fragments
    with deletions and stable row ids (the last two have a fully deleted fragment)."""
    root = tmp_path_factory.mktemp("index")
    out = {}
    for name, rows_per_file, delete, stable in (
        ("one", 200, None, False),
        ("seven", 13, None, False),
        ("seven_del", 13, "a % 5 = 1 OR (a >= 26 AND a < 39)", False),
        ("seven_del_stable", 13, "a % 5 = 1 OR (a >= 26 AND a < 39)", True),
    ):
        path = str(root / name)
        shutil.rmtree(path, ignore_errors=True)
        n = 80 if name == "one" else 91
        lance.write_dataset(_table(n), path, max_rows_per_file=rows_per_file, data_storage_version="2.1",
                            enable_stable_row_ids=stable)
        if delete:
            lance.dataset(path).delete(delete)
        out[name] = path
    return out


LAYOUTS = ["one", "seven", "seven_del", "seven_del_stable"]


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_take_equals_reference(frag_datasets, layout, seed):
    path = frag_datasets[layout]
    ref, ours = lance.dataset(path), dataset(path)
    n = ref.count_rows()
    assert ours.count_rows() == n
    rng = np.random.default_rng(seed)
    for k in (1, 3, 17, 2 * n):
        idx = rng.integers(0, n, k)  # unsorted, duplicates when k is large
        for cols in (["a", "s", "f"], ["s"], ["f", "a", "_rowid"]):
            assert ours.take(idx, columns=cols).equals(ref.take(idx, columns=cols)), (k, cols)
    every = np.arange(n)[::-1]
    assert ours.take(every).equals(ref.take(every))
    assert ours.take([]).num_rows == 0


@pytest.mark.parametrize("layout", LAYOUTS)
def test_take_rows_equals_reference(frag_datasets, layout):
    path = frag_datasets[layout]
    ref, ours = lance.dataset(path), dataset(path)
    key = "_rowid" if ours.has_stable_row_ids else "_rowaddr"
    ids = ref.to_table(columns=["a"], with_row_id=True, with_row_address=True)[key].to_numpy()
    rng = np.random.default_rng(3)
    for k in (1, 5, 40):
        sel = rng.choice(ids, k)
        got = ours.take_rows(sel, columns=["a", "s"])
        assert got.equals(ref._take_rows(sel.tolist(), columns=["a", "s"]))
    if layout.endswith("_del"):  # an address of a deleted row is skipped
        deleted = np.uint64(1)  # fragment 0, offset 1 (a = 1 is deleted)
        got = ours.take_rows(np.array([deleted, ids[0]], dtype=np.uint64), columns=["a"])
        assert got.column("a").to_pylist() == [0]


@pytest.mark.parametrize("layout", LAYOUTS)
def test_out_of_range(frag_datasets, layout):
    ours = dataset(frag_datasets[layout])
    n = ours.count_rows()
    for bad in ([n], [0, n + 5], [-1]):
        with pytest.raises(RowIndexError):
            ours.take(bad)
    if not ours.has_stable_row_ids:
        with pytest.raises(RowIndexError):
            ours.take_rows([(99 << 32) | 0])  # no fragment 99
        with pytest.raises(RowIndexError):
            ours.take_rows([5000])  # past fragment 0's rows
    with pytest.raises(RowIndexError):
        ours.take_rows([-1])


@pytest.mark.parametrize("layout", LAYOUTS)
def test_count_rows_reads_no_file(frag_datasets, layout):
    path = frag_datasets[layout]
    ours = dataset(path)
    ours.io_stats()
    assert ours.count_rows() == lance.dataset(path).count_rows()
    assert ours.io_stats().read_iops == 0
    index = run_sync(dataset_index(ours.context))
    assert index is run_sync(dataset_index(ours.context))
    ref_frags = lance.dataset(path).get_fragments()
    assert index.fragment_ids.tolist() == [f.fragment_id for f in ref_frags]
    assert index.live_rows.tolist() == [f.count_rows() for f in ref_frags]
    assert index.physical_rows.tolist() == [f.physical_rows for f in ref_frags]


@pytest.mark.parametrize("layout", LAYOUTS)
def test_fragment_list_is_lazy_and_equal(frag_datasets, layout):
    import pickle

    from lancejit.table.meta.fragment_list import UNKNOWN, FragmentList

    m = dataset(frag_datasets[layout]).manifest
    frags = m.fragments
    assert isinstance(frags, FragmentList)
    ids, physical, deleted, has_files = frags.counts()
    assert frags._items.count(None) == len(frags)  # counting converted nothing
    as_tuple = tuple(frags)
    assert frags == as_tuple and frags[-1] == as_tuple[-1] and frags[1:3] == as_tuple[1:3]
    assert pickle.loads(pickle.dumps(frags)) == as_tuple
    assert ids.tolist() == [f.id for f in as_tuple]
    assert physical.tolist() == [f.physical_rows for f in as_tuple]
    assert deleted.tolist() == [UNKNOWN if f.num_deleted_rows is None else f.num_deleted_rows for f in as_tuple]
    assert has_files.all()
    with pytest.raises(IndexError):
        frags[len(frags)]
