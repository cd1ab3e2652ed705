"""``lancejit explain scan URI --filter F``: what page statistics let a filtered scan skip.

The plan lists the filter's conditions that statistics can decide (:mod:`lancejit.table.read.pruning`)
and, per fragment, the physical rows, the row ranges kept and the batches ("pages": one page per
column of a legacy batch) skipped.  With ``run`` the scan runs twice, with pruning and without,
and the dataset's ``io_stats()`` of both runs are reported (requests, bytes, ``pages_pruned``,
``rows_pruned``, seconds) with the rows each returned.

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
class ScanPlan:
    """The pruning plan of a filtered scan (see the module docstring)."""

    uri: str
    filter: str
    conditions: list[str]
    fragments: list[FragmentPrune] = field(default_factory=list)
    measured: dict[str, dict[str, Any]] | None = None

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
        }

    def render(self, max_fragments: int = 20) -> str:
        total = sum(f.physical_rows for f in self.fragments)
        lines = [f"scan {self.uri}", f"filter: {self.filter}",
                 "conditions decided by statistics: " + (", ".join(self.conditions) or "none"),
                 f"pages pruned: {self.pages_pruned}; rows pruned: {self.rows_pruned} of {total}"]
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
                             f"{m['seconds']:.4f} s")
        return "\n".join(lines)


async def plan_scan(ds: Any, filter: str, columns: Sequence[str] | None = None, run: bool = False,
                    repeats: int = 3) -> ScanPlan:
    """Plan (and with ``run``, measure: ``repeats`` scans each way, alternating) the filtered
    scan of dataset ``ds`` (a ``Dataset``)."""
    from lancejit.table.read import pruning
    from lancejit.table.filter.compile import compile_filter
    from lancejit.table.read.fragment import FragmentReader

    ctx = ds.context
    compiled = compile_filter(filter, ctx.schema)
    conds = pruning.conditions_of(compiled.text, ctx.schema)
    plan = ScanPlan(ds.uri, filter, [f"{c.column} {c.op} {list(c.values)}" for c in conds])
    for frag in ctx.manifest.fragments:
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
    """Counters of one scan with and without pruning and the median seconds of ``repeats``
    alternating runs each (the first run of each way warms caches and is not timed)."""
    from lancejit.table.read import pruning

    out: dict[str, dict[str, Any]] = {}
    times: dict[str, list[float]] = {"pruned": [], "not pruned": []}
    old = pruning.ENABLED
    try:
        for i in range(repeats + 1):
            for name, enabled in (("pruned", True), ("not pruned", False)):
                pruning.ENABLED = enabled
                ds.io_stats()
                t0 = time.perf_counter()
                rows = (await ds.to_table_async(columns=columns, filter=filter)).num_rows
                seconds = time.perf_counter() - t0
                s = ds.io_stats()
                if i:
                    times[name].append(seconds)
                out[name] = {"rows": rows, "read_iops": s.read_iops, "read_bytes": s.read_bytes,
                             "pages_pruned": s.pages_pruned, "rows_pruned": s.rows_pruned}
    finally:
        pruning.ENABLED = old
    for name, m in out.items():
        m["seconds"] = float(statistics.median(times[name])) if times[name] else 0.0
    return out


__all__ = ["FragmentPrune", "ScanPlan", "plan_scan"]
