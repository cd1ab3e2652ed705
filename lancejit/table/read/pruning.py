"""Statistics pruning: which row ranges of a fragment a filter may match, from page statistics.

:func:`may_match_ranges` is the scan's hook: given a fragment, a physical row range
``[lo, hi)`` and the compiled filter, it returns the sub-ranges that may hold matching rows
(half-open, sorted, disjoint); the scan reads only those.  It is exact about what it keeps and
conservative about what it drops: a range is dropped only when the statistics prove that no row
in it satisfies the filter as lancejit evaluates it (SQL: NULL never matches; floats in the
reference's total order, NaN above every number, see :mod:`.filter_floats`).

Used: the conjuncts of the filter's top-level ``AND`` chain of the forms ``col op literal`` /
``literal op col`` (``=  <  <=  >  >=``), ``col BETWEEN a AND b`` and ``col IN (...)`` on
top-level integer, float or string columns with integer / float / string literals (floats:
numbers only, and only ``=``, ``BETWEEN`` and ``IN``, as bounds exclude NaN, which some engines
order above every number; integers: integer literals only).  Other conjuncts are ignored (which
only keeps more rows); an ``OR`` at the top, ``NOT``, expressions on columns: no pruning.

Statistics come from legacy (0.1) data files (:mod:`lancejit.file.stats`): one (null count, min,
max) per batch; and from zone-map indices (:mod:`.zonemaps`, any file version): one (null count,
NaN count, min, max) per zone of a fragment, preferred when both exist.  A batch is dropped when, for some condition, its column is all null or its
bounds exclude every literal.  Skipped batches and rows are counted in the dataset's
``io_stats()`` (``pages_pruned``: batches of a legacy data file -- one page of each of its
columns -- or zones of a zone map skipped; ``rows_pruned``).

The work per call is a few vectorized NumPy / Arrow operations per condition over the batches
of the fragment's files, independent of the rows read.
"""

from __future__ import annotations

import asyncio
import functools
from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lancejit.core.errors import InvalidInputError
from lancejit.core.config import settings

from .datafile import open_data_file
from ..indices.zonemap import zone_maps

if TYPE_CHECKING:  # pragma: no cover
    from ..meta.context import DatasetContext
    from ..filter.compile import CompiledFilter
    from .fragment import FragmentReader

_FLIP = {"eq": "eq", "lt": "gt", "le": "ge", "gt": "lt", "ge": "le"}

#: Operators no NaN satisfies under IEEE nor under the total order (NaN above +inf, -NaN below
#: -inf) that engines use: float bounds, which exclude NaN, may only prune these.
_NAN_SAFE = frozenset({"eq", "between", "in"})


@dataclass(frozen=True, slots=True)
class Condition:
    """``column op values``: ``op`` is ``eq``, ``lt``, ``le``, ``gt``, ``ge`` (one value),
    ``between`` (low, high; inclusive) or ``in`` (any number of values)."""

    column: str
    op: str
    values: tuple[Any, ...]


def _literal(node: Any) -> Any:
    """The Python value of a numeric or string literal node (``-`` numbers too), else None."""
    from sqlglot import expressions as exp

    neg = False
    while isinstance(node, exp.Paren):
        node = node.this
    if isinstance(node, exp.Neg):
        neg, node = True, node.this
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

    while isinstance(node, exp.Paren):
        node = node.this
    if not isinstance(node, exp.Column) or node.table:
        return None
    name = node.name
    if name in schema.names:
        return name
    lowered = [n for n in schema.names if n.lower() == name.lower()]
    return lowered[0] if len(lowered) == 1 else None


def _condition(node: Any, schema: pa.Schema, in_lists: dict) -> Condition | None:
    from sqlglot import expressions as exp

    from ..filter.parse import PLACEHOLDER

    ops = {exp.EQ: "eq", exp.LT: "lt", exp.LTE: "le", exp.GT: "gt", exp.GTE: "ge"}
    op = ops.get(type(node))
    if op is not None:
        col, lit = _column(node.this, schema), _literal(node.expression)
        if col is None:
            col, lit, op = _column(node.expression, schema), _literal(node.this), _FLIP[op]
        return Condition(col, op, (lit,)) if col is not None and lit is not None else None
    if isinstance(node, exp.Between) and not node.args.get("negate"):
        col = _column(node.this, schema)
        low, high = _literal(node.args.get("low")), _literal(node.args.get("high"))
        if col is not None and low is not None and high is not None:
            return Condition(col, "between", (low, high))
        return None
    if isinstance(node, exp.In) and node.args.get("query") is None and not node.args.get("negate"):
        col = _column(node.this, schema)
        items = node.expressions
        if col is None or not items:
            return None
        if len(items) == 1 and isinstance(items[0], exp.Column) and items[0].name.startswith(PLACEHOLDER):
            lst = in_lists.get(items[0].name)
            if lst is None or lst.kind == "mixed":
                return None
            values = tuple(np.asarray(lst.values).tolist()) if not isinstance(lst.values, list) else tuple(lst.values)
            values = tuple(v for v in values if v is not None)
        else:
            values = tuple(_literal(e) for e in items)
            if any(v is None for v in values):
                return None
        return Condition(col, "in", values)
    return None


