"""Table maintenance run by Spark: the work on executors, the plan and ONE commit on the driver.

* :func:`compact_files`: the reference's plan / execute / commit split of compaction
  (:mod:`lancejit.table.write.compaction`): tasks planned on the driver, each task's fragments
  rewritten by one Spark task, the results committed as one ``Rewrite`` (fragment ids reserved
  first).  As ``ds.optimize.compact_files()``: a concurrent commit touching the same fragments
  makes the whole compaction planned again on the latest version (``max_retries`` times).
* :func:`merge_insert`: upsert a Spark DataFrame into a dataset.  The source is joined with the
  target's keys by Spark (a scan of the key columns and row addresses of the version read; SQL
  join semantics: null keys never match); each task of the join writes its updated and inserted
  rows to new data files and returns them with the row addresses to delete; the driver commits
  ONE ``Update`` (:func:`lancejit.table.write.merge_insert.commit_upsert_async`), with the local
  operation's rules: a target row matched by several source rows is an error, concurrent
  merge inserts touching other rows both land, otherwise the operation is redone on the latest
  version (``conflict_retries`` times).

Files written by a job that fails or loses its commit are removed (their names start with the
job's id, so files of tasks Spark cancelled are found too).
"""

from __future__ import annotations

import functools
import pickle
import uuid
from typing import Any, Iterator, Mapping, Sequence

import numpy as np
import pyarrow as pa

from lancejit.core.errors import InvalidInputError, NotSupportedError, RetryableCommitError

ADDR = "__lancejit_addr"
ROW_ID = "__lancejit_rowid"
SOURCE = "__lancejit_source"
PAYLOAD = "payload"


def _so(storage_options: Mapping[str, str] | None) -> dict[str, str] | None:
    return {str(k): str(v) for k, v in storage_options.items()} if storage_options else None


def _sweep(uri: str, storage_options: dict[str, str] | None, prefix: str) -> None:
    """Delete the data files whose names start with ``prefix`` (a failed job's files)."""
    from lancejit.io import open_store
    from lancejit.io.store import join_path
    from lancejit.io.sync import run_sync
    from lancejit.table.write.data_files import DATA_DIR

    store, root = open_store(uri, storage_options)
    data = join_path(root.rstrip("/"), DATA_DIR, "")
    try:
        listed = run_sync(store.list(data, recursive=False), store=store)
        mine = [i.path for i in listed if i.path.rsplit("/", 1)[-1].startswith(prefix)]
        if mine:
            run_sync(store.delete_many(mine), store=store)
    except Exception:  # noqa: BLE001 - best effort: unreferenced files are harmless
        pass


# --------------------------------------------------------------------------- compaction
def _compact_task(uri: str, storage_options: dict[str, str] | None, options: Any, prefix: str,
                  task: Any) -> Any:
    """One Spark task: rewrite ``task``'s fragments, return the :class:`RewriteResult`."""
    from lancejit.io.sync import run_sync
    from lancejit.table.write.compaction import execute_compaction_task_async

    from .reader import open_dataset

    ds = open_dataset(uri, task.read_version, storage_options)
    return run_sync(execute_compaction_task_async(ds, task, options, name_prefix=prefix), store=ds.store)


