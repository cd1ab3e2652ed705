"""``lancejit.warmup()`` / ``lancejit warmup``: prepare an installation so a fresh process starts fast.

Run it once after installing (and after upgrading) lancejit:

1. byte-compiles lancejit's modules (``compileall``; editable installs and environments with
   ``PYTHONDONTWRITEBYTECODE`` otherwise compile every module they import from source in every
   process);
2. compiles every Numba kernel, for every specialization it declares, into Numba's on-disk cache.

The kernels are found in the code (:func:`discover`: every module under ``lancejit/`` that
imports the project's lazy ``njit``), and each declares next to its definition the argument
types it is called with (``specs=``, see :mod:`lancejit.encoding.kernels.specs`): nothing here
lists kernels or types by hand.  The kernels are compiled by worker processes, one per core
(the modules split between them by their code size), each printing a line per kernel.

Later processes load the compiled kernels from the cache on first use instead of compiling
(check with ``lancejit.encoding.kernels.jit.cache_misses()``: all zeros).  Nothing is written
outside lancejit's own directories (the cache lives in the package's ``__pycache__``).

``python -m lancejit.warm --worker I N`` is one worker: it compiles the I-th of N shares and
prints one JSON line per kernel; ``python -m lancejit.warm --background`` is the background
compile process of :mod:`lancejit.encoding.kernels.background`.
"""

from __future__ import annotations

import compileall
import importlib
import json
import os
import re
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, TextIO

#: A module defining kernels imports the lazy decorator like this.
_DEFINES_KERNELS = re.compile(r"^\s*from\s+(lancejit\.encoding\.kernels\.jit|\.jit|\.)\s+import\s+[^\n]*\bnjit\b",
                              re.M)


@dataclass(frozen=True, slots=True)
class WarmupReport:
    """What :func:`warmup` did: ``kernels`` found, ``specializations`` declared (and compiled
    or loaded), ``compiled`` compilations it caused (0 when the cache was already warm),
    ``undeclared`` kernels declaring no specialization that no other kernel calls (they would
    compile on first use), ``slowest`` the ``(kernel, seconds)`` that took longest, ``seconds``
    wall time."""

    kernels: int
    specializations: int
    compiled: int
    undeclared: tuple[str, ...]
    slowest: tuple[tuple[str, float], ...]
    seconds: float


#: The directory of the ``lancejit`` package (this module lives at its top).
_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


def kernel_modules() -> list[str]:
    """Names of the modules under ``lancejit/`` that define kernels with the lazy ``njit``."""
    root = _PACKAGE_DIR
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(("__", ".")))
        for name in sorted(filenames):
            if not name.endswith(".py"):
                continue
            path = os.path.join(dirpath, name)
            with open(path, encoding="utf-8") as f:
                text = f.read()
            if not _DEFINES_KERNELS.search(text):
                continue
            rel = os.path.relpath(path, os.path.dirname(root))[:-3].replace(os.sep, ".")
            out.append(rel[: -len(".__init__")] if rel.endswith(".__init__") else rel)
    return out


def discover() -> list[Any]:
    """Every kernel of lancejit (the :class:`~lancejit.encoding.kernels.jit.LazyKernel` of each
    ``njit`` under ``lancejit/``), its module imported."""
    from lancejit.encoding.kernels import jit

    for name in kernel_modules():
        importlib.import_module(name)
    return jit.kernels()


def _name(k: Any) -> str:
    return f"{k.__module__}.{k.__qualname__}"


def undeclared(kernels: list[Any]) -> list[str]:
    """Kernels that declare no specialization although no kernel calls them (entry points)."""
    from lancejit.encoding.kernels.tier0 import _names

    called = set()
    for k in kernels:
        g = k.__wrapped__.__globals__
        for name in _names(k.__wrapped__.__code__):
            called.add(id(g.get(name)))
    return [_name(k) for k in kernels
            if not k.specs and id(k) not in called and not (k.materialized and id(k.dispatcher()) in called)]


