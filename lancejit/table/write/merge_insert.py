"""``ds.merge_insert(on)``: upsert source rows into a dataset, the reference's builder and rules.

The source is joined with the dataset on the key column(s) ``on``; a key containing a null
never matches (SQL join semantics), so source rows with null keys are "not matched" and target
rows with null keys are "not matched by source".

* ``when_matched_update_all(condition=None)``: matched target rows are replaced by their source
  row (where ``condition``, a SQL expression over ``source.<col>`` and ``target.<col>``, is
  true).  A target row matched (and selected) by more than one source row is an error
  (:class:`MergeInsertAmbiguousError`), as in the reference.
* ``when_not_matched_insert_all()``: source rows without a match are appended (duplicates
  among them included, as the reference does).
* ``when_not_matched_by_source_delete(expr=None)``: target rows matched by no source row (and
  satisfying ``expr`` when given) are deleted.

One ``Update`` commit (``REWRITE_ROWS``, ``fields_for_preserving_frag_bitmap`` = the top-level
field ids), exactly the reference's transaction: replaced rows are deleted from their fragments
and written, followed by the inserted rows, to new fragments.  With stable row ids, replaced rows
keep their ids; inserted rows get fresh ids.  Returns ``{"num_inserted_rows",
"num_updated_rows", "num_deleted_rows"}``.  A source with only some columns (keys included)
updates just those columns of matched rows and inserts nulls for the others (the reference
commits that case as ``REWRITE_COLUMNS``; lancejit rewrites the rows).  Without ``when_not_matched_by_source_delete``, a single key column with a BTREE or BITMAP index
is matched through it: only the target rows holding a source key are read (``key IN (source
keys)``, answered by the index where it covers the fragments).  Concurrent
merge_inserts touching different rows both land (deletions in the same fragments are merged by
the committer); otherwise the whole operation is redone on the latest version
(``conflict_retries`` times).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Awaitable, Callable, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lancejit.core.config import settings
from lancejit.core.errors import ExecutionError, InvalidInputError, NotSupportedError, RetryableCommitError
from lancejit.core.schema import LanceSchema
from lancejit.encoding.kernels import hash_join

from ..commit import REWRITE_ROWS, CommitResult, Update, new_fragment
from ..commit.rowid_writer import encode_row_id_sequence
from ..filter.compile import compile_filter, evaluate_filter
from ..read.fragment import ROWADDR, ROWID
from .mutate import _delete_offsets, _group_addresses
from .data_files import DEFAULT_MAX_ROWS_PER_FILE, FragmentFileWriter, conform_batch, normalize_storage_version
from .on_version import commit_result, loaded_manifest, open_committed, open_data_files_of
from .sources import source_table

if TYPE_CHECKING:  # pragma: no cover
    from ..commit import LoadedManifest
    from ..read.dataset_reader import DatasetReader

_S, _T = "__lancejit_src", "__lancejit_tgt"


class MergeInsertAmbiguousError(InvalidInputError):
    """Several source rows match (and would update) the same target row."""


async def _key_filter(ds: "DatasetReader", src: pa.Table, keys: Sequence[str]) -> str | None:
    """``key IN (the source's keys)`` when a single integer or string key column has a scalar
    index that can answer it, else None (every target key is read)."""
    from ..indices.scalar.catalog import scalar_segments

    if len(keys) != 1:
        return None
    key = keys[0]
    t = ds.schema.field(key).type
    is_str = pa.types.is_string(t) or pa.types.is_large_string(t)
    if not (pa.types.is_integer(t) or is_str):
        return None
    if not any(s.column == key and s.kind in ("BTREE", "BITMAP", "") for s in await scalar_segments(ds.context)):
        return None
    col = src.column(key)
    values = pc.unique(col.drop_null() if col.null_count else col)
    if len(values) == 0:
        return "false"
    if is_str:
        if not (pa.types.is_string(values.type) or pa.types.is_large_string(values.type)):
            return None
        items = ", ".join("'" + v.replace("'", "''") + "'" for v in values.to_pylist())
    else:
        if not pa.types.is_integer(values.type):
            return None
        items = ", ".join(str(v) for v in values.to_numpy().tolist())
    name = key.replace("`", "``")
    return f"`{name}` IN ({items})"


def _valid_keys(t: pa.Table, keys: Sequence[str]) -> np.ndarray:
    """True for rows whose key columns are all non-null."""
    ok = np.ones(t.num_rows, dtype=bool)
    for k in keys:
        if t.column(k).null_count:
            ok &= ~np.asarray(t.column(k).is_null().to_numpy(zero_copy_only=False), dtype=bool)
    return ok


def _join(src: pa.Table, tgt: pa.Table, keys: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """Matching pairs ``(source row, target row)`` on ``keys`` (null keys never match)."""
    sv, tv = _valid_keys(src, keys), _valid_keys(tgt, keys)
    if len(keys) == 1 and pa.types.is_integer(src.schema.field(keys[0]).type):
        return _join_integers(src.column(keys[0]), sv, tgt.column(keys[0]), tv)
    return _join_acero(src, sv, tgt, tv, keys)


def _join_acero(src: pa.Table, sv: np.ndarray, tgt: pa.Table, tv: np.ndarray,
                keys: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_join` by Arrow's hash join (any key types Arrow can hash)."""
    left = src.select(list(keys)).append_column(_S, pa.array(np.arange(src.num_rows, dtype=np.int64))).filter(sv)
    right = tgt.select(list(keys)).append_column(_T, pa.array(np.arange(tgt.num_rows, dtype=np.int64))).filter(tv)
    try:
        # Acero builds its hash table on the right side: the (usually much smaller) source
        joined = right.join(left, keys=list(keys), join_type="inner", use_threads=False)
    except (pa.ArrowNotImplementedError, pa.ArrowInvalid, pa.ArrowTypeError) as exc:
        raise NotSupportedError(f"merge_insert cannot join on {list(keys)}: {exc}") from None
    s = joined.column(_S).to_numpy().astype(np.int64, copy=False)
    t = joined.column(_T).to_numpy().astype(np.int64, copy=False)
    order = np.lexsort((s, t))
    return s[order], t[order]


def _conform_source(src: pa.Table, schema: pa.Schema, keys: Sequence[str]) -> pa.Table:
    """``src`` with the dataset's column order and types: every column, or (partial updates) a
    subset containing the keys; :class:`SchemaMismatchError` otherwise."""
    names = [n for n in schema.names if n in src.column_names]
    sub = pa.schema([schema.field(n) for n in names])
    if len(names) < len(schema) and (len(names) != src.num_columns or not set(keys) <= set(names)):
        sub = schema  # let conform_batch name what is wrong
    for i, name in enumerate(src.column_names):  # pandas gives large_string for string columns
        j = schema.get_field_index(name)
        if j >= 0 and _same_family(src.schema.field(i).type, schema.field(j).type):
            src = src.set_column(i, src.schema.field(i).with_type(schema.field(j).type),
                                 src.column(i).cast(schema.field(j).type))
    batches = src.to_batches() or [pa.RecordBatch.from_pylist([], schema=src.schema)]
    return pa.Table.from_batches([conform_batch(b, sub, "merge_insert source") for b in batches], schema=sub)


def _same_family(a: pa.DataType, b: pa.DataType) -> bool:
    """Different string (or binary) layouts of the same logical type."""
    if a.equals(b):
        return False
    strings = (pa.types.is_string, pa.types.is_large_string)
    binaries = (pa.types.is_binary, pa.types.is_large_binary)
    return any(all(any(f(t) for f in fam) for t in (a, b)) for fam in (strings, binaries))


def full_rows(src: pa.Table, rows: np.ndarray, base: pa.Table | None, schema: pa.Schema) -> pa.Table:
    """Source ``rows`` with every column of ``schema``: columns the source lacks come from
    ``base`` (the target rows being replaced) or are null (inserts)."""
    cols = []
    for f in schema:
        if f.name in src.column_names:
            cols.append(src.column(f.name).take(pa.array(rows, pa.int64())))
        elif base is not None:
            cols.append(base.column(f.name))
        else:
            cols.append(pa.nulls(len(rows), f.type))
    return pa.table(cols, schema=schema)


def _int64_keys(col: Any) -> np.ndarray:
    """An integer key column as int64 (nulls as 0: the caller masks them; uint64 viewed, so
    equal keys stay equal), without a float detour."""
    col = col.fill_null(0) if col.null_count else col
    if isinstance(col, pa.ChunkedArray):
        col = col.combine_chunks() if col.num_chunks != 1 else col.chunk(0)
    values = col.to_numpy(zero_copy_only=False)
    if values.dtype == np.uint64:
        return values.view(np.int64)
    return values.astype(np.int64, copy=False)


def _join_integers(skey: Any, sv: np.ndarray, tkey: Any, tv: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_join` for one integer key: a hash table of the source keys
    (:mod:`lancejit.encoding.kernels.hash_join`) probed with every target key; all pairs
    (duplicates included), ordered by (target, source) row."""
    return hash_join.join(_int64_keys(skey), sv, _int64_keys(tkey), tv)


def _row_ids(tgt: pa.Table) -> np.ndarray:
    """The target rows' ids: ``_rowid`` when scanned (stable row ids), else their addresses
    (which are their ids)."""
    return tgt.column(ROWID if ROWID in tgt.column_names else ROWADDR).to_numpy()


def ambiguous_error(src: pa.Table, row: int, keys: Sequence[str]) -> MergeInsertAmbiguousError:
    shown = ", ".join(f"{k} = {src.column(k)[row].as_py()!r}" for k in keys)
    return MergeInsertAmbiguousError(
        f"Ambiguous merge inserts are prohibited: multiple source rows match the same target row on "
        f"({shown}); ensure each target row is matched by at most one source row"
    )


async def commit_upsert_async(ds: "DatasetReader", manifest: Any, new_fragments: Sequence[Any],
                              removed_addrs: np.ndarray, *, loaded: LoadedManifest | None = None) -> int:
    """:func:`commit_upsert`'s version."""
    return (await commit_upsert(ds, manifest, new_fragments, removed_addrs, loaded=loaded)).version


async def commit_upsert(ds: "DatasetReader", manifest: Any, new_fragments: Sequence[Any],
                        removed_addrs: np.ndarray, *, loaded: LoadedManifest | None = None) -> CommitResult:
    """Commit a merge insert of ``ds`` (its version's ``manifest``): rows at ``removed_addrs``
    (updated or deleted; uint64 row addresses) deleted (deletion files written here), the
    ``new_fragments`` (updated rows, then inserted ones) added -- ONE ``Update`` (``REWRITE_ROWS``),
    the reference's transaction.  Concurrent deletions in the same fragments are merged by the
    committer; :class:`RetryableCommitError` when the operation must be redone."""
    lschema = LanceSchema.from_pb(manifest.fields, dict(manifest.schema_metadata))
    groups = _group_addresses(np.asarray(removed_addrs, dtype=np.uint64))
    updated, removed = await _delete_offsets(ds, manifest, groups)
    op = Update(
        removed_fragment_ids=removed, updated_fragments=updated, new_fragments=tuple(new_fragments),
        fields_modified=(), update_mode=REWRITE_ROWS,
        fields_for_preserving_frag_bitmap=tuple(f.id for f in lschema.fields),
    )
    return await commit_result(ds, op, loaded=loaded, affected_rows=groups)


class MergeInsertBuilder:
    """Configure then :meth:`execute` a merge insert (see :mod:`lancejit.table.write.merge_insert`)."""

    def __init__(self, dataset: "DatasetReader", on: str | Sequence[str],
                 on_commit: Callable[["DatasetReader"], Awaitable[None]] | None = None) -> None:
        ds = dataset
        keys = [on] if isinstance(on, str) else list(on)
        if not keys or not all(isinstance(k, str) for k in keys):
            raise InvalidInputError("merge_insert needs one or more key column names")
        for k in keys:
            if ds.schema.get_field_index(k) < 0:
                raise InvalidInputError(f"merge_insert key {k!r} is not a column of {ds.uri}")
        self._ds = ds.snapshot()
        self._keys = keys
        self._update = False
        self._condition: str | None = None
        self._insert = False
        self._delete = False
        self._delete_expr: str | None = None
        self._retries = settings().conflict_retries
        self._fail_matched = False
        self._delete_matched = False
        self._on_commit = on_commit

    def when_matched_update_all(self, condition: str | None = None) -> "MergeInsertBuilder":
        """Replace matched target rows (where ``condition`` over ``source.*`` / ``target.*`` holds)."""
        self._update, self._condition = True, condition
        return self

    def when_matched_delete(self) -> "MergeInsertBuilder":
        """Delete the target rows that a source row matches."""
        self._delete_matched = True
        return self

    def when_matched_fail(self) -> "MergeInsertBuilder":
        """Fail (:class:`ExecutionError`, an ``OSError``) when any source row matches a target row."""
        self._fail_matched = True
        return self

    def retry_timeout(self, timeout: Any) -> "MergeInsertBuilder":
        """Accepted for the reference's API; lancejit bounds retries by :meth:`conflict_retries`."""
        return self

    def when_not_matched_insert_all(self) -> "MergeInsertBuilder":
        """Insert source rows that match no target row."""
        self._insert = True
        return self

    def when_not_matched_by_source_delete(self, expr: str | None = None) -> "MergeInsertBuilder":
        """Delete target rows no source row matches (those satisfying ``expr`` when given)."""
        self._delete, self._delete_expr = True, expr
        return self

    def conflict_retries(self, max_retries: int) -> "MergeInsertBuilder":
        """How many times to redo the operation when a concurrent commit conflicts."""
        if max_retries < 0:
            raise InvalidInputError("conflict_retries must be >= 0")
        self._retries = int(max_retries)
        return self

    async def execute_async(self, data_obj: Any, *, schema: pa.Schema | None = None) -> dict[str, int]:
        if not (self._update or self._insert or self._delete or self._delete_matched):
            raise InvalidInputError("The merge insert job is not configured to change the data in any way")
        src_all = await source_table(data_obj, schema)
        file_schema = self._ds.schema
        src = _conform_source(src_all, file_schema, self._keys)
        if src.num_columns < len(file_schema) and self._delete:
            raise NotSupportedError("when_not_matched_by_source_delete needs source data with every column "
                                    "of the dataset (as in the reference)")
        if self._delete_expr is not None:
            compile_filter(self._delete_expr, file_schema)
        if self._condition is not None:  # bad conditions fail before any work
            row = pa.struct(list(file_schema))
            compile_filter(self._condition, pa.schema([("source", row), ("target", row)]))
        current = self._ds
        for attempt in range(self._retries + 1):
            try:
                stats, new = await self._execute_once(current, src)
            except RetryableCommitError:
                if attempt >= self._retries:
                    raise
                current = await current.latest_async()
                continue
            if self._on_commit is not None:
                await self._on_commit(new)
            return stats
        raise AssertionError("unreachable")  # pragma: no cover

    def execute(self, data_obj: Any, *, schema: pa.Schema | None = None) -> dict[str, int]:
        """Run the merge insert on ``data_obj``; returns the inserted / updated / deleted row counts."""
        from lancejit.io.sync import run_sync

        return run_sync(self.execute_async(data_obj, schema=schema), store=self._ds.context.store)

    # ------------------------------------------------------------------------------ the work
    async def _matched_updates(self, ds: "DatasetReader", src: pa.Table, tgt: pa.Table,
                               s: np.ndarray, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The (source row, target row) pairs to update: condition applied, ambiguity checked."""
        if self._condition is not None and len(s):
            target_rows = await ds.take_rows_async(_row_ids(tgt)[t], columns=ds.schema.names)
            both = pa.table({
                "source": pa.StructArray.from_arrays([src.column(n).take(pa.array(s)).combine_chunks()
                                                      for n in src.column_names], names=src.column_names),
                "target": pa.StructArray.from_arrays([target_rows.column(n).combine_chunks()
                                                      for n in target_rows.column_names],
                                                     names=target_rows.column_names),
            })
            compiled = compile_filter(self._condition, both.schema)
            keep = evaluate_filter(compiled, both).to_numpy()
            s, t = s[keep], t[keep]
        if len(t) > 1:
            dup = np.flatnonzero(t[1:] == t[:-1])
            if len(dup):
                raise ambiguous_error(src, int(s[dup[0] + 1]), self._keys)
        return s, t

    async def _by_source_deletes(self, ds: "DatasetReader", tgt: pa.Table, matched_t: np.ndarray) -> np.ndarray:
        """Row addresses of target rows to delete because no source row matches them."""
        unmatched = np.ones(tgt.num_rows, dtype=bool)
        unmatched[matched_t] = False
        addrs = tgt.column(ROWADDR).to_numpy()[unmatched]
        if self._delete_expr is not None and len(addrs):
            hit = (await ds.to_table_async(columns=[], filter=self._delete_expr, with_row_address=True))
            addrs = np.intersect1d(addrs, hit.column(ROWADDR).to_numpy())
        return addrs.astype(np.uint64, copy=False)

    async def _execute_once(self, ds: "DatasetReader", src: pa.Table) -> tuple[dict[str, int], "DatasetReader"]:
        """One attempt: the counts and the dataset at the version committed (opened from the
        manifest written)."""
        c = ds.context
        lm = await loaded_manifest(ds)
        m = lm.manifest
        lschema = LanceSchema.from_pb(m.fields, dict(m.schema_metadata))
        file_schema = lschema.to_arrow(dataset=False)
        flt = None if self._delete else await _key_filter(ds, src, self._keys)
        await open_data_files_of(ds)
        tgt = await ds.to_table_async(
            columns=self._keys, filter=flt, with_row_id=ds.has_stable_row_ids, with_row_address=True
        )
        s, t = _join(src, tgt, self._keys)
        if self._fail_matched and len(s):
            raise ExecutionError(f"merge insert failed: source row {int(s[0])} matches a target row "
                                 f"(keys {self._keys}) and when_matched_fail was set")
        upd_s = upd_t = np.empty(0, np.int64)
        if self._update:
            upd_s, upd_t = await self._matched_updates(ds, src, tgt, s, t)
        ins = np.empty(0, np.int64)
        if self._insert:
            matched = np.zeros(src.num_rows, dtype=bool)
            matched[s] = True
            ins = np.flatnonzero(~matched)
        dels = await self._by_source_deletes(ds, tgt, np.unique(t)) if self._delete else np.empty(0, np.uint64)
        if self._delete_matched and len(t):
            matched_addrs = tgt.column(ROWADDR).to_numpy()[np.unique(t)].astype(np.uint64)
            dels = np.union1d(dels, matched_addrs).astype(np.uint64)

        kept_ids = _row_ids(tgt)[upd_t] if ds.has_stable_row_ids else None
        removed_addrs = np.concatenate([tgt.column(ROWADDR).to_numpy()[upd_t], dels]).astype(np.uint64)
        storage = normalize_storage_version(m.data_format.version or "2.0")
        writer = FragmentFileWriter(c.store, c.root, lschema.fields, dict(lschema.metadata), storage,
                                    max_rows_per_file=DEFAULT_MAX_ROWS_PER_FILE,
                                    storage_options=c.storage_options)
        try:
            out = []
            if len(upd_s):
                base = None
                if src.num_columns < len(file_schema):
                    base = await ds.take_rows_async(_row_ids(tgt)[upd_t], columns=file_schema.names)
                out.append(full_rows(src, upd_s, base, file_schema))
            if len(ins):
                out.append(full_rows(src, ins, None, file_schema))
            for part in out:
                for batch in part.cast(file_schema).to_batches():
                    if batch.num_rows:
                        await writer.write(batch)
            files = await writer.finish()
            new_frags, start = [], 0
            for wf in files:
                ids = kept_ids[start:start + wf.rows] if kept_ids is not None else None
                row_ids = encode_row_id_sequence(ids) if ids is not None and len(ids) else None
                new_frags.append(new_fragment([writer.data_file(wf)], wf.rows, row_ids=row_ids))
                start += wf.rows
            done = await commit_upsert(ds, m, new_frags, removed_addrs, loaded=lm)
        except BaseException:
            await writer.cleanup()
            raise
        return {"num_inserted_rows": int(len(ins)), "num_updated_rows": int(len(upd_s)),
                "num_deleted_rows": int(len(dels))}, open_committed(ds, done)


__all__ = ["MergeInsertAmbiguousError", "MergeInsertBuilder", "ambiguous_error", "commit_upsert", "commit_upsert_async",
           "full_rows"]
