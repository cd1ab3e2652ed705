"""No call waits on the compiler in a fresh installation (issue 25): with an empty kernel cache a
fresh process opens, takes, scans, filters and writes without compiling anything itself (misses
are served by the interpreted tier while ``python -m lancejit.warm --background`` compiles), with
results equal to pylance's; the background process leaves a complete cache behind, so the next
process interprets nothing.  And every kernel allowed to run interpreted agrees with its compiled
version on every call of the first-use workload.  Subprocesses; counts, no timings."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

lance = pytest.importorskip("lance")

TESTS = str(Path(__file__).resolve().parents[1])


def _workload():
    sys.path.insert(0, TESTS)
    try:
        import cold_workload
    finally:
        sys.path.remove(TESTS)
    return cold_workload


def _run(code: str, *args: str, **env: str) -> dict:
    e = dict(os.environ)
    e.pop("NUMBA_DISABLE_JIT", None)
    e.update(env)
    res = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, env=e, timeout=1500)
    assert res.returncode == 0, res.stderr[-3000:]
    return json.loads(res.stdout.strip().splitlines()[-1])


def test_interpreted_kernels_agree_with_compiled_on_the_workload(tmp_path):
    paths = _workload().make_datasets(str(tmp_path), rows=2000, fragments=8)
    res = subprocess.run([sys.executable, os.path.join(TESTS, "interp_check.py"), TESTS, str(tmp_path),
                          json.dumps(paths)], capture_output=True, text=True, timeout=1500,
                         env={**os.environ, "LANCEJIT_TIER0": "0"})
    assert res.returncode == 0, res.stderr[-3000:]
    got = json.loads(res.stdout.strip().splitlines()[-1])
    assert got["failed"] == []
    assert got["differ"] == {}
    assert not set(got["raised"]) & set(got["interpretable"]), "interpretable kernels that raised"
    assert len(got["same"]) > 25


FIRST_USE = """
import json, sys
import numpy as np
import lancejit
from lancejit.encoding.kernels import background, jit, tier0
ds = lancejit.dataset(sys.argv[1])
out = {"take": ds.take([5, 1, 900, 77], columns=["id", "s", "x"]).to_pylist(),
       "scan": ds.to_table(columns=["id", "cat", "l"]).to_pylist()[::97],
       "filtered": ds.to_table(columns=["id"], filter="x > 0.3 AND cat IN ('c1', 'c4')")["id"].to_pylist(),
       "count": lancejit.dataset(sys.argv[1]).count_rows()}
dst = sys.argv[2]
lancejit.write_dataset(ds.to_table(limit=300), dst, data_storage_version="2.1")
out["written"] = lancejit.dataset(dst).to_table()["id"].to_pylist()
out["misses"] = {k: v for k, v in jit.cache_misses().items() if v}
out["interpreted"] = tier0.stats["calls"]
p = background.process()
out["background"] = p is not None
if p is not None and sys.argv[3] == "wait":
    p.stdin.close()
    p.wait()
print(json.dumps(out))
"""


def test_empty_cache_compiles_nothing_in_the_caller(tmp_path):
    paths = _workload().make_datasets(str(tmp_path), rows=2000, fragments=8)
    path = paths["2.1"]
    ref = lance.dataset(path)
    cache = str(tmp_path / "numba-cache")
    env = {"NUMBA_CACHE_DIR": cache, "LANCEJIT_BACKGROUND_COMPILE": "1"}
    got = _run(FIRST_USE, path, str(tmp_path / "w1"), "wait", **env)
    assert got["misses"] == {}, "compiled in the caller"
    assert got["background"] and got["interpreted"] > 0
    assert got["take"] == ref.take([5, 1, 900, 77], columns=["id", "s", "x"]).to_pylist()
    assert got["scan"] == ref.to_table(columns=["id", "cat", "l"]).to_pylist()[::97]
    assert got["filtered"] == ref.to_table(columns=["id"], filter="x > 0.3 AND cat IN ('c1', 'c4')")[
        "id"].to_pylist()
    assert got["count"] == ref.count_rows()
    assert got["written"] == lance.dataset(str(tmp_path / "w1")).to_table()["id"].to_pylist() == \
        ref.to_table(limit=300)["id"].to_pylist()
    # the background process filled the cache: the next process neither compiles nor interprets
    again = _run(FIRST_USE, path, str(tmp_path / "w2"), "no", LANCEJIT_TIER0="0", **env)
    assert again["misses"] == {} and again["interpreted"] == 0 and not again["background"]
    assert again["take"] == got["take"] and again["filtered"] == got["filtered"]
    assert np.array_equal(again["written"], got["written"])
