"""The scanner of a ``nearest=`` query (what ``Dataset.scanner(nearest=...)`` returns): the same
faces as a plain scan (``to_table``, ``to_batches``, ``to_reader``, async variants), answered by
:func:`nearest_table` (the search of :mod:`.merge` / :mod:`.search`, then the result rows)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, AsyncIterator, Iterator, Sequence

import numpy as np
import pyarrow as pa

from lancejit.core.errors import InvalidInputError, NotSupportedError
from lancejit.io.sync import bridged

from ..indices.vector.query import parse_nearest
from .merge import search_merged
from .search import DISTANCE, QUERY_INDEX, ROWADDR, ROWID

if TYPE_CHECKING:  # pragma: no cover
    from ..read.dataset_reader import DatasetReader

DEFAULT_BATCH_ROWS = 1024


def _projection(ds: "DatasetReader", columns: Sequence[str] | None) -> list[str]:
    if columns is None:
        return list(ds.schema.names)
    if isinstance(columns, str):
        columns = [columns]
    return list(columns)


async def nearest_table(ds: "DatasetReader", nearest: Any, *, columns: Sequence[str] | None = None, filter: Any = None,
                        prefilter: bool = False, limit: int | None = None, offset: int | None = None,
                        with_row_id: bool = False) -> pa.Table:
    """The result of ``to_table(nearest=...)`` (see the module docstring)."""
    query = parse_nearest(nearest, ds.schema)
    results = await search_merged(ds, query, filter=filter, prefilter=prefilter)
    asked = _projection(ds, columns)
    data_cols = [c for c in asked if c not in (DISTANCE, ROWID, ROWADDR)]
    # the reference's order: the asked columns, then _distance, then the _rowid with_row_id adds
    proj = asked + ([DISTANCE] if DISTANCE not in asked else []) + \
        ([ROWID] if with_row_id and ROWID not in asked else [])
    filter_cols: list[str] = []
    compiled = None
    if filter is not None and not prefilter:
        from lancejit.table.filter.compile import compile_filter

        compiled = compile_filter(filter, ds.schema)
        filter_cols = [c for c in sorted(compiled.columns) if c not in data_cols]
    all_ids = np.concatenate([r.row_ids for r in results]) if results else np.empty(0, np.uint64)
    all_d = np.concatenate([r.distances for r in results]) if results else np.empty(0, np.float32)
    qidx = np.concatenate([np.full(len(r.row_ids), j, np.int32) for j, r in enumerate(results)]) \
        if results else np.empty(0, np.int32)
    read_cols = data_cols + filter_cols
    if read_cols:
        rows = await ds.take_rows_async(all_ids, columns=read_cols)
        if rows.num_rows != len(all_ids):
            raise InvalidInputError("rows found by the vector search are no longer in the dataset")
    else:
        rows = pa.table({})
    cols: dict[str, Any] = {}
    if query.batched:
        cols[QUERY_INDEX] = pa.array(qidx, pa.int32())
    for c in proj:
        if c == DISTANCE:
            cols[c] = pa.array(all_d, pa.float32())
        elif c == ROWID:
            cols[c] = pa.array(all_ids, pa.uint64())
        elif c == ROWADDR:
            raise InvalidInputError("_rowaddr is not available with nearest")
        else:
            cols[c] = rows.column(c)
    table = pa.table(cols) if cols else pa.table({DISTANCE: pa.array(all_d, pa.float32())})
    if compiled is not None:
        from lancejit.table.filter.compile import filter_positions

        probe = table
        for c in filter_cols:
            probe = probe.append_column(c, rows.column(c))
        table = table.take(pa.array(filter_positions(compiled, probe), pa.int64()))
    start = offset or 0
    if start or limit is not None:
        table = table.slice(start, limit if limit is not None else max(0, table.num_rows - start))
    return table


class NearestScanner:
    """A configured vector search (see :func:`nearest_table` for the arguments)."""

    def __init__(self, ds: "DatasetReader", nearest: Any, *, columns: Sequence[str] | None = None, filter: Any = None,
                 prefilter: bool = False, limit: int | None = None, offset: int | None = None,
                 with_row_id: bool = False, with_row_address: bool = False, batch_size: int | None = None,
                 fragment_ids: Sequence[int] | None = None) -> None:
        if with_row_address:
            raise NotSupportedError("with_row_address is not supported with nearest")
        if fragment_ids is not None:
            raise NotSupportedError("fragment_ids is not supported with nearest")
        self._ds = ds
        self._nearest = nearest
        self._kw = dict(columns=columns, filter=filter, prefilter=bool(prefilter), limit=limit, offset=offset,
                        with_row_id=with_row_id)
        self._batch = batch_size or DEFAULT_BATCH_ROWS

    @property
    def store(self) -> Any:
        return self._ds.store

    async def to_table_async(self) -> pa.Table:
        """The search's result rows."""
        return await nearest_table(self._ds, self._nearest, **self._kw)

    to_table = bridged(to_table_async)

    async def batches_async(self) -> AsyncIterator[pa.RecordBatch]:
        for b in (await self.to_table_async()).to_batches(max_chunksize=self._batch):
            yield b

    def to_batches(self) -> Iterator[pa.RecordBatch]:
        return iter(self.to_table().to_batches(max_chunksize=self._batch))

    def to_reader(self) -> pa.RecordBatchReader:
        t = self.to_table()
        return pa.RecordBatchReader.from_batches(t.schema, t.to_batches(max_chunksize=self._batch))

    @property
    def schema(self) -> pa.Schema:
        return self.to_table().schema

    def count_rows(self) -> int:
        return self.to_table().num_rows


__all__ = ["NearestScanner", "nearest_table"]
