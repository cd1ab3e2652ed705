"""The data a write is given, as an async stream of record batches (the reference's "reader-like"
inputs, and lancejit's own datasets and scans).

Accepted: a ``pyarrow.Table`` / ``RecordBatch`` / ``RecordBatchReader``; a pandas or polars
``DataFrame`` (pandas through ``pyarrow.Table.from_pandas``: the index is stored unless it is a
plain ``RangeIndex``, and the pandas metadata travels in the schema, as the reference does); a
dict of columns; a list of dicts (rows); a lancejit dataset or scanner (scanned
asynchronously: no synchronous call is made from lancejit's event loop); a ``pyarrow.dataset``
dataset or scanner; any object with ``__arrow_c_stream__``; an iterable of record batches,
tables or data frames.  With a ``schema``, batches are cast to it (``int32`` -> ``int64`` ...).

Iterables that are not in memory (readers, generators) may themselves call synchronous lancejit
APIs; when the write runs on lancejit's event-loop thread they are advanced from a worker
thread, never on the loop.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any, AsyncIterator, Iterable, Iterator, Mapping

import pyarrow as pa

from lancejit.core.errors import InvalidInputError, InvalidTypeError, SchemaMismatchError


def is_pandas(data: Any) -> bool:
    """True when ``data`` is a pandas DataFrame (checked without importing pandas)."""
    return type(data).__module__.startswith("pandas") and type(data).__name__ == "DataFrame"


def is_polars(data: Any) -> bool:
    return type(data).__module__.startswith("polars") and type(data).__name__ == "DataFrame"


def from_pandas(df: Any, schema: pa.Schema | None = None) -> pa.Table:
    """``df`` as Arrow, the reference's way (index kept unless a plain RangeIndex; pandas metadata
    in the schema so that ``to_pandas()`` restores index and dtypes)."""
    try:
        return pa.Table.from_pandas(df, schema=schema)
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, KeyError) as exc:
        raise InvalidInputError(f"cannot convert the DataFrame to Arrow: {exc}") from None


@dataclass
class Source:
    """A write's input: ``schema`` (None until the first batch when unknown), the batches
    (``memory``: a plain iterator over data already in memory; else ``stream``: an iterator that
    may block or call lancejit, or ``aiter``: an async iterator)."""

    schema: pa.Schema | None
    memory: Iterator[pa.RecordBatch] | None = None
    stream: Iterator[Any] | None = None
    aiter: AsyncIterator[pa.RecordBatch] | None = None
    cast_to: pa.Schema | None = None

    async def batches(self) -> AsyncIterator[pa.RecordBatch]:
        """The batches, cast to ``cast_to`` when given."""
        async for b in self._raw():
            yield _cast(b, self.cast_to) if self.cast_to is not None else b

    async def _raw(self) -> AsyncIterator[pa.RecordBatch]:
        if self.memory is not None:
            for b in self.memory:
                yield b
        elif self.aiter is not None:
            async for b in self.aiter:
                yield b
        elif self.stream is not None:
            from lancejit.io.sync import in_loop_thread

            off_loop = in_loop_thread()
            it = self.stream
            while True:
                item = await asyncio.to_thread(next, it, _END) if off_loop else next(it, _END)
                if item is _END:
                    return
                for b in _as_batches(item, self.cast_to or self.schema):
                    yield b


_END = object()


def _cast(batch: pa.RecordBatch, schema: pa.Schema) -> pa.RecordBatch:
    if batch.schema.equals(schema):
        return batch
    names = batch.schema.names
    try:
        if names == schema.names:
            return batch.cast(schema)
        cols = [batch.column(names.index(f.name)).cast(f.type) if f.name in names else pa.nulls(batch.num_rows, f.type)
                for f in schema]
        missing = [f.name for f in schema if f.name not in names and not f.nullable]
        if missing:
            raise SchemaMismatchError(f"the data has no values for non-nullable columns {missing}")
        return pa.RecordBatch.from_arrays(cols, schema=schema)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
        raise SchemaMismatchError(f"the data does not cast to the schema: {exc}") from None


def _as_batches(item: Any, schema: pa.Schema | None) -> Iterable[pa.RecordBatch]:
    if isinstance(item, pa.RecordBatch):
        return (item,)
    if isinstance(item, pa.Table):
        return item.to_batches()
    if is_pandas(item):
        return from_pandas(item, schema).to_batches()
    if isinstance(item, Mapping):
        return (pa.RecordBatch.from_pydict(dict(item), schema=schema),)
    raise InvalidInputError(f"expected record batches, got {type(item).__name__}")


def _lancejit_scan(data: Any) -> Any:
    """The async batch stream of a lancejit dataset or scanner, else None."""
    from ..read.dataset_reader import DatasetReader, Scanner

    if isinstance(data, DatasetReader):
        data = data.scanner()
    if isinstance(data, Scanner):
        return data
    return None


def coerce(data: Any, schema: pa.Schema | None = None) -> Source:
    """``data`` (see the module docstring) as a :class:`Source`; ``schema`` casts it."""
    if schema is not None and not isinstance(schema, pa.Schema):
        raise InvalidInputError(f"schema must be a pyarrow.Schema, got {type(schema).__name__}")
    if is_pandas(data):
        data = from_pandas(data, schema)
    elif is_polars(data):
        data = data.to_arrow()
    elif isinstance(data, Mapping):
        try:
            data = pa.Table.from_pydict(dict(data), schema=schema)
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError) as exc:
            raise InvalidInputError(f"cannot convert the dict of columns to Arrow: {exc}") from None
    elif isinstance(data, list) and data and isinstance(data[0], Mapping):
        try:
            data = pa.Table.from_pylist(data, schema=schema)
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError) as exc:
            raise InvalidInputError(f"cannot convert the list of rows to Arrow: {exc}") from None
    if isinstance(data, pa.Table):
        return Source(data.schema, memory=iter(data.to_batches()), cast_to=_target(data.schema, schema))
    if isinstance(data, pa.RecordBatch):
        return Source(data.schema, memory=iter([data]), cast_to=_target(data.schema, schema))
    scan = _lancejit_scan(data)
    if scan is not None:
        return Source(scan.schema, aiter=scan.batches_async(), cast_to=_target(scan.schema, schema))
    if isinstance(data, pa.RecordBatchReader):
        return Source(data.schema, stream=iter(data), cast_to=_target(data.schema, schema))
    reader = _pyarrow_dataset_reader(data)
    if reader is None and hasattr(data, "__arrow_c_stream__"):
        reader = pa.RecordBatchReader.from_stream(data)
    if reader is not None:
        return Source(reader.schema, stream=iter(reader), cast_to=_target(reader.schema, schema))
    if isinstance(data, (str, bytes)) or not isinstance(data, Iterable):
        raise InvalidTypeError(
            f"cannot write {type(data).__name__}: expected a pyarrow Table, RecordBatch, RecordBatchReader, "
            "a pandas or polars DataFrame, a dict of columns, a list of rows, a dataset or scanner, or an "
            "iterable of record batches")
    return Source(schema, stream=iter(data), cast_to=schema)


def _target(have: pa.Schema, want: pa.Schema | None) -> pa.Schema | None:
    return None if want is None or have.equals(want) else want


def _pyarrow_dataset_reader(data: Any) -> pa.RecordBatchReader | None:
    """A reader over a ``pyarrow.dataset`` Dataset or Scanner (None for anything else; the module
    is only consulted when the caller already imported it)."""
    import sys

    pds = sys.modules.get("pyarrow.dataset")
    if pds is None:
        return None
    if isinstance(data, pds.Scanner):
        return data.to_reader()
    if isinstance(data, pds.Dataset):
        return data.scanner().to_reader()
    return None


async def source_table(data: Any, schema: pa.Schema | None = None) -> pa.Table:
    """All of ``data`` as one table (merge_insert's source)."""
    src = coerce(data, schema)
    batches = [b async for b in src.batches()]
    out_schema = src.cast_to or src.schema or (batches[0].schema if batches else None)
    if out_schema is None:
        raise InvalidInputError("no data and no schema")
    return pa.Table.from_batches(batches, schema=out_schema)


__all__ = ["Source", "coerce", "from_pandas", "is_pandas", "is_polars", "source_table"]
