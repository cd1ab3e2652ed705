"""Opening a fragment's data file through the dataset's store and reading dataset fields from it.

A data file is opened once per dataset object (cached by path): one tail read of 64 KiB,
rarely one more.  Dataset top-level fields are matched to the file's top-level fields by Lance
field id (names may differ after a rename); arrays come back under the dataset's names.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

import numpy as np
import pyarrow as pa

from lancejit.core.config import FOOTER_PREFETCH_BYTES
from lancejit.core.errors import CorruptFileError, NotFoundError

from .fields import TopField
from .manifest import DataFile

if TYPE_CHECKING:  # pragma: no cover
    from .context import DatasetContext


class DataFileHandle:
    """An opened data file: reads dataset fields by Lance field id."""

    def __init__(self, reader: Any, data_file: DataFile, path: str) -> None:
        self.reader = reader
        self.data_file = data_file
        self.path = path
        self._name_of_id: dict[int, str] = {}
        schema = reader.file_metadata.schema
        for f in getattr(schema, "fields", ()):
            self._name_of_id[f.id] = f.name
        self._names = set(reader.schema.names)

    @property
    def num_rows(self) -> int:
        return self.reader.num_rows

    def _file_name(self, top: TopField) -> str:
        name = self._name_of_id.get(top.id)
        if name is None:
            if top.name in self._names:
                return top.name
            raise CorruptFileError(
                f"data file has no field with id {top.id} ({top.name!r})", path=self.path
            )
        return name

    async def read_range(self, tops: Sequence[TopField], start: int, end: int) -> list[pa.Array]:
        names = [self._file_name(t) for t in tops]
        table = await self.reader.read_range(start, end - start, list(dict.fromkeys(names)))
        return [_one(table.column(n)) for n in names]

    async def take(self, tops: Sequence[TopField], offsets: np.ndarray) -> list[pa.Array]:
        names = [self._file_name(t) for t in tops]
        table = await self.reader.take_rows(offsets, list(dict.fromkeys(names)))
        return [_one(table.column(n)) for n in names]


def _one(col: pa.ChunkedArray) -> pa.Array:
    if col.num_chunks == 1:
        return col.chunk(0)
    return col.combine_chunks() if col.num_chunks else pa.array([], col.type)


async def open_data_file(ctx: "DatasetContext", data_file: DataFile) -> DataFileHandle:
    """The cached handle of ``data_file`` (opened with one tail read on first use)."""
    store, path = ctx.data_file_location(data_file)

    async def load() -> DataFileHandle:
        from dataclasses import replace

        from lancejit.file.cache import default_cache, file_key
        from lancejit.file.container import parse_file_metadata
        from lancejit.file.reader import AsyncLanceFileReader

        with ctx.errors(path, store):
            scheduler = ctx.reader(store, path, data_file.file_size_bytes)
            try:
                file_size, tail = await scheduler.read_tail(FOOTER_PREFETCH_BYTES)
            except NotFoundError:
                raise NotFoundError("data file is missing") from None
            if data_file.file_size_bytes and data_file.file_size_bytes != file_size:
                raise CorruptFileError(
                    f"data file has {file_size} bytes but the manifest records {data_file.file_size_bytes}",
                    path=store.uri(path),
                )
            cache = default_cache()
            uri = store.uri(path)
            key = file_key(uri, file_size, tail)
            metadata = cache.get_metadata(key)
            if metadata is None:
                metadata = await parse_file_metadata(scheduler, file_size, tail)
                metadata = replace(metadata, cache=cache.file(key))
                cache.put_metadata(key, metadata)
            reader = AsyncLanceFileReader(uri, store, path, scheduler, metadata)
            return DataFileHandle(reader, data_file, uri)

    return await ctx.caches.files.get(store.uri(path), load)
