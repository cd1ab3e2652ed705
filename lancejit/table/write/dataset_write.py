"""``write_dataset``: create, append to or overwrite a Lance dataset from streamed Arrow data.

Data (a ``pyarrow.Table``, ``RecordBatch``, ``RecordBatchReader``, an iterable of batches or
tables, or a pandas ``DataFrame``) is consumed batch by batch and written to new data files
(``data/<name>.lance``, a new file every ``max_rows_per_file`` rows / ``max_bytes_per_file``
bytes, one fragment per file), then committed with :func:`lancejit.table.commit.commit`:

* ``create``: an ``Overwrite`` read at version 0 that fails if the dataset exists;
* ``overwrite``: an ``Overwrite`` (new schema, fragments renumbered from the old high-water mark);
* ``append``: an ``Append`` keeping the dataset's schema (columns matched by name) and data
  storage version; creates the dataset when there is none.

A failure (bad schema, an I/O error, a lost commit) deletes the data files written so far and
leaves the dataset as it was.
"""

from __future__ import annotations

import os
from typing import Any, Callable, Iterable, Iterator, Mapping

import pyarrow as pa

from lancejit.core.errors import AlreadyExistsError, InvalidInputError, SchemaMismatchError
from lancejit.core.schema import LanceSchema
from lancejit.io import open_store

from ..commit import Append, Overwrite, commit, load_manifest, new_fragment, schema_fields
from .data_files import (
    DEFAULT_MAX_BYTES_PER_FILE,
    DEFAULT_MAX_ROWS_PER_FILE,
    FragmentFileWriter,
    WrittenFile,
    conform_batch,
    normalize_storage_version,
)

MODES = ("create", "append", "overwrite")


def _is_pandas(data: Any) -> bool:
    mod = type(data).__module__
    return mod.startswith("pandas") and type(data).__name__ == "DataFrame"


def batch_source(data: Any, schema: pa.Schema | None = None) -> tuple[pa.Schema | None, Iterator[pa.RecordBatch]]:
    """``(schema or None if unknown yet, batches)`` for any supported ``data``; nothing is
    materialised beyond what the caller already holds."""
    if _is_pandas(data):
        data = pa.Table.from_pandas(data, schema=schema, preserve_index=False)
    if isinstance(data, pa.Table):
        return data.schema, iter(data.to_batches())
    if isinstance(data, pa.RecordBatch):
        return data.schema, iter([data])
    if isinstance(data, pa.RecordBatchReader):
        return data.schema, iter(data)
    if isinstance(data, (str, bytes, Mapping)) or not isinstance(data, Iterable):
        raise InvalidInputError(
            f"write_dataset needs a pyarrow Table, RecordBatch, RecordBatchReader, an iterable of "
            f"batches or a pandas DataFrame, got {type(data).__name__}"
        )

    def gen() -> Iterator[pa.RecordBatch]:
        for item in data:
            if isinstance(item, pa.RecordBatch):
                yield item
            elif isinstance(item, pa.Table):
                yield from item.to_batches()
            elif _is_pandas(item):
                yield from pa.Table.from_pandas(item, schema=schema, preserve_index=False).to_batches()
            else:
                raise InvalidInputError(f"expected record batches, got {type(item).__name__}")

    return schema, gen()


def _progress_callback(progress: Any) -> Callable[[WrittenFile], None] | None:
    if progress is None:
        return None
    if hasattr(progress, "complete"):
        return lambda wf: progress.complete({"path": wf.name, "num_rows": wf.rows, "size": wf.size})
    if callable(progress):
        return lambda wf: progress({"path": wf.name, "num_rows": wf.rows, "size": wf.size})
    raise InvalidInputError("progress must be a callable or have a complete(info) method")


