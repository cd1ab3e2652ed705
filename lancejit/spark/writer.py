"""The write side of the ``lancejit`` Spark data source.

* Planning (:class:`LanceWriter` construction, in a Spark Python worker): the dataset's latest
  version is read once (the read version of the commit), the file schema fixed (the dataset's
  schema for appends, Spark's for overwrites and new datasets) and a job id drawn.
* Tasks (:meth:`LanceWriter.write`): stream the task's Arrow batches into data files
  ``<root>/data/<job id>-<uuid>.lance`` with :class:`lancejit.file.writer.LanceFileWriter`, at
  most ``max_rows_per_file`` rows each (one fragment per file), and return their names, row
  counts and sizes.  A failing task removes its own files.
* :meth:`LanceWriter.commit` (a separate Python worker: it only uses the store): ONE
  Append or Overwrite version through :mod:`lancejit.table.commit` (conflicts retried there).
  A dataset that does not exist yet is created by an Overwrite at version 1.
* :meth:`LanceWriter.abort`: writes the job's abort marker (``_spark_aborts/<job id>``), then
  removes the files of the messages it gets and, for ``abort_grace_seconds`` (default 3 s, longer
  than Spark's 2 s Python task kill timeout), every other file of this job id under ``data/``
  (cancelled tasks' files and, on local disk, their unpublished temp files); tasks still running
  check the marker after publishing and remove their own files.  The marker is removed last.
"""

from __future__ import annotations

import os
import time
import uuid
from dataclasses import dataclass
from typing import Any, Iterator

import pyarrow as pa
from pyspark.sql.datasource import DataSourceArrowWriter, WriterCommitMessage
from pyspark.sql.types import StructType

from lancejit.core.errors import (
    AlreadyExistsError,
    InvalidInputError,
    NotSupportedError,
    SchemaMismatchError,
)

from .options import WriteOptions

DATA_DIR = "data"
#: ``<root>/_spark_aborts/<job id>``: written by :meth:`LanceWriter.abort` before it removes the
#: job's files; a task that publishes a file checks it afterwards and removes its own files, so
#: tasks finishing after the abort leave nothing behind either.
ABORTS_DIR = "_spark_aborts"
_FILE_VERSIONS = {"2.0": (2, 0), "0.3": (2, 0), "2.1": (2, 1), "2.2": (2, 2), "stable": (2, 2)}
DEFAULT_FILE_VERSION = "2.2"


@dataclass(frozen=True)
class WrittenFile:
    """One data file a task wrote: name relative to ``data/``, rows, size in bytes."""

    name: str
    rows: int
    size: int


@dataclass(frozen=True)
class LanceCommitMessage(WriterCommitMessage):
    """What a task returns: its data files, in write order."""

    files: tuple[WrittenFile, ...]


def _store(uri: str, storage_options: dict[str, str] | None):
    from lancejit.io import open_store

    return open_store(uri, storage_options)


def _file_version(text: str) -> tuple[int, int]:
    v = _FILE_VERSIONS.get(text.strip().lower())
    if v is None:
        raise NotSupportedError(f"writing data files of version {text!r} is not supported")
    return v


def _match_names(spark_names: list[str], dataset_names: list[str], uri: str) -> None:
    if sorted(spark_names) != sorted(dataset_names):
        lower = {n.lower() for n in dataset_names}
        if sorted(n.lower() for n in spark_names) == sorted(lower) and len(lower) == len(dataset_names):
            return
        raise SchemaMismatchError(
            f"cannot append columns {spark_names} to dataset {uri} with columns {dataset_names}")


