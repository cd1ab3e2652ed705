"""The write side of the ``lancejit`` Spark data source: one job, one new version.

Built on the driver/worker split of :mod:`.fragments`:

* planning (``DataSource.writer``, in a Python worker beside the driver): :func:`.fragments.plan_write`
  decides what the files hold and which operation will be committed (append, overwrite,
  create; an append that adds columns with ``mergeSchema``; the ``write_mode`` that
  :func:`lancejit.spark.write` sets for ``errorifexists`` / ``ignore``);
* tasks (:meth:`LanceWriter.write`): :func:`.fragments.write_task` streams the task's Arrow
  batches through ``lance.fragment.write_fragments`` into data files
  ``data/<job id>-<name>.lance`` (its ``name_prefix``) and returns the new fragments'
  ``FragmentMetadata``.  A failing task removes its own files;
* :meth:`LanceWriter.commit` (a separate Python worker: it only uses the store): ONE version
  through :func:`.fragments.commit_write` (``LanceDataset.commit`` of a ``LanceOperation``;
  conflicts retried there), then the job's files the commit does not hold are removed (one
  listing of ``data/``: attempts Spark retried or dropped after they wrote);
* :meth:`LanceWriter.abort`: writes the job's abort marker (``_spark_aborts/<job id>``), removes
  the files of the messages it gets and, for ``abort_grace_seconds`` (default 3 s, longer than
  Spark's 2 s Python task kill timeout), every other file of this job id under ``data/``
  (cancelled tasks' files and, on local disk, their unpublished temp files); tasks still running
  check the marker after publishing and remove their own files.  The marker is removed last.
"""

from __future__ import annotations

import os
import time
import uuid
from dataclasses import dataclass
from typing import Any, Collection, Iterator

import pyarrow as pa
from pyspark.sql.datasource import DataSourceArrowWriter, WriterCommitMessage
from pyspark.sql.types import StructType

from .fragments import WritePlan, commit_write, fragment_files, plan_write, write_task
from .options import WriteOptions
from .surface import surfaced

DATA_DIR = "data"
#: ``<root>/_spark_aborts/<job id>``: written by :meth:`LanceWriter.abort` before it removes the
#: job's files; a task that publishes a file checks it afterwards and removes its own files, so
#: tasks finishing after the abort leave nothing behind either.
ABORTS_DIR = "_spark_aborts"


@dataclass(frozen=True)
class LanceCommitMessage(WriterCommitMessage):
    """What a task returns: its new fragments (``FragmentMetadata``, as ``write_fragments``
    returns them), in write order."""

    fragments: tuple[Any, ...]


class LanceWriter(DataSourceArrowWriter):
    """Writes one Spark job's data into the dataset and commits it as one version."""

    def __init__(self, opts: WriteOptions, schema: StructType, overwrite: bool) -> None:
        from .types import spark_arrow_schema

        self.job_id = uuid.uuid4().hex[:16]
        self.abort_grace_s = opts.abort_grace_seconds
        if opts.write_mode in ("append", "overwrite") and (opts.write_mode == "overwrite") != bool(overwrite):
            from lancejit.core.errors import InvalidInputError

            raise InvalidInputError(f"option write_mode={opts.write_mode!r} contradicts Spark's save mode "
                                    f"({'overwrite' if overwrite else 'append'})")
        mode = opts.write_mode if opts.write_mode in ("errorifexists", "ignore") else None
        self.plan: WritePlan = plan_write(
            opts.uri, spark_arrow_schema(schema), overwrite=bool(overwrite), mode=mode,
            merge_schema=opts.merge_schema, storage_options=opts.storage_options,
            data_storage_version=opts.data_storage_version, max_rows_per_file=opts.max_rows_per_file,
            max_bytes_per_file=opts.max_bytes_per_file, max_page_bytes=opts.max_page_bytes,
            name_prefix=f"{self.job_id}-",
        )

    # ------------------------------------------------------------------ helpers
    def _store(self):
        from lancejit.io import open_store

        store, root = open_store(self.plan.uri, self.plan.storage_options)
        return store, root.rstrip("/")

    def _abort_marker(self, root: str) -> str:
        from lancejit.io.store import join_path

        return join_path(root, ABORTS_DIR, self.job_id)

    def _data_path(self, root: str, name: str) -> str:
        from lancejit.io.store import join_path

        return join_path(root, DATA_DIR, name)

    # ------------------------------------------------------------------ tasks
    @surfaced
    def write(self, iterator: Iterator[pa.RecordBatch]) -> LanceCommitMessage:
        from lancejit.core.errors import CommitConflictError
        from lancejit.io.sync import run_sync

        if self.plan.action == "ignore":  # the dataset exists: nothing to write
            return LanceCommitMessage(())
        frags = tuple(write_task(iterator, self.plan))
        if frags:
            store, root = self._store()
            if run_sync(store.exists(self._abort_marker(root)), store=store):
                _delete_quietly(store, [self._data_path(root, n) for n in fragment_files(frags)])
                raise CommitConflictError(f"write job {self.job_id} on {self.plan.uri} was aborted")
        return LanceCommitMessage(frags)

    # ------------------------------------------------------------------ driver side
    @surfaced
    def commit(self, messages: list) -> None:
        frags = [f for m in messages if m is not None for f in m.fragments]
        try:
            version = commit_write(self.plan, frags)
        except BaseException:
            self.abort(messages)
            raise
        store, root = self._store()
        if version is None and frags:  # nothing committed ("ignore"): the files are not needed
            _delete_quietly(store, [self._data_path(root, n) for n in fragment_files(frags)])
        # files of attempts whose results Spark dropped (a retried task whose first attempt died
        # after writing, a speculative copy that lost): this job's names the commit does not hold
        self._sweep(store, root, keep=fragment_files(frags) if version is not None else ())

    def abort(self, messages: list) -> None:
        from lancejit.io.sync import run_sync

        store, root = self._store()
        try:
            run_sync(store.put(self._abort_marker(root), self.job_id.encode()), store=store)
        except Exception:  # noqa: BLE001 - still remove what can be removed
            pass
        names = {n for m in messages if m is not None for n in fragment_files(m.fragments)}
        _delete_quietly(store, sorted(self._data_path(root, n) for n in names))
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

    def _sweep(self, store: Any, root: str, keep: Collection[str] = ()) -> None:
        """Remove this job's data files (names starting with its id) except ``keep``."""
        from lancejit.io.sync import run_sync

        kept = set(keep)
        try:
            listed = run_sync(store.list(self._data_path(root, ""), recursive=False), store=store)
        except Exception:  # noqa: BLE001 - best effort
            listed = []
        mine = [i.path for i in listed
                if os.path.basename(i.path).startswith(self.job_id + "-") and os.path.basename(i.path) not in kept]
        _delete_quietly(store, mine)
        if getattr(store, "scheme", "") == "file":
            _remove_local_temp_files(self._data_path(root, ""), self.job_id)


def _delete_quietly(store: Any, paths: list[str]) -> None:
    from lancejit.io.sync import run_sync

    if not paths:
        return
    try:
        run_sync(store.delete_many(paths), store=store)
    except Exception:  # noqa: BLE001
        for p in paths:
            try:
                run_sync(store.delete(p), store=store)
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


__all__ = ["LanceCommitMessage", "LanceWriter"]
