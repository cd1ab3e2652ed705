"""Lazy Numba kernels: ``@njit(cache=True, nogil=True)`` that imports Numba on first *call*.

Every kernel module imports :func:`njit` from here instead of from ``numba``.  The decorator
returns a :class:`LazyKernel`; importing a kernel module therefore costs microseconds and does
not import Numba.  The first call of a kernel imports Numba (once per process), turns the
function into a real Numba dispatcher (which loads its machine code from the on-disk cache, or
compiles it on a cache miss) and replaces the kernel's name with that dispatcher in every
``lancejit`` module that imported it, so later calls go straight to Numba.  A call thus loads
only the kernels it meets.

Loading a cached kernel: Numba's cache loader first "refreshes" its whole CPU target (imports
and registers every typing and lowering template it has: a fraction of a second per process)
although rebuilding already-compiled machine code needs only the Numba runtime.  For lancejit's
own kernels the loader below initializes the runtime and skips that refresh; a cache miss still
goes through Numba's compiler, which refreshes the target itself.  The fast loader also leaves a
kernel's callees unresolved until a cache miss needs them (a load creates one dispatcher, not
one per callee), skips Numba's extension entry-point scan unless it compiles, and rebuilds the
environments of Numba library code inlined in a kernel without importing their modules
(``numba.np.arrayobj`` & co., costly imports a cached load does not need), loads the Numba
runtime's own functions from a cache file instead of compiling them and types arrays without
importing ``numpy.ma`` (:mod:`.numba_startup`).  ``LANCEJIT_NUMBA_FAST_LOAD=0`` turns all this
off.

The fast loader replaces private Numba functions (``Cache.load_overload``,
``environment._rebuild_env``, and through :mod:`.numba_startup` ``nrtdynmod.compile_nrt_functions``
and Numba's ``typeof`` of ndarrays): it is installed only for the Numba versions it was verified with
(:data:`FAST_LOAD_VERIFIED`, a half-open range); other versions get Numba's own behaviour.

Specializations: a kernel declares the argument types it is called with next to its definition
(``@njit(..., specs=("ro(u1[::1]), i8, i8",))``, see :func:`parse_spec`); ``lancejit warmup``
compiles exactly those (:func:`discover` finds every kernel under ``lancejit/``), and the tests
check a broad workload after it compiles nothing.  Kernels called only from other kernels need
none (their code is compiled into their callers).  Calls from kernel code are typed without
literal constants (:func:`_unliteral_calls`): a helper called with ``0`` on one path and an
``int64`` on another is compiled once, not once per literal.

Tier 0 (:mod:`lancejit.encoding.kernels.tier0`): while Numba is not loaded, small calls of the
take kernels run their Python source instead (a fresh process serving a small take never imports
Numba), and once it is, a take kernel not loaded yet serves its first tiny calls so too (a
three-row take after a scan loads no kernel); ``LANCEJIT_TIER0=0`` turns it off.

:func:`kernels` lists every kernel defined so far (for ``lancejit.warmup`` and the tests that
check a warm process compiles nothing: :func:`cache_misses`).
"""

from __future__ import annotations

import sys
import threading
import time
from typing import Any, Callable

from lancejit.encoding.kernels import background, numba_startup, tier0
from lancejit.encoding.kernels.tier0 import _names  # global names a code object refers to

_LOCK = threading.RLock()
_ALL: list["LazyKernel"] = []
_NUMBA: Any = None
#: kernel function -> its LazyKernel (cache misses resolve the kernel's globals).
_KERNEL_OF: dict[Any, "LazyKernel"] = {}
#: True once :func:`_fast_cache_load` is installed.
_FAST = False


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
int64 = NumbaName("int64")

#: Numba versions the fast loader was verified with: ``[low, high)`` as (major, minor) tuples.
FAST_LOAD_VERIFIED = ((0, 60), (0, 69))


