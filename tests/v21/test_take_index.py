"""The array take path (encoding/v21/take_index, file/take_plan, kernels/take): the planner
kernel against a NumPy reference, and takes equal to pylance on files whose columns use it
(several pages, every value kind), with request order, duplicates and one read per take."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lancejit.encoding.kernels.take import plan_take
from lancejit.file.reader import LanceFileReader
from v21data import floats, ints, strings, temporal, vectors
from v21support import reference, tables_equal, write_lance


# ------------------------------------------------------------------ planner vs NumPy
def plan_reference(seg_key, seg_b0, seg_stride, seg_len, col_base, rows):
    """Plain NumPy: per item segment, row inside it, its byte range; unique ranges sorted."""
    keys = (col_base[:, None] + rows[None, :]).reshape(-1)
    seg = np.searchsorted(seg_key, keys, side="right") - 1
    inner = keys - seg_key[seg]
    start = seg_b0[seg] + inner * seg_stride[seg]
    end = start + seg_len[seg]
    uniq, first = np.unique(start, return_index=True)
    ranges = np.stack([uniq, end[first]], axis=1)
    pos = np.concatenate([[0], np.cumsum(ranges[:, 1] - ranges[:, 0])])[:-1]
    item_pos = pos[np.searchsorted(uniq, start)]
    return seg, inner, item_pos, ranges


@st.composite
def segment_tables(draw):
    ncols = draw(st.integers(1, 4))
    num_rows = draw(st.integers(1, 300))
    keys, b0, stride, length = [], [], [], []
    pos = 0
    for j in range(ncols):
        base = j * (num_rows + 1)
        cuts = sorted(set(draw(st.lists(st.integers(1, num_rows - 1), max_size=8)) if num_rows > 1 else []))
        bounds = [0, *cuts, num_rows]
        for a, b in zip(bounds[:-1], bounds[1:]):
            keys.append(base + a)
            if draw(st.booleans()):  # a mini-block chunk: the whole chunk is read
                size = 8 * draw(st.integers(1, 20))
                b0.append(pos)
                stride.append(0)
                length.append(size)
                pos += size + 8 * draw(st.integers(0, 3))
            else:  # full-zip rows of a fixed width
                w = draw(st.integers(1, 16))
                b0.append(pos)
                stride.append(w)
                length.append(w)
                pos += w * (b - a)
    rows = draw(st.lists(st.integers(0, num_rows - 1), min_size=1, max_size=40))
    arr = lambda v: np.asarray(v, dtype=np.int64)  # noqa: E731
    col_base = np.arange(ncols, dtype=np.int64) * (num_rows + 1)
    return arr(keys), arr(b0), arr(stride), arr(length), col_base, arr(rows)


@settings(max_examples=150, deadline=None)
@given(segment_tables())
def test_plan_take_matches_numpy(tables):
    seg_key, seg_b0, seg_stride, seg_len, col_base, rows = tables
    n = col_base.size * rows.size
    item_seg, item_in, item_pos = (np.empty(n, np.int64) for _ in range(3))
    ranges = np.empty((n, 2), np.int64)
    nr = plan_take(seg_key, seg_b0, seg_stride, seg_len, col_base, rows, item_seg, item_in, item_pos, ranges)
    seg, inner, pos, ref_ranges = plan_reference(seg_key, seg_b0, seg_stride, seg_len, col_base, rows)
    np.testing.assert_array_equal(ranges[:nr], ref_ranges)
    np.testing.assert_array_equal(item_seg, seg)
    np.testing.assert_array_equal(item_in, inner)
    np.testing.assert_array_equal(item_pos, pos)


# ------------------------------------------------------------------ files vs pylance
def _table(rng, n):
    return pa.table({
        "i64": ints(rng, n, pa.int64(), nulls=0),
        "i32": ints(rng, n, pa.int32(), nulls=0),
        "seq": pa.array(np.arange(n, dtype=np.int64) * 3),  # bit-packed
        "f64": floats(rng, n, nulls=0),
        "ts": temporal(rng, n, pa.timestamp("us"), nulls=0),
        "s": strings(rng, n, nulls=0, maxlen=30),
        "dict": strings(rng, n, nulls=0, maxlen=40, card=50),  # dictionary pages
        "ndict": strings(rng, n, nulls=0.2, maxlen=20, card=30),
        "dint": pa.array(rng.integers(0, 5, n) * 1_000_000_007),
        "ls": strings(rng, n, pa.large_string(), nulls=0),
        "bin": strings(rng, n, pa.binary(), nulls=0),
        "vec": vectors(rng, n, dim=16, nulls=0),
        "nullable": ints(rng, n, pa.int64(), nulls=0.3),  # def levels (out-of-line bit-packed)
        "nseq": pa.array(np.arange(n, dtype=np.int64), mask=rng.random(n) < 0.1),  # bit-packed + nulls
        "nf": floats(rng, n, nulls=0.05),
        "ns": strings(rng, n, nulls=0.2, maxlen=30),
        "nvec": vectors(rng, n, dim=4, nulls=0.1),
        "lists": pa.array([[i] * (i % 3) for i in range(n)]),  # repetition: general path
    })


FAST = ["i64", "i32", "seq", "f64", "ts", "s", "ls", "bin", "vec", "nullable", "nseq", "nf", "ns", "nvec",
        "dict", "ndict", "dint"]


@pytest.mark.parametrize("version", ["2.1", "2.2"])
@pytest.mark.parametrize("pages", [None, 16 * 1024])
def test_take_equals_pylance(tmp_path, version, pages):
    rng = np.random.default_rng(7 if pages else 3)
    n = 20_000
    table = _table(rng, n)
    path = write_lance(tmp_path / "t.lance", table, version, max_page_bytes=pages)
    ours = LanceFileReader(str(path))
    full = reference(path).read_all().to_table()
    for seed in range(3):
        r = np.random.default_rng(seed)
        for k in (1, 7, 300):
            idx = r.integers(0, n, k)
            idx[: k // 3] = idx[0]  # duplicates, unsorted
            got = ours.take_rows(idx, columns=FAST)
            want = full.take(pa.array(idx)).select(FAST)
            tables_equal(got, want)
    projection = ours.async_reader._projections[tuple(FAST)]
    used = projection[1] is not None
    if version == "2.2":
        assert used, "every FAST column should take the array path on 2.2 files"
    # list columns keep the general path, results still equal
    idx = np.array([5, 3, n - 1, 3])
    for other in ("lists",):
        tables_equal(ours.take_rows(idx, columns=["i64", other]), full.take(pa.array(idx)).select(["i64", other]))
        assert ours.async_reader._projections[("i64", other)][1] is None


def test_take_one_batched_read(tmp_path):
    rng = np.random.default_rng(11)
    n = 50_000
    table = _table(rng, n)
    path = write_lance(tmp_path / "t.lance", table, "2.2")
    ours = LanceFileReader(str(path))
    cols = ["i64", "f64", "s", "vec"]
    ours.take_rows([1], columns=cols)  # loads the chunk tables
    calls = []
    inner = ours.async_reader._scheduler
    orig = inner.read_ranges

    async def counting(ranges, *, priority=0):
        calls.append(len(ranges))
        return await orig(ranges, priority=priority)

    inner.read_ranges = counting
    before = ours.io_stats().read_iops
    got = ours.take_rows([n - 1, 0, 25_000], columns=cols)
    assert len(calls) == 1  # one batched read for all columns
    assert ours.io_stats().read_iops - before <= 3 * len(cols)  # at most one per row and column
    tables_equal(got, table.take(pa.array([n - 1, 0, 25_000])).select(cols))


def test_projection_keys(tmp_path):
    """A column name as a str, a list, and unhashable/bad column lists keep their own results."""
    from lancejit.core.errors import InvalidInputError

    table = pa.table({"i": np.arange(10, dtype=np.int64), "d": np.arange(10, dtype=np.float64),
                      "id": np.arange(10, 20, dtype=np.int64)})
    path = write_lance(tmp_path / "k.lance", table, "2.2")
    ours = LanceFileReader(str(path))
    assert ours.take_rows([3], columns="id").column_names == ["id"]
    assert ours.take_rows([3], columns=["i", "d"]).column_names == ["i", "d"]
    assert ours.take_rows([3], columns="id").column("id").to_pylist() == [13]
    with pytest.raises(InvalidInputError):
        ours.take_rows([3], columns=[["id"]])