async def write_data_async(
    data: Any,
    uri: str | os.PathLike,
    mode: str = "create",
    *,
    schema: pa.Schema | None = None,
    data_storage_version: str | None = None,
    max_rows_per_file: int = DEFAULT_MAX_ROWS_PER_FILE,
    max_bytes_per_file: int = DEFAULT_MAX_BYTES_PER_FILE,
    enable_stable_row_ids: bool = False,
    enable_v2_manifest_paths: bool = True,
    storage_options: dict[str, Any] | None = None,
    progress: Any = None,
    max_page_bytes: int | None = None,
    commit_message: str | None = None,
) -> tuple[str, int]:
    """Write ``data`` to the dataset at ``uri`` (see the module docstring); returns ``(uri, the
    version committed)``.

    ``progress``: a callable (or an object with ``complete(info)``) called after each data file
    with ``{"path", "num_rows", "size"}``.  ``max_page_bytes`` is passed to the file writer.
    """
    if mode not in MODES:
        raise InvalidInputError(f"mode must be one of {MODES}, got {mode!r}")
    uri = os.fspath(uri)
    store, root = open_store(uri, storage_options)
    root = root.rstrip("/")
    previous = await load_manifest(store, root)
    if previous is not None and mode == "create":
        raise AlreadyExistsError(f"dataset {uri} already exists (version {previous.manifest.version}); "
                                 "use mode='append' or mode='overwrite'")
    appending = mode == "append" and previous is not None

    src_schema, batches = batch_source(data, schema)
    if appending:
        m = previous.manifest
        lschema = LanceSchema.from_pb(m.fields, dict(m.schema_metadata), path=store.uri(root))
        if src_schema is None:
            first = next(batches, None)
            if first is not None:
                src_schema = first.schema
                batches = _prepend(first, batches)
        if src_schema is not None:
            lschema = _append_fields(lschema, src_schema, uri)
        storage = normalize_storage_version(m.data_format.version or "2.0")
        if data_storage_version is not None and normalize_storage_version(data_storage_version) != storage:
            raise InvalidInputError(
                f"dataset {uri} uses data storage version {storage}; cannot append {data_storage_version} files"
            )
        read_version = m.version
    else:
        first: pa.RecordBatch | None = None
        target = schema or src_schema
        if target is None:
            first = next(batches, None)
            if first is None:
                raise InvalidInputError("no data and no schema: cannot create a dataset")
            target = first.schema
        if first is not None:
            batches = _prepend(first, batches)
        lschema = LanceSchema.from_arrow(target)
        default = (previous.manifest.data_format.version or "2.2") if previous is not None else "2.2"
        storage = normalize_storage_version(data_storage_version, default)
        read_version = previous.manifest.version if previous is not None else 0

    writer = FragmentFileWriter(
        store, root, lschema.fields, dict(lschema.metadata), storage,
        max_rows_per_file=max_rows_per_file, max_bytes_per_file=max_bytes_per_file,
        storage_options=storage_options, max_page_bytes=max_page_bytes,
        on_file=_progress_callback(progress),
    )
    target_schema = writer.file_schema
    try:
        for batch in batches:
            if batch.num_rows == 0:
                continue
            await writer.write(conform_batch(batch, target_schema, f"writing to {uri}"))
        files = await writer.finish()
        frags = tuple(new_fragment([writer.data_file(wf)], wf.rows) for wf in files)
        props = {"lancejit.message": commit_message} if commit_message else None
        if appending:
            version = await commit(store, root, Append(frags), read_version, transaction_properties=props)
        else:
            fields, meta = schema_fields(lschema)
            version = await commit(
                store, root, Overwrite(frags, fields, meta), read_version,
                transaction_properties=props,
                enable_stable_row_ids=enable_stable_row_ids and previous is None,
                data_storage_version=storage, enable_v2_manifest_paths=enable_v2_manifest_paths,
                create_only=mode == "create",
            )
    except BaseException:
        await writer.cleanup()
        raise
    return uri, version


def _append_fields(lschema: LanceSchema, data_schema: pa.Schema, uri: str) -> LanceSchema:
    """The dataset fields an append writes: those in the data (missing nullable columns are
    left out and read as nulls, as the reference does)."""
    names = set(data_schema.names)
    extra = [n for n in data_schema.names if n not in {f.name for f in lschema.fields}]
    if extra:
        raise SchemaMismatchError(f"writing to {uri}: the dataset has no columns {extra}")
    missing = [f for f in lschema.fields if f.name not in names]
    required = [f.name for f in missing if not f.nullable]
    if required:
        raise SchemaMismatchError(f"writing to {uri}: non-nullable columns {required} are missing from the data")
    if not missing:
        return lschema
    return LanceSchema(tuple(f for f in lschema.fields if f.name in names), dict(lschema.metadata))


def _prepend(first: pa.RecordBatch, rest: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    yield first
    yield from rest


__all__ = ["MODES", "SchemaMismatchError", "batch_source", "write_data_async"]
