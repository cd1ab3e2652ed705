"""Scanning one fragment's physical rows ``[lo, hi)`` (half-open) of a dataset version.

Built over the read side's pieces (``Dataset`` scan specs, :class:`FragmentReader`,
:func:`lancejit.table.read.scan.read_unit`): the range is cut into scan units, a bounded number
read at once through lancejit's I/O scheduler, deletions and the SQL filter applied, and the
result cut into batches of at most ``batch_size`` rows.
"""

from __future__ import annotations

import asyncio
from collections import deque
from typing import AsyncIterator, Iterator, Sequence

import pyarrow as pa

from lancejit.core.errors import InvalidInputError, NotFoundError
from lancejit.io.sync import iter_sync
from lancejit.table import Dataset
from lancejit.table.read import scan as _scan
from lancejit.table.read.fragment import FragmentReader


async def scan_fragment_range(
    ds: Dataset,
    fragment_id: int,
    lo: int,
    hi: int,
    *,
    columns: Sequence[str] | None = None,
    filter: str | None = None,
    batch_size: int | None = None,
    readahead: int = 4,
) -> AsyncIterator[pa.RecordBatch]:
    """Batches of the live rows at physical offsets ``[lo, hi)`` of fragment ``fragment_id``
    (``columns``: projection, None = all; ``filter``: SQL predicate), in row order."""
    spec = ds._spec(columns=columns, filter=filter, batch_size=batch_size)
    ctx = ds.context
    frag = next((f for f in ctx.manifest.fragments if f.id == fragment_id), None)
    if frag is None:
        raise NotFoundError(f"dataset {ds.uri} version {ds.version} has no fragment {fragment_id}")
    if not 0 <= lo <= hi <= frag.physical_rows:
        raise InvalidInputError(
            f"row range [{lo}, {hi}) is outside fragment {fragment_id} ({frag.physical_rows} rows)")
    reader = FragmentReader(ctx, frag)
    step = _scan._rows_per_unit(reader, spec.batch_size)
    units = iter([(a, min(hi, a + step)) for a in range(lo, hi, step)])
    pending: deque[asyncio.Future] = deque()

    def fill() -> None:
        while len(pending) < max(1, readahead):
            try:
                a, b = next(units)
            except StopIteration:
                return
            pending.append(asyncio.ensure_future(_scan.read_unit(ctx, reader, spec, a, b)))

    try:
        fill()
        while pending:
            batch = await pending.popleft()
            fill()
            if batch is None or batch.num_rows == 0:
                continue
            for start in range(0, batch.num_rows, spec.batch_size):
                yield batch.slice(start, spec.batch_size)
    finally:
        for fut in pending:
            fut.cancel()
        if pending:
            await asyncio.gather(*pending, return_exceptions=True)


def iter_fragment_range(ds: Dataset, fragment_id: int, lo: int, hi: int, **kwargs) -> Iterator[pa.RecordBatch]:
    """Synchronous :func:`scan_fragment_range` (runs on lancejit's I/O loop thread)."""
    return iter_sync(scan_fragment_range(ds, fragment_id, lo, hi, **kwargs))


def output_schema(ds: Dataset, columns: Sequence[str] | None) -> pa.Schema:
    """The Arrow schema :func:`scan_fragment_range` yields for ``columns``."""
    return _scan.output_schema(ds.context, ds._spec(columns=columns))


__all__ = ["iter_fragment_range", "output_schema", "scan_fragment_range"]
