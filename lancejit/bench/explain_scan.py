"""``lancejit explain scan URI --filter F``: what page statistics let a filtered scan skip.

The plan lists the filter's conditions that statistics could decide (:mod:`lancejit.table.read.pruning`),
which statistics the dataset has for each (a zone-map index, legacy page statistics, none) and in
how many fragments, and, per fragment, the physical rows, the batches ("pages": zones of a zone
map, or batches of a legacy data file, one page per column) its statistics hold, those skipped and
the row ranges kept.  Its words say what happened: a dataset without statistics for the
conditions reads every page, and the plan says so rather than reporting conditions as decided.
First, the scalar indices' part of the scan planner's own plan (:func:`lancejit.table.read.scan._plan`):
which index answers which predicate (:mod:`lancejit.table.read.index_query`), the fragments the
indices answer and the candidate rows read there (or, when the estimated cost of reading them
exceeds scanning, that those fragments are scanned too, with both estimates), and the index
parts read to plan it; the fragments listed below are
the scanned ones.  No data page is read to plan.
With ``run`` the scan runs twice, with pruning and scalar indices and without either, and the
dataset's ``io_stats()`` of both runs are reported (requests, bytes, ``pages_pruned``,
``rows_pruned``, ``index_searches``, ``index_parts_loaded``, seconds) with the rows each returned.

Row ranges are half-open ``[start, end)``; times in seconds; bytes are payload bytes.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass, field
from typing import Any, Sequence


@dataclass(slots=True)
class FragmentPrune:
    """One fragment: ``physical_rows``, the ``kept`` row ranges and the batches skipped."""

    fragment_id: int
    physical_rows: int
    kept: list[tuple[int, int]]
    pages_pruned: int
    rows_pruned: int
    pages: int = 0  # batches held by the fragment's statistics for the conditions (0: none)


@dataclass(slots=True)
class ConditionStats:
    """The statistics for one condition: ``source`` (``zone map``, ``page statistics`` or None)
    and the fragments holding them."""

    source: str | None
    fragments: int


@dataclass(slots=True)
class IndexPart:
    """What the scalar indices answer: ``uses`` (predicate @ index (kind)), ``exact`` (no
    row needs the filter again), the ``fragments`` they answer, ``candidates`` (rows taken
    there; for a ``NOT`` answer, rows left out), ``taken`` (False: those fragments are scanned
    anyway, reading the candidates being estimated to cost more), ``index_reads`` (index parts
    read to plan), ``costs`` (the two estimates, see :meth:`~lancejit.table.read.index_plan.IndexedRows.costs`)."""

    uses: list[str]
    exact: bool
    fragments: list[int]
    candidates: int
    complemented: bool
    taken: bool
    index_reads: int
    #: Estimated costs (in scanned values) of reading the candidates and of scanning instead.
    costs: tuple[float, float] = (0.0, 0.0)
    #: False: the indices were not searched, ``candidates`` being the least number their page
    #: lookups give (enough to scan).
    searched: bool = True

    def lines(self) -> list[str]:
        how = "exact" if self.exact else "the filter is evaluated again on the candidates"
        what = "rows left out" if self.complemented else (
            "candidate rows" if self.searched else "candidate rows at least (page lookups; pages not read)")
        est = f"est. cost {self.costs[0]:,.0f} vs {self.costs[1]:,.0f} scanning, in scanned values"
        if self.complemented:
            taken = "the fragments are scanned"
        elif self.taken:
            taken = f"read ({est})"
        else:
            taken = f"scanned: reading them costs more ({est})"
        shown = f"{self.fragments[:12]}{' ...' if len(self.fragments) > 12 else ''}"
        return [f"scalar indices: {'; '.join(self.uses)} ({how})",
                f"  answer fragments {shown}: {self.candidates} {what}, {taken}; "
                f"{self.index_reads} index parts read to plan"]


@dataclass(slots=True)
class ScanPlan:
    """The pruning plan of a filtered scan (see the module docstring)."""

    uri: str
    filter: str
    conditions: list[str]
    fragments: list[FragmentPrune] = field(default_factory=list)
    measured: dict[str, dict[str, Any]] | None = None
    statistics: list[ConditionStats] = field(default_factory=list)
    data_storage_version: str = ""
    #: The scalar indices' part (None: no index answers the filter).
    index: IndexPart | None = None

    @property
    def pages(self) -> int:
        return sum(f.pages for f in self.fragments)

    @property
    def pages_pruned(self) -> int:
        return sum(f.pages_pruned for f in self.fragments)

    @property
    def rows_pruned(self) -> int:
        return sum(f.rows_pruned for f in self.fragments)

    def to_dict(self) -> dict[str, Any]:
        return {
            "uri": self.uri, "filter": self.filter, "conditions": self.conditions,
            "statistics": [{"condition": c, "source": st.source, "fragments": st.fragments}
                           for c, st in zip(self.conditions, self.statistics)],
            "pages": self.pages, "pages_pruned": self.pages_pruned, "rows_pruned": self.rows_pruned,
            "fragments": [{"id": f.fragment_id, "physical_rows": f.physical_rows, "kept": f.kept, "pages": f.pages,
                           "pages_pruned": f.pages_pruned, "rows_pruned": f.rows_pruned} for f in self.fragments],
            "measured": self.measured,
            "index": None if self.index is None else {
                "uses": self.index.uses, "exact": self.index.exact, "fragments": self.index.fragments,
                "candidates": self.index.candidates, "complemented": self.index.complemented,
                "taken": self.index.taken, "index_reads": self.index.index_reads,
                "costs": list(self.index.costs), "searched": self.index.searched},
        }

    def _statistics_lines(self) -> list[str]:
        n = len(self.fragments)
        if not self.conditions:
            return ["conditions statistics could decide: none (they decide `column op literal`, BETWEEN and IN "
                    "terms of the filter's top-level AND)"]
        lines = ["conditions statistics could decide: " + ", ".join(self.conditions), "statistics:"]
        for cond, st in zip(self.conditions, self.statistics):
            if st.fragments:
                lines.append(f"  {cond}: {st.source} in {st.fragments} of {n} fragments")
            elif st.source == "zone map":
                lines.append(f"  {cond}: none (the column's zone map covers none of the {n} fragments)")
            elif st.source is not None:
                lines.append(f"  {cond}: none (the legacy data files hold no statistics for the column)")
            else:
                lines.append(f"  {cond}: none (no ZONEMAP index on the column, and data files of version "
                             f"{self.data_storage_version} keep no page statistics)")
        return lines

    def verdict(self) -> str:
        """One line saying what the statistics did."""
        total = sum(f.physical_rows for f in self.fragments)
        rows = f"rows pruned: {self.rows_pruned} of {total}"
        if not self.conditions:
            return f"pages pruned: none, nothing for statistics to decide: every page is read ({rows})"
        if not self.pages:
            return f"pages pruned: none, no statistics for these conditions: every page is read ({rows})"
        if not self.pages_pruned:
            return (f"pages pruned: 0 of {self.pages}: the statistics leave every page possibly matching; "
                    f"every page is read ({rows})")
        return f"pages pruned: {self.pages_pruned} of {self.pages} ({rows})"

    def render(self, max_fragments: int = 20) -> str:
        index = self.index.lines() if self.index is not None else ["scalar indices: none answers this filter"]
        lines = [f"scan {self.uri}", f"filter: {self.filter}", *index, *self._statistics_lines(), self.verdict()]
        for f in self.fragments[:max_fragments]:
            shown = ", ".join(f"[{a}, {b})" for a, b in f.kept[:6]) + (" ..." if len(f.kept) > 6 else "")
            pages = (f"{f.pages_pruned} of {f.pages} pages pruned" if f.pages else
                     "no statistics" if self.conditions else "read whole")
            lines.append(f"  fragment {f.fragment_id}: {f.physical_rows} rows, {pages}, kept {shown or 'nothing'}")
        if len(self.fragments) > max_fragments:
            lines.append(f"  ... {len(self.fragments) - max_fragments} more fragments")
        if self.measured:
            same = "" if self.pages else " (no statistics: both read every page)"
            lines.append(f"measured, io_stats of one scan each way{same}:")
            for name, m in self.measured.items():
                label = {"pruned": "with pruning", "not pruned": "without"}.get(name, name)
                lines.append(f"  {label:>12}: {m['rows']} rows, {m['read_iops']} reads, {m['read_bytes']} bytes, "
                             f"pages_pruned {m['pages_pruned']}, rows_pruned {m['rows_pruned']}, "
                             f"index_searches {m['index_searches']}, index_parts_loaded {m['index_parts_loaded']}, "
                             f"{m['seconds']:.4f} s")
        return "\n".join(lines)


async def plan_scan(ds: Any, filter: str, columns: Sequence[str] | None = None, run: bool = False,
                    repeats: int = 3) -> ScanPlan:
    """Plan (and with ``run``, measure: ``repeats`` scans each way, alternating) the filtered
    scan of dataset ``ds`` (a ``Dataset``)."""
    from lancejit.table.read import pruning
    from lancejit.table.filter.compile import compile_filter
    from lancejit.table.indices.zonemap import zone_maps
    from lancejit.table.read.fragment import FragmentReader

    ctx = ds.context
    compiled = compile_filter(filter, ctx.schema)
    conds = compiled.conditions
    plan = ScanPlan(ds.uri, filter, [condition_text(c) for c in conds])
    plan.data_storage_version = ctx.manifest.data_storage_version
    answered = await _index_part(ds, plan, columns, filter)
    zmaps = await zone_maps(ctx)
    sources = _sources(ctx, conds, zmaps)
    plan.statistics = [ConditionStats(src, 0) for _, src in sources]
    for frag in ctx.manifest.fragments:
        if frag.id in answered:
            continue
        reader = FragmentReader(ctx, frag)
        pages = await _statistics_of(ctx, reader, sources, zmaps, plan.statistics)
        before = ctx.stats.snapshot()
        kept = await pruning.may_match_ranges(ctx, reader, 0, reader.physical_rows, compiled)
        delta = ctx.stats.snapshot() - before
        plan.fragments.append(FragmentPrune(frag.id, reader.physical_rows, [(int(a), int(b)) for a, b in kept],
                                            delta.pages_pruned, delta.rows_pruned, pages))
    if run:
        plan.measured = await _measure(ds, filter, columns, repeats)
    return plan


async def _index_part(ds: Any, plan: ScanPlan, columns: Sequence[str] | None, filter: str) -> set[int]:
    """Fill ``plan.index`` from the scan planner's plan; the ids of the fragments it takes."""
    import numpy as np

    from lancejit.table.read import scan
    from lancejit.table.read.index_plan import plan_indexed

    ctx = ds.context
    spec = ds._spec(columns=columns, filter=filter)
    before = ctx.stats.snapshot()
    index, units, _ = await scan._plan(ctx, spec)
    got = units.indexed
    if got is None:  # answered, but scanned anyway (reading the candidates costs more), or nothing answered
        got = await plan_indexed(ctx, index, spec.filter, np.arange(len(index), dtype=np.int64))
    if got is None:
        return set()
    reads = (ctx.stats.snapshot() - before).index_parts_loaded
    ids = sorted(index.fragment_ids[got.positions].tolist())
    plan.index = IndexPart(got.query.describe(), got.exact, ids, got.rows, got.complemented,
                           units.indexed is not None, reads, got.costs(), got.least is None)
    return set(ids) if units.indexed is not None else set()


