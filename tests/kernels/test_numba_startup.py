"""What a process pays when it starts running kernels (lancejit/encoding/kernels/numba_startup.py):
the Numba runtime's functions are compiled once and loaded from a cache file by later processes
(whose kernels, allocating ones included, compute the same); a damaged file is compiled over;
kernels type plain arrays without importing ``numpy.ma``.  Subprocesses (each starts Numba)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

pytest.importorskip("numba")

RUN = """
import json, sys
import numpy as np
from lancejit.encoding.kernels import jit, numba_startup
numba_startup._cache_dir = lambda: sys.argv[1]
compiled = []
if sys.argv[2] == "forbid":  # the runtime must come from the file
    from numba.core.runtime import nrtdynmod
    def refuse(ctx):
        raise AssertionError("the runtime was compiled")
    nrtdynmod.create_nrt_module = refuse
nb = jit.numba()
from numba.core.runtime import rtsys
out = {"fast": jit._FAST}
if jit._FAST:
    @nb.njit
    def allocate(n):  # allocation, views and reference counting go through the runtime
        a = np.arange(n) * 2
        b = a[1:].copy()
        return b.sum() + a[:3].sum()
    out["value"] = int(allocate(10))
    from lancejit.encoding.kernels.gather import offsets_from_lengths
    lengths = np.array([2, 0, 5], np.int64)
    offsets = np.zeros(4, np.int64)
    offsets_from_lengths(lengths, 3, offsets)
    out["offsets"] = offsets.tolist()
    out["abort"] = rtsys.library.get_pointer_to_function("nrt_unresolved_abort") != 0
out["files"] = sorted(f for f in __import__("os").listdir(sys.argv[1]) if f.startswith("lancejit-nrt-"))
out["numpy.ma"] = "numpy.ma" in sys.modules
print(json.dumps(out))
"""


def _run(cache: str, mode: str = "") -> dict:
    env = dict(os.environ)
    env.pop("NUMBA_DISABLE_JIT", None)
    env["LANCEJIT_BACKGROUND_COMPILE"] = "0"
    res = subprocess.run([sys.executable, "-c", RUN, cache, mode], capture_output=True, text=True, env=env,
                         timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    return json.loads(res.stdout.strip().splitlines()[-1])


def test_runtime_compiled_once_then_loaded_from_its_file(tmp_path):
    cache = str(tmp_path)
    first = _run(cache)
    if not first["fast"]:
        pytest.skip("Numba version outside the fast loader's verified range")
    assert first["value"] == 90 + 6 and first["offsets"] == [0, 2, 2, 7] and first["abort"]
    assert len(first["files"]) == 1
    second = _run(cache, "forbid")
    assert second == first
    assert second["numpy.ma"] is False


def test_damaged_runtime_file_is_compiled_over(tmp_path):
    cache = str(tmp_path)
    first = _run(cache)
    if not first["fast"]:
        pytest.skip("Numba version outside the fast loader's verified range")
    path = os.path.join(cache, first["files"][0])
    good = open(path, "rb").read()
    for damaged in (good[: len(good) // 2], good[:-1] + bytes([good[-1] ^ 1]), b"", b"LJNRT" + good[5:]):
        with open(path, "wb") as f:
            f.write(damaged)
        assert _run(cache) == first  # compiled again (the file rewritten)
        assert open(path, "rb").read() == good or _run(cache, "forbid") == first


def test_runtime_file_reads_back_whole_or_not_at_all(tmp_path):
    from lancejit.encoding.kernels import numba_startup

    path = str(tmp_path / "rt.nbc")
    numba_startup.write_runtime(path, b"\x7fELF" + bytes(range(200)), b"BC\xc0\xde" * 10)
    assert numba_startup.read_runtime(path) == (b"\x7fELF" + bytes(range(200)), b"BC\xc0\xde" * 10)
    raw = open(path, "rb").read()
    for cut in (0, 5, len(raw) // 2, len(raw) - 1):
        with open(path, "wb") as f:
            f.write(raw[:cut])
        assert numba_startup.read_runtime(path) is None
    assert numba_startup.read_runtime(str(tmp_path / "missing")) is None
    numba_startup.write_runtime(str(tmp_path / "no-such-dir" / "rt.nbc"), b"x", b"y")  # nothing, no error
    assert not (tmp_path / "no-such-dir").exists()
