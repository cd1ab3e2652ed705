"""Packing fragments into Spark input partitions (:mod:`lancejit.spark.partitions`), no Spark."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from lancejit.spark.partitions import estimate_bytes, plan_partitions


def _check(ids, rows, fbytes, plan, max_rows=None):
    """Every physical row of every fragment once, in dataset order; byte/row limits kept."""
    pieces = [p for part in plan.partitions for p in part]
    want = [(i, r) for i, n in zip(ids, rows) for r in range(n)]
    got = [(p.fragment_id, r) for p in pieces for r in range(p.lo, p.hi)]
    assert got == want
    assert all(p.hi > p.lo for p in pieces)
    per_row = {i: b / n for i, n, b in zip(ids, rows, fbytes) if n}
    for part in plan.partitions:
        b = sum(per_row[p.fragment_id] * (p.hi - p.lo) for p in part)
        if len(part) > 1:  # a lone piece may exceed nothing it could be split under
            assert b <= plan.max_split_bytes + len(part)
            if max_rows is not None:
                assert sum(p.hi - p.lo for p in part) <= max_rows
    if max_rows is not None:
        assert all(p.hi - p.lo <= max_rows for p in pieces)


@settings(max_examples=200, deadline=None)
@given(
    sizes=st.lists(st.tuples(st.integers(0, 5000), st.integers(1, 400)), min_size=0, max_size=60),
    max_bytes=st.integers(1, 2_000_000),
    open_cost=st.integers(0, 100_000),
    parts=st.integers(1, 16),
    max_rows=st.one_of(st.none(), st.integers(1, 3000)),
)
def test_every_row_once_in_order(sizes, max_bytes, open_cost, parts, max_rows):
    ids = [3 * i + 1 for i in range(len(sizes))]
    rows = [n for n, _ in sizes]
    fbytes = [n * bpr for n, bpr in sizes]
    plan = plan_partitions(ids, rows, fbytes, max_partition_bytes=max_bytes, open_cost=open_cost,
                           min_partitions=parts, max_rows=max_rows)
    _check(ids, rows, fbytes, plan, max_rows)
    if not any(rows):
        assert plan.partitions == ()


def test_small_fragments_fit_the_cores():
    # 2,000 fragments of 100 rows (~10 KiB each): one partition per core, as Spark's minPartitionNum
    ids = np.arange(2000)
    plan = plan_partitions(ids, np.full(2000, 100), np.full(2000, 10_000), min_partitions=2)
    assert len(plan.partitions) == 2
    plan = plan_partitions(ids, np.full(2000, 100), np.full(2000, 10_000), min_partitions=8)
    assert 8 <= len(plan.partitions) <= 9
    # Spark's own open cost (4 MiB a file) packs 2,000 small files into ~63 partitions
    plan = plan_partitions(ids, np.full(2000, 100), np.full(2000, 10_000), min_partitions=2,
                           open_cost=4 << 20)
    assert 60 <= len(plan.partitions) <= 70


def test_big_fragments_are_split():
    # one 1 GiB fragment: pieces of at most maxPartitionBytes (128 MiB)
    plan = plan_partitions([7], [1_000_000], [1 << 30], min_partitions=2)
    assert len(plan.partitions) == 8 and all(len(p) == 1 for p in plan.partitions)
    assert all(not p[0].whole for p in plan.partitions)
    # a small one spread over the cores
    plan = plan_partitions([7], [1_000_000], [80 << 20], min_partitions=2)
    assert [(p[0].lo, p[0].hi) for p in plan.partitions] == [(0, 500_000), (500_000, 1_000_000)]
    # rows cap
    plan = plan_partitions([1, 2, 3], [100, 10, 20], [100, 10, 20], min_partitions=1, max_rows=33)
    assert [[(p.fragment_id, p.lo, p.hi) for p in part] for part in plan.partitions] == [
        [(1, 0, 25)], [(1, 25, 50)], [(1, 50, 75)], [(1, 75, 100)], [(2, 0, 10), (3, 0, 20)]]


def test_unknown_sizes_are_estimated():
    got = estimate_bytes(np.array([1000, 0, 3000]), np.array([10, 20, 30]))
    assert got.tolist() == [1000, 2000, 3000]
    assert estimate_bytes(np.array([0, 0]), np.array([1, 2])).tolist() == [64, 128]