def _version(text: str) -> tuple[int, int]:
    """``(major, minor)`` of a version string such as ``0.68.1`` or ``0.69.0rc1``."""
    parts = []
    for piece in text.split(".")[:2]:
        digits = ""
        for ch in piece:
            if not ch.isdigit():
                break
            digits += ch
        parts.append(int(digits or 0))
    while len(parts) < 2:
        parts.append(0)
    return parts[0], parts[1]


def fast_load_supported(version: str) -> bool:
    """Whether the fast loader may be installed on Numba ``version`` (:data:`FAST_LOAD_VERIFIED`)."""
    low, high = FAST_LOAD_VERIFIED
    return low <= _version(version) < high


def fast_load_wanted() -> bool:
    """The ``numba_fast_load`` knob (``LANCEJIT_NUMBA_FAST_LOAD``)."""
    from lancejit.core.config import settings

    return settings().numba_fast_load


def _fast_cache_load(cache_cls: Any) -> None:
    """Make ``cache_cls.load_overload`` skip the full target refresh for lancejit kernels.

    Loading a lancejit kernel from the cache also (1) rebuilds the environments of the Numba
    library functions compiled into it without importing their modules (see
    :func:`_lazy_env`), and (2) leaves the kernel's callees and Numba names unresolved: only a
    cache miss, which compiles, resolves them (and runs Numba's extension entry points first,
    the hook :meth:`LazyKernel.dispatcher` disabled for the load)."""
    original = cache_cls.load_overload
    if getattr(original, "_lancejit", False):
        return
    from numba.core import entrypoints, environment
    from numba.core.runtime import rtsys

    rebuild_env = environment._rebuild_env

    def lazy_env(modname: str, consts: Any, env_name: str) -> Any:
        if modname.startswith("numba.") and modname not in sys.modules:
            env = environment.lookup_environment(env_name)
            return env if env is not None else _lazy_env(environment.Environment, modname, consts, env_name)
        return rebuild_env(modname, consts, env_name)

    def load_overload(self: Any, sig: Any, target_context: Any) -> Any:
        py_func = getattr(self, "_py_func", None)
        if getattr(py_func, "__module__", "").startswith("lancejit."):
            rtsys.initialize(target_context)
            # unpickling finds ``_rebuild_env`` by name: swapped for this load only (under
            # Numba's compiler lock, which Dispatcher.compile holds: no other thread pickles
            # environments meanwhile, and no cache written ever refers to lazy_env)
            environment._rebuild_env = lazy_env
            try:
                with self._guard_against_spurious_io_errors():
                    got = self._load_overload(sig, target_context)
            finally:
                environment._rebuild_env = rebuild_env
            if got is None:  # a cache miss: Numba compiles the kernel next
                if getattr(_LOAD_ONLY, "on", False):
                    raise CacheMiss(sig)
                entrypoints.init_all()
                kernel = _KERNEL_OF.get(py_func)
                if kernel is not None:
                    kernel._resolve_globals()
            return got
        return original(self, sig, target_context)

    load_overload._lancejit = True  # type: ignore[attr-defined]  # a marker on the function; typeshed allows none
    cache_cls.load_overload = load_overload


class CacheMiss(Exception):
    """Raised inside :func:`load_cached` when the cache lacks a specialization."""


_LOAD_ONLY = threading.local()


def load_cached(disp: Any, sig: tuple[Any, ...]) -> bool:
    """Load specialization ``sig`` of the lancejit kernel dispatcher ``disp`` from the on-disk
    cache; False, compiling nothing, when the cache lacks it (needs the fast loader)."""
    if sig in disp.overloads:
        return True
    _LOAD_ONLY.on = True
    try:
        disp.compile(sig)
    except CacheMiss:
        return False
    finally:
        _LOAD_ONLY.on = False
    return True


def cached_signatures(disp: Any) -> set[tuple[Any, ...]]:
    """Argument types of the specializations of ``disp`` in its on-disk cache index (those of
    this machine and Numba version), without loading them; empty when unreadable."""
    try:
        index = disp._cache._cache_file._load_index()
    except Exception:  # noqa: BLE001 - no index, or one of another layout: nothing cached
        return set()
    return {key[0] for key in index}


