"""Tier 0 of the lazy kernels: small calls run the kernel's own Python source before Numba is loaded.

Importing Numba and loading cached kernels costs tenths of a second per process (``import
numba`` most of it, then the Numba runtime and every cached signature loaded), which dwarfs a
small take (a few rows of a few columns: milliseconds of kernel work even *interpreted*).  So,
while Numba is not loaded, a call of a kernel listed in :data:`COSTS` whose estimated
interpreted cost is at most :data:`CALL_LIMIT_US` runs as plain Python (the kernel function
itself, its kernel callees and Numba cast names resolved to interpreted twins / NumPy casts;
kernels in :data:`NUMPY` run a vectorized NumPy version instead) -- until the process has spent
:data:`BUDGET_US` of estimated interpreted time; then, and for every larger call, the kernel
goes to Numba as before (which imports Numba once).  A long-running process thus pays Numba's
load once it does real work, and a process serving a few small takes never pays it.  Once Numba
is loaded (a scan loaded it), a kernel not loaded yet still serves its first tiny calls
interpreted (:data:`KERNEL_BUDGET_US` per kernel), so a few-row take after a scan loads no take
kernel.

Semantics: the listed kernels use only int64/uint64 scalar arithmetic, indexing and slicing of
preallocated arrays, ``np.argsort`` and ``np.int64``/``np.uint64`` casts, which NumPy scalars
evaluate like Numba (integer overflow wraps silently: NumPy's overflow warnings are muted).  Any
exception raised by the interpreted run (e.g. an index past an array on malformed input, where
compiled code would not check) falls back to the compiled kernel, which rewrites the same
outputs.  ``tests/kernels/test_tier0.py`` runs every listed kernel both ways on the arguments of
real takes (and the NumPy ``page_segments`` on random, partly damaged page tables) and compares
outputs and return values.

``LANCEJIT_TIER0=0`` turns tier 0 off; ``LANCEJIT_TIER0=always`` also interprets small calls
once Numba is loaded (tests; kernels whose dispatcher exists already run compiled).
"""

from __future__ import annotations

import threading
import types
from typing import Any, Callable

import numpy as np

from lancejit.core.config import settings

#: Estimated microseconds one interpreted call costs, by kernel (module.qualname), from its args.
COSTS: dict[str, Callable[..., float]] = {
    "lancejit.encoding.kernels.take_meta.page_segments": lambda raw, pages, out: 40 * pages.shape[0] + out.shape[1] // 50,
    "lancejit.encoding.kernels.take.plan_take_files": lambda *a: 40 * a[9] * a[8].shape[0] + 50,
    "lancejit.encoding.kernels.take.plan_take": lambda *a: 40 * a[4].shape[0] * a[5].shape[0] + 50,
    "lancejit.encoding.kernels.take.take_fixed": lambda *a: (10 + 2 * a[7]) * a[1].shape[0],
    "lancejit.encoding.kernels.take.take_bitpacked": lambda *a: 8 * a[1].shape[0] + 150,
    "lancejit.encoding.kernels.take.take_valid": lambda *a: 250 * a[1].shape[0],
    "lancejit.encoding.kernels.take.take_spans": lambda *a: 20 * a[1].shape[0],
    "lancejit.encoding.kernels.take.copy_spans": lambda *a: 10 * a[1].shape[0] + a[4].shape[0] // 64,
    "lancejit.encoding.kernels.take.fsst_take": lambda *a: 30 * a[1].shape[0] + 2 * a[10].shape[0],
}


def page_segments_numpy(raw: np.ndarray, pages: np.ndarray, out: np.ndarray) -> int:
    """:func:`lancejit.encoding.kernels.take_meta.page_segments` as a few NumPy calls per page
    (tier 0's version of it: interpreting the kernel pays a Python loop iteration per chunk,
    a large part of :data:`CALL_LIMIT_US` on a big file's columns).  Same outputs and return
    value; word sizes other than 2 and 4 raise (the compiled kernel then runs)."""
    s = 0
    for p, (wsize, pos, nseg, rows, key, data, dsize, defw, fixed, maxcount) in enumerate(pages.tolist()):
        if wsize == 0:
            if fixed <= 0 or fixed * rows > dsize:
                return p + 1
            out[:, s] = (key, data, fixed, fixed, 0, 1, 0)
            s += 1
            continue
        if wsize not in (2, 4):
            raise ValueError(f"chunk word size {wsize}")
        w = np.frombuffer(raw, dtype="<u2" if wsize == 2 else "<u4", count=nseg, offset=pos).astype(np.int64)
        sizes = ((w >> 4) + 1) * 8
        counts = np.left_shift(np.int64(1), w & 0xF)
        if nseg:
            counts[-1] = rows - int(counts[:-1].sum())
            if int(counts.min()) <= 0 or int(counts.max()) > maxcount:
                return p + 1
        if int(sizes.sum()) > dsize:
            return p + 1
        if nseg == 0:
            continue
        seg = out[:, s:s + nseg]
        seg[0, 0] = key
        np.cumsum(counts[:-1], out=seg[0, 1:])
        seg[0, 1:] += key
        seg[1, 0] = data
        np.cumsum(sizes[:-1], out=seg[1, 1:])
        seg[1, 1:] += data
        seg[2] = 0
        seg[3] = sizes
        seg[4] = wsize
        seg[5] = counts
        seg[6] = defw
        s += nseg
    return 0