def compact_files(spark: Any, uri: str, *, storage_options: Mapping[str, str] | None = None,
                  max_retries: int | None = None, **kwargs: Any) -> Any:
    """Compact the dataset at ``uri`` with Spark (see the module docstring).  ``kwargs``: the
    options of ``ds.optimize.compact_files`` (``target_rows_per_fragment``,
    ``materialize_deletions``, ``materialize_deletions_threshold``, ``max_bytes_per_file``,
    ``batch_size``, ``excluded_fragment_ids``...).  Returns the
    :class:`~lancejit.table.write.compaction.CompactionMetrics`."""
    from lancejit.io.sync import run_sync
    from lancejit.table import dataset
    from lancejit.core.config import settings
    from lancejit.table.write.compaction import (
        CompactionMetrics,
        CompactionOptions,
        commit_compaction_async,
        delete_rewritten,
        plan_compaction_async,
    )

    if "excluded_fragment_ids" in kwargs and kwargs["excluded_fragment_ids"] is not None:
        kwargs["excluded_fragment_ids"] = tuple(int(i) for i in kwargs["excluded_fragment_ids"])
    unknown = set(kwargs) - set(CompactionOptions.__dataclass_fields__)
    if unknown:
        raise InvalidInputError(f"unknown compaction options {sorted(unknown)}")
    options = CompactionOptions(**{k: v for k, v in kwargs.items() if v is not None}).validated()
    so = _so(storage_options)
    retries = settings().conflict_retries if max_retries is None else int(max_retries)
    for attempt in range(retries + 1):
        ds = dataset(uri, storage_options=so)
        plan = run_sync(plan_compaction_async(ds, options), store=ds.store)
        if not plan.tasks:
            return CompactionMetrics()
        prefix = f"{uuid.uuid4().hex[:16]}-"
        rdd = spark.sparkContext.parallelize(list(plan.tasks), len(plan.tasks))
        try:
            results = rdd.map(functools.partial(_compact_task, uri, so, plan.options, prefix)).collect()
        except BaseException:
            _sweep(uri, so, prefix)
            raise
        try:
            return run_sync(commit_compaction_async(ds, results), store=ds.store)
        except RetryableCommitError:
            run_sync(delete_rewritten(ds, results), store=ds.store)
            if attempt >= retries:
                raise
        except BaseException:
            run_sync(delete_rewritten(ds, results), store=ds.store)
            raise
    raise AssertionError("unreachable")  # pragma: no cover


