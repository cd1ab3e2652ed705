"""``write_dataset``: create, append to or overwrite a Lance dataset from streamed Arrow data.

Data (anything :mod:`.sources` accepts: Arrow tables, batches and readers, pandas and polars
data frames, lists of rows, datasets and scans, iterables of batches) is consumed batch by batch and written to new data files
(``data/<name>.lance``, a new file every ``max_rows_per_file`` rows / ``max_bytes_per_file``
bytes, one fragment per file), then committed with :func:`lancejit.table.commit.commit`:

* ``create``: an ``Overwrite`` read at version 0 that fails if the dataset exists;
* ``overwrite``: an ``Overwrite`` (new schema, fragments renumbered from the old high-water mark);
* ``append``: an ``Append`` keeping the dataset's schema (columns matched by name) and data
  storage version; creates the dataset when there is none.

A failure (bad schema, an I/O error, a lost commit) deletes the data files written so far and
leaves the dataset as it was.  :func:`stage_write` writes the data files without committing
them (the reference's ``write_fragments``).
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Mapping

import pyarrow as pa

from lancejit.core.errors import AlreadyExistsError, InvalidInputError, SchemaMismatchError
from lancejit.core.schema import LanceSchema
from lancejit.io import open_store
from lancejit.io.memory import MemoryStore

from ..commit import Append, Overwrite, commit, load_manifest, new_fragment, schema_fields
from .data_files import (
    DEFAULT_MAX_BYTES_PER_FILE,
    DEFAULT_MAX_ROWS_PER_FILE,
    FragmentFileWriter,
    WrittenFile,
    conform_batch,
    normalize_storage_version,
)
from .sources import coerce

MODES = ("create", "append", "overwrite")

#: The transaction property holding a commit message (the reference's key).
COMMIT_MESSAGE_KEY = "__lance_commit_message"


def _progress_callback(progress: Any) -> Callable[[WrittenFile, Any], None] | None:
    """``progress`` as a callback given each written file and its fragment: the reference's
    ``FragmentWriteProgress`` (``begin`` / ``complete`` with a FragmentMetadata), an object with
    ``complete(info)``, or a callable given ``{"path", "num_rows", "size"}``."""
    if progress is None:
        return None
    if hasattr(progress, "begin") and hasattr(progress, "complete"):
        from ..meta.fragment_meta import FragmentMetadata

        def both(wf: WrittenFile, frag: Any) -> None:
            meta = FragmentMetadata.from_pb(frag)
            progress.begin(meta)
            progress.complete(meta)

        return both
    if hasattr(progress, "complete"):
        return lambda wf, frag: progress.complete({"path": wf.name, "num_rows": wf.rows, "size": wf.size})
    if callable(progress):
        return lambda wf, frag: progress({"path": wf.name, "num_rows": wf.rows, "size": wf.size})
    raise InvalidInputError("progress must be a callable or have a complete(info) method")


@dataclass
class StagedWrite:
    """Data files written for a dataset and not committed yet: their ``fragments`` (ids 0 =
    assigned at commit), the schema they were written with, and what to commit them as
    (:meth:`operation`, read at ``read_version``)."""

    uri: str
    store: Any
    root: str
    mode: str
    appending: bool
    read_version: int
    lschema: LanceSchema
    storage: str
    fragments: tuple[Any, ...]
    writer: FragmentFileWriter
    new_dataset: bool

    def operation(self) -> Any:
        if self.appending:
            return Append(self.fragments)
        fields, meta = schema_fields(self.lschema)
        return Overwrite(self.fragments, fields, meta)

    async def cleanup(self) -> None:
        await self.writer.cleanup()


async def stage_write(
    data: Any,
    uri: str | os.PathLike,
    mode: str = "create",
    *,
    schema: pa.Schema | LanceSchema | None = None,
    data_storage_version: str | None = None,
    max_rows_per_file: int = DEFAULT_MAX_ROWS_PER_FILE,
    max_bytes_per_file: int = DEFAULT_MAX_BYTES_PER_FILE,
    storage_options: dict[str, Any] | None = None,
    progress: Any = None,
    max_page_bytes: int | None = None,
    read_version: int | None = None,
    name_prefix: str = "",
) -> StagedWrite:
    """Write ``data``'s data files for the dataset at ``uri`` (see the module docstring) without
    committing them; a failure deletes what was written.  ``progress``: the reference's
    ``FragmentWriteProgress``, a callable (or an object with ``complete(info)``) called after
    each data file with ``{"path", "num_rows", "size"}``; ``max_page_bytes`` is passed to the
    file writer.  ``read_version``: the version the
    write is based on (default: the latest; a dataset object's own version when writing through
    it, so that concurrent commits are checked against it).

    ``schema`` may be a :class:`LanceSchema`: the files are written with exactly its fields and
    field ids (a distributed writer's driver fixes them once for every worker; an append checks
    that fields the dataset has keep their ids and new fields take unused ids).
    ``name_prefix`` starts every data file's name (``data/<name_prefix><random>.lance``), so that
    a job can find and remove the files its failed attempts wrote."""
    if mode not in MODES:
        raise InvalidInputError(f"mode must be one of {MODES}, got {mode!r}")
    fixed = schema if isinstance(schema, LanceSchema) else None
    if fixed is not None:
        schema = fixed.to_arrow()
    uri = os.fspath(uri)
    store, root = open_store(uri, storage_options)
    root = root.rstrip("/")
    previous = await load_manifest(store, root, read_version)
    if previous is not None and mode == "create" and isinstance(store, MemoryStore):
        store, previous = store.renewed(), None  # the reference: each call its own memory store
    if previous is not None and mode == "create":
        raise AlreadyExistsError(f"dataset {uri} already exists (version {previous.manifest.version}); "
                                 "use mode='append' or mode='overwrite'")
    appending = mode == "append" and previous is not None

    src = coerce(data, schema)
    batches = src.batches()
    first: pa.RecordBatch | None = None
    src_schema = src.cast_to or src.schema
    if src_schema is None:
        first = await anext(batches, None)
        src_schema = first.schema if first is not None else None
    if previous is not None and appending:
        m = previous.manifest
        lschema = LanceSchema.from_pb(m.fields, dict(m.schema_metadata), path=store.uri(root))
        if fixed is not None:
            lschema = _fixed_append_fields(lschema, fixed, uri)
        elif src_schema is not None:
            lschema = _append_fields(lschema, src_schema, uri)
        storage = normalize_storage_version(m.data_format.version or "2.0")
        if data_storage_version is not None and normalize_storage_version(data_storage_version) != storage:
            raise InvalidInputError(
                f"dataset {uri} uses data storage version {storage}; cannot append {data_storage_version} files"
            )
        base_version = m.version
    else:
        if src_schema is None:
            raise InvalidInputError("no data and no schema: cannot create a dataset")
        lschema = fixed if fixed is not None else LanceSchema.from_arrow(src_schema)
        default = (previous.manifest.data_format.version or "2.2") if previous is not None else "2.2"
        storage = normalize_storage_version(data_storage_version, default)
        base_version = previous.manifest.version if previous is not None else 0

    on_file = _progress_callback(progress)
    writer = FragmentFileWriter(
        store, root, lschema.fields, dict(lschema.metadata), storage,
        max_rows_per_file=max_rows_per_file, max_bytes_per_file=max_bytes_per_file,
        storage_options=storage_options, max_page_bytes=max_page_bytes, name_prefix=name_prefix,
    )
    target_schema = writer.file_schema
    try:
        if first is not None and first.num_rows:
            await writer.write(conform_batch(first, target_schema, f"writing to {uri}"))
        async for batch in batches:
            if batch.num_rows == 0:
                continue
            await writer.write(conform_batch(batch, target_schema, f"writing to {uri}"))
        files = await writer.finish()
        frags = tuple(new_fragment([writer.data_file(wf)], wf.rows) for wf in files)
        if on_file is not None:
            for wf, frag in zip(files, frags):
                on_file(wf, frag)
    except BaseException:
        await writer.cleanup()
        raise
    return StagedWrite(uri, store, root, mode, appending, base_version, lschema, storage, frags, writer,
                       previous is None)


async def write_data_async(
    data: Any,
    uri: str | os.PathLike,
    mode: str = "create",
    *,
    enable_stable_row_ids: bool = False,
    enable_v2_manifest_paths: bool = True,
    commit_message: str | None = None,
    transaction_properties: Mapping[str, str] | None = None,
    commit_lock: Any = None,
    **write_options: Any,
) -> tuple[str, int]:
    """Write ``data`` to the dataset at ``uri`` (see the module docstring); returns ``(uri, the
    version committed)``.  ``write_options`` are :func:`stage_write`'s (``schema``,
    ``data_storage_version``, ``max_rows_per_file``, ``progress``...).

    ``transaction_properties`` are stored with the commit (``commit_message`` under
    :data:`COMMIT_MESSAGE_KEY`); ``commit_lock`` (the reference's ``CommitLock``: a callable
    given the version to commit, returning a context manager) is held around the commit.
    """
    staged = await stage_write(data, uri, mode, **write_options)
    props = merge_properties(transaction_properties, commit_message)
    try:
        with held_lock(commit_lock, staged.read_version + 1):
            version = await commit(
                staged.store, staged.root, staged.operation(), staged.read_version,
                transaction_properties=props,
                enable_stable_row_ids=enable_stable_row_ids and staged.new_dataset,
                data_storage_version=staged.storage if not staged.appending else None,
                enable_v2_manifest_paths=enable_v2_manifest_paths,
                create_only=mode == "create",
            )
    except BaseException:
        await staged.cleanup()
        raise
    return staged.uri, version


def merge_properties(properties: Mapping[str, str] | None, message: str | None) -> dict[str, str] | None:
    """Transaction properties with ``message`` under :data:`COMMIT_MESSAGE_KEY` (None when empty)."""
    out = dict(properties or {})
    if message is not None:
        out[COMMIT_MESSAGE_KEY] = message
    return out or None


@contextlib.contextmanager
def held_lock(commit_lock: Any, version: int) -> Iterator[None]:
    """``commit_lock(version)`` held (a no-op without a lock)."""
    if commit_lock is None:
        yield
        return
    if not callable(commit_lock):
        raise InvalidInputError(f"commit_lock must be a function, got {type(commit_lock).__name__}")
    with commit_lock(version):
        yield


def _fixed_append_fields(dataset: LanceSchema, fixed: LanceSchema, uri: str) -> LanceSchema:
    """``fixed`` (a caller's Lance schema) as the fields an append writes: a field the dataset
    has must keep its ids and types, a new field must use ids the dataset does not; the
    dataset's schema metadata is kept."""
    by_name = {f.name: f for f in dataset.fields}
    used = {f.id for f in dataset.walk()}
    for f in fixed.fields:
        mine = [(x.id, x.name, x.logical_type) for x in f.walk()]
        old = by_name.get(f.name)
        if old is not None and mine != [(x.id, x.name, x.logical_type) for x in old.walk()]:
            raise SchemaMismatchError(f"writing to {uri}: field {f.name!r} does not match the dataset's "
                                      "(field ids or types differ)")
        if old is None and any(fid in used for fid, _, _ in mine):
            raise SchemaMismatchError(f"writing to {uri}: new field {f.name!r} reuses field ids of the dataset")
    return LanceSchema(fixed.fields, dict(dataset.metadata))


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


__all__ = ["COMMIT_MESSAGE_KEY", "MODES", "SchemaMismatchError", "StagedWrite", "held_lock", "merge_properties",
           "stage_write", "write_data_async"]