@functools.lru_cache(maxsize=256)
def conditions_of(text: str, schema: pa.Schema) -> tuple[Condition, ...]:
    """The prunable conjuncts of the filter ``text`` against the dataset's Arrow ``schema``."""
    from sqlglot import expressions as exp

    from ..filter.parse import parse_filter

    try:
        parsed = parse_filter(text)
    except InvalidInputError:
        return ()
    stack, terms = [parsed.tree], []
    while stack:
        node = stack.pop()
        while isinstance(node, exp.Paren):
            node = node.this
        if isinstance(node, exp.And):
            stack.extend((node.expression, node.this))
        else:
            terms.append(node)
    out = []
    for t in terms:
        c = _condition(t, schema, parsed.in_lists)
        if c is not None:
            out.append(c)
    return tuple(out)


def prunable(filt: "CompiledFilter", schema: pa.Schema) -> bool:
    """Whether pruning is on and ``filt`` has conditions statistics can decide."""
    return settings().page_pruning and bool(conditions_of(filt.text, schema))


# ---------------------------------------------------------------------------- bounds tests
def _scalars(values: tuple[Any, ...], typ: pa.DataType) -> list[pa.Scalar] | None:
    """The literals as scalars comparable exactly with a column of type ``typ`` (None: no)."""
    if pa.types.is_integer(typ):
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in values):
            return None
        info = np.iinfo(typ.to_pandas_dtype())
        if any(v < info.min or v > info.max for v in values):
            return None
        return [pa.scalar(v, typ) for v in values]
    if pa.types.is_floating(typ):
        if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
            return None
        if any(v != v for v in values):
            return None
        return [pa.scalar(float(v), pa.float64()) for v in values]
    if pa.types.is_string(typ) or pa.types.is_large_string(typ):
        if not all(isinstance(v, str) for v in values):
            return None
        return [pa.scalar(v, typ) for v in values]
    return None


def _ge(a: pa.Array, s: pa.Scalar) -> np.ndarray:
    """``a >= s`` with null (unbounded) as True."""
    return pc.fill_null(pc.greater_equal(a, s), True).to_numpy(zero_copy_only=False)


def _le(a: pa.Array, s: pa.Scalar) -> np.ndarray:
    return pc.fill_null(pc.less_equal(a, s), True).to_numpy(zero_copy_only=False)


def _gt(a: pa.Array, s: pa.Scalar) -> np.ndarray:
    return pc.fill_null(pc.greater(a, s), True).to_numpy(zero_copy_only=False)


def _lt(a: pa.Array, s: pa.Scalar) -> np.ndarray:
    return pc.fill_null(pc.less(a, s), True).to_numpy(zero_copy_only=False)


def batches_may_match(cond: Condition, mins: pa.Array, maxs: pa.Array,
                      nan_count: np.ndarray | None = None) -> np.ndarray | None:
    """Per batch: may a row with a value in ``[min, max]`` satisfy ``cond``?  None when the
    statistics' type and the literals do not compare exactly (then every batch may).
    ``nan_count`` (floats): NaNs per batch, when known; batches with NaN are kept for the
    operators NaN may satisfy in some engine's order."""
    typ = mins.type
    scal = _scalars(cond.values, typ)
    if scal is None:
        return None
    if pa.types.is_floating(typ):
        # a NaN bound (engines ordering NaN above every number put it in max) is no bound
        mins, maxs = (pc.if_else(pc.is_nan(a), pa.scalar(None, typ), a) for a in (mins, maxs))
    if pa.types.is_floating(typ) and cond.op not in _NAN_SAFE:
        if nan_count is None:
            return None
        keep = _bounds_test(cond, scal, mins, maxs)
        return None if keep is None else keep | (np.asarray(nan_count) > 0)
    return _bounds_test(cond, scal, mins, maxs)


