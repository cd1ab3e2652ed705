"""Statistics pruning: which row ranges of a fragment a filter may match, from page statistics.

:func:`may_match_ranges` is the scan's hook: given a fragment, a physical row range
``[lo, hi)`` and the compiled filter, it returns the sub-ranges that may hold matching rows
(half-open, sorted, disjoint); the scan reads only those.  It is exact about what it keeps and
conservative about what it drops: a range is dropped only when the statistics prove that no row
in it satisfies the filter as lancejit evaluates it (SQL: NULL never matches; floats in the
reference's total order, NaN above every number, see :mod:`..filter.floats`).

Used: the filter's :class:`~..filter.conditions.Condition` list (terms of its top-level ``AND``
chain of the forms ``col op value``, ``col BETWEEN a AND b``, ``col IN (...)`` whose values are
known at compile time in the column's type, as the filter compares them).  Statistics and values
compare in the statistics' own type (integers of any width exactly, strings, binaries,
decimals, dates, timestamps); floats: numbers only, and only ``=``, ``BETWEEN`` and ``IN``
unless the NaN count is known, as bounds exclude NaN, which some engines order above every
number.  Other conjuncts are ignored (which only keeps more rows); an ``OR`` at the top,
``NOT``, expressions on columns: no pruning.

Statistics come from legacy (0.1) data files (:mod:`lancejit.file.stats`): one (null count,
min, max) per batch; and from zone-map indices (:mod:`..indices.zonemap`, any file version):
one (null count, NaN count, min, max) per zone of a fragment, only in the fragments the index's
segment covers (:mod:`..indices.coverage`), preferred when both exist.  A batch is dropped when,
for some condition, its column is all null or its bounds exclude every value.  Skipped batches and rows are counted in the dataset's
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
from typing import TYPE_CHECKING, Mapping

import numpy as np
import pyarrow as pa

from lancejit.core import arrow_compute as pc
from lancejit.core.errors import InvalidInputError
from lancejit.core.config import settings
from .datafile import open_data_file
from ..filter.conditions import Condition

if TYPE_CHECKING:  # pragma: no cover
    from ..meta.context import DatasetContext
    from ..filter.compile import CompiledFilter
    from ..indices.zonemap import ZoneMaps
    from .fragment import FragmentReader

#: Operators no NaN satisfies under IEEE nor under the total order (NaN above +inf, -NaN below
#: -inf) that engines use: float bounds, which exclude NaN, may only prune these.
_NAN_SAFE = frozenset({"eq", "between", "in"})


@functools.lru_cache(maxsize=256)
def conditions_of(text: str, schema: pa.Schema) -> tuple[Condition, ...]:
    """The prunable conjuncts of the filter ``text`` against the dataset's Arrow ``schema``
    (none when it does not compile)."""
    from ..filter.compile import compile_filter

    try:
        return compile_filter(text, schema).conditions
    except InvalidInputError:
        return ()


def prunable(filt: "CompiledFilter", schema: pa.Schema) -> bool:
    """Whether pruning is on and ``filt`` has conditions statistics can decide."""
    return settings().page_pruning and bool(filt.conditions)


# ---------------------------------------------------------------------------- bounds tests
def _values(cond: Condition, typ: pa.DataType) -> pa.Array | None:
    """The condition's values in the statistics' type ``typ`` (exactly), or None."""
    v = cond.values
    if v.type == typ:
        return v
    if pa.types.is_dictionary(typ) or pa.types.is_dictionary(v.type):
        return None
    try:
        got = v.cast(typ, safe=True)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
        return None
    return got if got.cast(v.type, safe=True).equals(v) else None


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
    statistics' type and the condition's values do not compare exactly (then every batch
    may).  Bounds and values compare in the statistics' own type.  ``nan_count`` (floats):
    NaNs per batch, when known; batches with NaN are kept for the operators NaN may satisfy in
    some engine's order."""
    typ = mins.type
    if maxs.type != typ or not (pa.types.is_integer(typ) or pa.types.is_floating(typ) or pa.types.is_decimal(typ)
                                or pa.types.is_string(typ) or pa.types.is_large_string(typ)
                                or pa.types.is_binary(typ) or pa.types.is_large_binary(typ)
                                or pa.types.is_temporal(typ)):
        return None
    values = _values(cond, typ)
    if values is None or values.null_count:
        return None
    if pa.types.is_floating(typ):
        if pc.any(pc.is_nan(values)).as_py():
            return None
        # a NaN bound (engines ordering NaN above every number put it in max) is no bound
        mins, maxs = (pc.if_else(pc.is_nan(a), pa.scalar(None, typ), a) for a in (mins, maxs))
    if pa.types.is_floating(typ) and cond.op not in _NAN_SAFE:
        if nan_count is None:
            return None
        keep = _bounds_test(cond.op, values, mins, maxs)
        return None if keep is None else keep | (np.asarray(nan_count) > 0)
    return _bounds_test(cond.op, values, mins, maxs)


