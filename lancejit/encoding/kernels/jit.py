"""Lazy Numba kernels: ``@njit(cache=True, nogil=True)`` that imports Numba on first *call*.

Every kernel module imports :func:`njit` from here instead of from ``numba``.  The decorator
returns a :class:`LazyKernel`; importing a kernel module therefore costs microseconds and does
not import Numba.  The first call of a kernel imports Numba (once per process), turns the
function into a real Numba dispatcher (which loads its machine code from the on-disk cache, or
compiles it on a cache miss) and replaces the kernel's name with that dispatcher in every
``lancejit`` module that imported it, so later calls go straight to Numba.  A call thus loads
only the kernels it meets.

Loading a cached kernel: Numba's cache loader first "refreshes" its whole CPU target (imports
and registers every typing and lowering template it has, ~0.2 s per process) although
rebuilding already-compiled machine code needs only the Numba runtime.  For lancejit's own
kernels the loader below initializes the runtime and skips that refresh; a cache miss still goes
through Numba's compiler, which refreshes the target itself.  ``LANCEJIT_NUMBA_FAST_LOAD=0``
turns this off.

:func:`kernels` lists every kernel defined so far (for ``lancejit.warmup`` and the tests that
check a warm process compiles nothing: :func:`cache_misses`).
"""

from __future__ import annotations

import os
import sys
import threading
from typing import Any, Callable

_LOCK = threading.RLock()
_ALL: list["LazyKernel"] = []
_NUMBA: Any = None


class NumbaName:
    """Placeholder for a Numba attribute used inside kernels (e.g. ``uint64``); replaced in the
    kernel module's globals by the real Numba object before the kernel is compiled."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"numba.{self.name} (not imported yet)"


#: Numba scalar types kernels use as casts.
uint64 = NumbaName("uint64")


def _fast_cache_load(cache_cls: Any) -> None:
    """Make ``cache_cls.load_overload`` skip the full target refresh for lancejit kernels."""
    original = cache_cls.load_overload
    if getattr(original, "_lancejit", False):
        return
    from numba.core.runtime import rtsys

    def load_overload(self: Any, sig: Any, target_context: Any) -> Any:
        py_func = getattr(self, "_py_func", None)
        if getattr(py_func, "__module__", "").startswith("lancejit."):
            rtsys.initialize(target_context)
            with self._guard_against_spurious_io_errors():
                return self._load_overload(sig, target_context)
        return original(self, sig, target_context)

    load_overload._lancejit = True  # type: ignore[attr-defined]
    cache_cls.load_overload = load_overload


def numba() -> Any:
    """The ``numba`` module, imported (and the cache loader set up) on first use."""
    global _NUMBA
    if _NUMBA is None:
        with _LOCK:
            if _NUMBA is None:
                import numba as nb

                if os.environ.get("LANCEJIT_NUMBA_FAST_LOAD", "1") != "0":
                    try:
                        from numba.core.caching import Cache

                        if hasattr(Cache, "_load_overload") and hasattr(Cache, "_guard_against_spurious_io_errors"):
                            _fast_cache_load(Cache)
                    except ImportError:  # pragma: no cover - other Numba layouts: keep Numba's loader
                        pass
                _NUMBA = nb
    return _NUMBA


class LazyKernel:
    """A kernel whose Numba dispatcher is created on first call (see the module docstring).

    Calling it, or reading any dispatcher attribute (``stats``, ``signatures``, ``py_func`` ...),
    materializes the dispatcher.
    """

    def __init__(self, fn: Callable[..., Any], opts: dict[str, Any]) -> None:
        self._fn = fn
        self._opts = opts
        self._disp: Any = None
        self.__name__ = fn.__name__
        self.__qualname__ = fn.__qualname__
        self.__module__ = fn.__module__
        self.__doc__ = fn.__doc__
        self.__wrapped__ = fn
        _ALL.append(self)

    def __call__(self, *args: Any) -> Any:
        disp = self._disp
        if disp is None:
            disp = self.dispatcher()
        return disp(*args)

    @property
    def materialized(self) -> bool:
        """True once the Numba dispatcher exists."""
        return self._disp is not None

    def dispatcher(self) -> Any:
        """The Numba dispatcher (created, and swapped into importing modules, on first use)."""
        if self._disp is not None:
            return self._disp
        with _LOCK:
            if self._disp is None:
                nb = numba()
                g = self._fn.__globals__
                for name in _names(self._fn.__code__):
                    v = g.get(name)
                    if isinstance(v, LazyKernel) and v is not self:
                        g[name] = v.dispatcher()
                    elif isinstance(v, NumbaName):
                        g[name] = getattr(nb, v.name)
                disp = nb.njit(**self._opts)(self._fn)
                self._disp = disp
                _swap(self, disp)
        return self._disp

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):  # copy/pickle/introspection probes do not import Numba
            raise AttributeError(name)
        return getattr(self.dispatcher(), name)

    def __reduce__(self) -> tuple[Any, tuple[str, str]]:
        return _lookup, (self.__module__, self.__qualname__)

    def __repr__(self) -> str:
        state = "loaded" if self._disp is not None else "not loaded"
        return f"<lancejit kernel {self.__module__}.{self.__qualname__} ({state})>"


def _lookup(module: str, qualname: str) -> Any:
    """The kernel named ``module.qualname`` (unpickling)."""
    import importlib

    return getattr(importlib.import_module(module), qualname)


def _names(code: Any) -> set[str]:
    """Global names a code object (and the code objects nested in it) refers to."""
    out = set(code.co_names)
    for c in code.co_consts:
        if hasattr(c, "co_names"):
            out |= _names(c)
    return out


def _swap(kernel: LazyKernel, disp: Any) -> None:
    """Replace ``kernel`` by ``disp`` in the namespace of every loaded lancejit module."""
    for mod_name, mod in list(sys.modules.items()):
        if mod is None or not (mod_name == "lancejit" or mod_name.startswith("lancejit.")):
            continue
        ns = getattr(mod, "__dict__", None)
        if ns is None:
            continue
        for key, value in list(ns.items()):
            if value is kernel:
                ns[key] = disp


def njit(**opts: Any) -> Callable[[Callable[..., Any]], LazyKernel]:
    """Decorator with ``numba.njit``'s keyword options, returning a :class:`LazyKernel`."""

    def deco(fn: Callable[..., Any]) -> LazyKernel:
        return LazyKernel(fn, opts)

    return deco


def kernels() -> list[LazyKernel]:
    """Every kernel defined by the kernel modules imported so far."""
    return list(_ALL)


def cache_misses() -> dict[str, int]:
    """Compilations (cache misses) per materialized kernel in this process, by qualified name;
    kernels never called are not listed.  All zeros means nothing was compiled."""
    out: dict[str, int] = {}
    for k in _ALL:
        if k.materialized:
            out[f"{k.__module__}.{k.__qualname__}"] = sum(k._disp.stats.cache_misses.values())
    return out
