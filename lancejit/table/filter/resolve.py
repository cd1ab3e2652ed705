"""Which literals of a filter take their column's type, as the reference decides.

Before planning, the reference converts literals to a column's type (by the rules of
:mod:`.literals`) in these places only, all in the leaves of the filter's top-level AND/OR
tree (parentheses are transparent):

* a binary operator (comparison or arithmetic) with a column on one side: a literal on the
  other side; when the column is on the left and the right side is itself arithmetic, every
  literal of that arithmetic (``x = 1 + 2`` converts ``1`` and ``2`` to ``x``'s type);
* ``col [NOT] BETWEEN low AND high``: ``low`` and ``high`` (the same way as the right side above);
* ``col [NOT] IN (...)`` on a top-level column: each listed value.

A literal the rules refuse makes the filter invalid (:class:`~lancejit.core.errors.InvalidInputError`,
as the reference rejects it).  Everywhere else (under ``NOT``, inside ``IS TRUE``, around
casts...) literals keep their own type and the comparison coerces both sides
(:mod:`.operands`).  sqlglot reads ``NOT x IN (...)`` like ``x NOT IN (...)``: lists of literals
keep their spelling when they are cut out of the text (:class:`~.parse.InList` ``not_in``); other
lists and ``BETWEEN`` are taken as ``x NOT IN`` / ``x NOT BETWEEN``.

:func:`resolve_literals` returns the converted literals by node and the converted ``IN`` lists
by placeholder.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
from sqlglot import expressions as exp

from lancejit.core.errors import InvalidInputError

from .literals import SqlLiteral, convert_list, convert_literal, sql_literal
from .parse import PLACEHOLDER, InList

#: The binary operators of the reference's ``BinaryExpr`` that filters here can hold.
BINARY = (exp.EQ, exp.NEQ, exp.LT, exp.LTE, exp.GT, exp.GTE, exp.Add, exp.Sub, exp.Mul, exp.Div, exp.Mod)


@dataclass(slots=True)
class Resolved:
    """Literals converted to a column's type: ``values`` (one-value arrays) by ``id()`` of the
    sqlglot node (the node stays alive with the parsed tree), ``lists`` by IN-list placeholder
    name."""

    values: dict[int, pa.Array] = field(default_factory=dict)
    lists: dict[str, pa.Array] = field(default_factory=dict)

    def scalar(self, node: exp.Expression) -> pa.Scalar | None:
        """The converted value of literal ``node``, or None when it keeps its own type."""
        got = self.values.get(id(node))
        return None if got is None else got[0]


def _strip(node: exp.Expression) -> exp.Expression:
    while isinstance(node, exp.Paren):
        node = node.this
    return node


def _written_not_in(node: exp.In, in_lists: dict[str, InList]) -> bool:
    """Whether a NOT around ``node`` is its ``NOT IN`` spelling (lists of literals know; other
    lists are taken as ``x NOT IN``)."""
    items = node.expressions
    if len(items) == 1 and isinstance(items[0], exp.Column) and items[0].name in in_lists:
        return in_lists[items[0].name].not_in
    return True


def _leaves(tree: exp.Expression, in_lists: dict[str, InList]) -> list[exp.Expression]:
    """Leaves of the top-level AND/OR tree (the NOT of ``NOT IN`` / ``NOT BETWEEN`` stays with
    its leaf)."""
    out, stack = [], [tree]
    while stack:
        node = _strip(stack.pop())
        if isinstance(node, (exp.And, exp.Or)):
            stack.extend((node.expression, node.this))
        elif isinstance(node, exp.Not) and isinstance(_strip(node.this), exp.Between):
            out.append(_strip(node.this))
        elif isinstance(node, exp.Not) and isinstance(inner := _strip(node.this), exp.In):
            if _written_not_in(inner, in_lists):
                out.append(inner)
        else:
            out.append(node)
    return out


class _Resolver:
    def __init__(self, comp: Any, in_lists: dict[str, InList]) -> None:
        self.comp = comp
        self.in_lists = in_lists
        self.out = Resolved()

    def column_type(self, node: exp.Expression) -> pa.DataType | None:
        try:
            return self.comp.column_type(_strip(node))
        except InvalidInputError:
            return None

    def refuse(self, lit: SqlLiteral, node: exp.Expression, t: pa.DataType) -> InvalidInputError:
        parts = self.comp.column_parts(_strip(node)) or ["?"]
        return InvalidInputError(
            f"filter {self.comp.text!r}: literal {lit.show()} cannot be converted to the type of "
            f"column {'.'.join(parts)!r} ({t})")

    def convert(self, lit_node: exp.Expression, col: exp.Expression, t: pa.DataType) -> None:
        lit = sql_literal(lit_node)
        if lit is None:
            return
        got = convert_literal(lit, t)
        if got is None:
            raise self.refuse(lit, col, t)
        self.out.values[id(lit_node)] = got

    def convert_expr(self, node: exp.Expression, col: exp.Expression, t: pa.DataType) -> None:
        """The reference's literal conversion of an operand: a literal, or every literal of a
        tree of binary operators."""
        stack = [node]
        while stack:
            n = stack.pop()
            if sql_literal(n) is not None:
                self.convert(n, col, t)
                continue
            n = _strip(n)
            if isinstance(n, BINARY):
                stack.extend((n.expression, n.this))

    def leaf(self, node: exp.Expression) -> None:
        if isinstance(node, BINARY):
            left, right = node.this, node.expression
            t = self.column_type(left)
            if t is not None:
                if sql_literal(right) is not None:
                    self.convert(right, left, t)
                elif isinstance(_strip(right), BINARY):
                    self.convert_expr(_strip(right), left, t)
                return
            t = self.column_type(right)
            if t is not None and sql_literal(left) is not None:
                self.convert(left, right, t)
        elif isinstance(node, exp.Between):
            t = self.column_type(node.this)
            if t is not None:
                for bound in (node.args.get("low"), node.args.get("high")):
                    if bound is not None:
                        self.convert_expr(bound, node.this, t)
        elif isinstance(node, exp.In) and node.args.get("query") is None:
            col = _strip(node.this)
            parts = self.comp.column_parts(col)
            if parts is None or len(parts) != 1:
                return  # only a plain top-level column
            t = self.column_type(col)
            if t is None:
                return
            items = node.expressions
            if len(items) == 1 and isinstance(items[0], exp.Column) and items[0].name.startswith(PLACEHOLDER):
                values = self.in_lists.get(items[0].name)
                if values is None:
                    return
                arr, bad = convert_list(values.values, values.kind, t)
                if arr is None:
                    assert bad is not None  # convert_list names the literal it refuses
                    raise self.refuse(bad, col, t)
                self.out.lists[items[0].name] = arr
                return
            for item in items:
                self.convert_expr(item, col, t)


def resolve_literals(comp: Any, tree: exp.Expression, in_lists: dict[str, InList]) -> Resolved:
    """The literals of ``tree`` the reference converts to a column's type, converted (``comp``:
    the filter compiler, for column types)."""
    r = _Resolver(comp, in_lists)
    for leaf in _leaves(tree, in_lists):
        r.leaf(leaf)
    return r.out


__all__ = ["BINARY", "Resolved", "resolve_literals"]
