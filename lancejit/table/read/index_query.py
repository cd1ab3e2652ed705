"""Answering (part of) a filter from scalar indices: which index answers which predicate, on
which fragments, and the rows they select.

:func:`plan_index_query` (no data read; the indices' lookups are opened) turns a compiled filter
into an :class:`IndexQuery`: the filter's index tree (:mod:`..indices.scalar.predicates`) with
every leaf bound to one index (:class:`LeafUse`: its segments and the fragments they cover; for
equality and IN lists a BITMAP is preferred, for ranges a BTREE), the fragments *every* bound
index covers (``covered``: only there do the indices answer; every other fragment is scanned
and filtered row by row), and ``exact`` (the indices answer the whole filter: no row needs
the filter evaluated again; floats are always evaluated again).

:func:`resolve` runs the searches and combines them in three-valued logic over the covered
fragments: a leaf's rows are those where its predicate is TRUE; a negated leaf's the covered rows
minus those where the predicate is TRUE or NULL (a complemented set, never materialized);
``and`` / ``or`` intersect / unite (complements by De Morgan); an opaque part is every row.
The result is the rows (addresses, sorted) of covered fragments that may match, deleted rows
removed, or its complement within the covered fragments.  Indices holding stable row ids (see
:meth:`~..indices.scalar.catalog.ScalarSegment.holds_row_ids`) have their ids mapped to the
rows' current addresses first (rows moved out of covered fragments, or deleted, drop out).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from lancejit.core.config import settings

from ..indices.scalar import rowset
from ..indices.scalar.catalog import ScalarSegment, scalar_segments
from ..indices.scalar.domain import Unusable, convert, kind_of, literal
from ..indices.scalar.opened import ScalarIndex, open_segment
from ..indices.scalar.predicates import OPAQUE, Junction, Leaf, exact as _exact, index_tree
from ..meta.features import FLAG_STABLE_ROW_IDS

if TYPE_CHECKING:  # pragma: no cover
    from ..filter.compile import CompiledFilter
    from ..meta.context import DatasetContext
    from .version_index import DatasetIndex

@dataclass(frozen=True, slots=True)
class LeafUse:
    """The index answering one leaf: its ``name``, ``kind``, opened segments and ``covered``
    fragment ids (sorted int64, the union of its segments')."""

    leaf: Leaf
    name: str
    kind: str
    segments: tuple[tuple[ScalarSegment, ScalarIndex], ...]
    covered: np.ndarray

    def describe(self) -> str:
        return f"{self.leaf.describe()} @ {self.name} ({self.kind})"


@dataclass(frozen=True, slots=True)
class IndexQuery:
    """What the indices answer of a filter (see the module docstring)."""

    tree: Any
    uses: tuple[LeafUse, ...]
    covered: np.ndarray
    exact: bool
    stable_row_ids: bool = False
    _by_leaf: dict = field(default_factory=dict, compare=False, repr=False)

    def use_of(self, leaf: Leaf) -> LeafUse:
        return self._by_leaf[id(leaf)]

    def describe(self) -> list[str]:
        return [u.describe() for u in self.uses]


def _preference(kind: str, op: str) -> int:
    if op in ("eq", "in"):
        return {"BITMAP": 0, "BTREE": 1}.get(kind, 2)
    return {"BTREE": 0, "BITMAP": 1}.get(kind, 2)


def _type_ok(seg: ScalarSegment, si: ScalarIndex) -> bool:
    """Whether the index was built for the column's current type."""
    t = seg.column_type
    if si.kind == "LABEL_LIST":
        return hasattr(t, "value_type") and t.value_type == si.value_type
    return t == si.value_type


def _check(si: ScalarIndex, leaf: Leaf) -> bool:
    """Whether every literal of the leaf has a counterpart in the index's domain."""
    q = leaf.query
    if si.kind == "LABEL_LIST":
        if q.op not in ("any", "all") or (leaf.negated and si.lookup.list_nulls is None):
            return False
    elif q.op not in ("eq", "in", "range", "null"):
        return False
    try:
        convert(q, si.value_type)
    except Unusable:
        return False
    return True


async def _open(ctx: "DatasetContext", seg: ScalarSegment) -> ScalarIndex | None:
    try:
        si = await open_segment(ctx, seg.uuid, seg.kind, seg.column_type)
    except Unusable:
        return None
    return si if _type_ok(seg, si) else None


async def plan_index_query(ctx: "DatasetContext", compiled: "CompiledFilter | None",
                           fragment_ids: np.ndarray | None = None) -> IndexQuery | None:
    """The index part of ``compiled`` on this version, or None when no index answers any of it
    (``fragment_ids``: the fragments the caller reads; default every fragment)."""
    if (not settings().scalar_indices or compiled is None or compiled.parsed is None
            or ctx.manifest.index_section is None):
        return None
    segs = [s for s in await scalar_segments(ctx) if s.column in compiled.columns and len(s.fragments)]
    if not segs:
        return None
    opened = [await _open(ctx, s) for s in segs]  # (cached after the first query: no task per segment)
    by_col: dict[str, list[tuple[ScalarSegment, ScalarIndex]]] = {}
    for s, si in zip(segs, opened):
        if si is not None:
            by_col.setdefault(s.column, []).append((s, si))
    if not by_col:
        return None
    kinds = {c: frozenset(si.kind for _, si in v) for c, v in by_col.items()}
    tree = index_tree(compiled.parsed.tree, compiled.parsed.in_lists, ctx.schema, kinds)
    if tree is OPAQUE:
        return None
    # bind every leaf to one index (all its segments), or make it opaque
    uses: list[LeafUse] = []
    by_leaf: dict[int, LeafUse] = {}

    def bind(node: Any) -> Any:
        if isinstance(node, Junction):
            parts = tuple(bind(p) for p in node.parts)
            if node.op == "or" and any(p is OPAQUE for p in parts):
                return OPAQUE
            if node.op == "and" and all(p is OPAQUE for p in parts):
                return OPAQUE
            return Junction(node.op, parts)
        if not isinstance(node, Leaf):
            return node
        cands: dict[str, list[tuple[ScalarSegment, ScalarIndex]]] = {}
        for s, si in by_col.get(node.column, ()):
            if _check(si, node):
                cands.setdefault(s.name, []).append((s, si))
        if not cands:
            return OPAQUE
        name = min(cands, key=lambda n: (_preference(cands[n][0][1].kind, node.query.op), n))
        chosen = tuple(cands[name])
        covered = chosen[0][0].fragments if len(chosen) == 1 else np.unique(
            np.concatenate([s.fragments for s, _ in chosen]))
        use = LeafUse(node, name, chosen[0][1].kind, chosen, covered)
        uses.append(use)
        by_leaf[id(node)] = use
        return node

    tree = bind(tree)
    if tree is OPAQUE or not uses:
        return None
    version_ids = np.fromiter((f.id for f in ctx.manifest.fragments), dtype=np.int64,
                              count=len(ctx.manifest.fragments)) if fragment_ids is None else fragment_ids
    covered = np.asarray(version_ids, dtype=np.int64)
    for u in uses:
        if len(u.covered) != len(covered) or not np.array_equal(u.covered, np.sort(covered)):
            covered = covered[np.isin(covered, u.covered)]
    if not len(covered):
        return None
    covered = np.sort(covered)
    exact = _exact(tree) and all(kind_of(u.segments[0][1].value_type) != "float" for u in uses)
    stable = bool(ctx.manifest.reader_feature_flags & FLAG_STABLE_ROW_IDS)
    return IndexQuery(tree, tuple(uses), covered, exact, stable, by_leaf)


# ------------------------------------------------------------------------------ resolving
#: A set of rows: ``(rows, complemented)``; complemented = every covered row except ``rows``.
RowSet = tuple[np.ndarray, bool]
ALL: RowSet = (rowset.EMPTY, True)


def _and(a: RowSet, b: RowSet) -> RowSet:
    (x, cx), (y, cy) = a, b
    if not cx and not cy:
        return rowset.intersect(x, y), False
    if cx and cy:
        return rowset.union(x, y), True
    if cx:
        x, y = y, x
    return rowset.difference(x, y), False


def _or(a: RowSet, b: RowSet) -> RowSet:
    (x, cx), (y, cy) = a, b
    if not cx and not cy:
        return rowset.union(x, y), False
    if cx and cy:
        return rowset.intersect(x, y), True
    if cx:
        x, y = y, x
    return rowset.difference(y, x), True


def _in_fragments(rows: np.ndarray, fragments: np.ndarray) -> np.ndarray:
    """The rows (sorted addresses) whose fragment is in ``fragments`` (sorted ids): one binary
    search per fragment, no pass over the rows when they all are."""
    if not len(rows):
        return rows
    frags = np.asarray(fragments, dtype=np.uint64)
    starts = np.searchsorted(rows, frags << np.uint64(32))
    stops = np.where(frags >= np.uint64(0xFFFFFFFF), len(rows),
                     np.searchsorted(rows, (frags + np.uint64(1)) << np.uint64(32)))
    return rows[rowset.span_positions(starts, stops)]


async def _to_addresses(ctx: "DatasetContext", rows: np.ndarray) -> np.ndarray:
    """Stable row ids -> current addresses of their live rows (sorted)."""
    from .take import row_id_index

    if not len(rows):
        return rows
    addrs, found = (await row_id_index(ctx)).lookup(rows)
    return rowset.of(addrs[found])


async def _leaf_rows(ctx: "DatasetContext", q: IndexQuery, leaf: Leaf) -> RowSet:
    use = q.use_of(leaf)
    sets = []
    for seg, si in use.segments:
        frags = seg.fragments
        got = await si.search(ctx, leaf.query)
        if leaf.negated:
            null: np.ndarray | None
            if leaf.query.op == "null":
                null = rowset.EMPTY  # IS NULL is never NULL
            else:
                null = await si.null_rows(ctx)
                if null is None:
                    raise Unusable("no NULL rows recorded")
            got = rowset.union(got, null)
        if seg.holds_row_ids(q.stable_row_ids, si.kind):
            got = await _to_addresses(ctx, got)
        sets.append(_in_fragments(got, frags))
    rows = rowset.union_many(sets)
    return (_in_fragments(rows, q.covered), leaf.negated)


async def _eval(ctx: "DatasetContext", q: IndexQuery, node: Any) -> RowSet:
    if isinstance(node, Leaf):
        return await _leaf_rows(ctx, q, node)
    if not isinstance(node, Junction):
        return ALL
    parts = [await _eval(ctx, q, p) for p in node.parts]
    out = parts[0]
    for p in parts[1:]:
        out = _and(out, p) if node.op == "and" else _or(out, p)
    return out


async def resolve(ctx: "DatasetContext", q: IndexQuery) -> RowSet:
    """The rows of covered fragments the filter may select (exactly those when ``q.exact``),
    or when ``complemented`` the rows it does not select; deleted rows removed either way:
    ``(rows, complemented)`` (see the module docstring)."""
    rows, comp = await _eval(ctx, q, q.tree)
    return await drop_deleted(ctx, rows), comp


async def drop_deleted(ctx: "DatasetContext", rows: np.ndarray) -> np.ndarray:
    """``rows`` (sorted addresses) without the deleted ones and those of fragments no longer in
    the version (per fragment run: a look at its last offset, its deletion vector when it has
    one; no pass over the rows of fragments without deletions)."""
    from .version_index import dataset_index

    if not len(rows):
        return rows
    index = await dataset_index(ctx)
    frag_ids, bounds = rowset.fragment_runs(rows)
    pos, found = index.positions_of(frag_ids)
    lasts = (rows[bounds[1:] - 1] & np.uint64(0xFFFFFFFF)).astype(np.int64)
    clean = found & (lasts < index.physical_rows[pos]) & ~index.has_deletions[pos]
    if bool(clean.all()):
        return rows
    keep = np.ones(len(rows), dtype=bool)
    for i in np.flatnonzero(~clean).tolist():
        a, b = int(bounds[i]), int(bounds[i + 1])
        if not found[i]:
            keep[a:b] = False
            continue
        p = int(pos[i])
        low = (rows[a:b] & np.uint64(0xFFFFFFFF)).astype(np.int64)
        keep[a:b] &= low < index.physical_rows[p]
        if index.has_deletions[p]:
            deleted = await index.reader(p).deleted()
            if deleted is not None and len(deleted):
                keep[a:b] &= ~np.isin(low, np.asarray(deleted, dtype=np.int64))
    return rows[keep]


def least_candidates(q: IndexQuery) -> int:
    """A lower bound of the rows (deleted ones included) the indices select, from BTREE page
    lookups alone (no page read): for a range, or an OR of ranges, on BTREE columns, the rows
    of the pages strictly inside a range (NULLs excepted) -- the first and last pages it
    touches may hold rows outside it.  0 when unknown: other predicates, segments covering
    fragments outside the query's, stable row ids (rows may have moved out)."""
    if q.stable_row_ids:
        return 0
    tree = q.tree
    best = 0
    for leaf in tree.parts if isinstance(tree, Junction) and tree.op == "or" else (tree,):
        if not isinstance(leaf, Leaf) or leaf.negated or leaf.query.op != "range":
            continue
        use = q.use_of(leaf)
        if use.kind != "BTREE":
            continue
        rows = 0
        for seg, si in use.segments:
            lookup = si.lookup
            if not lookup.ordered or not bool(np.isin(seg.fragments, q.covered).all()):
                rows = 0
                break
            first, last = lookup.page_spans(convert(leaf.query, lookup.value_type))
            inner = np.arange(int(first[0]) + 1, int(last[0]) - 1, dtype=np.int64)  # lookup rows
            if len(inner):
                starts = lookup.page_idx[inner] * lookup.batch_size
                sizes = np.minimum(lookup.batch_size, lookup.num_rows - starts)
                rows += int((sizes - lookup.null_counts[inner]).sum())
        best = max(best, rows)
    return best


def fixed_columns(q: IndexQuery, schema: pa.Schema) -> dict[str, pa.Scalar]:
    """The columns holding one known value in every row the filter selects: ``column =
    literal`` leaves ANDed at the top of the index tree, on integer, text, binary and boolean
    columns (not floats: ``-0.0`` equals ``0.0``), by name -> the value as a scalar of the
    column's type."""
    tree = q.tree
    parts = tree.parts if isinstance(tree, Junction) and tree.op == "and" else (tree,)
    out: dict[str, pa.Scalar] = {}
    for leaf in parts:
        if not isinstance(leaf, Leaf) or leaf.negated or leaf.query.op != "eq":
            continue
        t = schema.field(leaf.column).type
        if kind_of(t) not in ("int", "str", "bytes", "bool"):
            continue
        try:
            value = literal(leaf.query.values[0], t)
        except Unusable:
            continue
        out[leaf.column] = pa.scalar(value.item() if isinstance(value, np.generic) else value, type=t)
    return out


def covered_live_rows(index: "DatasetIndex", covered: np.ndarray) -> int:
    """Live rows of the covered fragments."""
    pos, found = index.positions_of(covered)
    return int(index.live_rows[pos[found]].sum())


__all__ = ["IndexQuery", "LeafUse", "covered_live_rows", "drop_deleted", "fixed_columns", "least_candidates",
           "plan_index_query", "resolve"]