def _lazy_env(env_cls: Any, modname: str, consts: Any, env_name: str) -> Any:
    """The environment of a cached Numba library function of module ``modname`` (not imported
    yet) without importing it: nopython code reads only an environment's constants, never its
    globals (what Numba's own rebuild imports the module for)."""
    import builtins

    env = env_cls({"__name__": modname, "__builtins__": builtins})
    env.consts[:] = consts
    env.env_name = env_name
    env_cls._memo[env_name] = env
    return env


def _no_init_hook() -> None:
    """Dispatcher hook replaced for lancejit kernels (see :func:`_fast_cache_load`)."""


def _fast_loader() -> bool:
    """Numba loaded (imported now if needed) with the fast cache loader installed."""
    numba()
    return _FAST


def numba() -> Any:
    """The ``numba`` module, imported (and the cache loader set up) on first use."""
    global _NUMBA, _FAST
    if _NUMBA is None:
        with _LOCK:
            if _NUMBA is None:
                import numba as nb

                if fast_load_wanted() and fast_load_supported(nb.__version__):
                    try:
                        from numba.core.caching import Cache

                        if hasattr(Cache, "_load_overload") and hasattr(Cache, "_guard_against_spurious_io_errors"):
                            _fast_cache_load(Cache)
                            numba_startup.install()
                            _FAST = True
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
        #: Declared specializations (argument type specs, see :func:`parse_spec`).
        self.specs: tuple[str, ...] = tuple(opts.pop("specs", ()))
        self._opts = opts
        self._disp: Any = None
        self.__name__ = fn.__name__
        self.__qualname__ = fn.__qualname__
        self.__module__ = fn.__module__
        self.__doc__ = fn.__doc__
        self.__wrapped__ = fn
        self._py: Callable[..., Any] | None = None
        cost = tier0.COSTS.get(f"{fn.__module__}.{fn.__qualname__}") if tier0.ENABLED else None
        self._cost: Callable[..., float] | None = cost
        #: Estimated microseconds of interpreted calls since Numba was loaded (:meth:`_admitted`).
        self._tier0_spent = 0.0
        self._resolved = False
        #: Whether the interpreted version may serve calls while the kernel is being compiled in
        #: the background (``interpret=False``: kernels whose Python semantics differ).
        self.interpretable: bool = bool(opts.pop("interpret", True))
        self._swapped = False
        self._retry_at = 0.0
        _KERNEL_OF[fn] = self
        _ALL.append(self)

    def __call__(self, *args: Any) -> Any:
        disp = self._disp
        if disp is None:
            if self._cost is not None and self._admitted(args):
                ok, out = tier0.run(self.interpreted(), args)
                if ok:
                    return out
            if not background.active(_fast_loader):
                return self.dispatcher()(*args)
            disp = self.dispatcher(swap=False)
        if self._swapped:
            return disp(*args)
        return self._cold_call(disp, args)

    def _admitted(self, args: tuple) -> bool:
        """Whether this call (the kernel not loaded) runs interpreted (:mod:`.tier0`): against
        the process's budget before Numba is loaded, then against the kernel's own."""
        assert self._cost is not None
        if _NUMBA is None or tier0.ALWAYS:
            return tier0.admit(self._cost, args)
        cost = tier0.admit_unloaded(self._cost, args, self._tier0_spent)
        if cost is None:
            return False
        self._tier0_spent += cost
        return True

    def _cold_call(self, disp: Any, args: tuple) -> Any:
        """A call before the kernel is swapped in (:mod:`.background`): served by the compiled
        code when the cache has this specialization, else by the interpreted kernel while a
        background process compiles it (compiled here only if it cannot be interpreted)."""
        try:
            sig = tuple(disp.typeof_pyval(a) for a in args)
        except Exception:  # noqa: BLE001 - untypable arguments: Numba reports them
            return disp(*args)
        if sig not in disp.overloads:
            now = time.monotonic()
            if now < self._retry_at or not load_cached(disp, sig):
                if now >= self._retry_at:
                    self._retry_at = now + background.RETRY_S
                    background.request(f"{self.__module__}.{self.__qualname__}")
                if self.interpretable:
                    ok, out = tier0.run(self.interpreted(), args)
                    if ok:
                        return out
                return disp(*args)
        if self._complete(disp):
            with _LOCK:
                if not self._swapped:
                    self._swapped = True
                    _swap(self, disp)
        return disp(*args)

    def ready(self) -> bool:
        """Whether calling this kernel now compiles nothing in the caller: Numba is loaded and
        either misses compile in the caller anyway (no background compilation) or every declared
        specialization loads from the cache (then loaded and swapped in).  When one is missing,
        the background process is asked for it (and the cache checked again at most every
        :data:`background.RETRY_S` seconds).  For callers that have another way than the kernel
        (protobuf instead of the wire-format kernels)."""
        if _NUMBA is None:
            return False
        if self._swapped:
            return True
        if not background.active(_fast_loader):
            return True
        now = time.monotonic()
        if now < self._retry_at:
            return False
        from lancejit.encoding.kernels import specs as _specs

        disp = self.dispatcher(swap=False)
        if all(load_cached(disp, _specs.parse(one)) for d in self.specs for one in _specs.expand(d)):
            self.dispatcher()  # swapped in
            return True
        self._retry_at = now + background.RETRY_S
        background.request(f"{self.__module__}.{self.__qualname__}")
        return False

    def _complete(self, disp: Any) -> bool:
        """Every declared specialization is loaded or in the cache (nothing can miss anymore)."""
        from lancejit.encoding.kernels import specs as _specs

        declared = {_specs.parse(one) for d in self.specs for one in _specs.expand(d)}
        have = set(disp.overloads)
        return declared <= have or declared <= have | cached_signatures(disp)

    def interpreted(self) -> Callable[..., Any]:
        """The kernel as plain Python (tier 0, :mod:`lancejit.encoding.kernels.tier0`): its kernel
        callees resolved to their own interpreted versions, Numba cast names to NumPy casts."""
        py = self._py
        if py is None:
            from lancejit.encoding.kernels import tier0_numpy

            name = f"{self.__module__}.{self.__qualname__}"
            py = tier0.NUMPY.get(name) or tier0_numpy.VERSIONS.get(name)
            py = self._py = py or tier0.twin(self._fn, _interpreted_global)
        return py

    @property
    def materialized(self) -> bool:
        """True once the Numba dispatcher exists."""
        return self._disp is not None

    def dispatcher(self, swap: bool = True) -> Any:
        """The Numba dispatcher (created on first use, and swapped into importing modules unless
        ``swap`` is False)."""
        if self._disp is not None:
            if swap and not self._swapped:
                with _LOCK:
                    self._swapped = True
                    _swap(self, self._disp)
            return self._disp
        with _LOCK:
            if self._disp is None:
                nb = numba()
                if not _FAST:  # (with the fast loader, only a cache miss needs the callees)
                    self._resolve_globals()
                disp = nb.njit(**self._opts)(self._fn)
                if _FAST:
                    disp._compilation_chain_init_hook = _no_init_hook
                _unliteral_calls(disp)
                self._disp = disp
                if swap:
                    self._swapped = True
                    _swap(self, disp)
        return self._disp

    def _resolve_globals(self) -> None:
        """Give the kernel's module the dispatchers of the kernels it calls and the Numba objects
        of its Numba names (what compiling it needs)."""
        with _LOCK:
            if self._resolved:
                return
            self._resolved = True
            nb = numba()
            g = self._fn.__globals__
            for name in _names(self._fn.__code__):
                v = g.get(name)
                if isinstance(v, LazyKernel) and v is not self:
                    g[name] = v.dispatcher()
                    v._resolve_globals()
                elif isinstance(v, NumbaName):
                    g[name] = getattr(nb, v.name)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):  # copy/pickle/introspection probes do not import Numba
            raise AttributeError(name)
        return getattr(self.dispatcher(), name)

    def __reduce__(self) -> tuple[Any, tuple[str, str]]:
        return _lookup, (self.__module__, self.__qualname__)

    def __repr__(self) -> str:
        state = "loaded" if self._disp is not None else "not loaded"
        return f"<lancejit kernel {self.__module__}.{self.__qualname__} ({state})>"


