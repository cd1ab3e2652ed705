"""Values of an indexed column as NumPy arrays that compare like the filter compares them, and
the queries a scalar index answers.

An index's keys (BTREE page bounds and page values, BITMAP and LABEL_LIST keys) become NumPy
arrays of the column's *domain*: integers keep their own dtype (int64 / uint64 beyond 2**53
compare exactly), floats become float64 (NaN sorts and compares above every number, as in the
reference's order; ``-0.0`` equals ``0.0``), booleans ``bool``, strings and binaries object
arrays of ``str`` / ``bytes`` (Python compares them by code point / byte, the order the
reference sorts UTF-8 and binary values in).  A filter literal is turned into the domain by
:func:`literal`; one that has no exact counterpart there (a float literal against an integer
column, a string against a number) raises :class:`Unusable`: the predicate is then evaluated row
by row instead.

:class:`Query` is one predicate on the indexed column: ``eq`` (one value), ``in`` (values),
``range`` (``lo``/``hi`` with inclusivity, None = unbounded), ``null`` (IS NULL), and for label
lists ``any`` / ``all`` (the list holds any / all of ``values``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa


class Unusable(Exception):
    """The index cannot answer this query exactly (the caller evaluates it row by row)."""


@dataclass(frozen=True, slots=True)
class Query:
    """One predicate on the indexed column (see the module docstring); ``values`` are Python
    values as the filter wrote them (``int``, ``float``, ``str``, ``bool``)."""

    op: str
    values: tuple[Any, ...] = ()
    lo: Any = None
    lo_incl: bool = True
    hi: Any = None
    hi_incl: bool = True

    def describe(self, column: str) -> str:
        if self.op == "eq":
            return f"{column} = {self.values[0]!r}"
        if self.op == "in":
            shown = ", ".join(repr(v) for v in self.values[:5]) + (", ..." if len(self.values) > 5 else "")
            return f"{column} IN ({shown})"
        if self.op == "null":
            return f"{column} IS NULL"
        if self.op == "range":
            parts = []
            if self.lo is not None:
                parts.append(f"{column} {'>=' if self.lo_incl else '>'} {self.lo!r}")
            if self.hi is not None:
                parts.append(f"{column} {'<=' if self.hi_incl else '<'} {self.hi!r}")
            return " AND ".join(parts) or f"{column} IS NOT NULL"
        return f"array_has_{self.op}({column}, {list(self.values)!r})"


def kind_of(t: pa.DataType) -> str | None:
    """The domain of Arrow type ``t``: ``int``, ``float``, ``bool``, ``str``, ``bytes``, or None
    (an index on such a column answers nothing)."""
    if pa.types.is_integer(t):
        return "int"
    if pa.types.is_floating(t):
        return "float"
    if pa.types.is_boolean(t):
        return "bool"
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return "str"
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return "bytes"
    return None


def values_of(arr: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """The non-null values of ``arr`` in its domain (see the module docstring), in order."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks() if arr.num_chunks != 1 else arr.chunk(0)
    if arr.null_count:
        arr = arr.drop_null()
    t = arr.type
    kind = kind_of(t)
    if kind == "int":
        return arr.to_numpy(zero_copy_only=False)
    if kind == "float":
        return arr.to_numpy(zero_copy_only=False).astype(np.float64, copy=False)
    if kind == "bool":
        return arr.to_numpy(zero_copy_only=False).astype(bool, copy=False)
    if kind in ("str", "bytes"):
        return arr.to_numpy(zero_copy_only=False)
    raise Unusable(f"no index domain for {t}")


def literal(value: Any, t: pa.DataType) -> Any:
    """``value`` (a filter literal) in the domain of type ``t``; :class:`Unusable` when it has no
    exact counterpart there."""
    kind = kind_of(t)
    if kind == "int":
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
            raise Unusable("non-integer literal against an integer column")
        info = np.iinfo(t.to_pandas_dtype())
        if value < info.min or value > info.max:
            raise Unusable("integer literal outside the column's range")
        return np.dtype(t.to_pandas_dtype()).type(value)
    if kind == "float":
        if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
            raise Unusable("non-numeric literal against a float column")
        return float(value)
    if kind == "bool":
        if not isinstance(value, (bool, np.bool_)):
            raise Unusable("non-boolean literal against a boolean column")
        return bool(value)
    if kind == "str":
        if not isinstance(value, str):
            raise Unusable("non-string literal against a string column")
        return value
    if kind == "bytes":
        if not isinstance(value, (bytes, str)):
            raise Unusable("non-binary literal against a binary column")
        return value.encode() if isinstance(value, str) else value
    raise Unusable(f"no index domain for {t}")


