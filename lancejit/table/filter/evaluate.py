"""Evaluating a compiled filter over a table: one Arrow expression, or an n-ary boolean tree.

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
import pyarrow.compute as pc

from lancejit.core.errors import InvalidInputError

#: Most terms of one AND/OR chain handed to Arrow as one expression.
CHAIN_LIMIT = 256


@dataclass(frozen=True, slots=True)
class BoolNode:
    """``op`` ("and", "or" or "not") over ``parts`` (Arrow expressions or BoolNodes)."""

    op: str
    parts: tuple


Node = Union[pc.Expression, BoolNode]


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
    return BoolNode("not", (item,)) if isinstance(item, BoolNode) else ~item


def _leaves(root: BoolNode) -> list[pc.Expression]:
    out, stack = [], [root]
    while stack:
        n = stack.pop()
        for p in n.parts:
            (stack if isinstance(p, BoolNode) else out).append(p)
    return out


def _project(table: pa.Table, exprs: list[pc.Expression]) -> list[pa.ChunkedArray]:
    import pyarrow.acero as ac

    names = [f"e{i}" for i in range(len(exprs))]
    decl = ac.Declaration.from_sequence([
        ac.Declaration("table_source", ac.TableSourceNodeOptions(table)),
        ac.Declaration("project", ac.ProjectNodeOptions(exprs, names)),
    ])
    out = decl.to_table(use_threads=False)
    return [out.column(i) for i in range(len(exprs))]


def _mask(node: Node, values: dict[int, pa.ChunkedArray]) -> pa.ChunkedArray:
    if isinstance(node, pc.Expression):
        return values[id(node)]
    masks = [_mask(p, values) for p in node.parts]  # depth bounded by the parser
    if node.op == "not":
        return pc.invert(masks[0])
    fn = pc.and_kleene if node.op == "and" else pc.or_kleene
    return balanced(fn, masks)


def evaluate_tree(root: BoolNode, table: pa.Table) -> np.ndarray:
    """Positions (int64) of the rows of ``table`` (at least one column) where ``root`` is TRUE."""
    leaves = _leaves(root)
    arrays = _project(table, leaves)
    return _positions(_mask(root, {id(e): a for e, a in zip(leaves, arrays)}))


def evaluate_expression(expr: pc.Expression, table: pa.Table) -> np.ndarray:
    """Positions (int64) of the rows of ``table`` (at least one column) where ``expr`` is TRUE."""
    return _positions(_project(table, [expr])[0])


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
    """``node`` as one Arrow expression (InvalidInputError when it is an n-ary tree)."""
    if isinstance(node, BoolNode):
        raise InvalidInputError(f"{what}: a boolean chain this long cannot be used inside another operator")
    return node
