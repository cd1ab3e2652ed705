"""Row sets: the merge kernels against NumPy's set operations, the RowIdTreeMap codec against
bitmaps pylance wrote, the index tree of filters, page searches against brute force."""

from __future__ import annotations

import struct

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings, strategies as st

from lancejit.core.errors import CorruptFileError
from lancejit.table.indices.scalar import rowset
from lancejit.table.indices.scalar.btree import BTreeIndex, BTreePage, search_page
from lancejit.table.indices.scalar.domain import Query, convert

sets = st.lists(st.integers(0, 2**40), max_size=300).map(lambda v: np.unique(np.array(v, dtype=np.uint64)))


@settings(max_examples=200, deadline=None)
@given(sets, sets)
def test_merge_kernels_match_numpy(a, b):
    assert np.array_equal(rowset.union(a, b), np.union1d(a, b))
    assert np.array_equal(rowset.intersect(a, b), np.intersect1d(a, b))
    assert np.array_equal(rowset.difference(a, b), np.setdiff1d(a, b))
    big_a = np.unique(np.concatenate([a, a + np.uint64(7), np.arange(100, dtype=np.uint64)]))  # kernel sizes
    assert np.array_equal(rowset.union(big_a, b), np.union1d(big_a, b))
    assert np.array_equal(rowset.intersect(big_a, b), np.intersect1d(big_a, b))
    assert np.array_equal(rowset.difference(big_a, b), np.setdiff1d(big_a, b))
    assert np.array_equal(rowset.union_many([a, b, big_a, a]), np.unique(np.concatenate([a, b, big_a])))


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 5), st.integers(0, 200_000)), max_size=500))
def test_treemap_round_trip(pairs):
    rows = np.unique(np.array([(f << 32) | o for f, o in pairs], dtype=np.uint64))
    back, full = rowset.decode_treemap(rowset.encode_treemap(rows))
    assert np.array_equal(back, rows) and len(full) == 0


def test_treemap_full_fragments_and_corruption():
    data = struct.pack("<III", 1, 7, 0)  # fragment 7, every row
    rows, full = rowset.decode_treemap(data)
    assert len(rows) == 0 and full.tolist() == [7]
    for bad in (b"", struct.pack("<I", 5), struct.pack("<III", 1, 0, 100), struct.pack("<IIIII", 2, 3, 0, 1, 0)):
        with pytest.raises(CorruptFileError):
            rowset.decode_treemap(bad)


def _page(values: pa.Array) -> BTreePage:
    ids = np.arange(len(values), dtype=np.uint64)
    return BTreePage.from_table(pa.table({"values": values, "ids": pa.array(ids)}))


@settings(max_examples=150, deadline=None)
@given(st.lists(st.one_of(st.none(), st.integers(-50, 50)), min_size=1, max_size=200),
       st.integers(-60, 60), st.integers(-60, 60), st.lists(st.integers(-60, 60), max_size=6))
def test_page_search_matches_brute_force(values, lo, hi, keys):
    arr = pa.array(values, pa.int64())
    page = _page(arr)  # an unsorted page is sorted on load
    py = values

    def brute(pred):
        return sorted(i for i, v in enumerate(py) if v is not None and pred(v))

    t = pa.int64()

    def search(q: Query) -> list[int]:
        return sorted(search_page(page, convert(q, t)).tolist())

    assert search(Query("eq", (lo,))) == brute(lambda v: v == lo)
    if keys:
        assert search(Query("in", tuple(keys))) == brute(lambda v: v in keys)
    assert search(Query("range", lo=lo, hi=hi)) == brute(lambda v: lo <= v <= hi)
    assert search(Query("range", lo=lo, lo_incl=False, hi=hi, hi_incl=False)) == brute(lambda v: lo < v < hi)
    assert search(Query("null")) == sorted(i for i, v in enumerate(py) if v is None)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(-1000, 1000), min_size=1, max_size=400), st.integers(1, 50), st.integers(-1100, 1100),
       st.integers(0, 300))
def test_page_lookup_finds_every_page_holding_a_range(values, batch, lo, width):
    """The lookup's candidate pages hold every row of a range (pages in value order, as the
    reference writes them)."""
    from lancejit.table.indices.scalar.writers import btree_files

    vals = pa.array(values, pa.int64())
    data, lookup = (f.table for f in btree_files(vals, np.arange(len(values), dtype=np.uint64), batch_size=batch))
    bt = BTreeIndex.from_lookup(lookup, pa.int64(), batch, data.num_rows)
    assert bt.ordered
    hi = lo + width
    pages = bt.pages_for(convert(Query("range", lo=lo, hi=hi), pa.int64()))
    in_pages = bt.pages_for(convert(Query("in", (lo, hi, lo + 1)), pa.int64()))
    assert {i // batch for i, v in enumerate(data["values"].to_numpy()) if v in (lo, hi, lo + 1)} <= set(in_pages)
    sv = data["values"].to_numpy()
    need = {i // batch for i, v in enumerate(sv) if lo <= v <= hi}
    assert need <= set(pages.tolist())


addresses = st.lists(st.tuples(st.integers(0, 4), st.integers(0, 3000)), max_size=400).map(
    lambda v: np.unique(np.array([(f << 32) | o for f, o in v], dtype=np.uint64)))


@settings(max_examples=150, deadline=None)
@given(st.lists(addresses, max_size=12), st.integers(0, 2))
def test_union_many_dense_and_sorted_ways_match_numpy(sets, dense_min):
    """Unions of many sets through the mask kernels (dense) or one sort, equal to NumPy's."""
    want = np.unique(np.concatenate(sets)) if sets else np.zeros(0, dtype=np.uint64)
    saved = rowset.DENSE_MIN, rowset.DENSE_SPAN
    try:  # always the mask, the mask when dense, never
        rowset.DENSE_MIN, rowset.DENSE_SPAN = ((0, 1 << 40), (64, 8), (1 << 30, 8))[dense_min]
        assert np.array_equal(rowset.union_many(list(sets)), want)
    finally:
        rowset.DENSE_MIN, rowset.DENSE_SPAN = saved
    if len(sets) > 3 and sum(len(s) for s in sets):
        total = sum(len(s) for s in sets)
        got = rowset._union_mask([s for s in sets if len(s)], total)
        assert got is None or np.array_equal(got, want)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 40), st.integers(0, 1 << 20)), max_size=300), st.sampled_from([2, 33, 10**6]))
def test_of_fragment_runs_and_spans(pairs, gallop):
    rows = np.array([(f << 32) | o for f, o in pairs], dtype=np.uint64)
    got = rowset.of(rows)
    assert np.array_equal(got, np.unique(rows))
    assert np.array_equal(rowset.of(np.unique(rows), unique=True), np.unique(rows))
    saved = rowset._GALLOP
    try:
        rowset._GALLOP = gallop
        ids, bounds = rowset.fragment_runs(got)
    finally:
        rowset._GALLOP = saved
    high = (got >> np.uint64(32)).astype(np.int64)
    assert ids.tolist() == sorted(set(high.tolist()))
    for i, f in enumerate(ids.tolist()):
        assert bounds[i] < bounds[i + 1] and (high[bounds[i]:bounds[i + 1]] == f).all()
    assert bounds[-1] == len(got)
    # spans one after the other, in any order
    spans = [(int(a), int(b)) for a, b in zip(bounds[:-1], bounds[1:])][::-1]
    idx = rowset.span_positions(np.array([a for a, _ in spans], dtype=np.int64),
                                np.array([b for _, b in spans], dtype=np.int64))
    assert got[idx].tolist() == [v for a, b in spans for v in got[a:b].tolist()]