def _unliteral_calls(disp: Any) -> None:
    """Type calls of ``disp`` from kernel code with the non-literal types of their arguments.

    Numba types a constant argument as ``Literal[int](0)`` and a loop-carried variable first
    as its initial literal: a helper called as ``f(buf, 0, end)`` and ``f(buf, pos, end)`` was
    compiled (and its cache entries written) once per literal and once for ``int64``, the
    callers' type inference redone each time.  Only on the Numba versions of
    :data:`FAST_LOAD_VERIFIED` (``get_call_template`` is how Numba types such calls there)."""
    if not fast_load_supported(_NUMBA.__version__):
        return
    from numba.core.types import unliteral

    original = disp.get_call_template

    def get_call_template(args: Any, kws: Any) -> Any:
        return original(tuple(unliteral(a) for a in args), {k: unliteral(v) for k, v in kws.items()})

    disp.get_call_template = get_call_template


def _interpreted_global(value: Any, name: str) -> Any:
    """What a kernel's global ``name`` (holding ``value``) is when the kernel runs interpreted."""
    if isinstance(value, LazyKernel):
        return value.interpreted()
    if isinstance(value, NumbaName):
        return tier0.numpy_cast(value.name) or value
    if _NUMBA is not None and type(value).__module__.startswith("numba."):
        for k in _ALL:  # a kernel callee already swapped for its dispatcher
            if k._disp is value:
                return k.interpreted()
        return tier0.numpy_cast(name) or value  # a Numba cast name already resolved
    return value


