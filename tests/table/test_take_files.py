"""The multi-file take (lancejit/table/take_files.py): results equal the per-fragment path and
pylance on 1, 7 and ~200 fragments (deletions, stable row ids, nulls, FSST / dictionary /
variable strings), requests per take no higher than the per-fragment path's, and Python calls
per take that do not grow with the fragments in the dataset."""

from __future__ import annotations

import cProfile
import pstats
import shutil

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lancejit.encoding.kernels.take import plan_take_files
from lancejit.table import dataset
from lancejit.table.read import take_files

lance = pytest.importorskip("lance")


def _table(n: int, start: int = 0, seed: int = 0) -> pa.Table:
    rng = np.random.default_rng(seed)
    a = np.arange(start, start + n, dtype=np.int64)
    words = np.array([f"w{i:04d}-{'y' * (i % 9)}" for i in range(300)])
    return pa.table({
        "a": a,
        "x": pa.array([None if i % 9 == 4 else float(i) * 0.25 for i in a], pa.float64()),
        "s": pa.array(words[rng.integers(0, len(words), n)]),
        "n": pa.array([None if i % 5 == 1 else f"n{i}" for i in a], pa.string()),
        "c": pa.array(rng.choice(["red", "green", "blue"], size=n)),
        "v": pa.FixedSizeListArray.from_arrays(pa.array(rng.standard_normal(n * 4).astype(np.float32)), 4),
    })


def _write(path: str, fragments: int, rows: int, *, stable: bool = False, delete: str | None = None,
           version: str = "2.2") -> str:
    shutil.rmtree(path, ignore_errors=True)
    lance.write_dataset(_table(fragments * rows), path, max_rows_per_file=rows, data_storage_version=version,
                        enable_stable_row_ids=stable)
    if delete:
        lance.dataset(path).delete(delete)
    return path


@pytest.fixture(scope="module")
def datasets(tmp_path_factory):
    root = tmp_path_factory.mktemp("take_files")
    return {
        "one": _write(str(root / "one"), 1, 5000),
        "seven": _write(str(root / "seven"), 7, 700, delete="a % 13 = 2"),
        "many": _write(str(root / "many"), 200, 30, stable=True, delete="a % 11 = 3 OR (a >= 60 AND a < 90)"),
        "many21": _write(str(root / "many21"), 60, 40, version="2.1", delete="a % 7 = 0"),
        "three": _write(str(root / "three"), 3, 4000, delete="a % 101 = 7"),
    }


def _per_fragment(monkeypatch) -> None:
    """Serve every fragment with the per-fragment path."""

    async def refuse(self, ctx, index, tops, positions):
        for p in positions:
            self.slot_of_pos[p] = take_files.NOT_ELIGIBLE

    monkeypatch.setattr(take_files.FileTakeState, "admit", refuse)


#: ["a", "s", "c", "v"] is served by the multi-file take in every dataset here; columns x and n
#: (nullable) too in fragments of thousands of rows (smaller pages store their nulls in a way
#: only the general decoders read: those fragments go the per-fragment path).
COLUMN_SETS = (["a", "s", "c", "v"], ["v", "a"], ["a", "x", "s"], ["n", "c", "v"], ["s"], None)


@pytest.mark.parametrize("name", ["one", "seven", "many", "many21", "three"])
def test_take_equals_reference_and_per_fragment_path(datasets, name, monkeypatch):
    path = datasets[name]
    ref = lance.dataset(path)
    n = ref.count_rows()
    rng = np.random.default_rng(len(name))
    requests = [rng.integers(0, n, k) for k in (1, 7, 64, 400)] + [np.array([n - 1, 0, n - 1, 3, 3])]
    ours = dataset(path)
    got = [ours.take(idx, columns=cols) for cols in COLUMN_SETS for idx in requests]
    with_meta = ours.take(requests[2], columns=["a", "s"], with_row_id=True, with_row_address=True)
    for t, (cols, idx) in zip(got, [(c, i) for c in COLUMN_SETS for i in requests]):
        assert t.equals(ref.take(idx, columns=cols)), (name, cols, len(idx))
    full = ref.to_table(columns=["a", "s"], with_row_id=True, with_row_address=True)
    expected_meta = full.take(pa.array(requests[2]))
    assert with_meta.select(["a", "s", "_rowid", "_rowaddr"]).equals(
        expected_meta.select(["a", "s", "_rowid", "_rowaddr"]))
    from lancejit.table.read import take as take_mod

    monkeypatch.setattr(take_mod, "DIRECT_ROWS", 0)  # sorted, deduplicated, then reordered
    sorted_first = dataset(path)
    assert [sorted_first.take(idx, columns=cols) for cols in COLUMN_SETS for idx in requests] == got
    _per_fragment(monkeypatch)
    slow = dataset(path)
    assert [slow.take(idx, columns=cols) for cols in COLUMN_SETS for idx in requests] == got


