"""``lancejit explain scan URI --filter F``: how a filtered scan reads, without reading any row.

The plan is the scan planner's own (:func:`lancejit.table.read.scan._plan`): which scalar index
answers which predicate of the filter (:mod:`lancejit.table.read.index_query`), the fragments the
indices answer with the number of candidate rows taken there (or why they are scanned), the
filter's conditions that statistics can decide (:mod:`lancejit.table.read.pruning`) and, per
scanned fragment, the physical rows, the row ranges kept and the batches ("pages": one page per
column of a legacy batch, or zones of a zone map) skipped.  Planning reads the indices' lookups
and the parts the predicates need (counted in ``index_reads``), never a data page.  With ``run``
the scan runs with indices and pruning, and without either, and the dataset's ``io_stats()``
of both runs are reported (requests, bytes, ``pages_pruned``, ``rows_pruned``,
``index_searches``, ``index_parts_loaded``, seconds) with the rows each returned.

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


@dataclass(slots=True)
class IndexPart:
    """What the scalar indices answer: ``uses`` (predicate @ index (kind)), ``exact`` (no
    row needs the filter again), the ``fragments`` they answer, ``candidates`` (rows taken
    there; for a ``NOT`` answer, rows left out), ``taken`` (False: those fragments are scanned
    anyway, the candidates being too many), ``index_reads`` (index parts read to plan)."""

    uses: list[str]
    exact: bool
    fragments: list[int]
    candidates: int
    complemented: bool
    taken: bool
    index_reads: int


@dataclass(slots=True)
class ScanPlan:
    """The plan of a filtered scan (see the module docstring)."""

    uri: str
    filter: str
    conditions: list[str]
    fragments: list[FragmentPrune] = field(default_factory=list)
    measured: dict[str, dict[str, Any]] | None = None
    index: IndexPart | None = None

    @property
    def pages_pruned(self) -> int:
        return sum(f.pages_pruned for f in self.fragments)

    @property
    def rows_pruned(self) -> int:
        return sum(f.rows_pruned for f in self.fragments)

    def to_dict(self) -> dict[str, Any]:
        return {
            "uri": self.uri, "filter": self.filter, "conditions": self.conditions,
            "pages_pruned": self.pages_pruned, "rows_pruned": self.rows_pruned,
            "fragments": [{"id": f.fragment_id, "physical_rows": f.physical_rows, "kept": f.kept,
                           "pages_pruned": f.pages_pruned, "rows_pruned": f.rows_pruned} for f in self.fragments],
            "measured": self.measured,
            "index": None if self.index is None else {
                "uses": self.index.uses, "exact": self.index.exact, "fragments": self.index.fragments,
                "candidates": self.index.candidates, "complemented": self.index.complemented,
                "taken": self.index.taken, "index_reads": self.index.index_reads},
        }

    def render(self, max_fragments: int = 20) -> str:
        total = sum(f.physical_rows for f in self.fragments)
        lines = [f"scan {self.uri}", f"filter: {self.filter}"]
        ix = self.index
        if ix is None:
            lines.append("scalar indices: none answers this filter")
        else:
            lines.append("scalar indices: " + "; ".join(ix.uses) + (" (exact)" if ix.exact else
                                                                     " (the filter is evaluated again on the candidates)"))
            what = "rows left out" if ix.complemented else "candidate rows"
            how = "taken" if ix.taken else "too many: those fragments are scanned"
            lines.append(f"  answer fragments {ix.fragments[:12]}{' ...' if len(ix.fragments) > 12 else ''}: "
                         f"{ix.candidates} {what}, {how}; {ix.index_reads} index parts read to plan")
        lines += ["conditions decided by statistics: " + (", ".join(self.conditions) or "none"),
                 f"pages pruned: {self.pages_pruned}; rows pruned: {self.rows_pruned} of {total}"]
        if self.index is not None and self.index.taken:
            lines.append(f"scanned fragments: {len(self.fragments)}")
        for f in self.fragments[:max_fragments]:
            shown = ", ".join(f"[{a}, {b})" for a, b in f.kept[:6]) + (" ..." if len(f.kept) > 6 else "")
            lines.append(f"  fragment {f.fragment_id}: {f.physical_rows} rows, {f.pages_pruned} pages pruned, "
                         f"kept {shown or 'nothing'}")
        if len(self.fragments) > max_fragments:
            lines.append(f"  ... {len(self.fragments) - max_fragments} more fragments")
        if self.measured:
            lines.append("measured (io_stats of one scan):")
            for name, m in self.measured.items():
                lines.append(f"  {name:>13}: {m['rows']} rows, {m['read_iops']} reads, {m['read_bytes']} bytes, "
                             f"pages_pruned {m['pages_pruned']}, rows_pruned {m['rows_pruned']}, "
                             f"index_searches {m['index_searches']}, index_parts_loaded {m['index_parts_loaded']}, "
                             f"{m['seconds']:.4f} s")
        return "\n".join(lines)


async def plan_scan(ds: Any, filter: str, columns: Sequence[str] | None = None, run: bool = False,
                    repeats: int = 3) -> ScanPlan:
    """Plan (and with ``run``, measure: ``repeats`` scans each way, alternating) the filtered
    scan of dataset ``ds`` (a ``Dataset``)."""
    import numpy as np

    from lancejit.table.read import pruning, scan
    from lancejit.table.read.fragment import FragmentReader

    ctx = ds.context
    spec = ds._spec(columns=columns, filter=filter)
    compiled = spec.filter
    conds = pruning.conditions_of(compiled.text, ctx.schema)
    plan = ScanPlan(ds.uri, filter, [f"{c.column} {c.op} {list(c.values)}" for c in conds])
    before = ctx.stats.snapshot()
    index, units, _ = await scan._plan(ctx, spec)
    got = units.indexed
    if got is None:
        from lancejit.table.read.index_plan import plan_indexed  # (answered, but scanned: too many)

        got = await plan_indexed(ctx, index, compiled, np.arange(len(index), dtype=np.int64))
    reads = (ctx.stats.snapshot() - before).index_parts_loaded
    answered: set[int] = set()
    if got is not None:
        answered = set(index.fragment_ids[got.positions].tolist()) if units.indexed is not None else set()
        plan.index = IndexPart(got.query.describe(), got.exact, sorted(index.fragment_ids[got.positions].tolist()),
                               got.rows, got.complemented, units.indexed is not None, reads)
    for frag in ctx.manifest.fragments:
        if frag.id in answered:
            continue
        reader = FragmentReader(ctx, frag)
        before = ctx.stats.snapshot()
        kept = await pruning.may_match_ranges(ctx, reader, 0, reader.physical_rows, compiled)
        delta = ctx.stats.snapshot() - before
        plan.fragments.append(FragmentPrune(frag.id, reader.physical_rows, [(int(a), int(b)) for a, b in kept],
                                            delta.pages_pruned, delta.rows_pruned))
    if run:
        plan.measured = await _measure(ds, filter, columns, repeats)
    return plan


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


__all__ = ["FragmentPrune", "IndexPart", "ScanPlan", "plan_scan"]
