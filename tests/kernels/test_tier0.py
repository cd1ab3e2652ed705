"""Tier 0 of the lazy kernels (lancejit/encoding/kernels/tier0.py): every kernel it may interpret
gives the same outputs and return values interpreted as compiled, on the arguments of real takes
(pylance-written 2.1 / 2.2 datasets: bit-packed, fixed, FSST and plain strings, nullable columns,
64-float vectors, several fragments, file-level takes); a fresh process serves a small take
without importing Numba, with results equal to pylance's; large calls and an exhausted budget
go to Numba.  Subprocesses for the fresh-process checks; no timings."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pytest

from lancejit.encoding.kernels import jit, tier0

lance = pytest.importorskip("lance")


def _import_kernel_modules() -> dict[str, jit.LazyKernel]:
    import importlib
    import pkgutil

    from lancejit.encoding import kernels as kpkg

    for m in pkgutil.iter_modules(kpkg.__path__):
        importlib.import_module(f"{kpkg.__name__}.{m.name}")
    return {f"{k.__module__}.{k.__qualname__}": k for k in jit.kernels()}


def test_every_listed_kernel_exists():
    by_name = _import_kernel_modules()
    assert set(tier0.COSTS) <= set(by_name) and set(tier0.NUMPY) <= set(tier0.COSTS)
    assert all(by_name[n]._cost is not None for n in tier0.COSTS) or not tier0.ENABLED


def _table(n: int, seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    words = np.array([f"user-{i:05d}-{'x' * (i % 19)}" for i in range(700)])
    mask = rng.random(n) < 0.2
    return pa.table({
        "id": np.arange(n, dtype=np.int64),
        "small": pa.array(rng.integers(0, 50, n).astype(np.int32)),
        "x": rng.standard_normal(n),
        "s": pa.array([f"user-{int(i) * 7919 % 100003:06d}-{'x' * (int(i) % 19)}" for i in rng.integers(0, 10**6, n)]),
        "cat": pa.array(words[rng.integers(0, len(words), n)]),
        "r": pa.array([bytes(rng.integers(0, 256, int(k), dtype=np.uint8)).hex() for k in rng.integers(0, 20, n)]),
        "nx": pa.array(rng.standard_normal(n), mask=mask),
        "ni": pa.array(rng.integers(-5, 5, n), mask=mask),
        "ns": pa.array(words[rng.integers(0, len(words), n)], mask=mask),
        "v": pa.FixedSizeListArray.from_arrays(pa.array(rng.standard_normal(n * 64).astype(np.float32)), 64),
    })


def _record(monkeypatch, names) -> list:
    """Patch every module global holding a listed kernel (or its dispatcher) with a recorder."""
    import importlib

    for m in ("lancejit.table", "lancejit.table.read.take_files", "lancejit.file.reader", "lancejit.file.take_plan",
              "lancejit.encoding.v21.take_template", "lancejit.encoding.v21.take_index"):
        importlib.import_module(m)  # the modules calling the kernels, before their names are patched
    by_name = _import_kernel_modules()
    calls: list = []
    for name in names:
        k = by_name[name]

        def rec(*args, _k=k, _name=name):
            calls.append((_name, _copy(args)))
            return _k(*args) if _k._disp is None else _k._disp(*args)

        for mod_name, mod in list(sys.modules.items()):
            if mod is None or not mod_name.startswith("lancejit"):
                continue
            for key, value in list(vars(mod).items()):
                if value is k or (k._disp is not None and value is k._disp):
                    monkeypatch.setitem(vars(mod), key, rec)
    return calls


def _copy(args):
    """Copies of the arrays of ``args``; arrays viewing one buffer (a kernel's word and byte
    scratch) stay views of one copy."""
    roots: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    out = []
    for a in args:
        if not isinstance(a, np.ndarray):
            out.append(a)
            continue
        root = a
        while isinstance(root.base, np.ndarray):
            root = root.base
        if id(root) not in roots:
            roots[id(root)] = (root, root.copy())
        src, dup = roots[id(root)]
        offset = a.__array_interface__["data"][0] - src.__array_interface__["data"][0]
        c = np.ndarray(a.shape, a.dtype, buffer=dup.data if dup.flags.c_contiguous else dup, offset=offset,
                       strides=a.strides) if root is not a else dup
        c.flags.writeable = a.flags.writeable
        out.append(c)
    return tuple(out)


def _same(a, b) -> bool:
    if isinstance(a, tuple):
        return isinstance(b, tuple) and len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, np.ndarray):
        return np.array_equal(a, b)
    return a == b and int(a) == int(b) if a is not None else b is None


@pytest.mark.parametrize("version", ["2.1", "2.2"])
def test_interpreted_equals_compiled_on_real_takes(tmp_path, monkeypatch, version):
    from lancejit.file.reader import LanceFileReader
    import lancejit

    t = _table(9000, 3)
    path = str(tmp_path / "ds")
    lance.write_dataset(t, path, data_storage_version=version, max_rows_per_file=4000)
    calls = _record(monkeypatch, tier0.COSTS)
    ds = lancejit.dataset(path)
    rng = np.random.default_rng(7)
    cols = ["id", "small", "x", "s", "cat", "r", "nx", "ni", "ns", "v"]
    for k in (1, 3, 17, 64):
        for sort in (True, False):
            idx = rng.integers(0, t.num_rows, k)
            if sort:
                idx = np.unique(idx)
            for c in (cols, ["id", "x", "s"], ["ns", "small"]):
                got = ds.take(idx.tolist(), columns=c)
                assert got.equals(t.take(pa.array(idx)).select(c))
    for name in sorted(os.listdir(os.path.join(path, "data"))):  # file-level takes
        r = LanceFileReader(os.path.join(path, "data", name))
        n = r.num_rows
        start = r.take_rows([0])["id"][0].as_py()
        idx = np.array([n - 1, 0, 77 % n, 77 % n, n // 2])
        assert r.take_rows(idx).equals(t.slice(start, n).take(pa.array(idx)))
    by_name = _import_kernel_modules()
    seen = set()
    for name, args in calls:
        seen.add(name)
        k = by_name[name]
        a1, a2 = _copy(args), _copy(args)
        want = k.dispatcher()(*a1)
        with np.errstate(over="ignore"):
            got = k.interpreted()(*a2)
        assert _same(want, got), name
        for x, y in zip(a1, a2):
            if isinstance(x, np.ndarray):
                np.testing.assert_array_equal(x, y, err_msg=name)
    # the takes above reach the planning, fixed, bit-packed, span, FSST and validity kernels
    want = {"lancejit.encoding.kernels.take.plan_take_files", "lancejit.encoding.kernels.take.take_fixed",
            "lancejit.encoding.kernels.take.take_spans", "lancejit.encoding.kernels.take.take_bitpacked",
            "lancejit.encoding.kernels.take.fsst_take", "lancejit.encoding.kernels.take.take_valid"}
    if version == "2.2":  # 2.1 files get their take tables from decoded metadata
        want.add("lancejit.encoding.kernels.take_meta.page_segments")
    assert want <= seen, want - seen


def test_cast_wraps_like_numba():
    u64 = tier0.numpy_cast("uint64")
    i64 = tier0.numpy_cast("int64")
    assert u64(-1) == np.uint64(2**64 - 1) and u64(np.int64(-2)) == np.uint64(2**64 - 2)
    assert i64(2**63) == np.int64(-(2**63)) and type(i64(5)) is np.int64
    assert tier0.numpy_cast("float64") is None


def _run(code: str, *args: str, **env_extra: str) -> dict:
    env = dict(os.environ)
    env.pop("NUMBA_DISABLE_JIT", None)
    env.pop("LANCEJIT_TIER0", None)
    env.update(env_extra)
    res = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, env=env, timeout=900)
    assert res.returncode == 0, res.stderr[-3000:]
    return json.loads(res.stdout.strip().splitlines()[-1])


FRESH = """
import sys, json, lancejit
from lancejit.encoding.kernels import tier0
ds = lancejit.dataset(sys.argv[1])
rows = json.loads(sys.argv[2])
t = ds.take(rows, columns=["id", "x", "s", "ns"])
print(json.dumps({"rows": t.to_pylist(), "numba": "numba" in sys.modules, "calls": tier0.stats["calls"],
                  "fallbacks": tier0.stats["fallbacks"]}))
