"""The lazy kernel decorator (lancejit/encoding/kernels/jit.py): importing kernel modules does not
import Numba; the first call creates the dispatcher and swaps it into importing modules; kernels
calling kernels and Numba names (``uint64``) resolve; pickling keeps identity."""

from __future__ import annotations

import json
import pickle
import subprocess
import sys

import numpy as np

from lancejit.encoding.kernels import jit
from lancejit.encoding.kernels import readonly


def test_kernel_modules_import_without_numba():
    code = ("import sys, json, pkgutil, importlib\n"
            "import lancejit.encoding.kernels as k\n"
            "for m in pkgutil.iter_modules(k.__path__): importlib.import_module('lancejit.encoding.kernels.' + m.name)\n"
            "import lancejit.encoding.v21.repdef_kernels, lancejit.encoding.v21.field, lancejit.table\n"
            "print(json.dumps(['numba' in sys.modules, len(k.jit.kernels())]))")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded, count = json.loads(res.stdout.strip().splitlines()[-1])
    assert loaded is False and count > 20


def test_first_call_swaps_in_the_dispatcher_and_matches_numpy():
    from lancejit.encoding.kernels import gather
    from lancejit.encoding.v21 import repdef_kernels  # imports bitpack.unpack_blocks by name

    from lancejit.encoding.kernels import readonly

    src = readonly(np.arange(100, dtype=np.uint8))
    starts = readonly(np.array([5, 50, 0], dtype=np.int64))
    lengths = readonly(np.array([3, 0, 4], dtype=np.int64))
    offsets = readonly(np.array([0, 3, 3], dtype=np.int64))
    out = np.zeros(7, dtype=np.uint8)
    gather.copy_slices(src, starts, lengths, 3, offsets, out)
    np.testing.assert_array_equal(out, np.concatenate([src[5:8], src[0:4]]))
    assert not isinstance(gather.copy_slices, jit.LazyKernel)  # the module's name is the dispatcher now
    by_name = {f"{k.__module__}.{k.__qualname__}": k for k in jit.kernels()}
    unpack = by_name["lancejit.encoding.kernels.bitpack.unpack_blocks"]
    unpack.dispatcher()
    assert not isinstance(repdef_kernels.unpack_blocks, jit.LazyKernel)
    assert "lancejit.encoding.kernels.gather.copy_slices" in jit.cache_misses()


def test_pickle_and_fsst_numba_names():
    from lancejit.encoding.kernels import fsst

    k = [x for x in jit.kernels() if x.__qualname__ == "fsst_decode"][0]
    assert pickle.loads(pickle.dumps(k)) is fsst.fsst_decode
    # a kernel using numba.uint64 casts loads from the cache, or compiles once the placeholder is
    # resolved (by the cache miss; the fast loader needs no globals on a hit)
    from fsst_ref import symbol_table

    sym_bytes, sym_lens = symbol_table([b"ab", b"xyz"])
    data = readonly(np.array([0, 255, ord("c"), 1, 0], np.uint8))
    offsets = readonly(np.array([0, 3, 5], np.int64))
    out_offsets = readonly(np.array([0, 3, 8], np.int64))
    out = np.zeros(8, np.uint8)
    k.dispatcher()(data, offsets, 2, readonly(sym_bytes), readonly(sym_lens), out_offsets, out)
    assert out.tobytes() == b"abcxyzab"
    assert not isinstance(fsst.fsst_decode, jit.LazyKernel)
    if jit.cache_misses()["lancejit.encoding.kernels.fsst.fsst_decode"]:
        assert not isinstance(fsst.uint64, jit.NumbaName)


def test_fast_loader_only_on_verified_numba_versions():
    low, high = jit.FAST_LOAD_VERIFIED
    assert jit.fast_load_supported(f"{low[0]}.{low[1]}.0")
    assert not jit.fast_load_supported(f"{high[0]}.{high[1]}.0")
    assert not jit.fast_load_supported(f"{high[0]}.{high[1]}.0rc1")
    assert not jit.fast_load_supported(f"{low[0]}.{low[1] - 1}.9")
    assert jit._version("1.2") == (1, 2) and jit._version("0.68.1") == (0, 68)


def test_plain_numba_loading_when_the_fast_loader_is_off():
    code = ("import json, numpy as np\n"
            "from lancejit.encoding.kernels import jit, background\n"
            "from lancejit.encoding.kernels.gather import offsets_from_lengths\n"
            "out = np.zeros(4, np.int64)\n"
            "offsets_from_lengths(np.array([2, 0, 5], np.int64), 3, out)\n"
            "print(json.dumps([out.tolist(), jit._FAST, background.active(jit._fast_loader)]))")
    env = {**__import__("os").environ, "LANCEJIT_NUMBA_FAST_LOAD": "0", "LANCEJIT_BACKGROUND_COMPILE": "1"}
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env)
    assert json.loads(res.stdout.strip().splitlines()[-1]) == [[0, 2, 2, 7], False, False]
