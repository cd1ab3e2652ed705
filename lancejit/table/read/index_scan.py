"""Reading the rows scalar indices selected: a take of the candidate rows instead of a scan.

The candidates (row addresses of covered fragments, deleted rows removed; see
:mod:`.index_query`) are grouped by fragment position; :func:`read_candidates` takes the
projected columns -- plus the filter's when the indices do not answer the whole filter exactly
-- for a run of them at once (the multi-file take path, :mod:`.take`), evaluates the filter
again where needed and assembles the output rows in (fragment position, offset) order.
:func:`count_candidates` counts the matches without reading the projected columns.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from ..meta.context import DatasetContext
from .assemble import assemble_table
from .fragment import ROWADDR, ROWID, numpy_array
from .spec import ScanSpec
from .take import _read

if TYPE_CHECKING:  # pragma: no cover
    from ..filter.compile import CompiledFilter
    from .version_index import DatasetIndex


def candidate_positions(index: "DatasetIndex", rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(positions, offsets)`` of sorted row addresses ``rows`` (of fragments of the version),
    sorted by (fragment position, offset): the scan's order."""
    if not len(rows):
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    high = (rows >> np.uint64(32)).astype(np.int64)
    low = (rows & np.uint64(0xFFFFFFFF)).astype(np.int64)
    if high[0] == high[-1]:
        pos, _ = index.positions_of(high[:1])
        return np.full(len(rows), int(pos[0]), dtype=np.int64), low
    frag_ids, inverse = np.unique(high, return_inverse=True)
    pos, _ = index.positions_of(frag_ids)
    upos = pos[inverse.reshape(-1)].astype(np.int64)
    if len(frag_ids) > 1 and not bool((np.diff(pos) > 0).all()):  # manifest order differs from id order
        order = np.lexsort((low, upos))
        return upos[order], low[order]
    return upos, low


def _filter_table(batch: pa.RecordBatch | pa.Table, compiled: "CompiledFilter") -> pa.Table:
    names = [n for n in batch.schema.names if n in compiled.columns]
    table = batch if isinstance(batch, pa.Table) else pa.Table.from_batches([batch])
    return table.select(names)


async def read_candidates(ctx: DatasetContext, spec: ScanSpec, index: "DatasetIndex", upos: np.ndarray,
                          uoff: np.ndarray, recheck: bool) -> pa.Table | None:
    """The output rows of the candidates at (positions ``upos``, offsets ``uoff``; sorted,
    unique) that match ``spec.filter`` (evaluated on them when ``recheck``), as one table; None
    when none matches."""
    from ..filter.compile import filter_positions

    if not len(upos):
        return None
    compiled = spec.filter
    tops = list(spec.tops)
    if recheck and compiled is not None:
        have = {t.name for t in tops}
        tops += [t for t in ctx.top_fields if t.name in compiled.columns and t.name not in have]
    read_spec = ScanSpec(tops=tuple(tops), with_row_id=spec.with_row_id, with_row_address=spec.with_row_address)
    batch = await _read(ctx, read_spec, index, upos, uoff)
    n = len(upos)
    if recheck and compiled is not None:
        keep = filter_positions(compiled, _filter_table(batch, compiled), n)
        if not len(keep):
            return None
        if len(keep) < n:
            batch = batch.take(numpy_array(keep, pa.int64()))
            n = len(keep)
    by_top = {t.name: batch.column(t.name) for t in spec.tops}
    meta = {name: batch.column(name) for name in (ROWID, ROWADDR) if name in batch.schema.names}
    return assemble_table(ctx, spec, by_top, meta, n)


async def count_candidates(ctx: DatasetContext, compiled: "CompiledFilter", index: "DatasetIndex",
                           upos: np.ndarray, uoff: np.ndarray) -> int:
    """How many candidates match ``compiled`` (their filter columns read and evaluated)."""
    from ..filter.compile import filter_positions

    if not len(upos):
        return 0
    tops = tuple(t for t in ctx.top_fields if t.name in compiled.columns)
    batch = await _read(ctx, ScanSpec(tops=tops), index, upos, uoff)
    return len(filter_positions(compiled, _filter_table(batch, compiled), len(upos)))


__all__ = ["candidate_positions", "count_candidates", "read_candidates"]
