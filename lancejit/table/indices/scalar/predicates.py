"""Which parts of a filter scalar indices can answer: the filter as a tree of index predicates.

:func:`index_tree` turns a parsed filter (:mod:`..filter.parse`) into negation normal form
(``NOT`` pushed down to the predicates with De Morgan's laws, which hold in SQL's three-valued
logic) over three kinds of node:

* :class:`Leaf`: one predicate on one indexed top-level column that an index kind answers
  (``column op literal`` with ``= != < <= > >=``, ``BETWEEN``, ``IN (...)`` without NULL,
  ``IS NULL``, on BTREE / BITMAP columns; ``array_has_any`` / ``array_has_all`` /
  ``array_contains`` / ``array_has`` with literal labels on LABEL_LIST columns), possibly
  ``negated``;
* :class:`Junction`: ``and`` / ``or`` of nodes;
* :data:`OPAQUE`: anything else (evaluated row by row).

A negated leaf's rows are the covered rows minus the rows where the predicate is TRUE or NULL
(SQL: ``NOT p`` is TRUE only where ``p`` is FALSE).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np
import pyarrow as pa

from lancejit.core.errors import InvalidInputError

from ...filter.parse import chain_terms
from .domain import Query

#: Index kinds answering value predicates and label predicates.
VALUE_KINDS = frozenset({"BTREE", "BITMAP"})
LABEL_KINDS = frozenset({"LABEL_LIST"})


@dataclass(frozen=True, slots=True)
class Leaf:
    """``query`` on ``column`` (``negated``: its SQL negation)."""

    column: str
    query: Query
    negated: bool = False

    def describe(self) -> str:
        text = self.query.describe(self.column)
        return f"NOT ({text})" if self.negated else text


@dataclass(frozen=True, slots=True)
class Junction:
    """``op`` (``"and"`` / ``"or"``) of ``parts``."""

    op: str
    parts: tuple[Any, ...]


@dataclass(frozen=True, slots=True)
class Opaque:
    """A part of the filter no index answers."""


OPAQUE = Opaque()

_CMP = {"EQ": "eq", "NEQ": "ne", "LT": "lt", "LTE": "le", "GT": "gt", "GTE": "ge"}
_FLIP = {"eq": "eq", "ne": "ne", "lt": "gt", "le": "ge", "gt": "lt", "ge": "le"}
_LABEL_FUNCS = {"array_has_any": "any", "array_has_all": "all", "array_contains_all": "all",
                "array_contains_any": "any"}


def _literal(node: Any) -> Any:
    """The Python value of a literal node (``-`` numbers, booleans too), else None."""
    from sqlglot import expressions as exp

    while isinstance(node, exp.Paren):
        node = node.this
    neg = False
    if isinstance(node, exp.Neg):
        neg, node = True, node.this
    if isinstance(node, exp.Boolean) and not neg:
        return bool(node.this)
    if not isinstance(node, exp.Literal):
        return None
    if node.is_string:
        return None if neg else str(node.this)
    text = node.this
    try:
        value: Any = int(text)
    except ValueError:
        try:
            value = float(text)
        except ValueError:
            return None
    return -value if neg else value


def _column(node: Any, schema: pa.Schema) -> str | None:
    """The top-level column a plain column reference names (exact, then case-insensitive)."""
    from sqlglot import expressions as exp

    from ...filter.columns import resolve_column

    while isinstance(node, exp.Paren):
        node = node.this
    if not isinstance(node, exp.Column) or node.table:
        return None
    try:
        path = resolve_column([node.name], schema, "")
    except InvalidInputError:
        return None
    return path[0] if len(path) == 1 else None


class _Builder:
    def __init__(self, schema: pa.Schema, indexed: Mapping[str, frozenset[str]], in_lists: dict) -> None:
        self.schema = schema
        self.indexed = indexed
        self.in_lists = in_lists

    def leaf(self, column: str | None, query: Query, neg: bool) -> Any:
        if column is None:
            return OPAQUE
        kinds = self.indexed.get(column, frozenset())
        need = LABEL_KINDS if query.op in ("any", "all") else VALUE_KINDS
        if not kinds & need:
            return OPAQUE
        return Leaf(column, query, neg)

    def visit(self, node: Any, neg: bool) -> Any:
        from sqlglot import expressions as exp

        while isinstance(node, exp.Paren):
            node = node.this
        if isinstance(node, exp.Not):
            return self.visit(node.this, not neg)
        if isinstance(node, (exp.And, exp.Or)):
            op = "and" if isinstance(node, exp.And) else "or"
            if neg:
                op = "or" if op == "and" else "and"
            parts = [self.visit(p, neg) for p in chain_terms(node)]
            return Junction(op, tuple(parts))
        name = type(node).__name__
        cmp = _CMP.get(name)
        if cmp is not None:
            return self.compare(cmp, node.this, node.expression, neg)
        if isinstance(node, exp.Between):
            col = _column(node.this, self.schema)
            low, high = _literal(node.args.get("low")), _literal(node.args.get("high"))
            if low is None or high is None or isinstance(low, bool) or isinstance(high, bool):
                return OPAQUE
            return self.leaf(col, Query("range", lo=low, hi=high), neg ^ bool(node.args.get("negate")))
        if isinstance(node, exp.In):
            return self.in_list(node, neg ^ bool(node.args.get("negate")))
        if isinstance(node, exp.Is) and isinstance(node.expression, exp.Null):
            return self.leaf(_column(node.this, self.schema), Query("null"), neg)
        return self.labels(node, neg)

    def compare(self, op: str, left: Any, right: Any, neg: bool) -> Any:
        col, lit = _column(left, self.schema), _literal(right)
        if col is None:
            col, lit, op = _column(right, self.schema), _literal(left), _FLIP[op]
        if col is None or lit is None:
            return OPAQUE
        if op == "ne":
            op, neg = "eq", not neg
        if op == "eq":
            q = Query("eq", (lit,))
        elif op in ("lt", "le"):
            q = Query("range", hi=lit, hi_incl=op == "le")
        else:
            q = Query("range", lo=lit, lo_incl=op == "ge")
        return self.leaf(col, q, neg)

    def in_list(self, node: Any, neg: bool) -> Any:
        from sqlglot import expressions as exp

        from ...filter.parse import PLACEHOLDER

        if node.args.get("query") is not None or not node.expressions:
            return OPAQUE
        col = _column(node.this, self.schema)
        items = node.expressions
        if len(items) == 1 and isinstance(items[0], exp.Column) and items[0].name.startswith(PLACEHOLDER):
            lst = self.in_lists.get(items[0].name)
            if lst is None or lst.kind == "mixed" or lst.has_null:
                return OPAQUE
            vals = lst.values
            values = tuple(np.asarray(vals).tolist()) if not isinstance(vals, list) else tuple(vals)
        else:
            values = tuple(_literal(e) for e in items)
            if any(v is None for v in values):
                return OPAQUE
        if not values:
            return OPAQUE
        return self.leaf(col, Query("in", values), neg)

    def labels(self, node: Any, neg: bool) -> Any:
        from sqlglot import expressions as exp

        if isinstance(node, exp.ArrayContainsAll):
            col, arr, op = node.this, node.expression, "all"
        elif isinstance(node, exp.ArrayContains):
            col, arr, op = node.this, exp.Array(expressions=[node.expression]), "any"
        elif isinstance(node, exp.Anonymous) and str(node.this).lower() in _LABEL_FUNCS and len(node.expressions) == 2:
            col, arr, op = node.expressions[0], node.expressions[1], _LABEL_FUNCS[str(node.this).lower()]
        else:
            return OPAQUE
        if not isinstance(arr, exp.Array) or not arr.expressions:
            return OPAQUE
        values = tuple(_literal(e) for e in arr.expressions)
        if any(v is None for v in values):
            return OPAQUE
        return self.leaf(_column(col, self.schema), Query(op, tuple(dict.fromkeys(values))), neg)


def index_tree(tree: Any, in_lists: dict, schema: pa.Schema, indexed: Mapping[str, frozenset[str]]) -> Any:
    """The parsed filter ``tree`` in negation normal form over the predicates indices of the
    kinds in ``indexed`` (column -> index kinds) answer (see the module docstring)."""
    if not indexed:
        return OPAQUE
    return _simplify(_Builder(schema, indexed, in_lists).visit(tree, False))


def _simplify(node: Any) -> Any:
    """Junctions flattened (an ``or`` with an opaque part is opaque)."""
    if not isinstance(node, Junction):
        return node
    parts: list[Any] = []
    for p in (_simplify(p) for p in node.parts):
        if isinstance(p, Junction) and p.op == node.op:
            parts.extend(p.parts)
        else:
            parts.append(p)
    if node.op == "or" and any(p is OPAQUE for p in parts):
        return OPAQUE
    if node.op == "and":
        known = [p for p in parts if p is not OPAQUE]
        if not known:
            return OPAQUE
        if len(known) < len(parts):
            known.append(OPAQUE)
        parts = known
    return parts[0] if len(parts) == 1 else Junction(node.op, tuple(parts))


def leaves(node: Any) -> list[Leaf]:
    """The leaves of a tree, in order."""
    out: list[Leaf] = []
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, Junction):
            stack.extend(reversed(n.parts))
        elif isinstance(n, Leaf):
            out.append(n)
    return out


def exact(node: Any) -> bool:
    """Whether the tree holds no opaque part (the indices answer the whole filter)."""
    if isinstance(node, Junction):
        return all(exact(p) for p in node.parts)
    return isinstance(node, Leaf)


__all__ = ["Junction", "LABEL_KINDS", "Leaf", "OPAQUE", "Opaque", "VALUE_KINDS", "exact", "index_tree", "leaves"]