def test_mixed_fragments_keep_request_order(datasets, monkeypatch):
    """Some fragments served by the multi-file take and the others per fragment: rows still come
    back in request order."""
    admit = take_files.FileTakeState.admit

    async def every_other(self, ctx, index, tops, positions):
        await admit(self, ctx, index, tops, [p for p in positions if p % 2 == 0])
        for p in positions:
            if p % 2:
                self.slot_of_pos[p] = take_files.NOT_ELIGIBLE

    monkeypatch.setattr(take_files.FileTakeState, "admit", every_other)
    path = datasets["many"]
    ref, ours = lance.dataset(path), dataset(path)
    n = ref.count_rows()
    for seed in range(3):
        idx = np.random.default_rng(seed).integers(0, n, 150)
        assert ours.take(idx, columns=["a", "s", "n"]).equals(ref.take(idx, columns=["a", "s", "n"]))


def test_take_rows_by_stable_id(datasets):
    path = datasets["many"]
    ref, ours = lance.dataset(path), dataset(path)
    ids = ref.to_table(columns=["a"], with_row_id=True)["_rowid"].to_numpy()
    sel = np.random.default_rng(3).choice(ids, 120)
    assert ours.take_rows(sel, columns=["a", "s", "x"]).equals(ref._take_rows(sel.tolist(), columns=["a", "s", "x"]))


def test_requests_not_above_per_fragment_path(datasets, monkeypatch):
    path = datasets["three"]  # files larger than the 64 KiB a small file's open keeps whole
    n = lance.dataset(path).count_rows()
    idx = np.random.default_rng(9).integers(0, n, 80)

    def requests(ds) -> tuple[int, int]:
        ds.take(idx, columns=["a", "s", "c"])  # opens the files
        ds.io_stats()  # (counts since the previous call)
        ds.take(idx, columns=["a", "s", "c"])
        got = ds.io_stats()
        return got.read_iops, got.read_bytes

    fast = requests(dataset(path))
    _per_fragment(monkeypatch)
    slow = requests(dataset(path))
    assert 0 < fast[0] <= slow[0] and fast[1] <= slow[1], (fast, slow)


def test_memory_dataset(datasets):
    """A dataset in a memory store (copied there by lancejit's own reads) is taken inline too."""
    ref = lance.dataset(datasets["seven"])
    table = ref.to_table()
    import lancejit

    uri = "memory://take-files/seven"
    lancejit.write_dataset(table, uri, max_rows_per_file=700)
    ours = lancejit.dataset(uri)
    idx = np.random.default_rng(2).integers(0, table.num_rows, 100)
    assert ours.take(idx, columns=["a", "s", "n"]).equals(table.take(idx).select(["a", "s", "n"]))


def _calls(fn) -> int:
    prof = cProfile.Profile()
    prof.enable()
    fn()
    prof.disable()
    return pstats.Stats(prof).total_calls


COLS = ["a", "s", "c"]


def test_calls_per_take_do_not_grow_with_fragments(tmp_path):
    """A warm take's Python calls depend on the fragments it touches, not on the dataset's."""
    small = dataset(_write(str(tmp_path / "f10"), 10, 20))
    big = dataset(_write(str(tmp_path / "f400"), 400, 20))
    for ds in (small, big):
        ds.take(np.arange(0, ds.count_rows(), 20), columns=COLS)  # every file opened
    one = [_calls(lambda ds=ds: ds.take([37], columns=COLS)) for ds in (small, big)]
    assert one[1] <= one[0] + 5, one
    # rows of 10 fragments vs rows of 200 fragments: a handful of calls per touched fragment
    ten = _calls(lambda: big.take(np.arange(0, 200, 20), columns=COLS))
    two_hundred = _calls(lambda: big.take(np.arange(0, 4000, 20), columns=COLS))
    assert (two_hundred - ten) / 190 < 12, (ten, two_hundred)