def _bounds_test(op: str, values: pa.Array, mins: pa.Array, maxs: pa.Array) -> np.ndarray | None:
    """Per batch: may a value in ``[min, max]`` satisfy ``op`` with ``values`` (of the bounds'
    type)?  A null bound is unbounded."""
    if op == "in":
        return _any_inside(values, mins, maxs)
    v = [values[i] for i in range(len(values))]
    if op == "eq":
        return _le(mins, v[0]) & _ge(maxs, v[0])
    if op == "lt":
        return _lt(mins, v[0])
    if op == "le":
        return _le(mins, v[0])
    if op == "gt":
        return _gt(maxs, v[0])
    if op == "ge":
        return _ge(maxs, v[0])
    if op == "between":
        return _ge(maxs, v[0]) & _le(mins, v[1])
    return None


def _any_inside(values: pa.Array, mins: pa.Array, maxs: pa.Array) -> np.ndarray:
    """Per batch: does some value lie in ``[min, max]``?  Vectorized over batches in the bounds'
    own type: the smallest value ``>= min`` of each batch (a sorted search), tested against
    ``max``."""
    n = len(mins)
    if len(values) == 0:
        return np.zeros(n, dtype=bool)
    ordered = pc.array_take(values, pc.array_sort_indices(values))
    ordered = pc.unique(ordered)
    # position of the first value >= min: count of values < min, per batch, by binary search on
    # the sorted values (Arrow comparisons only: any type the bounds have)
    lo = np.zeros(n, dtype=np.int64)
    hi = np.full(n, len(ordered), dtype=np.int64)
    low_null = mins.is_null().to_numpy(zero_copy_only=False)
    while True:
        active = lo < hi
        if not active.any():
            break
        mid = (lo + hi) // 2
        cand = ordered.take(pa.array(np.minimum(mid, len(ordered) - 1)))
        below = pc.fill_null(pc.less(cand, mins), False).to_numpy(zero_copy_only=False) & ~low_null
        lo = np.where(active & below, mid + 1, lo)
        hi = np.where(active & ~below, mid, hi)
    found = lo < len(ordered)
    cand = ordered.take(pa.array(np.minimum(lo, len(ordered) - 1)))
    return found & pc.fill_null(pc.less_equal(cand, maxs), True).to_numpy(zero_copy_only=False)


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
                 zmaps: ZoneMaps) -> Masks:
    """Per statistics source of the fragment (a zone map covering it, a legacy data file): the
    physical row offsets of its batches and which batches may match every condition it decides."""
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
        if top is None:
            continue
        df = frag.file_for(top)
        if df is None:
            continue
        zones = zmaps.zones_of(top.id, frag.id, frag.physical_rows)
        if zones is not None:
            add(f"zonemap:{top.id}", zones.offsets,
                batches_may_match(cond, zones.mins, zones.maxs, zones.nan_count), zones.null_count)
            continue
        if ctx.manifest.data_storage_version not in ("0.1", "legacy"):
            continue
        handle = await open_data_file(ctx, df)
        legacy = getattr(handle.reader.file_metadata, "legacy", None)
        stats = getattr(legacy, "statistics", None)
        if stats is None:
            continue
        col = stats.columns.get(top.id)
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
    from ..indices.zonemap import zone_maps  # (zone maps: with the first filter that may use them)

    conds = filt.conditions
    masks = await _masks(ctx, frag, conds, await zone_maps(ctx)) if conds and hi > lo else []
    out, pages, rows = _cut(masks, lo, hi)
    if rows:
        ctx.stats.record_pruned(pages, rows)
    return out


