"""``lancejit warmup`` is complete by construction (issue 25): every kernel under ``lancejit/`` is
found in the code, every entry kernel declares its specializations, and after warmup a fresh
process running a broad workload (``tests/cold_workload.py``: datasets the reference wrote in
0.1/2.0/2.1/2.2 with many fragments, every kind of filter, every write and table operation)
compiles nothing, with tier 0 off so that every kernel call goes to Numba.  Subprocesses;
counts, no timings."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

lance = pytest.importorskip("lance")

TESTS = str(Path(__file__).resolve().parents[1])

WORKLOAD = """
import json, sys
sys.path.insert(0, sys.argv[1])
import cold_workload as w
from lancejit.encoding.kernels import jit, specs
paths = json.loads(sys.argv[3])
failed = []
for name, fn in w.steps(sys.argv[2], paths):
    try:
        fn()
    except Exception as exc:
        failed.append(f"{name}: {type(exc).__name__}: {exc}")
missing = {}
for k in jit.kernels():
    if k.materialized:
        for sig in k._disp.overloads:
            declared = [specs.parse(s) for d in k.specs for s in specs.expand(d)]
            if tuple(sig) not in declared:
                missing.setdefault(f"{k.__module__}.{k.__qualname__}", []).append(specs.render(sig))
print(json.dumps({"misses": {k: v for k, v in jit.cache_misses().items() if v}, "failed": failed,
                  "undeclared": missing, "used": len(jit.cache_misses())}))
"""


def _env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("NUMBA_DISABLE_JIT", None)
    env.update(extra)
    return env


def test_every_kernel_is_found_and_declares_what_it_is_called_with():
    from lancejit import warm
    from lancejit.encoding.kernels import specs

    kernels = warm.discover()
    names = {f"{k.__module__}.{k.__qualname__}" for k in kernels}
    assert "lancejit.encoding.kernels.pbwire.column_pages" in names
    assert "lancejit.encoding.v21.repdef_kernels.unpack_inline_chunks" in names
    assert warm.undeclared(kernels) == []
    for k in kernels:  # every declared spec parses
        for d in k.specs:
            for one in specs.expand(d):
                assert specs.parse(specs.render(specs.parse(one))) == specs.parse(one)
    shares = warm.shares(kernels, 2)
    assert sorted(f"{k.__module__}.{k.__qualname__}" for s in shares for k in s) == sorted(
        f"{k.__module__}.{k.__qualname__}" for k in kernels if k.specs)


def test_discovery_finds_kernels_in_any_module(tmp_path):
    """A kernel module anywhere under lancejit/ (e.g. table/indices/...) is found: the
    discovery reads the sources, it keeps no list."""
    from lancejit import warm

    mods = warm.kernel_modules()
    assert "lancejit.encoding.v21.repdef_kernels" in mods
    assert "lancejit.encoding.kernels.jit" not in mods
    text = "from lancejit.encoding.kernels.jit import njit, uint64\n"
    assert warm._DEFINES_KERNELS.search(text)
    assert warm._DEFINES_KERNELS.search("from .jit import njit\n")
    assert not warm._DEFINES_KERNELS.search("from lancejit.encoding.kernels import jit as _jit\n")


def test_fresh_process_after_warmup_compiles_nothing(tmp_path):
    res = subprocess.run([sys.executable, "-m", "lancejit.cli", "warmup", "--no-byte-compile", "--quiet"],
                         capture_output=True, text=True, env=_env(), timeout=1200)
    assert res.returncode == 0, res.stderr[-3000:]
    assert "declaring no specialization" not in res.stdout
    sys.path.insert(0, TESTS)
    try:
        import cold_workload
    finally:
        sys.path.remove(TESTS)
    paths = cold_workload.make_datasets(str(tmp_path), rows=3000, fragments=20)
    res = subprocess.run([sys.executable, "-c", WORKLOAD, TESTS, str(tmp_path), json.dumps(paths)],
                         capture_output=True, text=True, env=_env(LANCEJIT_TIER0="0"), timeout=1200)
    assert res.returncode == 0, res.stderr[-3000:]
    got = json.loads(res.stdout.strip().splitlines()[-1])
    assert got["failed"] == []
    assert got["used"] > 30, "the workload used few kernels"
    assert got["undeclared"] == {}, "specializations to declare next to their kernels (specs=)"
    assert got["misses"] == {}, "kernels compiled after warmup"