def _weight(k: Any) -> int:
    """Relative compile cost of a kernel's declared specializations (bytecode size x count)."""
    from lancejit.encoding.kernels import specs

    n = sum(len(specs.expand(s)) for s in k.specs)
    return n * (200 + len(k.__wrapped__.__code__.co_code))


def shares(kernels: list[Any], n: int) -> list[list[Any]]:
    """``kernels`` split into ``n`` lists of about equal compile cost, a module's kernels in one
    list (they share helpers, compiled once per process)."""
    by_module: dict[str, list[Any]] = {}
    for k in kernels:
        if k.specs:
            by_module.setdefault(k.__module__, []).append(k)
    groups = sorted(by_module.values(), key=lambda ks: -sum(_weight(k) for k in ks))
    out: list[list[Any]] = [[] for _ in range(max(1, n))]
    load = [0] * len(out)
    for ks in groups:
        i = load.index(min(load))
        out[i].extend(ks)
        load[i] += sum(_weight(k) for k in ks)
    return [s for s in out if s]


def compile_kernel(k: Any) -> int:
    """Load or compile every declared specialization of kernel ``k``; returns compilations."""
    from lancejit.encoding.kernels import specs

    disp = k.dispatcher()
    before = sum(disp.stats.cache_misses.values())
    for spec in k.specs:
        for one in specs.expand(spec):
            disp.compile(specs.parse(one))
    return sum(disp.stats.cache_misses.values()) - before


def _worker(index: int, count: int, out: TextIO) -> None:
    """Compile share ``index`` of ``count`` (see :func:`shares`), one JSON line per kernel."""
    from lancejit.encoding.kernels import jit

    jit.numba()
    kernels = discover()
    for k in shares(kernels, count)[index] if index < len(shares(kernels, count)) else []:
        t0 = time.perf_counter()
        c0 = time.process_time()
        compiled = compile_kernel(k)
        out.write(json.dumps({"kernel": _name(k), "seconds": time.perf_counter() - t0,
                              "cpu_seconds": time.process_time() - c0, "compiled": compiled}) + "\n")
        out.flush()


def lock_path() -> str:
    """The file locked by the background compile process (one per installation at a time)."""
    from lancejit.encoding.kernels import jit

    cache_dir = os.path.join(os.path.dirname(os.path.abspath(jit.__file__)), "__pycache__")
    if os.access(cache_dir, os.W_OK) or (not os.path.exists(cache_dir) and os.access(os.path.dirname(cache_dir), os.W_OK)):
        os.makedirs(cache_dir, exist_ok=True)
        return os.path.join(cache_dir, "lancejit-background.lock")
    import hashlib
    import tempfile

    tag = hashlib.sha256(cache_dir.encode()).hexdigest()[:16]
    return os.path.join(tempfile.gettempdir(), f"lancejit-background-{tag}.lock")