# ------------------------------------------------------------------- the planning kernel
def _plan_numpy(tables, row_slot, rows, ncols, block):
    """NumPy reference of plan_take_files: tables = per slot (keys, b0, stride, len) arrays."""
    items = []
    for j in range(ncols):
        for s, r in zip(row_slot, rows):
            keys, b0, stride, ln, span, lo = tables[s]
            key = j * span + r
            g = int(np.searchsorted(keys, key, side="right")) - 1
            start = int(b0[g] + (key - keys[g]) * stride[g])
            items.append((s, start, start + int(ln[g]), lo + g, key - keys[g]))
    runs = []
    for s, a, b, _, _ in sorted(items, key=lambda t: (t[0], t[1])):
        if runs and runs[-1][0] == s and a <= runs[-1][2] + block:
            runs[-1][2] = max(runs[-1][2], b)
        else:
            runs.append([s, a, b])
    return items, runs


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_plan_take_files_matches_numpy(data):
    nslots = data.draw(st.integers(1, 4))
    ncols = data.draw(st.integers(1, 3))
    block = data.draw(st.sampled_from([0, 16, 4096]))
    tables, seg_rows, lo = [], [], 0
    for _ in range(nslots):
        nrows = data.draw(st.integers(1, 40))
        span = nrows + 1
        keys, b0, stride, ln = [], [], [], []
        pos = data.draw(st.integers(0, 100))
        for j in range(ncols):
            cuts = sorted(set(data.draw(st.lists(st.integers(1, nrows - 1), max_size=4)) if nrows > 1 else []))
            for r0 in [0, *cuts]:
                full = data.draw(st.booleans())
                keys.append(j * span + r0)
                b0.append(pos)
                stride.append(8 if full else 0)
                ln.append(8 if full else data.draw(st.integers(1, 50)))
                pos += (8 * nrows if full else ln[-1]) + data.draw(st.integers(0, 40))
        arrs = [np.array(a, dtype=np.int64) for a in (keys, b0, stride, ln)]
        tables.append((*arrs, span, lo))
        seg_rows.append((lo, lo + len(keys), span, nrows))
        lo += len(keys)
    k = data.draw(st.integers(1, 12))
    row_slot = np.array(sorted(data.draw(st.lists(st.integers(0, nslots - 1), min_size=k, max_size=k))), np.int64)
    rows = np.array([data.draw(st.integers(0, seg_rows[s][3] - 1)) for s in row_slot.tolist()], np.int64)
    seg = [np.concatenate([t[i] for t in tables]) for i in range(4)]
    slot = [np.array([r[i] for r in seg_rows], np.int64) for i in range(3)]
    n = ncols * k
    item_seg, item_in, item_pos = (np.empty(n, np.int64) for _ in range(3))
    reads = np.empty((n, 4), np.int64)
    nr = plan_take_files(*seg, *slot, row_slot, rows, ncols, block, item_seg, item_in, item_pos, reads)
    items, runs = _plan_numpy(tables, row_slot.tolist(), rows.tolist(), ncols, block)
    assert reads[:nr, :3].tolist() == runs
    assert reads[:nr, 3].tolist() == np.cumsum([0] + [b - a for _, a, b in runs])[:-1].tolist()
    assert item_seg.tolist() == [t[3] for t in items]
    assert item_in.tolist() == [t[4] for t in items]
    # each item's bytes sit at item_pos in the concatenation of the reads
    base, where = 0, {}
    for s, a, b in runs:
        where[(s, a, b)] = base
        base += b - a
    for t, (s, a, b, _, _) in enumerate(items):
        run = next(r for r in runs if r[0] == s and r[1] <= a and b <= r[2])
        assert item_pos[t] == where[tuple(run)] + a - run[1]


def test_missing_and_truncated_data_files(tmp_path):
    """A data file removed or truncated after it was opened: lancejit's error classes, naming the
    dataset, from the multi-file take's one read."""
    import os

    from lancejit.core.errors import CorruptFileError, LanceJitError, NotFoundError

    path = _write(str(tmp_path / "ds"), 4, 3000)
    ours = dataset(path)
    n = ours.count_rows()
    ours.take(np.arange(0, n, 1000), columns=["a", "s"])  # every file open, take tables built
    files = [os.path.join(path, "data", f.files[0].path) for f in ours.manifest.fragments]
    os.truncate(files[1], 4096)
    with pytest.raises(CorruptFileError) as err:
        ours.take([3000 + 2999, 2], columns=["a", "s"])
    assert isinstance(err.value, LanceJitError) and path in str(err.value)
    os.remove(files[2])
    with pytest.raises(NotFoundError):
        ours.take([6000 + 1500], columns=["a", "s"])
    assert ours.take([5], columns=["a", "s"]).column("a").to_pylist() == [5]