def _lookup(module: str, qualname: str) -> Any:
    """The kernel named ``module.qualname`` (unpickling)."""
    import importlib

    return getattr(importlib.import_module(module), qualname)


#: Where lancejit modules hold kernels: id(kernel) -> [(module namespace, name)]; modules scanned.
_REFS: dict[int, list[tuple[dict, str]]] = {}
_SCANNED: set[str] = set()


def _swap(kernel: LazyKernel, disp: Any) -> None:
    """Replace ``kernel`` by ``disp`` in the namespace of every loaded lancejit module (each
    module's namespace is scanned for kernels once, when first seen here)."""
    for mod_name, mod in list(sys.modules.items()):
        if mod_name in _SCANNED or mod is None or not (mod_name == "lancejit" or mod_name.startswith("lancejit.")):
            continue
        ns = getattr(mod, "__dict__", None)
        if ns is None:
            continue
        _SCANNED.add(mod_name)
        for key, value in list(ns.items()):
            if isinstance(value, LazyKernel):
                _REFS.setdefault(id(value), []).append((ns, key))
    for ns, key in _REFS.get(id(kernel), ()):
        if ns.get(key) is kernel:
            ns[key] = disp


def njit(**opts: Any) -> Callable[[Callable[..., Any]], LazyKernel]:
    """Decorator with ``numba.njit``'s keyword options, returning a :class:`LazyKernel`."""

    def deco(fn: Callable[..., Any]) -> LazyKernel:
        return LazyKernel(fn, opts)

    return deco


def ready(kernel: Any) -> bool:
    """:meth:`LazyKernel.ready` of ``kernel``; True for a dispatcher already swapped in."""
    if isinstance(kernel, LazyKernel):
        return kernel.ready()
    return _NUMBA is not None


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