def _bounds_test(cond: Condition, scal: list[pa.Scalar], mins: pa.Array, maxs: pa.Array) -> np.ndarray | None:
    """Per batch: may a value in ``[min, max]`` satisfy ``cond`` (literals as ``scal``)?"""
    if cond.op == "eq":
        return _le(mins, scal[0]) & _ge(maxs, scal[0])
    if cond.op == "lt":
        return _lt(mins, scal[0])
    if cond.op == "le":
        return _le(mins, scal[0])
    if cond.op == "gt":
        return _gt(maxs, scal[0])
    if cond.op == "ge":
        return _ge(maxs, scal[0])
    if cond.op == "between":
        return _ge(maxs, scal[0]) & _le(mins, scal[1])
    if cond.op == "in":
        if not scal:
            return np.zeros(len(mins), dtype=bool)
        # smallest literal >= min, per batch, then test it against max (vectorized over batches)
        ordered = pa.array(sorted(s.as_py() for s in scal), scal[0].type).to_numpy(zero_copy_only=False)
        lo_np = mins.to_numpy(zero_copy_only=False)
        hi_np = maxs.to_numpy(zero_copy_only=False)
        lo_null = mins.is_null().to_numpy(zero_copy_only=False)
        hi_null = maxs.is_null().to_numpy(zero_copy_only=False)
        lo_key = np.where(lo_null, ordered[0], lo_np) if len(ordered) else lo_np
        idx = np.searchsorted(ordered, lo_key.astype(ordered.dtype), side="left")
        found = idx < len(ordered)
        cand = ordered[np.minimum(idx, len(ordered) - 1)]
        hi_key = np.where(hi_null, cand, hi_np)
        return found & (cand <= hi_key.astype(ordered.dtype))
    return None


# ------------------------------------------------------------------------------------ hook
def _ranges_from_mask(starts: np.ndarray, ends: np.ndarray, keep: np.ndarray) -> np.ndarray:
    """Kept ``[start, end)`` segments (sorted, adjacent ones merged) as a ``(k, 2)`` int64 array."""
    s, e = starts[keep], ends[keep]
    if len(s) == 0:
        return np.zeros((0, 2), dtype=np.int64)
    cut = np.flatnonzero(s[1:] != e[:-1]) + 1
    return np.stack([s[np.r_[0, cut]], e[np.r_[cut - 1, len(e) - 1]]], axis=1).astype(np.int64)


Masks = list[tuple[np.ndarray, np.ndarray]]  # per statistics source: (row offsets of its batches, keep)


async def _masks(ctx: "DatasetContext", frag: "FragmentReader", conds: tuple[Condition, ...],
                 zmaps: dict) -> Masks:
    """Per statistics source of the fragment (a zone map, a legacy data file): the physical row
    offsets of its batches and which batches may match every condition it decides."""
    by_name = {t.name: t for t in ctx.top_fields}
    seen: dict[str, tuple[np.ndarray, np.ndarray]] = {}

    def add(source: str, offsets: np.ndarray, keep: np.ndarray | None, nulls: np.ndarray) -> None:
        if keep is None:
            keep = np.ones(len(offsets) - 1, dtype=bool)
        keep = keep & (nulls < np.diff(offsets))  # an all-null batch matches no comparison
        prev = seen.get(source)
        seen[source] = (offsets, keep if prev is None else prev[1] & keep)

    for cond in conds:
        top = by_name.get(cond.column)
        df = frag.file_for(top) if top is not None else None
        if df is None:
            continue
        zm = zmaps.get(top.id)
        zones = zm.zones_of(frag.id, frag.physical_rows) if zm is not None else None
        if zones is not None:
            add(f"zonemap:{top.id}", zones.offsets,
                batches_may_match(cond, zones.mins, zones.maxs, zones.nan_count), zones.null_count)
            continue
        if ctx.manifest.data_storage_version not in ("0.1", "legacy"):
            continue
        handle = await open_data_file(ctx, df)
        legacy = getattr(handle.reader.file_metadata, "legacy", None)
        stats = getattr(legacy, "statistics", None)
        col = stats.columns.get(top.id) if stats is not None else None
        if col is not None:
            add(df.path, stats.batch_offsets, batches_may_match(cond, col.min_value, col.max_value), col.null_count)
    return list(seen.values())


