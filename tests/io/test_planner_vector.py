"""The vectorised planner path (many ranges / array input) equals the plain Python path."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lancejit.core.errors import InvalidInputError
from lancejit.io import planner
from lancejit.io.planner import _plan_small, _plan_vector, assemble, plan_reads, range_array

DATA = np.random.default_rng(3).integers(0, 256, 50_000, dtype=np.uint8).tobytes()


@st.composite
def many_ranges(draw):
    n = draw(st.integers(0, 300))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    starts = rng.integers(0, len(DATA), n)
    lengths = rng.integers(0, draw(st.integers(1, 4_000)), n)
    lengths[rng.random(n) < 0.1] = 0  # some empty ranges
    ends = np.minimum(starts + lengths, len(DATA))
    return [(int(s), int(e)) for s, e in zip(starts, ends)]


@settings(max_examples=60, deadline=None)
@given(ranges=many_ranges(), block_size=st.integers(0, 3_000), max_request=st.integers(1, 9_000))
def test_vector_plan_equals_small_plan(ranges, block_size, max_request):
    small = _plan_small(list(ranges), block_size, max_request)
    vec = _plan_vector(range_array(ranges), block_size, max_request)
    assert vec.reads == small.reads
    assert vec.slices == small.slices
    buffers = [memoryview(DATA[r.start:r.end]) for r in vec.reads]
    assert [bytes(b) for b in assemble(vec, buffers)] == [DATA[s:e] for s, e in ranges]
    assert list(vec.requested) == list(small.requested)


def test_array_input_and_threshold():
    ranges = [(i * 10, i * 10 + 5) for i in range(planner.VECTOR_MIN + 5)]
    a = plan_reads(ranges, 5, 1 << 20)
    b = plan_reads(np.array(ranges), 5, 1 << 20)
    assert a.reads == b.reads and a.slices == b.slices and a.num_requests == 1
    assert a.bytes_read == ranges[-1][1] and a.bytes_requested == 5 * len(ranges)


def test_range_array_rejects_bad_input():
    for bad in ([(5, 4)] * 30, [(-1, 3)] * 30, [("a", "b")] * 30, [(1, 2, 3)] * 30):
        with pytest.raises(InvalidInputError):
            plan_reads(bad, 0, 10)
    with pytest.raises(InvalidInputError):
        range_array(np.array([[0.5, 1.0]]))