"""


def test_fresh_small_take_needs_no_numba_and_large_one_loads_it(tmp_path):
    t = _table(20000, 5)
    path = str(tmp_path / "ds")
    lance.write_dataset(t, path, data_storage_version="2.2", max_rows_per_file=15000)
    ref = lance.dataset(path)
    small = [1, 10_000, 19_999]
    got = _run(FRESH, path, json.dumps(small))
    assert got["rows"] == ref.take(small, columns=["id", "x", "s", "ns"]).to_pylist()
    assert got["numba"] is False and got["calls"] > 0 and got["fallbacks"] == 0
    off = _run(FRESH, path, json.dumps(small), LANCEJIT_TIER0="0")
    assert off["rows"] == got["rows"] and off["numba"] is True and off["calls"] == 0
    big = list(range(0, 20000, 37))  # hundreds of chunks: over the per-call limit
    got = _run(FRESH, path, json.dumps(big))
    assert got["rows"] == ref.take(big, columns=["id", "x", "s", "ns"]).to_pylist()
    assert got["numba"] is True


BUDGET = """
import sys, json, lancejit
from lancejit.encoding.kernels import tier0
ds = lancejit.dataset(sys.argv[1])
out = []
for i in range(400):
    out.append(ds.take([i * 37 % 20000], columns=["id", "s"])["id"][0].as_py())
