"""The indexed part of a filtered scan's plan: which fragments the scalar indices answer and
the candidate rows taken there instead of scanning them.

:func:`plan_indexed` (given the version index, the compiled filter and the positions the scan
reads, in scan order) plans the filter's index query (:mod:`.index_query`), resolves it, and
returns :class:`IndexedRows`: the answered positions (fragments every index the query uses
covers) and the candidate rows there, sorted in scan order; ``exact`` when they are exactly the
matches.  Candidates of a complemented answer (``NOT`` of an indexed predicate) are the rows
*excluded*: a scan does not take those (the matches are most rows); a count uses them.

:meth:`IndexedRows.worth_taking`: a take of the candidates replaces the scan of the answered
fragments when they are at most the ``index_take_fraction`` knob of those fragments' live rows,
three quarters of that when the filter is evaluated again on them (beyond that, reading whole
pages and evaluating the filter with the kernels costs less than taking rows: a take's cost
grows with the rows taken, a scan's does not).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from lancejit.core.config import settings

from ..indices.scalar.domain import Unusable
from .index_query import IndexQuery, plan_index_query, resolve
from .index_scan import candidate_positions

if TYPE_CHECKING:  # pragma: no cover
    from ..filter.compile import CompiledFilter
    from ..meta.context import DatasetContext
    from .version_index import DatasetIndex

@dataclass(frozen=True, slots=True)
class IndexedRows:
    """The indices' answer for a scan (see the module docstring): ``query``; ``positions``
    answered (version-index positions, scan order); candidate rows ``upos`` / ``uoff``
    (positions and physical offsets, scan order); ``live_rows`` of the answered fragments."""

    query: IndexQuery
    positions: np.ndarray
    upos: np.ndarray
    uoff: np.ndarray
    exact: bool
    complemented: bool
    live_rows: int

    @property
    def rows(self) -> int:
        return len(self.upos)

    def worth_taking(self) -> bool:
        """Whether taking the candidates beats scanning the answered fragments."""
        fraction = settings().index_take_fraction * (1.0 if self.exact else 0.75)
        return not self.complemented and self.rows <= fraction * max(self.live_rows, 1)

    def matches(self) -> int | None:
        """The number of matching rows in the answered fragments when the answer is exact."""
        if not self.exact:
            return None
        return self.live_rows - self.rows if self.complemented else self.rows


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
    try:
        rows, complemented = await resolve(ctx, q)
    except Unusable:
        return None
    answered = positions if len(q.covered) == len(frag_ids) else positions[np.isin(frag_ids, q.covered)]
    upos, uoff = candidate_positions(index, rows)
    if len(upos) and len(answered) > 1:
        rank = np.full(len(index), -1, dtype=np.int64)
        rank[positions] = np.arange(len(positions))
        key = rank[upos]
        if bool((key[1:] < key[:-1]).any()):  # scan order differs from manifest order
            order = np.lexsort((uoff, key))
            upos, uoff = upos[order], uoff[order]
    live = int(index.live_rows[answered].sum())
    return IndexedRows(q, answered, upos, uoff, q.exact, complemented, live)


__all__ = ["IndexedRows", "plan_indexed"]
