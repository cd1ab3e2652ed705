"""SQL functions in filters, as the reference's filters take them, compiled to Arrow expressions.

Strings: ``regexp_like(s, pattern[, flags])``, ``regexp_match`` (NULL when nothing matches, so
``regexp_match(...) IS NOT NULL`` selects the matches), ``regexp_count``, ``starts_with``,
``ends_with``, ``contains``, ``lower``, ``upper``, ``length`` / ``char_length``,
``octet_length``, ``strpos``; numbers: ``abs``; ``coalesce``; ``IS [NOT] DISTINCT FROM``;
binary literals ``X'0aff'``.

Lists: ``array_has`` / ``array_contains`` / ``list_has`` / ``list_contains`` (a value),
``array_has_any`` / ``array_has_all`` (a list literal), ``array_length`` / ``cardinality``.
Arrow has no list-membership kernel: those are scalar functions registered with Arrow (once per
list and value type) and evaluated over the list's flattened values with NumPy.  ``comp`` is the
filter compiler (:class:`.compile._Compiler`: ``expr``, ``column_type``, ``fail``, ``text``).
"""

from __future__ import annotations

import threading
from typing import Any, Callable

import numpy as np
import pyarrow as pa
from sqlglot import expressions as exp

from lancejit.core import arrow_compute as pc

_NULL_BOOL = pa.nulls(1, pa.bool_())[0]


def _literal_text(comp: Any, node: exp.Expression, what: str) -> str:
    if isinstance(node, exp.Literal) and node.is_string:
        return node.this
    raise comp.fail(node)


def _regex(comp: Any, args: list, null_when_no_match: bool) -> pc.Expression:
    if len(args) not in (2, 3):
        raise comp.fail(args[0].parent)
    pattern = _literal_text(comp, args[1], "pattern")
    flags = _literal_text(comp, args[2], "flags") if len(args) == 3 else ""
    hit = pc.match_substring_regex(comp.expr(args[0]), pattern=pattern, ignore_case="i" in flags)
    return pc.if_else(hit, pc.scalar(True), pc.scalar(_NULL_BOOL)) if null_when_no_match else hit


def _null_safe_equal(a: pc.Expression, b: pc.Expression) -> pc.Expression:
    both_null = a.is_null() & b.is_null()
    one_null = a.is_null() | b.is_null()
    return pc.if_else(both_null, pc.scalar(True), pc.if_else(one_null, pc.scalar(False), pc.coalesce(a == b, pc.scalar(False))))


# ------------------------------------------------------------------------------- lists
_REGISTERED: dict[tuple[str, str, str], str] = {}
_LOCK = threading.Lock()