#: Kernels tier 0 runs as NumPy code instead of interpreting their source, by module.qualname.
NUMPY: dict[str, Callable[..., Any]] = {
    "lancejit.encoding.kernels.take_meta.page_segments": page_segments_numpy,
}

#: Largest estimated cost (microseconds) of one interpreted call: it admits a 100-row take of
#: bit-packed columns (bit unpacking in NumPy: :mod:`.tier0_numpy`).
CALL_LIMIT_US = 60_000
#: Estimated interpreted time (microseconds) a process may spend before it loads Numba: a few
#: 100-row takes, or dozens of one-row takes (each an order of magnitude slower interpreted than
#: compiled), under half of what loading Numba costs, so a busy process reaches compiled speed
#: after a handful of takes while a fresh process serving a 100-row take never loads it.
BUDGET_US = 150_000

#: Once Numba is loaded, a kernel not loaded yet still runs interpreted for calls estimated at
#: most :data:`LOADED_CALL_LIMIT_US`, until it has spent :data:`KERNEL_BUDGET_US` so: about what
#: loading one cached kernel costs (its machine code, its first argument types), which a
#: process's few small calls of it (a three-row take after a scan) would otherwise pay.
LOADED_CALL_LIMIT_US = 1_000
KERNEL_BUDGET_US = 5_000

_MODE = settings().tier0
ENABLED = _MODE not in ("0", "off", "false", "no")
ALWAYS = _MODE == "always"

_LOCK = threading.Lock()
_spent = 0.0
#: Interpreted calls and estimated microseconds spent so far (for tests and ``explain``).
stats = {"calls": 0, "fallbacks": 0}


def spent_us() -> float:
    """Estimated interpreted microseconds spent so far in this process."""
    return _spent


def admit(cost_fn: Callable[..., float], args: tuple) -> bool:
    """Whether a call with ``args`` may run interpreted now (and charge its cost to the budget)."""
    global _spent
    try:
        cost = float(cost_fn(*args))
    except (AttributeError, IndexError, TypeError):  # unexpected arguments: let Numba type them
        return False
    if cost > CALL_LIMIT_US:
        return False
    with _LOCK:
        if _spent + cost > BUDGET_US and not ALWAYS:
            return False
        _spent += cost
    return True


def admit_unloaded(cost_fn: Callable[..., float], args: tuple, spent: float) -> float | None:
    """Once Numba is loaded: the estimated cost of an interpreted call with ``args`` of a kernel
    not loaded yet that has spent ``spent`` microseconds interpreted so far, or None when the
    kernel should be loaded instead (see :data:`KERNEL_BUDGET_US`)."""
    try:
        cost = float(cost_fn(*args))
    except (AttributeError, IndexError, TypeError):
        return None
    if cost > LOADED_CALL_LIMIT_US or spent + cost > KERNEL_BUDGET_US:
        return None
    return cost


def _cast(dtype: type) -> Callable[[Any], Any]:
    """``numba.<int type>(x)`` as NumPy: C-style wrap-around for Python ints out of range."""
    info = np.iinfo(dtype)
    span = 1 << info.bits
    low, high = int(info.min), int(info.max)

    def cast(x: Any) -> Any:
        if type(x) is int and not low <= x <= high:
            x = (x - low) % span + low
        return dtype(x)

    return cast


def twin(fn: Callable[..., Any], resolve: Callable[[Any, str], Any]) -> Callable[..., Any]:
    """``fn`` with a private copy of its globals in which ``resolve(value, name)`` replaces each
    global it names (kernels -> their twins, Numba names -> NumPy casts)."""
    g = dict(fn.__globals__)
    for name in _names(fn.__code__):
        if name in g:
            g[name] = resolve(g[name], name)
    return types.FunctionType(fn.__code__, g, fn.__name__, fn.__defaults__, fn.__closure__)


def numpy_cast(name: str) -> Callable[[Any], Any] | None:
    """The NumPy twin of the Numba scalar type ``name`` (``uint64`` ...), or None."""
    dtype = getattr(np, name, None)
    if isinstance(dtype, type) and issubclass(dtype, np.integer):
        return _cast(dtype)
    return None


def run(py: Callable[..., Any], args: tuple) -> tuple[bool, Any]:
    """``(True, py(*args))``, or ``(False, None)`` when the interpreted run raised."""
    try:
        with np.errstate(over="ignore"):
            out = py(*args)
    except Exception:  # noqa: BLE001 - any failure goes to the compiled kernel (see module docstring)
        stats["fallbacks"] += 1
        return False, None
    stats["calls"] += 1
    return True, out


def _names(code: Any) -> set[str]:
    out = set(code.co_names)
    for c in code.co_consts:
        if hasattr(c, "co_names"):
            out |= _names(c)
    return out
