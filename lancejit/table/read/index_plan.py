"""The indexed part of a filtered scan's plan: which fragments the scalar indices answer and
the candidate rows taken there instead of scanning them.

:func:`plan_indexed` (given the version index, the compiled filter and the positions the scan
reads, in scan order) plans the filter's index query (:mod:`.index_query`), resolves it, and
returns :class:`IndexedRows`: the answered positions (fragments every index the query uses
covers) and the candidate rows there, sorted in scan order; ``exact`` when they are exactly the
matches.  Candidates of a complemented answer (``NOT`` of an indexed predicate) are the rows
*excluded*: a scan does not take those (the matches are most rows); a count uses them.

:meth:`IndexedRows.costs` / :meth:`IndexedRows.worth_taking`: reading the candidates (the rows
the indices selected, by run plans or ranges of the projected columns: a masked scan) replaces
the scan of the answered fragments when its estimated cost is lower.  Both ways read the output
columns at the matching rows; what differs is the rest: the candidates' handling (positions,
units) and, when the indices do not answer the filter exactly, the filter evaluated again on
them, against the filter's columns read and evaluated on every live row of those fragments.
Costs are in values of a numeric column scanned and compared: a scanned row costs the sum of
its filter columns' weights (:func:`scan_weight`: a text or nested value counts
:data:`TEXT_WEIGHT`), a candidate the ``index_candidate_cost`` knob (:data:`RECHECK` times as
much when the filter is evaluated again).  A complemented answer is scanned.  Before searching,
the BTREE page lookups may already show that a range selects so many rows that scanning costs
less (:func:`.index_query.least_candidates`): the pages are then not read at all.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from lancejit.core.config import settings

from ..indices.scalar.domain import Unusable
from .index_query import IndexQuery, fixed_columns, least_candidates, plan_index_query, resolve
from .index_scan import candidate_positions

if TYPE_CHECKING:  # pragma: no cover
    from ..filter.compile import CompiledFilter
    from ..meta.context import DatasetContext
    from .version_index import DatasetIndex

#: A candidate the filter is evaluated again on costs this many times one it is not: its filter
#: columns are read at it and evaluated before the output columns.
RECHECK = 3.0
#: A text, binary or nested value costs this many numeric ones to scan and compare.
TEXT_WEIGHT = 2.0
_NONE = np.zeros(0, dtype=np.int64)
_NONE.setflags(write=False)


@dataclass(frozen=True, slots=True)
class IndexedRows:
    """The indices' answer for a scan (see the module docstring): ``query``; ``positions``
    answered (version-index positions, scan order); candidate rows ``upos`` / ``uoff``
    (positions and physical offsets, scan order); ``live_rows`` of the answered fragments;
    ``fixed``: columns whose value in the selected rows the filter gives (not read)."""

    query: IndexQuery
    positions: np.ndarray
    upos: np.ndarray
    uoff: np.ndarray
    exact: bool
    complemented: bool
    live_rows: int
    #: Columns with one value in every selected row (:func:`.index_query.fixed_columns`).
    fixed: dict = field(default_factory=dict)
    #: When the indices were not searched: the least number of candidates their page lookups
    #: give (enough to know that scanning costs less; ``upos`` / ``uoff`` are then empty).
    least: int | None = None
    #: The cost of scanning one row: its filter columns read and compared (:func:`scan_weight`).
    scan_weight: float = 1.0

    @property
    def rows(self) -> int:
        return len(self.upos) if self.least is None else self.least

    def costs(self) -> tuple[float, float]:
        """``(read the candidates, scan the answered fragments)``: estimated costs in scanned
        values (see the module docstring)."""
        per = settings().index_candidate_cost * (1.0 if self.exact else RECHECK)
        return self.rows * per, self.live_rows * self.scan_weight

    def worth_taking(self) -> bool:
        """Whether reading the candidates beats scanning the answered fragments."""
        if self.complemented or self.least is not None:
            return False
        candidates, scan = self.costs()
        return candidates <= scan

    def matches(self) -> int | None:
        """The number of matching rows in the answered fragments when the answer is exact."""
        if not self.exact or self.least is not None:
            return None
        return self.live_rows - self.rows if self.complemented else self.rows


def scan_weight(schema: pa.Schema, columns: "frozenset[str] | set[str]") -> float:
    """The cost of scanning one row for the filter columns ``columns`` (top-level names), in
    numeric values: 1 per numeric, boolean or temporal column, :data:`TEXT_WEIGHT` per other."""
    total = 0.0
    for name in columns:
        if name not in schema.names:
            continue
        t = schema.field(name).type
        if pa.types.is_dictionary(t):
            t = t.value_type
        simple = pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_boolean(t) or \
            pa.types.is_temporal(t) or pa.types.is_decimal(t)
        total += 1.0 if simple else TEXT_WEIGHT
    return max(total, 1.0)


async def plan_indexed(ctx: "DatasetContext", index: "DatasetIndex", compiled: "CompiledFilter | None",
                       positions: np.ndarray) -> IndexedRows | None:
    """What the scalar indices answer of ``compiled`` on the fragments at ``positions`` (scan
    order), or None when they answer nothing there."""
    if compiled is None or ctx.manifest.index_section is None or not len(positions):
        return None
    frag_ids = index.fragment_ids[positions]
    q = await plan_index_query(ctx, compiled, np.unique(frag_ids))
    if q is None:
        return None
    answered = positions if len(q.covered) == len(frag_ids) else positions[np.isin(frag_ids, q.covered)]
    live = int(index.live_rows[answered].sum())
    weight = scan_weight(ctx.schema, compiled.columns)
    least = least_candidates(q)
    if least:  # the page lookups alone may show that scanning costs less: nothing searched then
        deleted = int((index.physical_rows[answered] - index.live_rows[answered]).sum())
        unsearched = IndexedRows(q, answered, _NONE, _NONE, q.exact, False, live, least=max(0, least - deleted),
                                 scan_weight=weight)
        if unsearched.costs()[0] > unsearched.costs()[1]:
            return unsearched
    try:
        rows, complemented = await resolve(ctx, q)
    except Unusable:
        return None
    rank = None
    if len(answered) > 1 and bool((np.diff(positions) < 0).any()):  # scan order differs from manifest order
        rank = np.full(len(index), -1, dtype=np.int64)
        rank[positions] = np.arange(len(positions))
    upos, uoff = candidate_positions(index, rows, rank)
    fixed = {} if complemented else fixed_columns(q, ctx.schema)
    return IndexedRows(q, answered, upos, uoff, q.exact, complemented, live, fixed, scan_weight=weight)


__all__ = ["IndexedRows", "RECHECK", "TEXT_WEIGHT", "plan_indexed", "scan_weight"]