# --------------------------------------------------------------------------- merge insert
class _Upsert:
    """What every task of a merge insert needs (picklable)."""

    def __init__(self, uri: str, storage_options: dict[str, str] | None, version: int, keys: list[str],
                 source_columns: list[str], update: bool, condition: str | None, insert: bool,
                 delete: bool, delete_expr: str | None, stable: bool, plan: Any) -> None:
        self.uri, self.storage_options, self.version, self.keys = uri, storage_options, version, keys
        self.source_columns = source_columns
        self.update, self.condition, self.insert = update, condition, insert
        self.delete, self.delete_expr, self.stable = delete, delete_expr, stable
        self.plan = plan

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from lancejit.spark.surface import surfaced_iter

        return surfaced_iter(self._run(batches))

    def _run(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from lancejit.table.meta.fragment_meta import fragment_pb

        from .fragments import write_task

        got = [b for b in batches if b.num_rows]
        rows = self._rows(pa.Table.from_batches(got)) if got else None
        out = {"fragments": (), "removed": b"", "updated": 0, "inserted": 0, "deleted": 0}
        if rows is not None:
            new_rows, kept_ids, removed, counts = rows
            metas = write_task(new_rows.to_batches(), self.plan) if new_rows.num_rows else ()
            frags = tuple(fragment_pb(m).SerializeToString() for m in metas)
            if kept_ids is not None and len(kept_ids):
                frags = _with_row_ids(frags, kept_ids)
            out = {"fragments": frags, "removed": removed.astype(np.uint64).tobytes(), **counts}
        yield pa.RecordBatch.from_pydict({PAYLOAD: [pickle.dumps(out)]}, schema=pa.schema([(PAYLOAD, pa.binary())]))

    def _rows(self, t: pa.Table) -> tuple[pa.Table, np.ndarray | None, np.ndarray, dict[str, int]]:
        """``(rows to write: updates then inserts, row ids the updates keep, row addresses to
        delete, counts)`` of this task's slice of the join."""
        from lancejit.table.filter.compile import compile_filter, evaluate_filter
        from lancejit.table.write.merge_insert import ambiguous_error, full_rows

        from .fragments import conform
        from .reader import open_dataset

        ds = open_dataset(self.uri, self.version, self.storage_options)
        schema = ds.schema
        has_src = t.column(SOURCE).is_valid().to_numpy(zero_copy_only=False)
        addr_col = t.column(ADDR)
        has_tgt = addr_col.is_valid().to_numpy(zero_copy_only=False)
        addrs = addr_col.fill_null(0).to_numpy().astype(np.uint64)
        rid_col = t.column(ROW_ID) if ROW_ID in t.column_names else addr_col
        rids = rid_col.fill_null(0).to_numpy().astype(np.uint64)
        sub = pa.schema([schema.field(n) for n in self.source_columns])
        src = pa.Table.from_batches([conform(b, sub) for b in t.select(self.source_columns).to_batches()],
                                    schema=sub) if t.num_rows else sub.empty_table()
        matched = np.flatnonzero(has_src & has_tgt) if self.update else np.empty(0, np.int64)
        if len(matched) and self.condition is not None:
            target = ds.take_rows(rids[matched], columns=schema.names)
            both = pa.table({
                "source": pa.StructArray.from_arrays(
                    [src.column(n).take(pa.array(matched)).combine_chunks() for n in src.column_names],
                    names=src.column_names),
                "target": pa.StructArray.from_arrays([target.column(n).combine_chunks() for n in target.column_names],
                                                     names=target.column_names),
            })
            keep = evaluate_filter(compile_filter(self.condition, both.schema), both).to_numpy()
            matched = matched[keep]
        if len(matched) > 1:
            order = np.argsort(addrs[matched], kind="stable")
            sa = addrs[matched][order]
            dup = np.flatnonzero(sa[1:] == sa[:-1])
            if len(dup):
                raise ambiguous_error(src, int(matched[order][dup[0] + 1]), self.keys)
        inserts = np.flatnonzero(has_src & ~has_tgt) if self.insert else np.empty(0, np.int64)
        deletes = np.flatnonzero(~has_src & has_tgt) if self.delete else np.empty(0, np.int64)
        if len(deletes) and self.delete_expr is not None:
            target = ds.take_rows(rids[deletes], columns=schema.names)
            keep = evaluate_filter(compile_filter(self.delete_expr, schema), target).to_numpy()
            deletes = deletes[keep]
        parts = []
        if len(matched):
            base = None
            if len(self.source_columns) < len(schema):
                base = ds.take_rows(rids[matched], columns=schema.names)
            parts.append(full_rows(src, matched, base, schema))
        if len(inserts):
            parts.append(full_rows(src, inserts, None, schema))
        new_rows = pa.concat_tables(parts) if parts else schema.empty_table()
        kept = rids[matched] if self.stable and len(matched) else None
        removed = np.concatenate([addrs[matched], addrs[deletes]])
        return new_rows, kept, removed, {"updated": int(len(matched)), "inserted": int(len(inserts)),
                                         "deleted": int(len(deletes))}


def _with_row_ids(frags: Sequence[bytes], kept: np.ndarray) -> tuple[bytes, ...]:
    """The fragments with their first rows' ids set to ``kept`` (updated rows keep their ids;
    the rest get fresh ids at commit)."""
    from lancejit.pb import table_pb2
    from lancejit.table.commit import encode_row_id_sequence

    out, start = [], 0
    for raw in frags:
        f = table_pb2.DataFragment.FromString(raw)
        ids = kept[start:start + f.physical_rows]
        if len(ids):
            f.inline_row_ids = encode_row_id_sequence(ids)
        start += f.physical_rows
        out.append(f.SerializeToString())
    return tuple(out)


def merge_insert(
    df: Any,
    uri: str,
    on: str | Sequence[str],
    *,
    when_matched_update_all: bool = True,
    condition: str | None = None,
    when_not_matched_insert_all: bool = True,
    when_not_matched_by_source_delete: bool = False,
    delete_expr: str | None = None,
    storage_options: Mapping[str, str] | None = None,
    conflict_retries: int | None = None,
    max_rows_per_file: int = 1 << 20,
) -> dict[str, int]:
    """Upsert the Spark DataFrame ``df`` into the dataset at ``uri`` on key column(s) ``on``
    (see the module docstring and ``ds.merge_insert``): matched rows replaced by their source row
    (where ``condition``, SQL over ``source.*`` and ``target.*``, holds), unmatched source rows
    inserted, and with ``when_not_matched_by_source_delete`` target rows no source row matches
    (satisfying ``delete_expr`` when given) deleted.  Returns ``{"num_inserted_rows",
    "num_updated_rows", "num_deleted_rows"}``."""
    from lancejit.io.sync import run_sync
    from lancejit.pb import table_pb2
    from lancejit.table import dataset
    from lancejit.table.commit import load_manifest
    from lancejit.table.filter.compile import compile_filter
    from lancejit.table.write.merge_insert import commit_upsert_async

    from .session import register
    from .fragments import match_columns, plan_write

    keys = [on] if isinstance(on, str) else list(on)
    if not keys or not all(isinstance(k, str) for k in keys):
        raise InvalidInputError("merge_insert needs one or more key column names")
    if not (when_matched_update_all or when_not_matched_insert_all or when_not_matched_by_source_delete):
        raise InvalidInputError("The merge insert job is not configured to change the data in any way")
    from lancejit.core.config import settings

    so = _so(storage_options)
    spark = df.sparkSession
    register(spark)
    retries = settings().conflict_retries if conflict_retries is None else int(conflict_retries)
    for attempt in range(retries + 1):
        ds = dataset(uri, storage_options=so)
        schema = ds.schema
        match = match_columns(df.columns, schema.names)
        extra = [c for c in df.columns if c not in match]
        if extra:
            raise InvalidInputError(f"merge_insert source columns {extra} are not columns of {uri} "
                                    f"(columns: {schema.names})")
        missing_keys = [k for k in keys if k not in schema.names or k not in match.values()]
        if missing_keys:
            raise InvalidInputError(f"merge_insert key(s) {missing_keys} must be columns of both {uri} and the source")
        cols = [n for n in schema.names if n in match.values()]
        if when_not_matched_by_source_delete and len(cols) < len(schema):
            raise NotSupportedError("when_not_matched_by_source_delete needs source data with every column "
                                    "of the dataset (as in the reference)")
        if delete_expr is not None:
            compile_filter(delete_expr, schema)
        if condition is not None:
            row = pa.struct(list(schema))
            compile_filter(condition, pa.schema([("source", row), ("target", row)]))
        back = {v: k for k, v in match.items()}
        src = df.select(*[df[back[n]].alias(n) for n in cols])
        meta = ["_rowaddr"] + (["_rowid"] if ds.has_stable_row_ids else [])
        tgt = (spark.read.format("lancejit").option("version", ds.version).option("columns", ",".join(keys + meta))
               .options(**{f"storage_options.{k}": v for k, v in (so or {}).items()}).load(uri)
               .withColumnRenamed("_rowaddr", ADDR))
        if ds.has_stable_row_ids:
            tgt = tgt.withColumnRenamed("_rowid", ROW_ID)
        tschema = {f.name: f.dataType for f in tgt.schema.fields}
        from pyspark.sql import functions as F

        src = src.select(*[F.col(n).cast(tschema[n]).alias(n) if n in keys else F.col(n) for n in cols],
                         F.lit(True).alias(SOURCE))
        how = "full" if when_not_matched_by_source_delete else "left"
        joined = src.join(tgt, on=keys, how=how)
        prefix = f"{uuid.uuid4().hex[:16]}-"
        plan = plan_write(uri, schema, overwrite=False, storage_options=so, max_rows_per_file=max_rows_per_file,
                          name_prefix=prefix)
        job = _Upsert(uri, so, ds.version, keys, cols, when_matched_update_all, condition,
                      when_not_matched_insert_all, when_not_matched_by_source_delete, delete_expr,
                      ds.has_stable_row_ids, plan)
        try:
            payloads = [pickle.loads(r[PAYLOAD]) for r in joined.mapInArrow(job, f"{PAYLOAD} binary").collect()]
        except BaseException:
            _sweep(uri, so, prefix)
            raise
        frags = [table_pb2.DataFragment.FromString(raw) for p in payloads for raw in p["fragments"]]
        removed = np.concatenate([np.frombuffer(p["removed"], dtype=np.uint64) for p in payloads] or
                                 [np.empty(0, np.uint64)])
        counts = {k: sum(p[k] for p in payloads) for k in ("updated", "inserted", "deleted")}
        try:
            m = run_sync(load_manifest(ds.store, ds.context.root, ds.version), store=ds.store).manifest
            if frags or len(removed):
                run_sync(commit_upsert_async(ds, m, frags, removed), store=ds.store)
        except RetryableCommitError:
            _sweep(uri, so, prefix)
            if attempt >= retries:
                raise
            continue
        except BaseException:
            _sweep(uri, so, prefix)
            raise
        return {"num_inserted_rows": counts["inserted"], "num_updated_rows": counts["updated"],
                "num_deleted_rows": counts["deleted"]}
    raise AssertionError("unreachable")  # pragma: no cover


__all__ = ["compact_files", "merge_insert"]
