"""Literals in filters: how the reference types them and converts them to a column's type.

**Typing.**  A SQL number is an ``Int64`` when it fits a signed 64-bit integer, else a ``UInt64``
when it fits an unsigned one, else a ``Float64`` (so are numbers with a point or an exponent);
a minus sign before a number is part of the literal (``-5`` is ``Int64(-5)``, but
``-9223372036854775809`` is a ``Float64``).  Quoted text (``'x'`` or ``"x"``) is ``Utf8``,
``X'01'`` is ``Binary``, ``TRUE``/``FALSE`` are ``Boolean`` and ``NULL`` is ``Null``.
``DATE '...'``, ``TIMESTAMP '...'`` and ``CAST(...)`` are not literals but casts (see
:mod:`.operands`).

**Conversion.**  Where a literal meets a column directly (``col <op> literal`` or ``literal <op>
col`` for comparisons and arithmetic, the literals of arithmetic on the other side of a column,
``col [NOT] BETWEEN a AND b``, ``col [NOT] IN (...)`` on a top-level column; see
:mod:`.resolve`), the reference converts the literal to the column's type first and rejects the
filter when it cannot.  :data:`RULES` is that conversion as one table: literal type -> class of
the column's type -> rule; pairs not listed are rejected:

* ``range``: an integer into an integer type (or ``time32``, as its raw value), when it is in
  the type's range;
* ``float``: to ``float32``/``float64``, rounded to nearest (``1e39`` becomes ``inf`` in float32);
* ``half``: to ``float16``, rounded, refused when a finite value overflows or a non-zero one
  becomes zero;
* ``decimal``: an ``Int64`` to ``decimal(p, s)`` when ``|v| < 10**(p - s)``;
* ``same``: text to ``string``/``large_string`` (and dictionaries of them), booleans, binary to
  ``binary``/``large_binary``;
* ``width``: binary to ``fixed_size_binary(n)`` when it has ``n`` bytes;
* ``Null`` converts to every type.

Checked pair by pair against pylance 14 (``tests/table/test_filter_types.py``).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
import pyarrow as pa
from sqlglot import expressions as exp

from lancejit.core import arrow_compute as pc
from lancejit.encoding.arrow_build import array_of

_I64_MIN, _I64_MAX = -(1 << 63), (1 << 63) - 1
_U64_MAX = (1 << 64) - 1
_INT_TEXT = re.compile(r"[+-]?\d+")

INT64, UINT64, FLOAT64, UTF8, BOOLEAN, BINARY, NULL = "Int64", "UInt64", "Float64", "Utf8", "Boolean", "Binary", "Null"

#: Literal type -> class of the column's type (:func:`type_class`) -> rule (module docstring).
RULES: dict[str, dict[str, str]] = {
    INT64: {"int": "range", "uint": "range", "float16": "half", "float": "float", "decimal": "decimal",
            "time32": "range"},
    UINT64: {"int": "range", "uint": "range", "float16": "half", "float": "float", "time32": "range"},
    FLOAT64: {"float16": "half", "float": "float"},
    UTF8: {"string": "same"},
    BOOLEAN: {"bool": "same"},
    BINARY: {"binary": "same", "fixed_binary": "width"},
}


@dataclass(frozen=True, slots=True)
class SqlLiteral:
    """A literal as the reference types it: ``kind`` (``Int64``, ``UInt64``, ``Float64``,
    ``Utf8``, ``Binary``, ``Boolean``, ``Null``) and its Python ``value``."""

    kind: str
    value: Any

    def show(self) -> str:
        return f"{self.kind}({self.value!r})"


def number(text: str, negative: bool = False) -> SqlLiteral:
    """The literal of a SQL number's text (``negative``: preceded by a minus sign, which may
    also lead ``text``: the reference types the digits, then negates)."""
    if text[:1] in "+-":
        return number(text[1:], negative != (text[0] == "-"))
    if _INT_TEXT.fullmatch(text):
        v = int(text)
        if _I64_MIN <= v <= _I64_MAX:
            return SqlLiteral(INT64, -v if negative else v)
        if not negative and v <= _U64_MAX:
            return SqlLiteral(UINT64, v)
    try:
        f = float(text)
    except ValueError:
        return SqlLiteral(FLOAT64, math.nan)
    return SqlLiteral(FLOAT64, -f if negative else f)


def sql_literal(node: exp.Expression) -> SqlLiteral | None:
    """The literal ``node`` is (through parentheses, one minus sign before a number), or None."""
    while isinstance(node, exp.Paren):
        node = node.this
    if isinstance(node, exp.Neg):
        inner = node.this
        while isinstance(inner, exp.Paren):
            inner = inner.this
        if isinstance(inner, exp.Literal) and not inner.is_string:
            return number(inner.this, negative=True)
        return None
    if isinstance(node, exp.Literal):
        return SqlLiteral(UTF8, node.this) if node.is_string else number(node.this)
    if isinstance(node, exp.Boolean):
        return SqlLiteral(BOOLEAN, bool(node.this))
    if isinstance(node, exp.Null):
        return SqlLiteral(NULL, None)
    if isinstance(node, exp.HexString):
        text = node.this
        try:
            return SqlLiteral(BINARY, bytes.fromhex(text if len(text) % 2 == 0 else "0" + text))
        except ValueError:
            return None
    return None


#: Classes of Arrow types in :data:`RULES`, by the first test a type passes.
_CLASSES = (
    (pa.types.is_signed_integer, "int"), (pa.types.is_unsigned_integer, "uint"), (pa.types.is_float16, "float16"),
    (pa.types.is_floating, "float"), (pa.types.is_decimal, "decimal"), (pa.types.is_string, "string"),
    (pa.types.is_large_string, "string"), (pa.types.is_binary, "binary"), (pa.types.is_large_binary, "binary"),
    (pa.types.is_fixed_size_binary, "fixed_binary"), (pa.types.is_boolean, "bool"), (pa.types.is_time32, "time32"),
)


def type_class(t: pa.DataType) -> str:
    """The class of an Arrow type in :data:`RULES` (a dictionary: its values' class; a type
    no rule names: its own name)."""
    if pa.types.is_dictionary(t):
        return type_class(t.value_type)
    return next((name for test, name in _CLASSES if test(t)), str(t))


def rule(kind: str, t: pa.DataType) -> str | None:
    """The rule converting a ``kind`` literal to type ``t`` (None: the reference refuses)."""
    if kind == NULL:
        return "null"
    return RULES.get(kind, {}).get(type_class(t))


def _value_type(t: pa.DataType) -> pa.DataType:
    return t.value_type if pa.types.is_dictionary(t) else t


def _half(values: np.ndarray) -> np.ndarray | None:
    v = np.asarray(values, dtype=np.float64)
    with np.errstate(over="ignore", under="ignore"):
        h = v.astype(np.float16)
    if np.any(np.isinf(h) & np.isfinite(v)) or np.any((h == 0) & (v != 0)):
        return None
    return h


def f32_of_int(v: int) -> float:
    """The integer ``v`` rounded to the nearest float32 (ties to even), as a float."""
    m = abs(v)
    if m < 1 << 24:
        return float(v)
    shift = m.bit_length() - 24
    q, r = divmod(m, 1 << shift)
    half = 1 << (shift - 1)
    if r > half or (r == half and q & 1):
        q += 1
    out = float(q << shift)
    return -out if v < 0 else out


def _decimals(ints: list[int], t: pa.DataType) -> pa.Array | None:
    """Integers as ``decimal(p, s)`` values (None when one has more than ``p - s`` digits)."""
    bound = 10 ** (t.precision - t.scale)
    if any(not -bound < v < bound for v in ints):
        return None
    width = t.bit_width // 8
    scale = 10 ** t.scale
    raw = b"".join((v * scale).to_bytes(width, "little", signed=True) for v in ints)
    return pa.Array.from_buffers(t, len(ints), [None, pa.py_buffer(raw)])


def _convert(kind: str, values: Sequence[Any] | np.ndarray, t: pa.DataType) -> pa.Array | None:
    """``values`` (all of ``kind``, no None) converted to ``t`` by :func:`rule`, or None."""
    how = rule(kind, t)
    target = _value_type(t)
    n = len(values)
    if how is None:
        return None
    if how == "null" or n == 0:
        return pa.nulls(n, target)
    try:
        if how == "range":
            ints = [int(v) for v in values]
            if kind == UINT64 or any(v > _I64_MAX for v in ints):
                src = array_of(ints, pa.uint64())
            else:
                src = array_of(np.asarray(ints, dtype=np.int64))
            if pa.types.is_time32(target):
                return pc.cast(src, pa.int32(), safe=True).view(target)
            return pc.cast(src, target, safe=True)
        if how == "float":
            if kind == FLOAT64:
                src = array_of(np.asarray(values, dtype=np.float64))
            elif pa.types.is_float32(target):  # an integer rounds once, straight to float32
                src = array_of(np.array([f32_of_int(int(v)) for v in values], dtype=np.float64))
            else:
                src = array_of(np.array([float(v) for v in values], dtype=np.float64))
            return pc.cast(src, target, safe=False)
        if how == "half":
            h = _half(np.array([float(v) for v in values], dtype=np.float64))
            if h is None:
                return None
            return pa.Array.from_buffers(pa.float16(), n, [None, pa.py_buffer(np.ascontiguousarray(h))])
        if how == "decimal":
            return _decimals([int(v) for v in values], target)
        if how == "same":
            base = pa.string() if kind == UTF8 else pa.binary() if kind == BINARY else pa.bool_()
            return pc.cast(array_of(list(values), base), target)
        if how == "width":
            if any(len(v) != target.byte_width for v in values):
                return None
            return pc.cast(array_of(list(values), pa.binary()), target)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, OverflowError, ValueError):
        return None
    return None  # pragma: no cover - every rule returns above


def convert_literal(lit: SqlLiteral, t: pa.DataType) -> pa.Array | None:
    """The literal as a one-value array of ``t`` (a dictionary: of its value type) as the
    reference converts it, or None when the reference refuses the filter."""
    return _convert(lit.kind, [lit.value], t)


def literal_array(lit: SqlLiteral) -> pa.Array:
    """The literal as a one-value array of its own type (``Null``: of type null)."""
    if lit.kind == NULL:
        return pa.nulls(1)
    if lit.kind == INT64:
        return array_of(np.array([lit.value], dtype=np.int64))
    if lit.kind == UINT64:
        return array_of([lit.value], pa.uint64())
    if lit.kind == FLOAT64:
        return array_of(np.array([lit.value], dtype=np.float64))
    base = {UTF8: pa.string(), BINARY: pa.binary(), BOOLEAN: pa.bool_()}[lit.kind]
    return array_of([lit.value], base)


def list_literals(values: Any, kind: str) -> list[SqlLiteral]:
    """The literals of an extracted ``IN`` list (:class:`~.parse.InList` ``values``/``kind``)."""
    items = values.tolist() if isinstance(values, np.ndarray) else list(values)
    out = []
    for v in items:
        if isinstance(v, str):
            out.append(SqlLiteral(UTF8, v))
        elif isinstance(v, float):
            out.append(SqlLiteral(FLOAT64, v))
        elif _I64_MIN < v <= _I64_MAX:  # -2**63: its digits are no Int64, so a Float64
            out.append(SqlLiteral(INT64, v))
        elif 0 <= v <= _U64_MAX:
            out.append(SqlLiteral(UINT64, v))
        else:
            out.append(SqlLiteral(FLOAT64, float(v)))
    return out


def convert_list(values: Any, kind: str, t: pa.DataType) -> tuple[pa.Array | None, SqlLiteral | None]:
    """An ``IN`` list's values converted to ``t``: ``(array, None)``, or ``(None, the first
    literal the reference refuses)``.  Lists of one literal type convert in one vectorized step."""
    if kind == "int" and isinstance(values, np.ndarray) and values.dtype == np.int64 and (
            len(values) == 0 or values.min() > _I64_MIN):
        got = _convert(INT64, values, t)
        if got is not None:
            return got, None
    elif kind == "float" and isinstance(values, np.ndarray):
        got = _convert(FLOAT64, values, t)
        if got is not None:
            return got, None
    elif kind == "str":
        got = _convert(UTF8, list(values), t)
        if got is not None:
            return got, None
    lits = list_literals(values, kind)
    parts = []
    for k in dict.fromkeys(lit.kind for lit in lits):
        group = [lit.value for lit in lits if lit.kind == k]
        got = _convert(k, group, t)
        if got is None:
            for lit in lits:
                if lit.kind == k and _convert(k, [lit.value], t) is None:
                    return None, lit
            return None, SqlLiteral(k, group[0])  # pragma: no cover - a group fails by one value
        parts.append(got)
    if not parts:
        return pa.nulls(0, _value_type(t)), None
    return (parts[0] if len(parts) == 1 else pa.concat_arrays(parts)), None


__all__ = ["BINARY", "BOOLEAN", "FLOAT64", "INT64", "NULL", "RULES", "SqlLiteral", "UINT64", "UTF8",
           "convert_list", "convert_literal", "f32_of_int", "list_literals", "literal_array", "number", "rule", "sql_literal", "type_class"]