_OPS = {"eq": "=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}


def condition_text(cond: Any) -> str:
    """``id > 100``, ``id BETWEEN 1 AND 5``, ``s IN ('a', 'b')`` for a pruning condition."""
    values = cond.values.to_pylist() if hasattr(cond.values, "to_pylist") else list(cond.values)
    shown = [repr(v) for v in values]
    if cond.op == "between":
        return f"{cond.column} BETWEEN {shown[0]} AND {shown[1]}"
    if cond.op == "in":
        return f"{cond.column} IN ({', '.join(shown)})"
    return f"{cond.column} {_OPS.get(cond.op, cond.op)} {shown[0]}"


def _sources(ctx: Any, conds: Sequence[Any], zmaps: Any) -> list[tuple[Any, str | None]]:
    """Each condition with the kind of statistics the dataset may hold for its column: a zone map
    (an index on the column), legacy page statistics (0.1 data files) or none."""
    by_name = {t.name: t for t in ctx.top_fields}
    legacy = ctx.manifest.data_storage_version in ("0.1", "legacy")
    out: list[tuple[Any, str | None]] = []
    for cond in conds:
        top = by_name.get(cond.column)
        if top is not None and top.id in zmaps:
            out.append((cond, "zone map"))
        else:
            out.append((cond, "page statistics" if legacy and top is not None else None))
    return out


async def _statistics_of(ctx: Any, reader: Any, sources: list[tuple[Any, str | None]], zmaps: Any,
                         counts: list[ConditionStats]) -> int:
    """Batches the fragment's statistics hold for the conditions (0: none); counts the fragment
    in ``counts`` for each condition it holds statistics for."""
    from lancejit.table.read import pruning

    conds = tuple(c for c, src in sources if src is not None)
    for (cond, src), st in zip(sources, counts):
        if src is not None and await pruning._masks(ctx, reader, (cond,), zmaps):
            st.fragments += 1
    masks = await pruning._masks(ctx, reader, conds, zmaps) if conds else []
    return int(sum(len(offsets) - 1 for offsets, _ in masks))


async def _measure(ds: Any, filter: str, columns: Sequence[str] | None, repeats: int) -> dict[str, dict[str, Any]]:
    """Counters of one scan with pruning and scalar indices ("pruned") and without either ("not
    pruned") and the median seconds of ``repeats`` alternating runs each (the first run of each
    way warms caches and is not timed)."""
    from lancejit.core import config

    out: dict[str, dict[str, Any]] = {}
    times: dict[str, list[float]] = {"pruned": [], "not pruned": []}
    for i in range(repeats + 1):
        for name, enabled in (("pruned", True), ("not pruned", False)):
            with config.override(page_pruning=enabled, scalar_indices=enabled):
                ds.io_stats()
                t0 = time.perf_counter()
                rows = (await ds.to_table_async(columns=columns, filter=filter)).num_rows
                seconds = time.perf_counter() - t0
                s = ds.io_stats()
            if i:
                times[name].append(seconds)
            out[name] = {"rows": rows, "read_iops": s.read_iops, "read_bytes": s.read_bytes,
                         "pages_pruned": s.pages_pruned, "rows_pruned": s.rows_pruned,
                         "index_searches": s.index_searches, "index_parts_loaded": s.index_parts_loaded}
    for name, m in out.items():
        m["seconds"] = float(statistics.median(times[name])) if times[name] else 0.0
    return out


__all__ = ["ConditionStats", "FragmentPrune", "IndexPart", "ScanPlan", "condition_text", "plan_scan"]
