"""Evaluating a compiled filter over a table: one Arrow expression, or an n-ary boolean tree.

Leaves are Arrow expressions, or :class:`ListMatch` (``array_has_any`` / ``array_has_all`` of
literal labels on a list column, which Arrow has no function for): NULL for a NULL list, else
whether the list holds any / every label (NULL items match no label).

Arrow canonicalizes ``and``/``or`` chains into left-deep trees and recurses over them (a
20,000-term chain overflows the C stack), so a compiled filter hands Arrow at most
:data:`CHAIN_LIMIT` terms per expression; longer chains become a :class:`BoolNode` whose leaves
are Arrow expressions, evaluated here in one projection and combined with Kleene logic.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Union

import numpy as np
import pyarrow as pa

from lancejit.core import arrow_compute as pc
from lancejit.core.errors import InvalidInputError

#: Most terms of one AND/OR chain handed to Arrow as one expression.
CHAIN_LIMIT = 256


@dataclass(frozen=True, slots=True, eq=False)
class ListMatch:
    """``array_has_<op>(column, labels)``: ``op`` ``"any"`` or ``"all"``; ``labels`` an Arrow
    array of the list's item type (distinct, no NULL)."""

    column: str
    op: str
    labels: pa.Array

    def mask(self, table: pa.Table) -> pa.ChunkedArray:
        """The predicate's value (boolean, NULL for NULL lists) for every row of ``table``."""
        col = table.column(self.column)
        return pa.chunked_array([self._chunk(c) for c in col.chunks], type=pa.bool_())

    def _chunk(self, chunk: pa.Array) -> pa.Array:
        n = len(chunk)
        flat = pc.list_flatten(chunk)
        parents = pc.list_parent_indices(chunk).to_numpy(zero_copy_only=False)
        out = np.ones(n, dtype=bool) if self.op == "all" else np.zeros(n, dtype=bool)
        labels = [self.labels] if self.op == "any" else [self.labels.slice(i, 1) for i in range(len(self.labels))]
        for lab in labels:
            hit = pc.is_in(flat, value_set=lab, skip_nulls=True).to_numpy(zero_copy_only=False)
            has = np.zeros(n, dtype=bool)
            has[parents[hit]] = True
            if self.op == "all":
                out &= has
            else:
                out |= has
        mask = chunk.is_null().to_numpy(zero_copy_only=False) if chunk.null_count else None
        return pa.array(out, pa.bool_(), mask=mask)


@dataclass(frozen=True, slots=True)
class BoolNode:
    """``op`` ("and", "or" or "not") over ``parts`` (Arrow expressions or BoolNodes)."""

    op: str
    parts: tuple


Node = Union[pc.Expression, BoolNode, ListMatch]


def balanced(op, items: list) -> pc.Expression:
    """``items`` combined pairwise, level by level (depth log2 of their count)."""
    while len(items) > 1:
        nxt = [op(items[i], items[i + 1]) for i in range(0, len(items) - 1, 2)]
        if len(items) % 2:
            nxt.append(items[-1])
        items = nxt
    return items[0]


def _and(a, b):
    return a & b


def _or(a, b):
    return a | b


def combine(op: str, items: list[Node]) -> Node:
    """The n-ary ``op`` ("and"/"or") of ``items``: one Arrow expression when short enough."""
    fn = _and if op == "and" else _or
    exprs = [i for i in items if isinstance(i, pc.Expression)]
    nodes = [i for i in items if not isinstance(i, pc.Expression)]
    if not nodes and len(exprs) <= CHAIN_LIMIT:
        return balanced(fn, exprs)
    chunks = [balanced(fn, exprs[i : i + CHAIN_LIMIT]) for i in range(0, len(exprs), CHAIN_LIMIT)]
    return BoolNode(op, tuple(chunks + nodes))


def negate(item: Node) -> Node:
    return ~item if isinstance(item, pc.Expression) else BoolNode("not", (item,))


def _leaves(root: BoolNode) -> list[pc.Expression]:
    """The Arrow expression leaves of ``root`` (list predicates are evaluated apart)."""
    out, stack = [], [root]
    while stack:
        n = stack.pop()
        for p in n.parts:
            if isinstance(p, BoolNode):
                stack.append(p)
            elif isinstance(p, pc.Expression):
                out.append(p)
    return out


def project(table: pa.Table, exprs: list[pc.Expression]) -> list[pa.ChunkedArray]:
    """``exprs`` evaluated over ``table`` (at least one column) in the calling thread."""
    import pyarrow.acero as ac

    names = [f"e{i}" for i in range(len(exprs))]
    decl = ac.Declaration.from_sequence([
        ac.Declaration("table_source", ac.TableSourceNodeOptions(table)),
        ac.Declaration("project", ac.ProjectNodeOptions(exprs, names)),
    ])
    out = decl.to_table(use_threads=False)
    return [out.column(i) for i in range(len(exprs))]


def _mask(node: Node, values: dict[int, pa.ChunkedArray], table: pa.Table) -> pa.ChunkedArray:
    if isinstance(node, pc.Expression):
        return values[id(node)]
    if isinstance(node, ListMatch):
        return node.mask(table)
    masks = [_mask(p, values, table) for p in node.parts]  # depth bounded by the parser
    if node.op == "not":
        return pc.invert(masks[0])
    fn = pc.and_kleene if node.op == "and" else pc.or_kleene
    return balanced(fn, masks)


def evaluate_tree(root: BoolNode, table: pa.Table) -> np.ndarray:
    """Positions (int64) of the rows of ``table`` (at least one column) where ``root`` is TRUE."""
    leaves = _leaves(root)
    arrays = project(table, leaves) if leaves else []
    return _positions(_mask(root, {id(e): a for e, a in zip(leaves, arrays)}, table))


def evaluate_expression(expr: pc.Expression, table: pa.Table) -> np.ndarray:
    """Positions (int64) of the rows of ``table`` (at least one column) where ``expr`` is TRUE."""
    return _positions(project(table, [expr])[0])


def _positions(mask) -> np.ndarray:
    if pa.types.is_null(mask.type):
        return np.zeros(0, dtype=np.int64)  # NULL selects nothing
    if not pa.types.is_boolean(mask.type):
        raise InvalidInputError(f"the filter is of type {mask.type}, not boolean")
    mask = pc.fill_null(mask, False)
    if isinstance(mask, pa.ChunkedArray):
        mask = mask.combine_chunks()
    return np.flatnonzero(mask.to_numpy(zero_copy_only=False)).astype(np.int64)


def check_expression(node: Node, what: str) -> pc.Expression:
    """``node`` as one Arrow expression (InvalidInputError when it is an n-ary tree or a list
    predicate)."""
    if isinstance(node, BoolNode):
        raise InvalidInputError(f"{what}: a boolean chain this long cannot be used inside another operator")
    if isinstance(node, ListMatch):
        raise InvalidInputError(f"{what}: array_has_any / array_has_all cannot be used inside another operator")
    return node