def bottom(t: pa.DataType) -> Any:
    """A value of the domain of Arrow type ``t`` that no other value is below (fills unbounded
    lows)."""
    kind = kind_of(t)
    if kind == "int":
        return np.iinfo(t.to_pandas_dtype()).min
    if kind == "float":
        return -np.inf
    if kind == "bool":
        return False
    if kind == "bytes":
        return b""
    return ""


def nondecreasing(values: np.ndarray) -> bool:
    """Whether ``values`` are sorted ascending in NumPy's order (NaN last)."""
    if len(values) < 2:
        return True
    if values.dtype.kind == "f":
        return bool(np.array_equal(np.sort(values, kind="stable"), values, equal_nan=True))
    if values.dtype.kind == "O":
        try:
            return bool(np.all(values[1:] >= values[:-1]))
        except TypeError:
            return False
    return bool(np.all(values[1:] >= values[:-1]))


@dataclass(frozen=True, slots=True)
class Converted:
    """A :class:`Query` with its literals in the column's domain (converted once per search):
    ``values`` the sorted distinct values of ``eq`` / ``in`` (op ``in``), or ``lo`` / ``hi``
    of a ``range``; ``null`` as is."""

    op: str
    values: np.ndarray | None = None
    lo: Any = None
    lo_incl: bool = True
    hi: Any = None
    hi_incl: bool = True


def convert(q: Query, t: pa.DataType) -> Converted:
    """``q`` in the domain of ``t`` (:class:`Unusable` when a literal has no counterpart)."""
    if q.op in ("eq", "in", "any", "all"):
        return Converted("in", literal_array(q.values, t))
    if q.op == "range":
        return Converted("range", None, None if q.lo is None else literal(q.lo, t), q.lo_incl,
                         None if q.hi is None else literal(q.hi, t), q.hi_incl)
    if q.op == "null":
        return Converted("null")
    raise Unusable(f"query {q.op} is not a value search")


def literal_array(values: tuple[Any, ...], t: pa.DataType) -> np.ndarray:
    """The sorted distinct domain values of ``values`` (vectorized for integer lists)."""
    kind = kind_of(t)
    if kind == "int" and values and all(type(v) is int for v in values[:8]):
        info = np.iinfo(t.to_pandas_dtype())
        lo, hi = min(values), max(values)
        if any(isinstance(v, bool) or not isinstance(v, int) for v in values):
            raise Unusable("non-integer literal against an integer column")
        if lo < info.min or hi > info.max:
            raise Unusable("integer literal outside the column's range")
        arr = np.array(values, dtype=t.to_pandas_dtype())
        return arr if len(arr) == 1 else np.unique(arr)
    conv = [literal(v, t) for v in values]
    if kind in ("str", "bytes"):
        out = np.empty(len(conv), dtype=object)
        out[:] = conv
        return np.unique(out) if len(out) > 1 else out
    dtype = np.float64 if kind == "float" else (bool if kind == "bool" else t.to_pandas_dtype())
    arr = np.asarray(conv, dtype=dtype)
    return arr if len(arr) == 1 else np.unique(arr)


def span(values: np.ndarray, c: Converted) -> tuple[np.ndarray, np.ndarray]:
    """``(starts, stops)`` of the runs of the sorted ``values`` (NumPy order) satisfying ``c``
    (``in`` or ``range``), as int64 arrays: one run per value for ``in``, one for ``range``."""
    if c.op == "in":
        vs = c.values
        assert vs is not None  # an ``in`` search carries its values
        if len(values) and len(vs) > 8:  # only the values inside the page's bounds
            a = int(np.searchsorted(vs, values[0], side="left"))
            b = int(np.searchsorted(vs, values[-1], side="right"))
            vs = vs[a:b]
        return (np.searchsorted(values, vs, side="left").astype(np.int64),
                np.searchsorted(values, vs, side="right").astype(np.int64))
    if c.op == "range":
        a = 0 if c.lo is None else int(np.searchsorted(values, c.lo, side="left" if c.lo_incl else "right"))
        b = len(values) if c.hi is None else int(np.searchsorted(values, c.hi, side="right" if c.hi_incl else "left"))
        return np.array([a], dtype=np.int64), np.array([max(a, b)], dtype=np.int64)
    raise Unusable(f"query {c.op} is not a value search")


__all__ = ["Converted", "Query", "Unusable", "bottom", "convert", "kind_of", "literal", "literal_array",
           "nondecreasing", "span", "values_of"]
