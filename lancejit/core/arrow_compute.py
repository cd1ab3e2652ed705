"""``pyarrow.compute`` as lancejit calls it, without importing that module until a function
needs it.

Importing ``pyarrow.compute`` is costly (it wraps and documents every compute function at
import), and pyarrow's own ``Array.cast`` / ``Array.take`` import it.  A filter is
compiled to an Arrow expression, but most filters are then evaluated by lancejit's kernels
(comparisons, ranges, ``IN`` lists, ``IS NULL``, ``LIKE`` prefixes and their ``AND`` / ``OR`` /
``NOT``), and a scan keeps the matching rows with one ``take``: neither needs more than
``pyarrow._compute``.  Modules import this one as ``pc``: ``Expression``, ``field``, ``scalar``,
``register_scalar_function``, ``if_else``, ``is_in`` and ``match_like`` build expressions, and
``cast``, ``drop_null`` and ``take`` compute, from ``pyarrow._compute`` exactly as the
``pyarrow.compute`` functions of those names do; any other name is ``pyarrow.compute``'s own,
looked up (and that module imported) at first use.  Importing this module imports neither
(``pyarrow._compute`` comes with the first call).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyarrow._compute import Expression

_COMPUTE: Any = None


def _c() -> Any:
    """``pyarrow._compute`` (imported at first use: importing this module costs nothing)."""
    global _COMPUTE
    if _COMPUTE is None:
        import pyarrow._compute

        _COMPUTE = pyarrow._compute
    return _COMPUTE


def _arrow_compute() -> Any:
    import pyarrow.compute

    return pyarrow.compute


def field(*name_or_index: Any) -> Expression:
    """``pyarrow.compute.field``: a reference to a (possibly nested) field."""
    expression = _c().Expression
    if len(name_or_index) == 1:
        name = name_or_index[0]
        if isinstance(name, (str, int)):
            return expression._field(name)
        if isinstance(name, tuple):
            return expression._nested_field(name)
        raise TypeError(f"field reference should be str, multiple str, tuple or integer, got {type(name)}")
    return expression._nested_field(name_or_index)


def scalar(value: Any) -> Expression:
    """``pyarrow.compute.scalar``: an expression of one value."""
    return _c().Expression._scalar(value)


def register_scalar_function(func: Any, function_name: str, function_doc: Any, in_types: Any, out_type: Any,
                             func_registry: Any = None) -> None:
    """``pyarrow.compute.register_scalar_function``: a Python function callable from expressions."""
    _c().register_scalar_function(func, function_name, function_doc, in_types, out_type, func_registry)


def cast(arr: Any, target_type: Any, safe: bool = True) -> Any:
    """``pyarrow.compute.cast`` of an array, chunked array or scalar (what ``Array.cast`` calls,
    importing ``pyarrow.compute``)."""
    import pyarrow as pa

    compute = _c()
    target_type = pa.types.lib.ensure_type(target_type)
    options = compute.CastOptions.safe(target_type) if safe else compute.CastOptions.unsafe(target_type)
    return compute.call_function("cast", [arr], options)


def drop_null(data: Any) -> Any:
    """``pyarrow.compute.drop_null`` (what ``Array.drop_null`` calls)."""
    return _c().call_function("drop_null", [data])


def take(data: Any, indices: Any, boundscheck: bool = True) -> Any:
    """``pyarrow.compute.take`` (what ``Array.take`` / ``ChunkedArray.take`` call)."""
    compute = _c()
    return compute.call_function("take", [data, indices], compute.TakeOptions(boundscheck=boundscheck))


def if_else(cond: Any, left: Any, right: Any) -> Any:
    """``pyarrow.compute.if_else`` (an expression when ``cond`` is one)."""
    expression = _c().Expression
    if isinstance(cond, expression):
        return expression._call("if_else", [cond, left, right])
    return _arrow_compute().if_else(cond, left, right)


def is_in(values: Any, value_set: Any, skip_nulls: bool = False) -> Any:
    """``pyarrow.compute.is_in`` (an expression when ``values`` is one)."""
    compute = _c()
    if isinstance(values, compute.Expression):
        return compute.Expression._call("is_in", [values], compute.SetLookupOptions(value_set, skip_nulls=skip_nulls))
    return _arrow_compute().is_in(values, value_set=value_set, skip_nulls=skip_nulls)


def match_like(strings: Any, pattern: str, ignore_case: bool = False) -> Any:
    """``pyarrow.compute.match_like`` (an expression when ``strings`` is one)."""
    compute = _c()
    if isinstance(strings, compute.Expression):
        return compute.Expression._call("match_like", [strings],
                                        compute.MatchSubstringOptions(pattern, ignore_case=ignore_case))
    return _arrow_compute().match_like(strings, pattern, ignore_case=ignore_case)


def __getattr__(name: str) -> Any:
    if name.startswith("__"):
        raise AttributeError(name)
    if name == "Expression":  # pyarrow._compute's own
        return _c().Expression
    return getattr(_arrow_compute(), name)


__all__ = ["Expression", "cast", "drop_null", "field", "if_else", "is_in", "match_like", "register_scalar_function",
           "scalar", "take"]
