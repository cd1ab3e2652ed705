"""The 2.0 end-offset kernel against a plain NumPy version (hypothesis property tests)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from lancejit.encoding.kernels.v20_offsets import decode_end_offsets
from lancejit.encoding.v20.rowranges import bits_from_ranges, indices_to_ranges, merge_touching, split_by_pages


def numpy_decode(vals, seg_rows, implicit_zero, adjustment):
    """Reference: prepend the implicit 0, un-adjust, diff within segments."""
    vals = np.asarray(vals, dtype=np.uint64)
    if implicit_zero:
        vals = np.concatenate([np.zeros(1, np.uint64), vals])
    null = vals >= np.uint64(adjustment)
    norm = np.where(null, vals - np.uint64(adjustment), vals).astype(np.int64)
    seg_len = np.asarray(seg_rows, dtype=np.int64) + 1
    starts = np.cumsum(seg_len) - seg_len
    keep = np.ones(len(vals), bool)
    keep[starts] = False
    lengths = np.diff(norm)[keep[1:]]
    return lengths, ~null[keep], norm[starts], norm[starts + seg_len - 1]


@st.composite
def offsets_case(draw):
    nseg = draw(st.integers(1, 6))
    seg_rows = [draw(st.integers(0, 8)) for _ in range(nseg)]
    implicit = draw(st.booleans())
    total_vals = sum(seg_rows) + nseg - int(implicit)
    ends = sorted(draw(st.lists(st.integers(0, 1000), min_size=total_vals, max_size=total_vals)))
    # make segments independent but monotone inside each segment
    adjustment = 1001
    nulls = draw(st.lists(st.booleans(), min_size=total_vals, max_size=total_vals))
    vals = [e + adjustment if n else e for e, n in zip(ends, nulls)]
    return np.array(vals, dtype=np.uint64), np.array(seg_rows, dtype=np.int64), implicit, adjustment


@settings(max_examples=300, deadline=None)
@given(offsets_case())
def test_kernel_matches_numpy(case):
    vals, seg_rows, implicit, adj = case
    n, k = int(seg_rows.sum()), len(seg_rows)
    lengths = np.empty(n, np.int64)
    valid = np.empty(n, np.bool_)
    firsts = np.empty(k, np.int64)
    lasts = np.empty(k, np.int64)
    bad = decode_end_offsets(vals, seg_rows, k, implicit, np.uint64(adj), lengths, valid, firsts, lasts)
    assert bad == -1
    el, ev, ef, elast = numpy_decode(vals, seg_rows, implicit, adj)
    assert np.array_equal(lengths, el)
    assert np.array_equal(valid, ev)
    assert np.array_equal(firsts, ef)
    assert np.array_equal(lasts, elast)


def test_kernel_reports_decreasing_offsets():
    vals = np.array([5, 3, 9], dtype=np.uint64)
    out = [np.empty(3, np.int64), np.empty(3, np.bool_), np.empty(1, np.int64), np.empty(1, np.int64)]
    assert decode_end_offsets(vals, np.array([3], np.int64), 1, True, np.uint64(100), *out) == 1


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 200), min_size=0, max_size=60, unique=True),
       st.lists(st.integers(1, 40), min_size=1, max_size=8))
def test_split_by_pages_covers_rows(indices, page_sizes):
    starts = np.concatenate([[0], np.cumsum(page_sizes)]).astype(np.int64)
    idx = np.array(sorted(i for i in indices if i < starts[-1]), dtype=np.int64)
    ranges = indices_to_ranges(idx)
    rows = []
    for page, local in split_by_pages(ranges, starts):
        assert len(local) and (local[:, 1] <= page_sizes[page]).all() and (local[:, 0] >= 0).all()
        for s, e in local.tolist():
            rows.extend(range(starts[page] + s, starts[page] + e))
    assert rows == idx.tolist()
    merged = merge_touching(ranges)
    assert [r for s, e in merged.tolist() for r in range(s, e)] == idx.tolist()


@settings(max_examples=200, deadline=None)
@given(st.binary(min_size=1, max_size=40), st.data())
def test_bits_from_ranges_matches_unpackbits(data, draw):
    nbits = len(data) * 8
    a = draw.draw(st.integers(0, nbits))
    b = draw.draw(st.integers(a, nbits))
    arr = np.frombuffer(data, np.uint8)
    got = bits_from_ranges(arr, np.array([a // 8]), np.array([a % 8]), np.array([b - a]))
    want = np.unpackbits(arr, bitorder="little")[a:b].astype(bool)
    assert np.array_equal(got, want)