class LanceWriter(DataSourceArrowWriter):
    """Writes one Spark job's data into the dataset and commits it as one version."""

    def __init__(self, opts: WriteOptions, schema: StructType, overwrite: bool) -> None:
        from lancejit.core.schema import LanceSchema
        from lancejit.io.sync import run_sync
        from lancejit.table.commit import load_manifest

        from .types import spark_arrow_schema

        self.uri = opts.uri
        self.storage_options = opts.storage_options
        self.overwrite = bool(overwrite)
        self.max_rows_per_file = opts.max_rows_per_file
        self.max_page_bytes = opts.max_page_bytes
        self.abort_grace_s = opts.abort_grace_seconds
        self.job_id = uuid.uuid4().hex[:16]
        store, root = _store(self.uri, self.storage_options)
        lm = run_sync(load_manifest(store, root))
        self.exists = lm is not None
        self.read_version = int(lm.manifest.version) if lm is not None else 0
        spark_arrow = spark_arrow_schema(schema)
        if lm is not None and not self.overwrite:
            m = lm.manifest
            lschema = LanceSchema.from_pb(m.fields, dict(m.schema_metadata), path=store.uri(root))
            _match_names(list(spark_arrow.names), [f.name for f in lschema.fields], self.uri)
            version = m.data_format.version or DEFAULT_FILE_VERSION
            if opts.data_storage_version and _file_version(opts.data_storage_version) != _file_version(version):
                raise InvalidInputError(
                    f"dataset {self.uri} stores version {version} files; cannot append "
                    f"{opts.data_storage_version} files")
        else:
            lschema = LanceSchema.from_arrow(spark_arrow)
            if opts.data_storage_version:
                version = opts.data_storage_version
            elif lm is not None and lm.manifest.data_format.version:
                version = lm.manifest.data_format.version
            else:
                version = DEFAULT_FILE_VERSION
        self.file_version = _file_version(version)
        self.file_version_text = "%d.%d" % self.file_version
        self.lance_fields_pb = [f.SerializeToString() for f in lschema.to_pb()]
        self.schema_metadata = {k: bytes(v) for k, v in lschema.metadata.items()}
        self.file_schema = lschema.to_arrow(dataset=False)
        if self.file_version == (2, 0):
            self.field_ids = lschema.field_ids()
        else:
            self.field_ids = lschema.leaf_ids()

    # ------------------------------------------------------------------ helpers
    def _lance_schema(self):
        from lancejit.core.schema import LanceSchema
        from lancejit.pb import file_pb2

        fields = [file_pb2.Field.FromString(b) for b in self.lance_fields_pb]
        return LanceSchema.from_pb(fields, self.schema_metadata)

    def _abort_marker(self, root: str) -> str:
        from lancejit.io.store import join_path

        return join_path(root, ABORTS_DIR, self.job_id)

    def _data_path(self, root: str, name: str) -> str:
        from lancejit.io.store import join_path

        return join_path(root, DATA_DIR, name)

    def _open_file(self, store: Any, root: str, lschema: Any):
        from lancejit.file.writer import LanceFileWriter

        name = f"{self.job_id}-{uuid.uuid4().hex}.lance"
        w = LanceFileWriter(store.uri(self._data_path(root, name)), self.file_schema,
                            version=self.file_version_text, storage_options=self.storage_options,
                            max_page_bytes=self.max_page_bytes,
                            lance_schema=lschema)  # the file keeps the dataset's field ids
        return name, w

    def _conform(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        """``batch`` as the file schema: columns matched by name (case-insensitively when
        needed), cast to the file's types."""
        from .types import cast_array

        names = batch.schema.names
        lower = {n.lower(): i for i, n in enumerate(names)}
        cols = []
        for f in self.file_schema:
            i = batch.schema.get_field_index(f.name)
            if i < 0:
                i = lower.get(f.name.lower(), -1)
            if i < 0:
                raise SchemaMismatchError(f"batch has no column {f.name!r} (has {names})")
            cols.append(cast_array(batch.column(i), f.type, name=f.name))
        return pa.RecordBatch.from_arrays(cols, schema=self.file_schema)

    # ------------------------------------------------------------------ tasks
    def write(self, iterator: Iterator[pa.RecordBatch]) -> LanceCommitMessage:
        from lancejit.io.sync import run_sync

        store, root = _store(self.uri, self.storage_options)
        lschema = self._lance_schema()
        done: list[WrittenFile] = []
        current: tuple[str, Any] | None = None
        rows_in_file = 0

        def finish() -> None:
            nonlocal current, rows_in_file
            if current is None:
                return
            name, w = current
            current = None
            rows = w.close()
            size = w.bytes_written or run_sync(store.size(self._data_path(root, name)))
            done.append(WrittenFile(name, int(rows), int(size)))
            rows_in_file = 0

        try:
            for batch in iterator:
                if batch.num_rows == 0:
                    continue
                batch = self._conform(batch)
                start = 0
                while start < batch.num_rows:
                    if current is None:
                        current = self._open_file(store, root, lschema)
                    take = min(batch.num_rows - start, self.max_rows_per_file - rows_in_file)
                    current[1].write_batch(batch.slice(start, take))
                    rows_in_file += take
                    start += take
                    if rows_in_file >= self.max_rows_per_file:
                        finish()
            finish()
            if done and run_sync(store.exists(self._abort_marker(root))):
                from lancejit.core.errors import CommitConflictError

                raise CommitConflictError(f"write job {self.job_id} on {self.uri} was aborted")
        except BaseException:
            if current is not None:
                try:
                    current[1].abort()
                except Exception:  # noqa: BLE001 - keep the task's own error
                    pass
            _delete_quietly(store, [self._data_path(root, f.name) for f in done])
            raise
        return LanceCommitMessage(tuple(done))

    # ------------------------------------------------------------------ driver side
    def _fragments(self, messages: list) -> list:
        from lancejit.table.commit import data_file, new_fragment

        major, minor = self.file_version
        cols = list(range(len(self.field_ids)))
        frags = []
        for msg in messages:
            if msg is None:
                continue
            for f in msg.files:
                df = data_file(f.name, self.field_ids, cols, file_major_version=major,
                               file_minor_version=minor, file_size_bytes=f.size)
                frags.append(new_fragment([df], f.rows))
        return frags

    def commit(self, messages: list) -> None:
        from lancejit.io.sync import run_sync

        store, root = _store(self.uri, self.storage_options)
        try:
            run_sync(self._commit(store, root, self._fragments(messages)))
        except BaseException:
            self.abort(messages)
            raise

    async def _commit(self, store: Any, root: str, frags: list) -> int:
        from lancejit.table.commit import Append, Overwrite, commit

        lschema = self._lance_schema()
        if self.exists and not self.overwrite:
            return await commit(store, root, Append(tuple(frags)), self.read_version)
        op = Overwrite(tuple(frags), tuple(lschema.to_pb()), dict(self.schema_metadata))
        if self.overwrite:
            return await commit(store, root, op, self.read_version,
                                data_storage_version=self.file_version_text)
        # Append to a dataset that did not exist at planning: create it, unless another
        # writer created it meanwhile -- then append to that one.
        try:
            return await commit(store, root, op, 0, create_only=True,
                                data_storage_version=self.file_version_text)
        except AlreadyExistsError:
            from lancejit.table.commit import load_manifest

            lm = await load_manifest(store, root)
            assert lm is not None
            theirs = [(f.id, f.name, f.parent_id, f.logical_type) for f in lm.manifest.fields]
            mine = [(f.id, f.name, f.parent_id, f.logical_type) for f in lschema.to_pb()]
            if theirs != mine:
                raise SchemaMismatchError(
                    f"dataset {self.uri} was created concurrently with a different schema") from None
            return await commit(store, root, Append(tuple(frags)), int(lm.manifest.version))

    def abort(self, messages: list) -> None:
        from lancejit.io.sync import run_sync

        store, root = _store(self.uri, self.storage_options)
        try:
            run_sync(store.put(self._abort_marker(root), self.job_id.encode()))
        except Exception:  # noqa: BLE001 - still remove what can be removed
            pass
        paths = {self._data_path(root, f.name) for m in messages if m is not None for f in m.files}
        _delete_quietly(store, sorted(paths))
        # Tasks cancelled with the job may still be writing (Spark kills their Python workers
        # after spark.python.task.killTimeout, 2 s by default): sweep the job's files until then.
        deadline = time.monotonic() + self.abort_grace_s
        while True:
            self._sweep(store, root)
            if time.monotonic() >= deadline:
                break
            time.sleep(0.25)
        # every task of the job has been killed by now: the marker has done its work
        _delete_quietly(store, [self._abort_marker(root)])

    def _sweep(self, store: Any, root: str) -> None:
        from lancejit.io.sync import run_sync

        try:
            listed = run_sync(store.list(self._data_path(root, ""), recursive=False))
        except Exception:  # noqa: BLE001 - best effort
            listed = []
        mine = [i.path for i in listed if os.path.basename(i.path).startswith(self.job_id + "-")]
        _delete_quietly(store, mine)
        if getattr(store, "scheme", "") == "file":
            _remove_local_temp_files(self._data_path(root, ""), self.job_id)


def _delete_quietly(store: Any, paths: list[str]) -> None:
    from lancejit.io.sync import run_sync

    if not paths:
        return
    try:
        run_sync(store.delete_many(paths))
    except Exception:  # noqa: BLE001
        for p in paths:
            try:
                run_sync(store.delete(p))
            except Exception:  # noqa: BLE001
                pass


def _remove_local_temp_files(directory: str, job_id: str) -> None:
    """Unpublished temp files of this job left by killed tasks (local disk only)."""
    try:
        names = os.listdir(directory)
    except OSError:
        return
    for name in names:
        if name.startswith(f".{job_id}-") and ".tmp-" in name:
            try:
                os.unlink(os.path.join(directory, name))
            except OSError:
                pass


__all__ = ["LanceCommitMessage", "LanceWriter", "WrittenFile"]