def _background(requests: TextIO) -> None:
    """The background compile process (:mod:`lancejit.encoding.kernels.background`): kernels
    named on ``requests`` (one per line) first, then every other declared specialization."""
    import fcntl
    from collections import deque

    from lancejit.encoding.kernels import jit

    try:
        os.nice(10)
    except OSError:  # pragma: no cover - not allowed: run at the same priority
        pass
    wanted: deque[str] = deque()
    closed = threading.Event()

    def read() -> None:
        for line in requests:
            wanted.append(line.strip())
        closed.set()

    threading.Thread(target=read, daemon=True).start()
    with open(lock_path(), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        jit.numba()
        kernels = [k for k in discover() if k.specs]
        by_name = {_name(k): k for k in kernels}
        done: set[str] = set()
        order = [k for s in shares(kernels, 1) for k in s]
        while len(done) < len(order):
            k = None
            while wanted:
                k = by_name.get(wanted.popleft())
                if k is not None and _name(k) not in done:
                    break
                k = None
            if k is None:
                k = next(x for x in order if _name(x) not in done)
            done.add(_name(k))
            compile_kernel(k)


def _byte_compile() -> None:
    root = _PACKAGE_DIR
    try:
        compileall.compile_dir(root, quiet=2, workers=1)
    except OSError:  # a read-only installation: nothing to do
        pass


def default_jobs() -> int:
    """Worker processes: one per core this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - platforms without affinity
        return max(1, os.cpu_count() or 1)


def warmup(*, byte_compile: bool = True, jobs: int | None = None,
           progress: Callable[[str], None] | None = None) -> WarmupReport:
    """Byte-compile lancejit and compile every kernel's declared specializations into Numba's
    cache (see the module docstring).  ``jobs``: worker processes (default: one per core; 0
    compiles in this process); ``progress(line)`` is called once per kernel compiled.
    A few seconds with a warm cache."""
    t0 = time.perf_counter()
    from lancejit.encoding.kernels import jit

    kernels = discover()
    total = sum(1 for k in kernels if k.specs)
    nspecs = 0
    from lancejit.encoding.kernels import specs as _specs

    for k in kernels:
        nspecs += sum(len(_specs.expand(s)) for s in k.specs)
    jobs = default_jobs() if jobs is None else jobs
    done: list[dict[str, Any]] = []
    lock = threading.Lock()

    def record(item: dict[str, Any]) -> None:
        with lock:
            done.append(item)
            if progress is not None:
                progress(f"[{len(done):3d}/{total}] {item['kernel']}: {item['seconds']:.1f} s"
                         f" ({item.get('cpu_seconds', 0.0):.1f} s CPU)"
                         + (f", {item['compiled']} compiled" if item["compiled"] else ", cached"))

    if jobs <= 0:
        if byte_compile:
            _byte_compile()
        jit.numba()
        for k in kernels:
            if k.specs:
                t = time.perf_counter()
                c0 = time.process_time()
                c = compile_kernel(k)
                record({"kernel": _name(k), "seconds": time.perf_counter() - t,
                        "cpu_seconds": time.process_time() - c0, "compiled": c})
    else:
        n = min(jobs, max(1, len(shares(kernels, jobs))))
        env = dict(os.environ)
        env.pop("NUMBA_DISABLE_JIT", None)
        procs = [subprocess.Popen([sys.executable, "-m", "lancejit.warm", "--worker", str(i), str(n)],
                                  stdout=subprocess.PIPE, text=True, env=env) for i in range(n)]

        def read(p: subprocess.Popen) -> None:
            assert p.stdout is not None
            for line in p.stdout:
                line = line.strip()
                if line.startswith("{"):
                    record(json.loads(line))

        readers = [threading.Thread(target=read, args=(p,), daemon=True) for p in procs]
        for r in readers:
            r.start()
        if byte_compile:
            _byte_compile()
        for p, r in zip(procs, readers):
            p.wait()
            r.join()
        failed = [p.returncode for p in procs if p.returncode]
        if failed:
            raise RuntimeError(f"lancejit warmup: a worker failed (exit status {failed[0]})")
    slowest = tuple((d["kernel"], round(d["seconds"], 2)) for d in sorted(done, key=lambda d: -d["seconds"])[:5])
    return WarmupReport(len(kernels), nspecs, sum(d["compiled"] for d in done), tuple(undeclared(kernels)),
                        slowest, time.perf_counter() - t0)


if __name__ == "__main__":  # pragma: no cover - worker processes of warmup()
    if len(sys.argv) == 4 and sys.argv[1] == "--worker":
        _worker(int(sys.argv[2]), int(sys.argv[3]), sys.stdout)
    elif sys.argv[1:] == ["--background"]:
        _background(sys.stdin)
    else:
        sys.exit("usage: python -m lancejit.warm --worker INDEX COUNT | --background")
