"""Property tests of the pure read planner."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lancejit.core.errors import InvalidInputError
from lancejit.io.planner import PhysicalRead, Slice, assemble, merge_ranges, plan_reads

FILE_SIZE = 20_000
DATA = np.random.default_rng(42).integers(0, 256, FILE_SIZE, dtype=np.uint8).tobytes()


@st.composite
def range_lists(draw, max_len: int = 3_000):
    n = draw(st.integers(0, 30))
    out = []
    for _ in range(n):
        start = draw(st.integers(0, FILE_SIZE))
        length = draw(st.integers(0, min(max_len, FILE_SIZE - start)))
        out.append((start, start + length))
    if out and draw(st.booleans()):  # duplicates
        out.extend(draw(st.lists(st.sampled_from(out), max_size=5)))
    return out


def naive_runs(ranges, block_size):
    """Reference merge: repeatedly join any two runs whose gap is <= block_size."""
    runs = [list(r) for r in ranges if r[1] > r[0]]
    changed = True
    while changed:
        changed = False
        runs.sort()
        for i in range(len(runs) - 1):
            a, b = runs[i], runs[i + 1]
            if b[0] <= a[1] + block_size:
                runs[i] = [a[0], max(a[1], b[1])]
                del runs[i + 1]
                changed = True
                break
    return [tuple(r) for r in runs]


def runs_of(reads):
    """Re-join adjacent split parts into the merged runs they came from."""
    runs = []
    for r in reads:
        if runs and runs[-1][1] == r.start:
            runs[-1] = (runs[-1][0], r.end)
        else:
            runs.append((r.start, r.end))
    return runs


@settings(max_examples=300, deadline=None)
@given(ranges=range_lists(), block_size=st.integers(0, 5_000), max_request=st.integers(1, 6_000))
def test_plan_properties(ranges, block_size, max_request):
    plan = plan_reads(ranges, block_size, max_request)
    reads = plan.reads
    # exact bytes back
    buffers = [memoryview(DATA[r.start:r.end]) for r in reads]
    out = assemble(plan, buffers)
    assert [bytes(b) for b in out] == [DATA[s:e] for s, e in ranges]
    assert plan.num_requests == len(reads)
    # physical reads: sorted, disjoint, non-empty, never longer than the maximum
    for r in reads:
        assert 0 < r.length <= max_request
    for a, b in zip(reads, reads[1:]):
        # adjacent reads are either parts of one split run (gap 0) or runs further apart than a block
        assert b.start == a.end or b.start - a.end > block_size
    # merged runs equal the naive merge (so merges respect the block size and are maximal)
    assert runs_of(reads) == naive_runs(ranges, block_size)
    # split runs: near-equal parts, as few as possible
    pos = 0
    for run_start, run_end in runs_of(reads):
        parts = []
        while pos < len(reads) and reads[pos].end <= run_end:
            parts.append(reads[pos])
            pos += 1
        assert parts[0].start == run_start and parts[-1].end == run_end
        assert len(parts) == -(-(run_end - run_start) // max_request)
        lengths = [p.length for p in parts]
        assert max(lengths) - min(lengths) <= 1
    # zero-copy whenever a range fits in one physical read
    for (s, e), parts, view in zip(ranges, plan.slices, out):
        if e == s:
            assert parts == () and len(view) == 0
        elif len(parts) == 1:
            assert view.obj is buffers[parts[0].read].obj


@settings(max_examples=100, deadline=None)
@given(ranges=range_lists())
def test_plan_without_merging_or_splitting(ranges):
    plan = plan_reads(ranges, 0, 1 << 40)
    # with block_size 0 only touching/overlapping ranges merge
    assert runs_of(plan.reads) == naive_runs(ranges, 0)
    assert all(len(parts) <= 1 for parts in plan.slices)


def test_examples():
    plan = plan_reads([(100, 200), (0, 10), (12, 20), (5, 15)], block_size=4, max_request_size=1_000)
    assert plan.reads == (PhysicalRead(0, 20), PhysicalRead(100, 200))
    assert plan.slices == ((Slice(1, 0, 100),), (Slice(0, 0, 10),), (Slice(0, 12, 20),), (Slice(0, 5, 15),))
    split = plan_reads([(0, 10)], block_size=0, max_request_size=3)
    assert [r.length for r in split.reads] == [3, 3, 2, 2]
    assert split.slices == ((Slice(0, 0, 3), Slice(1, 0, 3), Slice(2, 0, 2), Slice(3, 0, 2)),)
    assert merge_ranges([(5, 5), (0, 2), (3, 4)], 1) == [(0, 4)]
    assert plan_reads([], 4096, 1).reads == ()
    assert plan_reads([(7, 7)], 4096, 1).reads == ()


def test_bad_input():
    with pytest.raises(InvalidInputError):
        plan_reads([(5, 4)], 0, 10)
    with pytest.raises(InvalidInputError):
        plan_reads([(-1, 4)], 0, 10)
    with pytest.raises(InvalidInputError):
        plan_reads([(0, 4)], -1, 10)
    with pytest.raises(InvalidInputError):
        plan_reads([(0, 4)], 0, 0)
    plan = plan_reads([(0, 4)], 0, 10)
    with pytest.raises(InvalidInputError):
        assemble(plan, [])
