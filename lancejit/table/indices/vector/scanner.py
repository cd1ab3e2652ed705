"""The scanner of a ``nearest=`` query (what ``Dataset.scanner(nearest=...)`` returns): the same
faces as a plain scan (``to_table``, ``to_batches``, ``to_reader``, async variants), answered by
:func:`.search.nearest_table`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, AsyncIterator, Iterator, Sequence

import pyarrow as pa

from lancejit.core.errors import NotSupportedError
from lancejit.io.sync import run_sync

from .search import nearest_table

if TYPE_CHECKING:  # pragma: no cover
    from lancejit.table.dataset import Dataset

DEFAULT_BATCH_ROWS = 1024


class NearestScanner:
    """A configured vector search (see :func:`.search.nearest_table` for the arguments)."""

    def __init__(self, ds: "Dataset", nearest: Any, *, columns: Sequence[str] | None = None, filter: Any = None,
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

    async def to_table_async(self) -> pa.Table:
        return await nearest_table(self._ds, self._nearest, **self._kw)

    def to_table(self) -> pa.Table:
        return run_sync(self.to_table_async(), store=self._ds.store)

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


__all__ = ["NearestScanner"]
