"""Scans decoding many fragments' columns at once (``table/scan_multi.py``,
``file/multi_decode.py``, kernels in ``encoding/kernels/scan.py``): equal to the reference
(pylance 14) on datasets of 1 to 2,500 fragments, versions 2.1 and 2.2, with deletions, row ids,
column subsets, batch sizes, offsets and limits; the plan kernel against a NumPy reference."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import lancejit.table as lt
import lancejit.table.read.scan_multi as scan_multi
from lancejit.encoding.kernels.scan import SCAN_BAD_ROW, plan_runs

lance = pytest.importorskip("lance")

N = 5000


def _table(n: int, seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    ids = np.arange(n, dtype=np.int64)
    words = ["alpha", "beta", "gamma", "delta", "日本語", "naïve", ""]
    s = [f"user-{i}-{words[i % 7]}" * (1 + i % 3) for i in range(n)]
    long = [("lorem ipsum dolor sit amet " * (1 + i % 5)) + str(i) for i in range(n)]
    vec = pa.FixedSizeListArray.from_arrays(pa.array(rng.standard_normal(4 * n).astype(np.float32)), 4)
    return pa.table({
        "id": ids,
        "x": rng.uniform(-1, 1, n),
        "small": pa.array((ids % 100).astype(np.int32)),
        "s": pa.array(s, pa.string()),
        "long": pa.array(long, pa.string()),
        "vec": vec,
        "n": pa.array([None if i % 9 == 4 else i for i in range(n)], pa.int64()),
        "ns": pa.array([None if i % 5 == 1 else f"v{i}" for i in range(n)], pa.string()),
        "nx": pa.array([None if i % 3 == 0 else i * 0.5 for i in range(n)], pa.float64()),
    })


@pytest.fixture(scope="module", params=[("2.1", 1), ("2.1", 7), ("2.2", 300), ("2.1", 2500)],
                ids=lambda p: f"v{p[0]}-{p[1]}frags")
def dataset(request, tmp_path_factory):
    version, frags = request.param
    path = str(tmp_path_factory.mktemp(f"multi{frags}") / "ds")
    lance.write_dataset(_table(N, frags), path, max_rows_per_file=-(-N // frags), data_storage_version=version,
                        max_rows_per_group=min(1024, -(-N // frags)))
    return path


@pytest.fixture()
def spy(monkeypatch):
    calls = []
    original = scan_multi.read_scans

    async def counting(scans, *args):
        calls.append(len(scans))
        return await original(scans, *args)

    monkeypatch.setattr(scan_multi, "read_scans", counting)
    return calls


COLUMN_SETS = [["id", "x", "s"], ["small"], ["long", "id"], ["vec", "x"], ["n", "ns", "nx"], None]


def test_scan_equals_reference(dataset, spy):
    ref, ours = lance.dataset(dataset), lt.dataset(dataset)
    for cols in COLUMN_SETS:
        assert ours.to_table(columns=cols).equals(ref.to_table(columns=cols)), cols
    assert spy  # the multi-file path served the qualifying projections


def test_deletions_row_ids_batches(dataset, tmp_path, spy):
    import shutil

    path = str(tmp_path / "ds")
    shutil.copytree(dataset, path)
    lance.dataset(path).delete("id % 7 = 3 OR (id >= 1000 AND id < 1400)")
    ref, ours = lance.dataset(path), lt.dataset(path)
    # (the nullable columns may not all have a take index: their units keep the per-unit path,
    # whose units of at least a batch are cut at their own end)
    for cols, full in ((["id", "s", "vec"], True), (["id", "ns", "nx", "n"], False)):
        expected = ref.to_table(columns=cols, with_row_id=True, with_row_address=True)
        assert ours.to_table(columns=cols, with_row_id=True, with_row_address=True).equals(expected)
        for size in (1, 100, 1024, 7000):
            batches = list(ours.to_batches(columns=cols, batch_size=size, with_row_id=True,
                                           with_row_address=True))
            assert all(b.num_rows <= size for b in batches)
            if full and size >= 100:
                assert all(b.num_rows == size for b in batches[:-1])
            assert pa.Table.from_batches(batches).equals(expected)
    for limit, offset in ((10, 0), (100, 333), (None, 4000), (5, 10_000)):
        got = ours.to_table(columns=["id", "x"], limit=limit, offset=offset)
        assert got.equals(ref.to_table(columns=["id", "x"], limit=limit, offset=offset)), (limit, offset)
    assert spy


@pytest.mark.parametrize("version,frags", [("2.1", 1), ("2.1", 2), ("2.2", 2)])
def test_nullable_columns(tmp_path, spy, version, frags):
    """Columns with nulls (out-of-line bit-packed def levels per chunk; files with and without
    nulls mixed) decoded by the multi-file path, validity included.  (Small pages store their
    levels inline bit-packed: no take index, those units keep the per-unit path.)"""
    n = 3000
    t = pa.table({
        "id": np.arange(n, dtype=np.int64),
        "n": pa.array([None if i % 9 == 4 or 1000 <= i < 1100 else i for i in range(n)], pa.int64()),
        "nx": pa.array([None if i % 3 == 0 and i < 2000 else i * 0.5 for i in range(n)], pa.float64()),
        "ns": pa.array([None if i % 5 == 1 and i > 600 else f"v{i}" for i in range(n)], pa.string()),
    })
    path = str(tmp_path / "ds")
    lance.write_dataset(t, path, data_storage_version=version, max_rows_per_file=-(-n // frags))
    lance.dataset(path).delete("id % 11 = 7")
    ref, ours = lance.dataset(path), lt.dataset(path)
    for cols in (["n", "nx", "ns"], ["ns"], ["id", "nx"]):
        assert ours.to_table(columns=cols, with_row_id=True).equals(ref.to_table(columns=cols, with_row_id=True))
    assert spy


def test_same_files_held_whole_and_read_by_ranges(knobs, dataset, monkeypatch, spy):
    """A file's take table is cached with the file: a second dataset object whose readers read
    ranges (not whole small files) decodes with the same tables."""
    ref = lance.dataset(dataset)
    cols = ["id", "s", "long"]
    expected = ref.to_table(columns=cols)
    assert lt.dataset(dataset).to_table(columns=cols).equals(expected)
    knobs(whole_file_bytes=0)
    assert lt.dataset(dataset).to_table(columns=cols).equals(expected)
    assert lt.dataset(dataset).count_rows("id > 10") == ref.count_rows("id > 10")
    assert spy


@pytest.mark.parametrize("idle", [True, False])
def test_decode_in_worker_threads(knobs, dataset, monkeypatch, spy, idle):
    """Columns decoded in a worker thread (``decode_offload_rows``, ``decode_offload_file_rows``; an idle core
    seen, or not: then every group decodes in the reading thread) give the same rows, and
    every worker slot is given back."""
    import threading

    import lancejit.file.multi_decode as md

    knobs(decode_offload_rows=1, decode_offload_file_rows=1)
    monkeypatch.setattr(md, "idle_core", lambda: idle)
    monkeypatch.setattr(md, "_BUSY", md._Slots())
    decoders: set = set()
    original = md._decode_runs

    def where(*args):
        decoders.add(threading.current_thread().name.startswith("lancejit-decode"))
        return original(*args)

    monkeypatch.setattr(md, "_decode_runs", where)
    ref, ours = lance.dataset(dataset), lt.dataset(dataset)
    cols = ["id", "s", "long", "vec", "small"]
    assert ours.to_table(columns=cols).equals(ref.to_table(columns=cols))
    assert spy and md._BUSY.busy == 0
    assert (True in decoders) == idle


def test_fragment_subset_in_given_order(dataset):
    ref, ours = lance.dataset(dataset), lt.dataset(dataset)
    frags = ref.get_fragments()
    if len(frags) < 3:
        pytest.skip("needs several fragments")
    pick = [frags[-1], frags[0], frags[len(frags) // 2]]
    expected = ref.scanner(columns=["id", "s"], fragments=pick).to_table()
    got = ours.scanner(columns=["id", "s"], fragment_ids=[f.fragment_id for f in pick]).to_table()
    assert got.equals(expected)


# ------------------------------------------------- files opened together (_file_scans)


@pytest.fixture(scope="module")
def two_files(tmp_path_factory):
    """12 fragments of 50 rows; every fragment has a second data file holding ``y``."""
    path = str(tmp_path_factory.mktemp("twofiles") / "ds")
    n = 600
    rng = np.random.default_rng(3)
    t = pa.table({"id": np.arange(n, dtype=np.int64), "x": rng.uniform(-1, 1, n),
                  "s": pa.array([f"user-{i}" for i in range(n)], pa.string())})
    ds = lance.write_dataset(t, path, max_rows_per_file=50, data_storage_version="2.1")
    ds.add_columns({"y": "id * 2"})
    ds = lance.dataset(path)
    ds.delete("id % 7 = 3")
    return path


@pytest.mark.parametrize("cols", [["id", "x", "s"], ["s"], ["y"], ["id", "y"], None])
@pytest.mark.parametrize("batch_size", [64, 1000])
def test_cold_and_warm_equal_reference(two_files, spy, cols, batch_size):
    ref = lance.dataset(two_files)
    assert len(ref.get_fragments()[0].data_files()) == 2
    expected = ref.to_table(columns=cols, batch_size=batch_size)
    ours = lt.dataset(two_files)
    for _ in range(2):  # cold (files opened by the scan), then warm
        got = ours.to_table(columns=cols, batch_size=batch_size)
        assert got.equals(expected)
        batches = list(ours.to_batches(columns=cols, batch_size=batch_size))
        assert all(b.num_rows <= batch_size for b in batches)
        assert pa.Table.from_batches(batches).equals(expected)
    if cols in (["id", "x", "s"], ["s"], ["y"]):
        assert spy and max(spy) > 1  # one data file holds them: fragments decoded together
    elif cols == ["id", "y"]:
        assert not spy  # spread over two files: fragment by fragment


def test_gc_paused_while_many_files_open(knobs, two_files, monkeypatch, spy):
    """Batches of at least ``GC_PAUSE_FILES`` new files open with the collector paused: same
    rows, and the collector is on again afterwards, also when a file fails to open."""
    import gc
    import os

    from lancejit.core.errors import NotFoundError

    knobs(gc_pause_files=2)  # the shared open's policy
    expected = lance.dataset(two_files).to_table(columns=["id", "s"])
    assert gc.isenabled()
    assert lt.dataset(two_files).to_table(columns=["id", "s"]).equals(expected)
    assert gc.isenabled() and spy
    ds = lt.dataset(two_files)
    victim = ds._ctx.manifest.fragments[0].files[0].path
    os.rename(os.path.join(two_files, "data", victim), os.path.join(two_files, "data", victim + ".x"))
    try:
        with pytest.raises(NotFoundError):
            ds.to_table(columns=["id", "s"])
    finally:
        os.rename(os.path.join(two_files, "data", victim + ".x"), os.path.join(two_files, "data", victim))
    assert gc.isenabled()


def test_holder_rules():
    """The data file chosen for a field follows ``FragmentReader.file_for``: the first file
    with the field's id, else the first with one of its children's ids."""
    from lancejit.table.meta.fields import TopField

    class F:
        def __init__(self, fields):
            self.fields = tuple(fields)

    a, b = TopField("a", 0, frozenset({0})), TopField("st", 1, frozenset({1, 2, 3}))
    assert scan_multi._holder([F([0, 1, 2, 3])], [a, b]) == 0
    assert scan_multi._holder([F([0]), F([1, 2])], [a, b]) == -1
    assert scan_multi._holder([F([5]), F([0, 2])], [a, b]) == 1
    assert scan_multi._holder([F([0]), F([0, 3])], [a]) == 0
    assert scan_multi._holder([F([7])], [a]) == -1
    assert scan_multi._holder([F([0])], []) == -1


# ---------------------------------------------------------------------------- plan kernel


def _plan_reference(seg_key, seg_b0, seg_stride, seg_len, blocks, rows_off, rows, ncols, whole, wbase, cursor0):
    """NumPy version of plan_scan: per item its segment by search, then ranges merged in order."""
    k_all = rows_off[-1]
    n = ncols * k_all
    item_seg = np.zeros(n, np.int64)
    item_in = np.zeros(n, np.int64)
    item_pos = np.zeros(n, np.int64)
    ranges, files = [], []
    cursor = cursor0
    for f in range(len(rows_off) - 1):
        last = None
        for j in range(ncols):
            g0, g1, kb = blocks[f * ncols + j]
            keys = kb + rows[rows_off[f]:rows_off[f + 1]]
            g = g0 + np.searchsorted(seg_key[g0:g1], keys, side="right") - 1
            for i, (key, gg) in enumerate(zip(keys.tolist(), g.tolist())):
                t = j * k_all + rows_off[f] + i
                r = key - seg_key[gg]
                item_seg[t], item_in[t] = gg, r
                s = seg_b0[gg] + r * seg_stride[gg]
                e = s + seg_len[gg]
                if whole[f]:
                    item_pos[t] = wbase[f] + s
                elif last is not None and s == last[0] and e <= last[1]:
                    item_pos[t] = last[2]
                else:
                    if ranges and files[-1] == f and s == ranges[-1][1]:
                        ranges[-1][1] = e
                    else:
                        ranges.append([s, e])
                        files.append(f)
                    item_pos[t] = cursor
                    last = (s, e, cursor)
                    cursor += e - s
    return item_seg, item_in, item_pos, ranges, files


@st.composite
def _plans(draw):
    nfiles = draw(st.integers(1, 4))
    ncols = draw(st.integers(1, 3))
    seg_key, seg_b0, seg_stride, seg_len, blocks, rows, offs, whole = [], [], [], [], [], [], [0], []
    for _ in range(nfiles):
        nrows = draw(st.integers(1, 40))
        span = nrows + 1
        at = 0
        for j in range(ncols):
            g0 = len(seg_key)
            fullzip = draw(st.booleans())
            starts = sorted({0} | set(draw(st.lists(st.integers(1, nrows - 1), max_size=5)) if nrows > 1 else set()))
            for r0 in starts:
                seg_key.append(j * span + r0)
                if fullzip:
                    seg_b0.append(at), seg_stride.append(3), seg_len.append(3)
                    at += 3 * nrows
                else:
                    ln = draw(st.integers(1, 20))
                    seg_b0.append(at), seg_stride.append(0), seg_len.append(ln)
                    at += ln + draw(st.sampled_from([0, 0, 5]))
            blocks.append((g0, len(seg_key), j * span))
        if draw(st.booleans()):  # a row range (planned a segment at a time)
            a = draw(st.integers(0, nrows - 1))
            sel = list(range(a, draw(st.integers(a, nrows))))
        else:
            sel = sorted(draw(st.sets(st.integers(0, nrows - 1), max_size=nrows)))
        rows.extend(sel)
        offs.append(offs[-1] + len(sel))
        whole.append(draw(st.booleans()))
    return (np.array(seg_key, np.int64), np.array(seg_b0, np.int64), np.array(seg_stride, np.int64),
            np.array(seg_len, np.int64), blocks, np.array(offs, np.int64), np.array(rows, np.int64), ncols,
            np.array(whole, np.bool_))


def _expand(run_seg, run_in, run_len, run_pos, nrun, k_all, ncols):
    """Runs of every column back to items (what the item reference computes)."""
    segs, ins, poss = [], [], []
    for j in range(ncols):
        for q in range(j * k_all, j * k_all + int(nrun[j])):
            for d in range(int(run_len[q])):
                segs.append(run_seg[q])
                ins.append(run_in[q] + d)
                poss.append(run_pos[q])
    return np.array(segs, np.int64), np.array(ins, np.int64), np.array(poss, np.int64)


@settings(max_examples=300, deadline=None)
@given(_plans())
def test_plan_runs_matches_numpy(plan):
    seg_key, seg_b0, seg_stride, seg_len, blocks, rows_off, rows, ncols, whole = plan
    wbase = np.arange(len(whole), dtype=np.int64) * 1000
    cursor0 = 1000 * len(whole)
    k_all = int(rows_off[-1])
    n = ncols * k_all
    run_seg, run_in, run_len, run_pos = (np.zeros(max(n, 1), np.int64) for _ in range(4))
    nrun = np.zeros(ncols, np.int64)
    ranges = np.zeros((max(n, 1), 2), np.int64)
    range_file = np.zeros(max(n, 1), np.int64)
    b = np.array(blocks, np.int64).reshape(-1, 3)
    nfiles = len(rows_off) - 1
    nr = plan_runs(seg_key, seg_b0, seg_stride, seg_len, b[:, 0].copy(), b[:, 1].copy(), b[:, 2].copy(), rows,
                   rows_off, np.zeros(nfiles, np.int64), ncols, whole, wbase, cursor0, run_seg, run_in, run_len,
                   run_pos, nrun, ranges, range_file)
    if all(rows_off[f + 1] == rows_off[f] or rows[rows_off[f + 1] - 1] - rows[rows_off[f]] == rows_off[f + 1]
           - rows_off[f] - 1 for f in range(nfiles)):
        # every file's rows a range: planned the same from each range's first row, no row array
        row_lo = np.array([rows[rows_off[f]] if rows_off[f + 1] > rows_off[f] else 0 for f in range(nfiles)],
                          np.int64)
        again = [np.zeros(max(n, 1), np.int64) for _ in range(4)] + [np.zeros(ncols, np.int64),
                                                                    np.zeros((max(n, 1), 2), np.int64),
                                                                    np.zeros(max(n, 1), np.int64)]
        nr2 = plan_runs(seg_key, seg_b0, seg_stride, seg_len, b[:, 0].copy(), b[:, 1].copy(), b[:, 2].copy(),
                        np.zeros(0, np.int64), rows_off, row_lo, ncols, whole, wbase, cursor0, *again)
        assert nr2 == nr and np.array_equal(again[4], nrun)
        assert np.array_equal(again[5][:nr], ranges[:nr]) and np.array_equal(again[6][:nr], range_file[:nr])
        for j in range(ncols):
            sl = slice(j * k_all, j * k_all + int(nrun[j]))
            assert all(np.array_equal(a[sl], w[sl]) for a, w in zip(again[:4], (run_seg, run_in, run_len, run_pos)))
    e_seg, e_in, e_pos, e_ranges, e_files = _plan_reference(seg_key, seg_b0, seg_stride, seg_len, blocks, rows_off,
                                                             rows, ncols, whole, wbase, cursor0)
    assert nr == len(e_ranges)
    assert ranges[:nr].tolist() == e_ranges and range_file[:nr].tolist() == e_files
    got_seg, got_in, got_pos = _expand(run_seg, run_in, run_len, run_pos, nrun, k_all, ncols)
    assert np.array_equal(got_seg, e_seg) and np.array_equal(got_in, e_in)
    # a run's position is its first row's (a chunk's start; full-zip rows follow at the stride)
    first = _run_first(run_in, run_len, nrun, k_all, ncols)
    assert np.array_equal(got_pos + seg_stride[e_seg] * (got_in - first), e_pos)


def _run_first(run_in, run_len, nrun, k_all, ncols):
    out = []
    for j in range(ncols):
        for q in range(j * k_all, j * k_all + int(nrun[j])):
            out.extend([run_in[q]] * int(run_len[q]))
    return np.array(out, np.int64)


def test_plan_runs_rejects_rows_before_first_segment():
    seg_key = np.array([5], np.int64)  # the block's first segment starts at row 5
    z = np.zeros(1, np.int64)
    out = [np.zeros(1, np.int64) for _ in range(5)]
    nr = plan_runs(seg_key, z, z, np.ones(1, np.int64), z, np.ones(1, np.int64), z, np.array([2], np.int64),
                   np.array([0, 1], np.int64), z, 1, np.zeros(1, np.bool_), z, 0, *out, np.zeros((1, 2), np.int64),
                   np.zeros(1, np.int64))
    assert nr == -SCAN_BAD_ROW
