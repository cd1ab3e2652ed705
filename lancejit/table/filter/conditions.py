"""The conjuncts of a filter that column statistics (zone maps, page statistics) can decide.

A :class:`Condition` is one term of the filter's top-level ``AND`` chain of the forms
``col op value`` / ``value op col`` (``=  <  <=  >  >=``), ``col BETWEEN a AND b`` and
``col IN (...)`` on a top-level column, where every value is known at compile time *in the
column's type*: the literal as the reference converted it (:mod:`.resolve`), or a date/timestamp
constant converted as the comparison does (:mod:`.operands`).  So statistics, kept in the
column's own type, are compared exactly with the same values the rows are (no float64 detour:
int64 beyond 2**53 and uint64 beyond 2**63 stay exact).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from sqlglot import expressions as exp

from lancejit.core import arrow_compute as pc
from lancejit.core.errors import InvalidInputError

from .literals import UTF8, sql_literal
from .operands import temporal_constant
from .parse import PLACEHOLDER

_OPS: dict[type, str] = {exp.EQ: "eq", exp.LT: "lt", exp.LTE: "le", exp.GT: "gt", exp.GTE: "ge"}
_FLIP = {"eq": "eq", "lt": "gt", "le": "ge", "gt": "lt", "ge": "le"}


@dataclass(frozen=True, slots=True)
class Condition:
    """``column op values``: ``op`` is ``eq``, ``lt``, ``le``, ``gt``, ``ge`` (one value),
    ``between`` (low, high; inclusive) or ``in`` (any number); ``values`` an Arrow array of
    the column's type (a dictionary column: its value type), without nulls for ``in``."""

    column: str
    op: str
    values: pa.Array

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, Condition) and (self.column, self.op) == (other.column, other.op)
                and self.values.equals(other.values))

    def __hash__(self) -> int:
        return hash((self.column, self.op, len(self.values)))

    def as_py(self) -> tuple[str, str, list]:
        """``(column, op, values as Python objects)`` (for reports)."""
        return self.column, self.op, self.values.to_pylist()


def _strip(node: exp.Expression) -> exp.Expression:
    while isinstance(node, exp.Paren):
        node = node.this
    return node


def _column(comp: Any, node: exp.Expression) -> tuple[str, pa.DataType] | None:
    """The top-level column a plain column reference names, with its type."""
    parts = comp.column_parts(_strip(node))
    if parts is None or len(parts) != 1:
        return None
    try:
        t = comp.column_type(_strip(node))
    except InvalidInputError:
        return None
    from .columns import resolve_column

    return resolve_column(parts, comp.schema, comp.text)[0], t


def _value(comp: Any, node: exp.Expression, t: pa.DataType) -> pa.Array | None:
    """The compile-time value of ``node`` in type ``t`` (one-value array), or None."""
    got = comp.resolved.values.get(id(node))
    if got is not None:
        return got
    if not (pa.types.is_timestamp(t) or pa.types.is_date(t)):
        return None
    const = comp.constants.get(id(_strip(node)))
    if const is None:
        lit = sql_literal(node)
        if lit is None or lit.kind != UTF8:
            return None
        const = lit.value
    try:
        return temporal_constant(const, t)
    except InvalidInputError:
        return None


def _term(comp: Any, node: exp.Expression) -> Condition | None:
    op = _OPS.get(type(node))
    if op is not None:
        for col_node, val_node, this_op in ((node.this, node.expression, op), (node.expression, node.this, _FLIP[op])):
            col = _column(comp, col_node)
            if col is not None:
                v = _value(comp, val_node, col[1])
                return Condition(col[0], this_op, v) if v is not None else None
        return None
    if isinstance(node, exp.Between):
        col = _column(comp, node.this)
        if col is None:
            return None
        low, high = (_value(comp, node.args[k], col[1]) for k in ("low", "high"))
        if low is None or high is None:
            return None
        return Condition(col[0], "between", pa.concat_arrays([low, high]))
    if isinstance(node, exp.In) and node.args.get("query") is None:
        col = _column(comp, node.this)
        items = node.expressions
        if col is None or not items:
            return None
        if len(items) == 1 and isinstance(items[0], exp.Column) and items[0].name.startswith(PLACEHOLDER):
            got = comp.resolved.lists.get(items[0].name)
            return Condition(col[0], "in", pc.drop_null(got)) if got is not None else None
        values = [_value(comp, item, col[1]) for item in items]
        if any(v is None for v in values):
            return None
        return Condition(col[0], "in", pc.drop_null(pa.concat_arrays(values)))
    return None


def conditions_of_tree(comp: Any, tree: exp.Expression) -> tuple[Condition, ...]:
    """The conditions of a parsed filter (``comp``: its compiler, after compiling)."""
    stack, out = [tree], []
    while stack:
        node = _strip(stack.pop())
        if isinstance(node, exp.And):
            stack.extend((node.expression, node.this))
            continue
        c = _term(comp, node)
        if c is not None:
            out.append(c)
    return tuple(out)


__all__ = ["Condition", "conditions_of_tree"]
