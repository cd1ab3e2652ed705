"""BTREE pages searched side by side (the page slab): its kernels against their NumPy versions
and its searches against brute force over the indexed values, for integer, unsigned, float
(NaN, -0.0) and boolean columns with NULLs and values repeated across page edges."""

from __future__ import annotations

import math

import numpy as np
import pyarrow as pa
from hypothesis import given, settings, strategies as st

from lancejit.encoding.kernels import readonly
from lancejit.table.indices.scalar import btree_slab
from lancejit.table.indices.scalar.btree import BTreeIndex, BTreePage
from lancejit.table.indices.scalar.domain import Query, convert
from lancejit.table.indices.scalar.writers import btree_files


def _slab(values: list, t: pa.DataType, batch: int, load: str = "all"):
    vals = pa.array(values, t)
    data, lookup_t = (f.table for f in btree_files(vals, np.arange(len(values), dtype=np.uint64), batch_size=batch))
    lookup = BTreeIndex.from_lookup(lookup_t, t, batch, data.num_rows)
    dtype = btree_slab.search_dtype(lookup)
    assert dtype is not None
    slab = btree_slab.PageSlab.empty(lookup, dtype)
    return lookup, slab, data


def _fill(lookup, slab, data, pages) -> None:
    for p in slab.missing(np.asarray(pages, dtype=np.int64)).tolist():
        start, n = lookup.page_rows(p)
        slab.fill(p, BTreePage.from_table(data.slice(start, n)))


def _search(lookup, slab, data, q: Query, t: pa.DataType) -> list[int]:
    c = convert(q, t)
    pages = lookup.pages_for(c)
    _fill(lookup, slab, data, pages)
    return sorted(slab.search(lookup, c).tolist()) if len(pages) else []


def _brute(values: list, pred) -> list[int]:
    return sorted(i for i, v in enumerate(values) if v is not None and pred(v))


ints = st.lists(st.one_of(st.none(), st.integers(-40, 40)), min_size=1, max_size=300)


@settings(max_examples=150, deadline=None)
@given(ints, st.integers(1, 40), st.integers(-45, 45), st.integers(-45, 45), st.lists(st.integers(-45, 45), max_size=12))
def test_integer_searches_match_brute_force(values, batch, lo, hi, keys):
    t = pa.int32()
    lookup, slab, data = _slab(values, t, batch)
    assert _search(lookup, slab, data, Query("eq", (lo,)), t) == _brute(values, lambda v: v == lo)
    if keys:
        assert _search(lookup, slab, data, Query("in", tuple(keys)), t) == _brute(values, lambda v: v in keys)
    assert _search(lookup, slab, data, Query("range", lo=lo, hi=hi), t) == _brute(values, lambda v: lo <= v <= hi)
    assert _search(lookup, slab, data, Query("range", lo=lo, lo_incl=False, hi=hi, hi_incl=False), t) == \
        _brute(values, lambda v: lo < v < hi)
    assert _search(lookup, slab, data, Query("range", lo=lo), t) == _brute(values, lambda v: v >= lo)
    assert _search(lookup, slab, data, Query("range", hi=hi, hi_incl=False), t) == _brute(values, lambda v: v < hi)
    assert _search(lookup, slab, data, Query("null"), t) == sorted(i for i, v in enumerate(values) if v is None)


@settings(max_examples=80, deadline=None)
@given(st.lists(st.one_of(st.none(), st.integers(0, 2**64 - 1), st.sampled_from([2**63, 2**64 - 1, 0])),
                min_size=1, max_size=200), st.integers(1, 30), st.integers(0, 2**64 - 1))
def test_uint64_beyond_int64(values, batch, key):
    t = pa.uint64()
    lookup, slab, data = _slab(values, t, batch)
    assert slab.values.dtype == np.uint64
    assert _search(lookup, slab, data, Query("range", lo=key), t) == _brute(values, lambda v: v >= key)
    assert _search(lookup, slab, data, Query("eq", (key,)), t) == _brute(values, lambda v: v == key)


floats = st.lists(st.one_of(st.none(), st.sampled_from([math.nan, -0.0, 0.0, 1.5, -1.5, math.inf, -math.inf]),
                            st.floats(-10, 10)), min_size=1, max_size=200)


@settings(max_examples=100, deadline=None)
@given(floats, st.integers(1, 30), st.floats(-12, 12), st.floats(-12, 12))
def test_float_searches_keep_nan_out_of_bounded_ends(values, batch, lo, hi):
    """Bounded ends never hold NaN; an open end holds it (NaN sorts above every number), as the
    page-by-page search does."""
    t = pa.float64()
    lookup, slab, data = _slab(values, t, batch)
    nan = sorted(i for i, v in enumerate(values) if v is not None and math.isnan(v))
    assert _search(lookup, slab, data, Query("range", lo=lo, hi=hi), t) == _brute(values, lambda v: lo <= v <= hi)
    assert _search(lookup, slab, data, Query("range", lo=lo), t) == sorted(_brute(values, lambda v: v >= lo) + nan)
    assert _search(lookup, slab, data, Query("eq", (0,)), t) == _brute(values, lambda v: v == 0)
    assert _search(lookup, slab, data, Query("in", (lo, 1.5, -0.0)), t) == _brute(values, lambda v: v in (lo, 1.5, 0.0))
    assert not btree_slab.searchable(convert(Query("eq", (math.nan,)), t), np.dtype(np.float64))


@settings(max_examples=40, deadline=None)
@given(st.lists(st.one_of(st.none(), st.booleans()), min_size=1, max_size=100), st.integers(1, 20))
def test_booleans(values, batch):
    t = pa.bool_()
    lookup, slab, data = _slab(values, t, batch)
    for b in (True, False):
        assert _search(lookup, slab, data, Query("eq", (b,)), t) == _brute(values, lambda v, b=b: v is b)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(-30, 30), min_size=1, max_size=300), st.integers(1, 25),
       st.lists(st.tuples(st.integers(-35, 35), st.integers(0, 10), st.integers(0, 15)), min_size=1, max_size=10))
def test_spans_kernel_matches_numpy(values, batch, intervals):
    t = pa.int64()
    lookup, slab, data = _slab(values, t, batch)
    _fill(lookup, slab, data, np.arange(lookup.num_pages))
    q_lo = np.array([a for a, _, _ in intervals], dtype=np.int64)
    q_hi = q_lo + np.array([w for _, w, _ in intervals], dtype=np.int64)
    flags = np.array([f for _, _, f in intervals], dtype=np.uint8)
    first, last = np.zeros(len(q_lo), dtype=np.int64), np.full(len(q_lo), lookup.num_pages, dtype=np.int64)
    room = int((last - first).sum())
    out_a, out_b = np.empty(room, dtype=np.int64), np.empty(room, dtype=np.int64)
    n = btree_slab._spans(*(readonly(a) for a in (slab.values, slab.vstart, slab.vstop, lookup.page_idx, q_lo, q_hi,
                                                   flags, first, last)), out_a, out_b)
    want_a, want_b = btree_slab.spans_numpy(slab.values, slab.vstart, slab.vstop, lookup.page_idx, q_lo, q_hi, flags,
                                            first, last)
    assert out_a[:n].tolist() == want_a.tolist() and out_b[:n].tolist() == want_b.tolist()
