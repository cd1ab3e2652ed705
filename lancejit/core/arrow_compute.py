"""``pyarrow.compute`` as lancejit calls it, without importing that module until a function
needs it.

Importing ``pyarrow.compute`` costs a process ~60 ms of CPU (it wraps and documents every compute
function at import), and pyarrow's own ``Array.cast`` / ``Array.take`` import it.  A filter is
compiled to an Arrow expression, but most filters are then evaluated by lancejit's kernels
(comparisons, ranges, ``IN`` lists, ``IS NULL``, ``LIKE`` prefixes and their ``AND`` / ``OR`` /
``NOT``), and a scan keeps the matching rows with one ``take``: neither needs more than
``pyarrow._compute``.  Modules import this one as ``pc``: ``Expression``, ``field``, ``scalar``,
``register_scalar_function``, ``if_else``, ``is_in`` and ``match_like`` build expressions, and
``cast``, ``drop_null`` and ``take`` compute, from ``pyarrow._compute`` exactly as ``pyarrow.compute``'s functions of those
names do; any other name is ``pyarrow.compute``'s own, looked up (and that module imported) at
first use.
"""

from __future__ import annotations

from typing import Any

import pyarrow._compute as _compute

Expression = _compute.Expression
register_scalar_function = _compute.register_scalar_function


def _arrow_compute() -> Any:
    import pyarrow.compute

    return pyarrow.compute


def field(*name_or_index: Any) -> Expression:
    """``pyarrow.compute.field``: a reference to a (possibly nested) field."""
    if len(name_or_index) == 1:
        name = name_or_index[0]
        if isinstance(name, (str, int)):
            return Expression._field(name)
        if isinstance(name, tuple):
            return Expression._nested_field(name)
        raise TypeError(f"field reference should be str, multiple str, tuple or integer, got {type(name)}")
    return Expression._nested_field(name_or_index)


def scalar(value: Any) -> Expression:
    """``pyarrow.compute.scalar``: an expression of one value."""
    return Expression._scalar(value)


def cast(arr: Any, target_type: Any, safe: bool = True) -> Any:
    """``pyarrow.compute.cast`` of an array, chunked array or scalar (what ``Array.cast`` calls,
    importing ``pyarrow.compute``)."""
    import pyarrow as pa

    target_type = pa.types.lib.ensure_type(target_type)
    options = _compute.CastOptions.safe(target_type) if safe else _compute.CastOptions.unsafe(target_type)
    return _compute.call_function("cast", [arr], options)


def drop_null(data: Any) -> Any:
    """``pyarrow.compute.drop_null`` (what ``Array.drop_null`` calls)."""
    return _compute.call_function("drop_null", [data])


def take(data: Any, indices: Any, boundscheck: bool = True) -> Any:
    """``pyarrow.compute.take`` (what ``Array.take`` / ``ChunkedArray.take`` call)."""
    return _compute.call_function("take", [data, indices], _compute.TakeOptions(boundscheck=boundscheck))


def if_else(cond: Any, left: Any, right: Any) -> Any:
    """``pyarrow.compute.if_else`` (an expression when ``cond`` is one)."""
    if isinstance(cond, Expression):
        return Expression._call("if_else", [cond, left, right])
    return _arrow_compute().if_else(cond, left, right)


def is_in(values: Any, value_set: Any, skip_nulls: bool = False) -> Any:
    """``pyarrow.compute.is_in`` (an expression when ``values`` is one)."""
    if isinstance(values, Expression):
        return Expression._call("is_in", [values], _compute.SetLookupOptions(value_set, skip_nulls=skip_nulls))
    return _arrow_compute().is_in(values, value_set=value_set, skip_nulls=skip_nulls)


def match_like(strings: Any, pattern: str, ignore_case: bool = False) -> Any:
    """``pyarrow.compute.match_like`` (an expression when ``strings`` is one)."""
    if isinstance(strings, Expression):
        return Expression._call("match_like", [strings], _compute.MatchSubstringOptions(pattern, ignore_case=ignore_case))
    return _arrow_compute().match_like(strings, pattern, ignore_case=ignore_case)


def __getattr__(name: str) -> Any:
    if name.startswith("__"):
        raise AttributeError(name)
    return getattr(_arrow_compute(), name)


__all__ = ["Expression", "cast", "drop_null", "field", "if_else", "is_in", "match_like", "register_scalar_function",
           "scalar", "take"]