def _lists_of(arr: Any) -> tuple[pa.Array, np.ndarray, np.ndarray]:
    """``(flattened values, parent row of each value, null rows)`` of a list array."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    flat = pc.list_flatten(arr)
    parents = pc.list_parent_indices(arr).to_numpy(zero_copy_only=False)
    nulls = np.asarray(arr.is_null().to_numpy(zero_copy_only=False), dtype=bool)
    return flat, parents, nulls


def _hits(flat: pa.Array, values: pa.Array) -> np.ndarray:
    return np.asarray(pc.fill_null(pc.is_in(flat, value_set=values, skip_nulls=True), False)
                      .to_numpy(zero_copy_only=False), dtype=bool)


def _values(scalar: Any, value_type: pa.DataType) -> pa.Array:
    if isinstance(scalar, pa.ListScalar) or isinstance(scalar, pa.LargeListScalar):
        vals = scalar.values if scalar.values is not None else pa.array([], value_type)
    elif isinstance(scalar, pa.Scalar):
        vals = pa.array([scalar.as_py()], scalar.type)
    else:
        vals = scalar
    return vals.cast(value_type) if vals.type != value_type else vals


def _any_udf(ctx: Any, lists: Any, needles: Any) -> pa.Array:
    flat, parents, nulls = _lists_of(lists)
    found = np.zeros(len(nulls), dtype=bool)
    found[parents[_hits(flat, _values(needles, flat.type))]] = True
    return pa.array(found, mask=nulls)


def _all_udf(ctx: Any, lists: Any, needles: Any) -> pa.Array:
    flat, parents, nulls = _lists_of(lists)
    want = pc.unique(_values(needles, flat.type).drop_null())
    ok = np.ones(len(nulls), dtype=bool)
    for v in want.to_pylist():
        found = np.zeros(len(nulls), dtype=bool)
        found[parents[_hits(flat, pa.array([v], flat.type))]] = True
        ok &= found
    return pa.array(ok, mask=nulls)


_UDFS: dict[str, Callable] = {"has_any": _any_udf, "has_all": _all_udf}


def _list_call(kind: str, lists: pc.Expression, list_type: pa.DataType, needles: pa.Scalar) -> pc.Expression:
    """``kind`` ("has_any" / "has_all") of ``lists`` (of ``list_type``) and the ``needles``
    list scalar, as an Arrow expression calling a registered function."""
    key = (kind, str(list_type), str(needles.type))
    with _LOCK:
        name = _REGISTERED.get(key)
        if name is None:
            name = f"lancejit_list_{kind}_{len(_REGISTERED)}"
            pc.register_scalar_function(
                _UDFS[kind], name, {"summary": f"list {kind}", "description": "lancejit filter function"},
                {"lists": list_type, "needles": needles.type}, pa.bool_())
            _REGISTERED[key] = name
    return pc.Expression._call(name, [lists, pc.scalar(needles)])


def _list_type(comp: Any, node: exp.Expression) -> pa.DataType:
    t = comp.column_type(node)
    if t is None or not (pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t)):
        raise comp.fail(node)
    return t


def _needles(comp: Any, node: exp.Expression, value_type: pa.DataType) -> pa.Scalar:
    """A list literal (``[1, 2]``) or one literal value, as a list scalar of ``value_type``."""
    items = node.expressions if isinstance(node, exp.Array) else [node]
    values: list[Any] = []
    for item in items:
        if isinstance(item, exp.Null):
            values.append(None)
            continue
        values.append(_literal(comp, item))
    try:
        arr = pa.array(values).cast(value_type)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError, TypeError) as exc:
        from lancejit.core.errors import InvalidInputError

        raise InvalidInputError(f"filter {comp.text!r}: list values do not match the column's type: {exc}") from None
    return pa.scalar(arr.to_pylist(), pa.list_(value_type))


def _literal(comp: Any, node: exp.Expression) -> Any:
    """The Python value of a literal (a string, number or boolean, possibly negated)."""
    if isinstance(node, exp.Neg):
        return -_literal(comp, node.this)
    if isinstance(node, exp.Boolean):
        return bool(node.this)
    if isinstance(node, exp.Literal):
        if node.is_string:
            return node.this
        text = node.this
        try:
            return int(text)
        except ValueError:
            return float(text)
    raise comp.fail(node)


def _membership(comp: Any, kind: str, args: list) -> pc.Expression:
    if len(args) != 2:
        raise comp.fail(args[0].parent)
    list_type = _list_type(comp, args[0])
    return _list_call(kind, comp.expr(args[0]), list_type, _needles(comp, args[1], list_type.value_type))


# ------------------------------------------------------------------------------- dispatch
_ANON = {"regexp_match", "list_has", "list_contains", "array_has_any", "array_has_all", "cardinality",
         "octet_length", "array_length", "array_contains", "array_has", "regexp_like", "regexp_count", "strpos"}


def compile_function(comp: Any, node: exp.Expression) -> pc.Expression | None:
    """``node`` compiled when it is one of the functions above (None when it is not a function
    this module knows)."""
    v = comp.expr
    if isinstance(node, exp.HexString):
        try:
            return pc.scalar(pa.scalar(bytes.fromhex(node.this), pa.binary()))
        except ValueError:
            raise comp.fail(node) from None
    if isinstance(node, exp.Anonymous):
        name = str(node.this).lower()
        if name not in _ANON:
            return None
        args = list(node.expressions)
        if name == "regexp_match":
            return _regex(comp, args, True)
        if name == "regexp_like":
            return _regex(comp, args, False)
        if name == "regexp_count" and len(args) == 2:
            return pc.count_substring_regex(v(args[0]), pattern=_literal_text(comp, args[1], "pattern"))
        if name in ("list_has", "list_contains", "array_contains", "array_has", "array_has_any"):
            return _membership(comp, "has_any", args)
        if name == "array_has_all":
            return _membership(comp, "has_all", args)
        if name in ("cardinality", "array_length") and len(args) == 1:
            return pc.list_value_length(v(args[0]))
        if name == "octet_length" and len(args) == 1:
            return pc.binary_length(v(args[0]))
        if name == "strpos" and len(args) == 2:
            return pc.add(pc.find_substring(v(args[0]), pattern=_literal_text(comp, args[1], "substring")), 1)
        raise comp.fail(node)
    if isinstance(node, exp.RegexpLike):
        args = [node.this, node.expression] + ([node.args["flag"]] if node.args.get("flag") is not None else [])
        return _regex(comp, args, False)
    if isinstance(node, exp.RegexpCount):
        return pc.count_substring_regex(v(node.this), pattern=_literal_text(comp, node.expression, "pattern"))
    if isinstance(node, exp.ArrayContains):
        return _membership(comp, "has_any", [node.this, node.expression])
    if isinstance(node, exp.ArrayContainsAll):
        return _membership(comp, "has_all", [node.this, node.expression])
    if isinstance(node, exp.ArraySize):
        return pc.list_value_length(v(node.this))
    if isinstance(node, exp.StartsWith):
        return pc.starts_with(v(node.this), pattern=_literal_text(comp, node.expression, "prefix"))
    if isinstance(node, exp.EndsWith):
        return pc.ends_with(v(node.this), pattern=_literal_text(comp, node.expression, "suffix"))
    if isinstance(node, exp.Contains):
        return pc.match_substring(v(node.this), pattern=_literal_text(comp, node.expression, "substring"))
    if isinstance(node, exp.Lower):
        return pc.utf8_lower(v(node.this))
    if isinstance(node, exp.Upper):
        return pc.utf8_upper(v(node.this))
    if isinstance(node, exp.Length):
        return pc.utf8_length(v(node.this))
    if isinstance(node, exp.Abs):
        return pc.abs(v(node.this))
    if isinstance(node, exp.StrPosition):
        sub = node.args.get("substr")
        if sub is None or node.args.get("position") is not None:
            raise comp.fail(node)
        return pc.add(pc.find_substring(v(node.this), pattern=_literal_text(comp, sub, "substring")), 1)
    if isinstance(node, exp.Coalesce):
        return pc.coalesce(v(node.this), *(v(e) for e in node.expressions))
    if isinstance(node, exp.NullSafeEQ):
        return _null_safe_equal(v(node.this), v(node.expression))
    if isinstance(node, exp.NullSafeNEQ):
        return ~_null_safe_equal(v(node.this), v(node.expression))
    return None


__all__ = ["compile_function"]
