"""What a process pays when it starts running kernels, cut (installed with the fast cache loader).

* **The Numba runtime's own functions from a cache file.**  Before the first kernel runs, Numba
  initializes its runtime (NRT): it builds a small LLVM module (atomic reference counting,
  ``NRT_MemInfo_data_fast``, the unresolved-symbol abort), optimizes it and generates machine
  code for it -- in every process, a sizeable part of what starting Numba costs.  Here
  the runtime's functions are compiled once with object caching and written next to Numba's
  cache of lancejit's kernels (a file named after the Numba, llvmlite and LLVM versions, the
  CPU and the Python version: what the machine code depends on, as for Numba's own cache
  index); later processes load the machine code from it like a cached kernel.  A file that
  does not read back whole (a partial write, another layout) is ignored and the functions
  compiled as before; a cache directory that cannot be written leaves the file out.
* **Array types without ``numpy.ma``.**  Numba types an ndarray argument (the first call of a
  kernel with each array type) by first asking whether it is a ``numpy.ma.MaskedArray``, which
  imports ``numpy.ma``; plain ndarrays are typed here the same way without asking.

:func:`install` replaces ``nrtdynmod.compile_nrt_functions`` and the ``ndarray`` entry of
Numba's ``typeof`` (private Numba names: :mod:`.jit` calls it only for the Numba versions its
fast loader was verified with).
"""

from __future__ import annotations

import os
import sys
from typing import Any

import numpy as np

_MAGIC = b"LJNRT\x01\x00\x00"
_DIGEST = 32
_installed = False


def _anchor() -> None:
    """The function whose Numba cache locator places the runtime file."""


def _cache_dir() -> str | None:
    """Where Numba caches the kernels of this package (created if needed; Numba's choice of
    directory: next to the source, or a user-wide one when that is read-only), or None."""
    from numba.core.caching import FunctionCache

    try:
        return FunctionCache(_anchor)._cache_path
    except (OSError, RuntimeError):  # no writable place: Numba caches nothing either
        return None


def _file_name(codegen: Any) -> str:
    """The runtime file's name: what its machine code depends on, hashed."""
    import hashlib

    import llvmlite
    import numba
    from llvmlite import binding as ll

    text = repr((numba.__version__, llvmlite.__version__, tuple(ll.llvm_version_info), codegen.magic_tuple(),
                 sys.version_info[:2]))
    return f"lancejit-nrt-{hashlib.sha256(text.encode()).hexdigest()[:20]}.nbc"


def read_runtime(path: str) -> tuple[bytes, bytes] | None:
    """``(object code, bitcode)`` from a runtime file, or None when it does not read back whole."""
    import hashlib

    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError:
        return None
    head = len(_MAGIC) + 8
    if len(raw) < head + _DIGEST or raw[: len(_MAGIC)] != _MAGIC:
        return None
    body, digest = raw[:-_DIGEST], raw[-_DIGEST:]
    if hashlib.sha256(body).digest() != digest:
        return None
    n = int.from_bytes(body[len(_MAGIC):head], "little")
    if n > len(body) - head:
        return None
    return body[head:head + n], body[head + n:]


def write_runtime(path: str, obj: bytes, bitcode: bytes) -> None:
    """Write a runtime file atomically (a temporary file renamed over it); nothing on failure."""
    import hashlib
    import tempfile

    body = _MAGIC + len(obj).to_bytes(8, "little") + obj + bitcode
    try:
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".lancejit-nrt-")
    except OSError:
        return
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(body + hashlib.sha256(body).digest())
        os.replace(tmp, path)
    except OSError:
        try:
            os.remove(tmp)
        except OSError:
            pass


def compile_nrt_functions(ctx: Any) -> Any:
    """Numba's ``nrtdynmod.compile_nrt_functions(ctx)`` through the runtime file (see the module
    docstring).  Called by Numba under its compiler lock."""
    from numba.core.runtime import nrtdynmod

    codegen = ctx.codegen()
    directory = _cache_dir()
    path = os.path.join(directory, _file_name(codegen)) if directory else None
    if path is not None:
        got = read_runtime(path)
        if got is not None:
            try:
                return codegen.unserialize_library(("nrt", "object", got))
            except Exception:  # noqa: BLE001 - machine code that does not load: compiled below
                pass
    ir_mod, library = nrtdynmod.create_nrt_module(ctx)
    library.enable_object_caching()
    library.add_ir_module(ir_mod)
    library.finalize()
    if path is not None:
        _, _, (obj, bitcode) = library.serialize_using_object_code()
        write_runtime(path, obj, bitcode)
    return library


def _typeof_arrays() -> None:
    """Type plain ndarrays without the ``numpy.ma`` check (subclasses keep Numba's typing)."""
    from numba.core import errors, types
    from numba.core.typing.typeof import typeof_impl
    from numba.np import numpy_support

    numba_typeof = typeof_impl.dispatch(np.ndarray)

    def typeof_ndarray(val: Any, c: Any) -> Any:
        if type(val) is not np.ndarray:
            return numba_typeof(val, c)
        try:
            dtype = numpy_support.from_dtype(val.dtype)
        except errors.NumbaNotImplementedError:
            return numba_typeof(val, c)  # Numba's error for the dtype
        return types.Array(dtype, val.ndim, numpy_support.map_layout(val), readonly=not val.flags.writeable)

    typeof_impl.register(np.ndarray)(typeof_ndarray)


def install() -> None:
    """Install both (once per process; before the runtime is initialized)."""
    global _installed
    if _installed:
        return
    _installed = True
    from numba.core.runtime import nrtdynmod

    if callable(getattr(nrtdynmod, "compile_nrt_functions", None)) and hasattr(nrtdynmod, "create_nrt_module"):
        nrtdynmod.compile_nrt_functions = compile_nrt_functions
    _typeof_arrays()


__all__ = ["compile_nrt_functions", "install", "read_runtime", "write_runtime"]
