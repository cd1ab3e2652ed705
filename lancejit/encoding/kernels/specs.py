"""Declared kernel specializations: the argument types a kernel is compiled for.

A kernel declares them next to its definition, one string per specialization::

    @njit(cache=True, nogil=True, specs=("ro(u1[::1]), i8, i8, u1[::1]",))
    def kernel(src, start, stop, out): ...

A spec is a comma-separated list of Numba types, evaluated with the short names below:
``i1 i2 i4 i8`` / ``u1 u2 u4 u8`` (signed / unsigned integers of 1-8 bytes), ``f4 f8``, ``b1``
(boolean); arrays by slicing (``u1[::1]`` a C-contiguous 1-d array, ``i8[:, ::1]`` a
C-contiguous 2-d one, ``u8[:]`` any layout); ``ro(t)`` the read-only version of array type ``t``
(buffers of memory and object stores, :func:`lancejit.encoding.kernels.readonly` views);
``utup(t, n)`` a tuple of ``n`` values of type ``t``.  Braces list alternatives, each
combination one specialization: ``{ro(u1[::1])|u1[::1]}, i8`` is two (a read-only or a
writable buffer; decompressed and realigned buffers are writable).  :func:`render` writes a compiled
signature back in this form (what a test reports for a specialization nobody declared).

``lancejit warmup`` compiles every declared specialization (:mod:`lancejit.warm`); importing
this module does not import Numba, parsing does.
"""

from __future__ import annotations

from typing import Any

_SHORT = {
    "i1": "int8", "i2": "int16", "i4": "int32", "i8": "int64",
    "u1": "uint8", "u2": "uint16", "u4": "uint32", "u8": "uint64",
    "f4": "float32", "f8": "float64", "b1": "boolean",
}
_LONG = {v: k for k, v in _SHORT.items()}
_LONG["bool"] = "b1"

_NS: dict[str, Any] | None = None


def _namespace() -> dict[str, Any]:
    global _NS
    if _NS is None:
        from numba.core import types

        ns: dict[str, Any] = {k: getattr(types, v) for k, v in _SHORT.items()}
        ns["ro"] = lambda t: t.copy(readonly=True)
        ns["utup"] = lambda t, n: types.UniTuple(t, n)
        ns["__builtins__"] = {}
        _NS = ns
    return _NS


def expand(spec: str) -> list[str]:
    """The specs ``spec`` stands for, its brace alternatives expanded (see the module docstring)."""
    start = spec.find("{")
    if start < 0:
        return [spec]
    stop = spec.find("}", start)
    if stop < 0:
        raise ValueError(f"bad kernel spec {spec!r}: unclosed brace")
    out = []
    for alt in spec[start + 1:stop].split("|"):
        out.extend(expand(spec[:start] + alt.strip() + spec[stop + 1:]))
    return out


def parse(spec: str) -> tuple[Any, ...]:
    """The Numba argument types of ``spec`` (see the module docstring); ``ValueError`` if it is
    not one."""
    try:
        got = eval(f"({spec},)", _namespace())  # noqa: S307 - specs are the project's own literals
    except Exception as exc:
        raise ValueError(f"bad kernel spec {spec!r}: {exc}") from None
    return tuple(got)


def render_type(t: Any) -> str:
    """One Numba type in spec form (its ``str`` when the spec syntax has no name for it)."""
    from numba.core import types

    if isinstance(t, types.Array):
        name = _LONG.get(str(t.dtype))
        if name is None:
            return str(t)
        dims = [":"] * t.ndim
        if t.layout == "C":
            dims[-1] = "::1"
        elif t.layout == "F":
            dims[0] = "::1"
        body = f"{name}[{', '.join(dims)}]"
        return f"ro({body})" if not t.mutable else body
    if isinstance(t, types.UniTuple):
        return f"utup({render_type(t.dtype)}, {t.count})"
    return _LONG.get(str(t), str(t))


def render(sig: tuple[Any, ...]) -> str:
    """A compiled signature's argument types in spec form."""
    return ", ".join(render_type(t) for t in sig)


__all__ = ["expand", "parse", "render", "render_type"]
