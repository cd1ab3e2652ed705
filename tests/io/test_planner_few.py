"""The scalar plan of a few sorted ranges (``_plan_sorted_few``, used by takes) gives the same
reads and slices as the vector plan, and declines what it does not handle."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from lancejit.io.planner import _plan_sorted_few, _plan_vector, assemble, plan_reads


@st.composite
def sorted_ranges(draw):
    n = draw(st.integers(1, 16))
    starts = sorted(draw(st.lists(st.integers(0, 5000), min_size=n, max_size=n)))
    lens = draw(st.lists(st.integers(1, 700), min_size=n, max_size=n))
    return np.array([[s, s + ln] for s, ln in zip(starts, lens)], dtype=np.int64)


@settings(max_examples=200, deadline=None)
@given(sorted_ranges(), st.integers(0, 300), st.integers(1, 4000))
def test_few_sorted_matches_vector(arr, block, max_req):
    few = _plan_sorted_few(arr.tolist(), block, max_req)
    vec = _plan_vector(arr, block, max_req)
    if few is None:  # only declines runs that need splitting
        runs = _plan_vector(arr, block, 1 << 40)  # the merged runs, unsplit
        assert any(e - s > max_req for s, e in zip(runs.read_starts, runs.read_ends))
        return
    assert few.read_starts == vec.read_starts and few.read_ends == vec.read_ends
    data = bytes(range(256)) * 40
    bufs = [memoryview(data)[s:e] for s, e in zip(few.read_starts, few.read_ends)]
    got = [bytes(b) for b in assemble(few, bufs)]
    assert got == [data[s:e] for s, e in arr.tolist()]
    assert plan_reads(arr, block, max_req).read_starts == vec.read_starts


def test_few_declines_unsorted_and_empty():
    assert _plan_sorted_few([[10, 20], [0, 5]], 0, 100) is None
    assert _plan_sorted_few([[10, 10]], 0, 100) is None
    assert _plan_sorted_few([[0, 500]], 0, 100) is None  # needs a split
    plan = plan_reads(np.array([[10, 20], [0, 5]], dtype=np.int64), 0, 100)  # falls back, still right
    assert plan.read_starts == [0, 10]
