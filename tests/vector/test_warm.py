"""After ``lancejit warmup`` a fresh process searching and building vector indices compiles no kernel."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from conftest import make_dataset, vectors_table

SEARCH = """
import sys, json
import numpy as np
import lancejit
from lancejit.encoding.kernels import jit
ds = lancejit.dataset(sys.argv[1])
q = np.ones(16)
for metric in ("l2", "cosine", "dot"):
    ds.to_table(nearest={"column": "vec", "q": q, "k": 5, "metric": metric})
ds.to_table(nearest={"column": "vec", "q": q, "k": 5}, filter="cat = 1", prefilter=True)
ds.to_table(nearest={"column": "vec", "q": np.ones((2, 16)), "k": 5})
ds = ds.create_index("vec", "IVF_PQ", num_partitions=2, num_sub_vectors=4, max_iters=3)
ds.to_table(nearest={"column": "vec", "q": q, "k": 5, "refine_factor": 2})
ds = ds.create_index("vec", "IVF_SQ", num_partitions=2, max_iters=3)
ds.to_table(nearest={"column": "vec", "q": q, "k": 5})
print(json.dumps({k: v for k, v in jit.cache_misses().items() if "vector" in k}))
"""


def _run(code: str, *args: str) -> str:
    env = dict(os.environ)
    env.pop("NUMBA_DISABLE_JIT", None)
    out = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, env=env, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout.strip().splitlines()[-1]


def test_warm_process_compiles_no_vector_kernel(vec_root):
    path = make_dataset(vec_root, "warm", vectors_table(600, 16, seed=81), delete="id % 5 = 0")
    _run("import lancejit; print(lancejit.warmup(byte_compile=False).kernels)")
    misses = json.loads(_run(SEARCH, path))
    assert misses, "the searches used no vector kernel"
    assert {k: v for k, v in misses.items() if v} == {}