# ------------------------------------------------------------------ the scan planner's input
@dataclass(frozen=True, slots=True)
class PrunePlan:
    """What statistics may prune in one filtered scan of one version: per fragment id, the
    batches of each statistics source that covers the fragment (zone maps only where their
    segment covers it, see :mod:`..indices.coverage`) and which may match.  Fragments without
    an entry are read whole.  The scan planner (:func:`.scan_plan.plan_units`) asks
    :meth:`kept` once per fragment."""

    masks: Mapping[int, Masks]

    def fragment_ids(self) -> np.ndarray:
        """Ids of the fragments statistics may prune (int64, sorted)."""
        return np.array(sorted(self.masks), dtype=np.int64)

    def kept(self, fragment_id: int, lo: int, hi: int) -> tuple[np.ndarray, int, int] | None:
        """``(kept sub-ranges of [lo, hi) as a (k, 2) int64 array, batches skipped, rows
        skipped)`` for fragment ``fragment_id``; None when nothing may prune it."""
        masks = self.masks.get(fragment_id) if settings().page_pruning else None
        return _cut(masks, lo, hi) if masks else None


#: Prune plans by (manifest path, caches identity, filter text).
_PREPARED: "OrderedDict[tuple[str, int, str], PrunePlan]" = OrderedDict()
_PREPARED_MAX = 32
_NOTHING = PrunePlan({})


def _key(ctx: "DatasetContext", filt: "CompiledFilter") -> tuple[str, int, str]:
    return (ctx.manifest_path, id(ctx.caches), filt.text)


async def prepare(ctx: "DatasetContext", filt: "CompiledFilter | None") -> PrunePlan | None:
    """The :class:`PrunePlan` of a filtered scan: loads what pruning ``filt`` needs (the
    version's zone maps with their coverage; legacy data files' statistics, all files opened
    concurrently).  None when the filter has no prunable condition or pruning is off."""
    if filt is None or not prunable(filt, ctx.schema):
        return None
    legacy = ctx.manifest.data_storage_version in ("0.1", "legacy")
    if not legacy and ctx.manifest.index_section is None:
        return None  # no statistics to use: plan without a pass over the fragments
    key = _key(ctx, filt)
    got = _PREPARED.get(key)
    if got is not None:
        _PREPARED.move_to_end(key)
        return got
    from ..indices.zonemap import zone_maps
    from .fragment import FragmentReader

    conds = filt.conditions
    zmaps = await zone_maps(ctx)
    by_name = {t.name: t.id for t in ctx.top_fields}
    if not legacy and not any(by_name.get(c.column) in zmaps for c in conds):
        got = _NOTHING
    else:
        frags = [FragmentReader(ctx, f) for f in ctx.manifest.fragments]
        masks = await asyncio.gather(*(_masks(ctx, f, conds, zmaps) for f in frags))
        got = PrunePlan({f.id: m for f, m in zip(frags, masks) if m})
    _PREPARED[key] = got
    while len(_PREPARED) > _PREPARED_MAX:
        _PREPARED.popitem(last=False)
    return got


__all__ = ["Condition", "PrunePlan", "batches_may_match", "conditions_of", "may_match_ranges", "prepare",
           "prunable"]
