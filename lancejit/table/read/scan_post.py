"""What a scan does to its batches after reading them: the parts of the reference's scanner
arguments the read pipeline does not push down.

* a filter over ``_rowid`` / ``_rowaddr`` (the row-id columns are read with the rows and the
  filter evaluated on them, then offset and limit applied to the matching rows);
* computed output columns (``columns={"name": "SQL expression"}``);
* ``order_by`` (the whole result sorted: the scan is materialized first);
* ``strict_batch_size`` (batches re-cut to exactly ``batch_size`` rows, the last one shorter).

:func:`apply` wraps a scan's async batch stream; a :class:`ScanPost` with nothing to do is None.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, AsyncGenerator, AsyncIterator, Sequence

import pyarrow as pa

from lancejit.core.errors import InvalidInputError

if TYPE_CHECKING:  # pragma: no cover
    from ..filter.compile import CompiledFilter


@dataclass(frozen=True, slots=True)
class Ordering:
    """One sort key: ``column_name``, ascending or not, NULLs first or last (the reference's
    ``ColumnOrdering``)."""

    column_name: str
    ascending: bool = True
    nulls_first: bool = False


@dataclass(frozen=True, slots=True)
class ScanPost:
    """Work on the read batches: ``filter`` (evaluated on them), then ``offset``/``limit`` (rows
    of the filtered stream), then ``outputs`` (name -> Arrow expression over the read columns,
    or None to keep the read columns named ``keep``), ``order_by``, ``strict_batch_size``."""

    schema: pa.Schema
    filter: "CompiledFilter | None" = None
    offset: int = 0
    limit: int | None = None
    outputs: tuple[tuple[str, Any], ...] | None = None
    keep: tuple[str, ...] | None = None
    order_by: tuple[Ordering, ...] = ()
    strict_batch_size: int | None = None


def _project(batch: pa.RecordBatch, post: ScanPost) -> pa.RecordBatch:
    if post.outputs is not None:
        from ..filter.evaluate import project

        table = pa.Table.from_batches([batch])
        arrays = project(table, [e for _, e in post.outputs]) if batch.num_rows or post.outputs else []
        cols = []
        for field, arr in zip(post.schema, arrays):
            arr = arr.combine_chunks() if isinstance(arr, pa.ChunkedArray) else arr
            if len(arr) != batch.num_rows:  # a constant expression
                arr = pa.repeat(arr[0], batch.num_rows) if len(arr) else pa.nulls(batch.num_rows, field.type)
            cols.append(arr.cast(field.type) if arr.type != field.type else arr)
        return pa.RecordBatch.from_arrays(cols, schema=post.schema)
    if post.keep is not None:
        if not post.keep:  # no column, the row count kept
            return pa.RecordBatch.from_struct_array(pa.nulls(batch.num_rows, pa.struct([])))
        return pa.RecordBatch.from_arrays([batch.column(n) for n in post.keep], schema=post.schema)
    return batch


async def _filtered(batches: AsyncIterator[pa.RecordBatch], post: ScanPost) -> AsyncIterator[pa.RecordBatch]:
    from ..filter.compile import filter_positions

    skip = post.offset
    remaining = post.limit
    if remaining is not None and remaining <= 0:
        return
    async for b in batches:
        if post.filter is not None:
            pos = filter_positions(post.filter, pa.Table.from_batches([b]), b.num_rows)
            b = b.take(pa.array(pos, pa.int64())) if len(pos) != b.num_rows else b
        if skip:
            cut = min(skip, b.num_rows)
            b, skip = b.slice(cut), skip - cut
        if remaining is not None:
            b = b.slice(0, remaining)
            remaining -= b.num_rows
        if b.num_rows:
            yield _project(b, post)
        if remaining is not None and remaining <= 0:
            return


def _sort(table: pa.Table, order_by: Sequence[Ordering]) -> pa.Table:
    import pyarrow.compute as pc

    for o in order_by:
        if o.column_name not in table.column_names:
            raise InvalidInputError(f"order_by column {o.column_name!r} is not in the scan's output")
    # stable multi-key sort: least significant key first
    idx = pa.array(range(table.num_rows), pa.int64())
    for o in reversed(order_by):
        col = table.column(o.column_name).take(idx)
        order = pc.array_sort_indices(col, order="ascending" if o.ascending else "descending",
                                      null_placement="at_start" if o.nulls_first else "at_end")
        idx = idx.take(order)
    return table.take(idx)


async def _rebatch(batches: AsyncIterator[pa.RecordBatch], size: int) -> AsyncIterator[pa.RecordBatch]:
    """``batches`` re-cut into batches of exactly ``size`` rows (the last one shorter)."""
    held: list[pa.RecordBatch] = []
    rows = 0
    async for b in batches:
        held.append(b)
        rows += b.num_rows
        if rows >= size:
            table = pa.Table.from_batches(held).combine_chunks()
            cut = rows - rows % size
            for start in range(0, cut, size):
                yield table.slice(start, size).to_batches()[0]
            held = table.slice(cut).to_batches() if cut < rows else []
            rows -= cut
    if rows:
        yield pa.Table.from_batches(held).combine_chunks().to_batches()[0]


async def _iterate(batches: list[pa.RecordBatch]) -> AsyncIterator[pa.RecordBatch]:
    for b in batches:
        yield b


async def apply(batches: AsyncIterator[pa.RecordBatch], post: ScanPost) -> AsyncGenerator[pa.RecordBatch, None]:
    """``batches`` after the work ``post`` describes."""
    out = _filtered(batches, post)
    if post.order_by:
        collected = [b async for b in out]
        table = _sort(pa.Table.from_batches(collected, schema=post.schema), post.order_by)
        out = _iterate(table.to_batches())
    if post.strict_batch_size is not None:
        out = _rebatch(out, post.strict_batch_size)
    async for b in out:
        yield b


__all__ = ["Ordering", "ScanPost", "apply"]
