"""Run ``tests/cold_workload.py`` with every kernel call executed both compiled and interpreted
(tier 0: the kernel's Python twin, or its NumPy version); prints JSON: per kernel, calls whose
outputs and return value agreed, disagreed, or whose interpreted run raised.  Used by
``tests/api/test_background_compile.py``; arguments: tests dir, workload root, paths JSON."""

from __future__ import annotations

import collections
import json
import sys

import numpy as np

sys.path.insert(0, sys.argv[1])
import cold_workload  # noqa: E402

from lancejit.encoding.kernels import jit  # noqa: E402

same: collections.Counter = collections.Counter()
differ: collections.Counter = collections.Counter()
raised: collections.Counter = collections.Counter()


def _eq(a, b) -> bool:
    if isinstance(a, tuple):
        return isinstance(b, tuple) and len(a) == len(b) and all(_eq(x, y) for x, y in zip(a, b))
    if isinstance(a, np.ndarray):
        return np.array_equal(a, b, equal_nan=a.dtype.kind == "f")
    return a == b


def call(self, *args):
    disp = self.dispatcher(swap=False)
    name = f"{self.__module__}.{self.__qualname__}"
    before = [a.copy() if isinstance(a, np.ndarray) and a.flags.writeable else None for a in args]
    try:
        with np.errstate(all="ignore"):
            got = self.interpreted()(*args)
        err = False
    except Exception:  # noqa: BLE001
        err = True
    interpreted = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    for a, b in zip(args, before):  # restored in place: views of one buffer stay views
        if b is not None:
            a[...] = b
    want = disp(*args)
    if err:
        raised[name] += 1
    elif _eq(want, got) and all(_eq(a, c) for a, c in zip(args, interpreted)
                                if isinstance(a, np.ndarray) and a.flags.writeable):
        same[name] += 1
    else:
        differ[name] += 1
    return want


jit.LazyKernel.__call__ = call
jit.numba()
failed = []
for step, fn in cold_workload.steps(sys.argv[2], json.loads(sys.argv[3])):
    try:
        fn()
    except Exception as exc:  # noqa: BLE001
        failed.append(f"{step}: {exc!r}")
interpretable = {f"{k.__module__}.{k.__qualname__}" for k in jit.kernels() if k.interpretable}
print(json.dumps({"same": same, "differ": differ, "raised": raised, "failed": failed,
                  "interpretable": sorted(interpretable)}))
