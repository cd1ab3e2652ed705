"""Cold start (issue 12): ``import lancejit`` imports no Numba, sqlglot or cloud clients; opening a
dataset and counting rows loads no kernel; after ``lancejit warmup`` a fresh process taking rows
from pylance-written datasets compiles no kernel (Numba cache misses == 0).  Subprocesses; no
timings."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pytest

lance = pytest.importorskip("lance")

HEAVY = ("numba", "sqlglot", "s3fs", "gcsfs", "aiohttp", "pandas")


def _run(code: str, *args: str) -> dict:
    env = dict(os.environ)
    env.pop("NUMBA_DISABLE_JIT", None)
    res = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, env=env, timeout=900)
    assert res.returncode == 0, res.stderr[-3000:]
    return json.loads(res.stdout.strip().splitlines()[-1])


def test_import_loads_nothing_heavy():
    got = _run(f"import sys, json, lancejit; print(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))")
    assert got == []


def _dataset(tmp_path) -> str:
    rng = np.random.default_rng(0)
    n = 6000
    words = np.array([f"s{i:04d}-{'x' * (i % 17)}" for i in range(500)])
    t = pa.table({
        "id": np.arange(n, dtype=np.int64),
        "x": rng.standard_normal(n),
        "s": pa.array(words[rng.integers(0, len(words), n)]),
        "v": pa.FixedSizeListArray.from_arrays(pa.array(rng.standard_normal(n * 64).astype(np.float32)), 64),
        "l": pa.array([list(range(i % 4)) for i in range(n)], pa.list_(pa.int32())),
    })
    path = str(tmp_path / "ds")
    lance.write_dataset(t, path, data_storage_version="2.2", max_rows_per_file=2500)
    lance.write_dataset(t.slice(0, 1000), path, mode="append", data_storage_version="2.2")
    return path


OPEN_COUNT = """
import sys, json, lancejit
ds = lancejit.dataset(sys.argv[1])
n = ds.count_rows()
print(json.dumps({"rows": n, "loaded": [m for m in ("numba", "sqlglot") if m in sys.modules]}))
"""

TAKE = """
import sys, json, lancejit
from lancejit.encoding.kernels import jit
ds = lancejit.dataset(sys.argv[1])
t = ds.take([1, 2, 3], columns=["id", "x", "s"])
t2 = ds.take([5000, 7, 6500, 7], columns=["v", "l", "s"])
full = ds.to_table()
print(json.dumps({"ids": t["id"].to_pylist(), "rows": full.num_rows, "misses": jit.cache_misses()}))
"""


def test_open_loads_no_kernel_and_warm_take_compiles_nothing(tmp_path):
    path = _dataset(tmp_path)
    got = _run(OPEN_COUNT, path)
    assert got == {"rows": 7000, "loaded": []}
    _run("import json; from lancejit.cli import main; print(json.dumps(main(['warmup', '--no-byte-compile'])))")
    got = _run(TAKE, path)
    assert got["ids"] == [1, 2, 3] and got["rows"] == 7000
    assert got["misses"], "the take used no kernel"
    assert {k: v for k, v in got["misses"].items() if v} == {}, "kernels compiled in a warm process"


FIRST_USE = """
import sys, json, lancejit
from lancejit.encoding.kernels import jit
watch = json.loads(sys.argv[2])
def state():
    return {"kernels": sum(len(k._disp.overloads) for k in jit.kernels() if k.materialized),
            "modules": sorted(w for w in watch if any(m == w or m.startswith(w + ".") for m in sys.modules))}
ds = lancejit.dataset(sys.argv[1])
out = {}
out["rows"] = ds.to_table().num_rows
out["scan"] = state()
out["filtered"] = ds.to_table(columns=["id"], filter="x > 0.5 AND id < 15000")["id"].to_pylist()
out["after_filter"] = state()
out["take"] = ds.take([1, 2, 3])["id"].to_pylist()
out["after_take"] = state()
print(json.dumps(out))
"""

#: What a fresh process's first scan, first filtered scan and a small take after them need not import.
NOT_FOR_SCANS = ("sqlglot", "pyarrow.compute", "pandas", "numpy.ma", "aiohttp", "yarl", "urllib.request",
                 "lancejit.table.indices", "lancejit.table.filter", "lancejit.table.read.index_plan")


@pytest.mark.parametrize("version", ["2.1", "2.2"])
def test_first_scan_filter_and_take_import_only_what_they_use(tmp_path, version):
    """A fresh process's first full scan imports no filter parser, pyarrow.compute, pandas,
    numpy.ma, HTTP client nor index module; its first filtered scan (kernel-evaluated) adds the
    parser, the filter modules and the filter's kernels only; a three-row take after them loads
    no kernel."""
    rng = np.random.default_rng(3)
    n = 20000
    t = pa.table({"id": np.arange(n, dtype=np.int64), "x": rng.standard_normal(n),
                  "s": pa.array([f"user-{i % 700:05d}" for i in range(n)])})
    path = str(tmp_path / "ds")
    lance.write_dataset(t, path, data_storage_version=version, max_rows_per_file=8000)
    got = _run(FIRST_USE, path, json.dumps(NOT_FOR_SCANS))
    ref = lance.dataset(path)
    assert got["rows"] == n
    assert got["filtered"] == ref.to_table(columns=["id"], filter="x > 0.5 AND id < 15000")["id"].to_pylist()
    assert got["take"] == [1, 2, 3]
    assert got["scan"]["modules"] == []
    assert got["after_filter"]["modules"] == ["lancejit.table.filter", "sqlglot"]
    assert got["after_take"] == got["after_filter"]  # the take loaded no kernel, imported nothing watched
    # the filter's kernels (an int range, a float range, the positions of a mask) and nothing else
    assert got["scan"]["kernels"] > 0 and got["after_filter"]["kernels"] - got["scan"]["kernels"] <= 3