def test_fsst_and_nullable_columns_decode_once_across_files(tmp_path, monkeypatch):
    """Files whose FSST string column and nullable float column share one encoding decode each
    column with one call over all files (the arena's FSST tables), equal to pylance."""
    path = str(tmp_path / "fsst")
    n = 4 * 5000
    a = np.arange(n, dtype=np.int64)
    table = pa.table({
        "a": a,
        "t": pa.array([None if i % 13 == 1 else f"user-{i % 977:04d}-account-{i % 31}" for i in a]),
        "x": pa.array([None if i % 9 == 4 else float(i) for i in a], pa.float64()),
    })
    lance.write_dataset(table, path, max_rows_per_file=5000, data_storage_version="2.2")
    per_file = []
    orig = take_files.FileTakeState._per_file

    def spy(self, j, *args):
        per_file.append(j)
        return orig(self, j, *args)

    monkeypatch.setattr(take_files.FileTakeState, "_per_file", spy)
    ref, ours = lance.dataset(path), dataset(path)
    for seed in range(3):
        idx = np.random.default_rng(seed).integers(0, n, 300)
        assert ours.take(idx, columns=["t", "x", "a"]).equals(ref.take(idx, columns=["t", "x", "a"]))
    state = next(v for v in ours._ctx.index.take_state.values() if isinstance(v, take_files.FileTakeState))
    kinds = {m.kind for m in state.colmerged if m is not None}
    assert "fsst" in kinds and state.nslots == 4
    assert per_file == []


@pytest.mark.s3
def test_object_store_take_equals_reference(datasets, s3_endpoint):
    """On S3 (moto) every file's ranges go through its own scheduler, all files at once: results
    equal pylance's on the same objects, requests no more than the per-fragment path's."""
    import os

    from lancejit.io import join_path, open_store, run_sync

    local = datasets["three"]
    root = s3_endpoint.new_root()
    uri, opts = root.join("three"), dict(root.storage_options)

    async def upload() -> None:
        store, base = open_store(uri, opts)
        for dirpath, _, files in os.walk(local):
            for name in files:
                full = os.path.join(dirpath, name)
                with open(full, "rb") as f:
                    await store.put(join_path(base, os.path.relpath(full, local).replace(os.sep, "/")), f.read())

    run_sync(upload())
    ref, ours = lance.dataset(uri, storage_options=opts), dataset(uri, storage_options=opts)
    n = ref.count_rows()
    for seed in range(2):
        idx = np.random.default_rng(seed).integers(0, n, 60)
        for cols in (["a", "s", "c", "v"], ["n", "a"]):
            assert ours.take(idx, columns=cols).equals(ref.take(idx, columns=cols)), cols
    ours.io_stats()  # (counts since the previous call)
    ours.take(idx, columns=["a", "s", "c", "v"])
    assert 0 < ours.io_stats().read_iops <= 3 * 4  # at most one read per column per file


def test_arena_bounded(datasets, monkeypatch):
    """An arena grown past MAX_ARENA_SEGMENTS is replaced by a fresh one; results stay equal."""
    monkeypatch.setattr(take_files, "MAX_ARENA_SEGMENTS", 20)
    path = datasets["many"]
    ref, ours = lance.dataset(path), dataset(path)
    n = ref.count_rows()
    made = []
    init = take_files.FileTakeState.__init__

    def counting(self, *args):
        made.append(1)
        init(self, *args)

    monkeypatch.setattr(take_files.FileTakeState, "__init__", counting)
    for seed in range(4):
        idx = np.random.default_rng(seed).integers(0, n, 40)
        assert ours.take(idx, columns=["a", "s"]).equals(ref.take(idx, columns=["a", "s"]))
    assert len(made) == 4


def test_threads_share_one_dataset(datasets):
    """Sync takes from several threads on one dataset object (each on its own thread's loop)
    admit fragments into one arena concurrently: every result equals pylance's."""
    from concurrent.futures import ThreadPoolExecutor

    path = datasets["many"]
    ref, ours = lance.dataset(path), dataset(path)
    n = ref.count_rows()
    requests = [np.random.default_rng(s).integers(0, n, 25) for s in range(24)]
    expected = [ref.take(i, columns=["a", "s", "c"]) for i in requests]
    with ThreadPoolExecutor(4) as pool:
        got = list(pool.map(lambda i: ours.take(i, columns=["a", "s", "c"]), requests))
    assert all(g.equals(e) for g, e in zip(got, expected))