print(json.dumps({"ids": out, "numba": "numba" in sys.modules, "spent": tier0.spent_us()}))
"""


def test_budget_exhausted_loads_numba(tmp_path):
    t = _table(20000, 6)
    path = str(tmp_path / "ds")
    lance.write_dataset(t, path, data_storage_version="2.2")
    got = _run(BUDGET, path)
    assert got["ids"] == [i * 37 % 20000 for i in range(400)]
    assert got["numba"] is True and got["spent"] <= tier0.BUDGET_US


AFTER_SCAN = """
import sys, json, lancejit
from lancejit.encoding.kernels import jit, tier0
ds = lancejit.dataset(sys.argv[1])
n = ds.to_table(columns=["id", "s"]).num_rows  # loads Numba and the scan's kernels
def take_kernels():
    return sorted(f"{k.__module__}.{k.__qualname__}" for k in jit.kernels()
                  if k.materialized and f"{k.__module__}.{k.__qualname__}" in tier0.COSTS)
before = tier0.stats["calls"]
rows = [ds.take(r, columns=["id", "x", "s", "ns"]).to_pylist() for r in json.loads(sys.argv[2])]
first = {"loaded": take_kernels(), "calls": tier0.stats["calls"] - before}
for i in range(300):  # many small takes: each kernel's budget runs out, the kernels load
    ds.take([i * 61 % 20000], columns=["id", "x", "s", "ns"])
print(json.dumps({"n": n, "rows": rows, "numba": "numba" in sys.modules, "first": first,
                  "later": take_kernels(), "fallbacks": tier0.stats["fallbacks"]}))
"""


def test_small_takes_after_a_scan_load_no_take_kernel_until_their_budget(tmp_path):
    """Numba loaded by a scan: a few tiny takes run the take kernels interpreted (no kernel
    loaded for them), with pylance's rows; hundreds of them load the kernels."""
    t = _table(20000, 8)
    path = str(tmp_path / "ds")
    lance.write_dataset(t, path, data_storage_version="2.2", max_rows_per_file=15000)
    ref = lance.dataset(path)
    takes = [[1, 2, 3], [19_999, 0], [15_000, 14_999, 7]]
    got = _run(AFTER_SCAN, path, json.dumps(takes))
    assert got["n"] == 20000 and got["numba"] is True and got["fallbacks"] == 0
    assert got["rows"] == [ref.take(r, columns=["id", "x", "s", "ns"]).to_pylist() for r in takes]
    assert got["first"]["loaded"] == [] and got["first"]["calls"] > 0
    assert len(got["later"]) >= 3


def test_page_segments_numpy_matches_kernel():
    """Tier 0's NumPy ``page_segments`` vs the compiled kernel on random page tables: mini-block
    pages (2- and 4-byte words, some damaged: zero or oversized counts, data past the buffer),
    full-zip pages, empty word lists."""
    from lancejit.encoding.kernels.take_meta import page_segments

    kernel = page_segments.dispatcher() if isinstance(page_segments, jit.LazyKernel) else page_segments
    rng = np.random.default_rng(11)
    errors = 0
    for _trial in range(400):
        raw = bytearray()
        pages = []
        key = 0
        for _ in range(int(rng.integers(1, 6))):
            if rng.random() < 0.25:
                rows = int(rng.integers(1, 300))
                fixed = int(rng.choice([0, 1, 8, 256]))
                pages.append((0, 0, 1, rows, key, 1000 + key, fixed * rows + int(rng.choice([0, 5, -1])), 0, fixed, 0))
            else:
                wsize = int(rng.choice([2, 4]))
                n = int(rng.integers(0, 20))
                logs = rng.integers(0, 13, n)
                blocks = rng.integers(0, 200, n)
                words = (blocks << 4) | logs
                rows = int(sum(1 << int(x) for x in logs[:-1])) + int(rng.integers(-3, 4096))
                dsize = int(((blocks + 1) * 8).sum()) + int(rng.choice([0, 0, 16, -8]))
                maxcount = int(rng.choice([1024, 4096, 1 << 16]))
                pos = len(raw)
                raw += words.astype("<u2" if wsize == 2 else "<u4").tobytes()
                pages.append((wsize, pos, n, rows, key, 5000 + key, dsize, int(rng.integers(0, 3)), 0, maxcount))
                rows = max(rows, 0)
            key += 10_000
        raw_a = np.frombuffer(bytes(raw) or b"\0", np.uint8)
        table = np.array(pages, dtype=np.int64)
        nseg = int(table[:, 2].sum())
        want, got = np.zeros((7, nseg), np.int64), np.zeros((7, nseg), np.int64)
        err = kernel(raw_a, table, want)
        assert tier0.page_segments_numpy(raw_a, table, got) == err
        errors += err > 0
        if not err:
            np.testing.assert_array_equal(got, want)
    assert 0 < errors < 400