def _cut(masks: Masks, lo: int, hi: int) -> tuple[np.ndarray, int, int]:
    """``(kept ranges of [lo, hi), batches skipped, rows skipped)`` for the fragment's ``masks``."""
    whole = np.array([[lo, hi]], dtype=np.int64)
    if hi <= lo:
        return np.zeros((0, 2), dtype=np.int64), 0, 0
    if not masks:
        return whole, 0, 0
    # elementary segments between every batch boundary inside [lo, hi)
    cuts = np.unique(np.concatenate([np.clip(off, lo, hi) for off, _ in masks] + [whole[0]]))
    starts, ends = cuts[:-1], cuts[1:]
    keep_seg = np.ones(len(starts), dtype=bool)
    for off, keep in masks:
        b = np.searchsorted(off, starts, side="right") - 1
        inside = (b >= 0) & (b < len(keep))
        keep_seg &= np.where(inside, keep[np.clip(b, 0, len(keep) - 1)], True)
    out = _ranges_from_mask(starts, ends, keep_seg)
    pruned_rows = int((hi - lo) - (out[:, 1] - out[:, 0]).sum())
    pages = 0
    if pruned_rows:
        for off, _ in masks:
            bs, be = off[:-1], off[1:]
            in_range = (bs >= lo) & (be <= hi) & (be > bs)
            cover = np.searchsorted(out[:, 1], bs, side="right")
            ok = cover < len(out)
            hit = np.zeros(len(bs), dtype=bool)
            hit[ok] = out[cover[ok], 0] < be[ok]
            pages += int((in_range & ~hit).sum())
    return out, pages, pruned_rows


async def may_match_ranges(ctx: "DatasetContext", frag: "FragmentReader", lo: int, hi: int,
                           filt: "CompiledFilter") -> np.ndarray:
    """Sub-ranges of the fragment's physical rows ``[lo, hi)`` that may match ``filt``:
    a ``(k, 2)`` int64 array of sorted, disjoint, half-open row ranges (the whole range when
    nothing can be pruned).  Skipped batches and rows are counted in ``ctx.stats``."""
    conds = conditions_of(filt.text, ctx.schema)
    masks = await _masks(ctx, frag, conds, await zone_maps(ctx)) if conds and hi > lo else []
    out, pages, rows = _cut(masks, lo, hi)
    if rows:
        ctx.stats.record_pruned(pages, rows)
    return out


# ------------------------------------------------------- the scan planner's synchronous hook
#: Prepared masks by (manifest path, caches identity, filter text): {fragment id: masks}.
_PREPARED: "OrderedDict[tuple[str, int, str], dict[int, Masks]]" = OrderedDict()
_PREPARED_MAX = 32


def _key(ctx: "DatasetContext", filt: "CompiledFilter") -> tuple[str, int, str]:
    return (ctx.manifest_path, id(ctx.caches), filt.text)


async def prepare(ctx: "DatasetContext", filt: "CompiledFilter | None") -> None:
    """Load what pruning ``filt`` needs (zone maps; legacy data files' statistics, all files
    opened concurrently) before the scan is planned, and install :func:`prune_hook` as the
    planner's pruner.  Nothing happens when the filter has no prunable condition."""
    if filt is None or not prunable(filt, ctx.schema):
        return
    legacy = ctx.manifest.data_storage_version in ("0.1", "legacy")
    if not legacy and ctx.manifest.index_section is None:
        return  # no statistics to use: plan without a pass over the fragments
    install()
    key = _key(ctx, filt)
    if key in _PREPARED:
        _PREPARED.move_to_end(key)
        return
    from .fragment import FragmentReader

    conds = conditions_of(filt.text, ctx.schema)
    zmaps = await zone_maps(ctx)
    by_name = {t.name: t.id for t in ctx.top_fields}
    if not legacy and not any(by_name.get(c.column) in zmaps for c in conds):
        _PREPARED[key] = {}
        return
    frags = [FragmentReader(ctx, f) for f in ctx.manifest.fragments]
    masks = await asyncio.gather(*(_masks(ctx, f, conds, zmaps) for f in frags))
    _PREPARED[key] = {f.id: m for f, m in zip(frags, masks) if m}
    while len(_PREPARED) > _PREPARED_MAX:
        _PREPARED.popitem(last=False)


def prune_hook(ctx: "DatasetContext", fragment_id: int, lo: int, hi: int,
               filt: "CompiledFilter") -> list[tuple[int, int]] | None:
    """The scan planner's pruner (``scan_plan.set_pruner``): kept sub-ranges of ``[lo, hi)`` of
    a fragment from what :func:`prepare` loaded; None ("read everything") when not prepared."""
    if not settings().page_pruning:
        return None
    prepared = _PREPARED.get(_key(ctx, filt))
    masks = prepared.get(fragment_id) if prepared is not None else None
    if not masks:
        return None
    out, pages, rows = _cut(masks, lo, hi)
    if rows:
        ctx.stats.record_pruned(pages, rows)
    return [(int(a), int(b)) for a, b in out]


def install() -> None:
    """Make :func:`prune_hook` the scan planner's pruner (idempotent)."""
    try:
        from . import scan_plan
    except ImportError:  # pragma: no cover - planner without the hook
        return
    scan_plan.set_pruner(prune_hook)


__all__ = ["Condition", "batches_may_match", "conditions_of", "install", "may_match_ranges", "prepare",
           "prunable", "prune_hook"]
