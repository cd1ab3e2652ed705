"""Row changes on a dataset version: ``delete(predicate)`` and ``update(values, where)``.

Delete: the rows matching the predicate (live rows only) are added to each fragment's deletion
file (a new cumulative file: Arrow IPC up to 5 000 rows, a Roaring bitmap beyond); fragments
left with no live row are removed; one ``Delete`` commit (also when nothing matched, as the
reference does).

Update (the reference's REWRITE_ROWS mode): matching rows are read, the new values computed
(SQL expressions over the row, or literal values), the rows written to new fragments and
deleted from their old fragments; one ``Update`` commit whose ``fields_for_preserving_frag_bitmap``
lists the updated fields.  With stable row ids the moved rows keep their ids (and created-at
versions); otherwise their ``_rowid`` is their new address.

A concurrent delete of other rows of the same fragments is merged by the committer (the affected
row offsets are passed along); a conflict that needs a redo re-runs the operation on the latest
version (at most ``max_retries`` times).
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any, Mapping

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lancejit.core.config import settings
from lancejit.core.errors import InvalidInputError, RetryableCommitError
from lancejit.core.schema import LanceSchema

from ..commit import REWRITE_ROWS, Delete, Update, delete_rows, new_fragment
from ..commit.deletion_writer import sorted_unique
from ..commit.rowid_writer import encode_row_id_sequence
from ..filter.compile import compile_filter
from ..filter.evaluate import project
from ..read.fragment import ROWADDR, ROWID, FragmentReader
from .data_files import DEFAULT_MAX_ROWS_PER_FILE, FragmentFileWriter, normalize_storage_version
from .on_version import commit_on, loaded_manifest, open_data_files_of

if TYPE_CHECKING:  # pragma: no cover
    from ..read.dataset_reader import DatasetReader

#: Rows per batch of the scans feeding a writer (each batch costs a writer call per column).
WRITE_BATCH_ROWS = 1 << 17


def _predicate_text(predicate: Any) -> str:
    return predicate if isinstance(predicate, str) else str(predicate)


def _group_addresses(addrs: np.ndarray) -> dict[int, np.ndarray]:
    """Row addresses -> ``{fragment id: sorted local offsets (uint32)}``; addresses in scan
    order (ascending) are split without sorting."""
    addrs = np.asarray(addrs, dtype=np.uint64)
    if len(addrs) == 0:
        return {}
    if len(addrs) > 1 and not bool((addrs[1:] > addrs[:-1]).all()):
        addrs = sorted_unique(addrs)
    frag = addrs >> np.uint64(32)
    local = (addrs & np.uint64(0xFFFFFFFF)).astype(np.uint32)
    cuts = (np.flatnonzero(frag[1:] != frag[:-1]) + 1).tolist()
    starts = [0] + cuts
    ends = cuts + [len(addrs)]
    return {int(frag[a]): local[a:b] for a, b in zip(starts, ends)}


async def _delete_offsets(ds: "DatasetReader", lm_manifest: Any, groups: Mapping[int, np.ndarray]):
    """``(updated fragments, removed fragment ids)`` with ``groups`` deleted (the deletion files
    written concurrently; a fragment's previous deletions come from the reader's cache)."""
    c = ds.context
    if not groups:
        return (), ()
    frags = c.manifest.fragments
    ids = frags.counts()[0] if hasattr(frags, "counts") else np.array([f.id for f in frags], dtype=np.int64)
    by_id = {int(i): k for k, i in enumerate(ids.tolist())}
    pb_by_id = {f.id: f for f in lm_manifest.fragments if f.id in groups}

    async def one(fid: int) -> Any:
        pb = pb_by_id[fid]
        existing = None
        k = by_id.get(fid)
        if k is not None and frags[k].physical_rows == pb.physical_rows:
            existing = await FragmentReader(c, frags[k]).deleted()
            if existing is None:
                existing = np.empty(0, dtype=np.uint32)
        return await delete_rows(c.store, c.root, pb, lm_manifest.version, groups[fid], existing)

    order = [f.id for f in lm_manifest.fragments if f.id in groups and len(groups[f.id])]
    results = await asyncio.gather(*(one(fid) for fid in order))
    updated = tuple(r for r in results if r is not None)
    removed = tuple(fid for fid, r in zip(order, results) if r is None)
    return updated, removed


async def delete_async(ds: "DatasetReader", predicate: str | pc.Expression,
                       max_retries: int | None = None) -> tuple["DatasetReader", int]:
    """Delete the rows of ``ds`` matching ``predicate``; returns the new version and the number
    of rows deleted: one filter scan (row addresses only), one deletion file per fragment
    touched, one commit."""
    compile_filter(predicate, ds.schema)  # bad predicates fail before any write
    current = ds
    if max_retries is None:
        max_retries = settings().conflict_retries
    for attempt in range(max_retries + 1):
        lm = await loaded_manifest(current)
        await open_data_files_of(current)
        t = await current.to_table_async(columns=[], filter=predicate, with_row_address=True)
        groups = _group_addresses(t.column(ROWADDR).to_numpy())
        updated, removed = await _delete_offsets(current, lm.manifest, groups)
        op = Delete(updated, removed, _predicate_text(predicate))
        try:
            return await commit_on(current, op, loaded=lm, affected_rows=groups), t.num_rows
        except RetryableCommitError:
            if attempt >= max_retries:
                raise
            current = await current.latest_async()
    raise AssertionError("unreachable")  # pragma: no cover


def _value_expression(column: str, value: Any, schema: pa.Schema) -> pc.Expression:
    target = schema.field(column).type
    if isinstance(value, str):
        expr = compile_filter(value, schema).expression
    elif isinstance(value, pc.Expression):
        expr = value
    else:
        expr = pc.scalar(pa.scalar(value, target))
    return expr.cast(target)


def _apply_updates(batch: pa.RecordBatch, exprs: Mapping[str, pc.Expression], out_schema: pa.Schema) -> pa.RecordBatch:
    table = pa.Table.from_batches([batch])
    try:
        computed = dict(zip(exprs, project(table, list(exprs.values()))))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
        raise InvalidInputError(f"update values cannot be evaluated: {exc}") from None
    cols = []
    for f in out_schema:
        col = computed[f.name] if f.name in exprs else table.column(f.name)
        col = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
        if not col.type.equals(f.type):
            col = col.cast(f.type)
        if len(col) != batch.num_rows:  # a literal-only expression may come back short
            col = pa.repeat(col[0], batch.num_rows) if len(col) else pa.nulls(batch.num_rows, f.type)
        cols.append(col)
    return pa.RecordBatch.from_arrays(cols, schema=out_schema)


async def update_async(
    ds: "DatasetReader",
    values: Mapping[str, Any],
    where: str | pc.Expression | None = None,
    *,
    max_rows_per_file: int = DEFAULT_MAX_ROWS_PER_FILE,
    max_retries: int | None = None,
) -> tuple["DatasetReader", int]:
    """Set columns of the rows matching ``where`` (all rows when None).

    ``values`` maps top-level column names to a SQL expression string (``"x + 1"``, ``"'text'"``),
    a ``pyarrow.compute.Expression`` or a Python value.  Returns the new version and the number
    of rows updated.
    """
    if not values:
        raise InvalidInputError("update needs at least one column to set")
    current = ds
    if max_retries is None:
        max_retries = settings().conflict_retries
    for attempt in range(max_retries + 1):
        try:
            return await _update_once(current, values, where, max_rows_per_file)
        except RetryableCommitError:
            if attempt >= max_retries:
                raise
            current = await current.latest_async()
    raise AssertionError("unreachable")  # pragma: no cover


async def _update_once(ds: "DatasetReader", values: Mapping[str, Any], where: Any, max_rows_per_file: int
                       ) -> tuple["DatasetReader", int]:
    c = ds.context
    lm = await loaded_manifest(ds)
    m = lm.manifest
    lschema = LanceSchema.from_pb(m.fields, dict(m.schema_metadata))
    file_schema = lschema.to_arrow(dataset=False)
    for name in values:
        if file_schema.get_field_index(name) < 0:
            raise InvalidInputError(f"dataset {ds.uri} has no column {name!r} to update")
    exprs = {name: _value_expression(name, v, file_schema) for name, v in values.items()}
    storage = normalize_storage_version(m.data_format.version or "2.0")
    writer = FragmentFileWriter(c.store, c.root, lschema.fields, dict(lschema.metadata), storage,
                                max_rows_per_file=max_rows_per_file, storage_options=c.storage_options)
    stable = ds.has_stable_row_ids
    await open_data_files_of(ds)
    addr_parts: list[np.ndarray] = []
    id_parts: list[np.ndarray] = []
    try:
        scanner = ds.scanner(columns=file_schema.names, filter=where, with_row_id=stable, with_row_address=True,
                             batch_size=WRITE_BATCH_ROWS)
        async for batch in scanner.batches_async(ramp=False):
            if batch.num_rows == 0:
                continue
            addr_parts.append(batch.column(ROWADDR).to_numpy())
            if stable:
                id_parts.append(batch.column(ROWID).to_numpy())
            data = pa.RecordBatch.from_arrays([batch.column(n) for n in file_schema.names], schema=file_schema)
            await writer.write(_apply_updates(data, exprs, file_schema))
        files = await writer.finish()
        addrs = np.concatenate(addr_parts) if addr_parts else np.empty(0, np.uint64)
        ids = np.concatenate(id_parts) if id_parts else np.empty(0, np.uint64)
        new_frags = []
        start = 0
        for wf in files:
            row_ids = encode_row_id_sequence(ids[start:start + wf.rows]) if stable else None
            new_frags.append(new_fragment([writer.data_file(wf)], wf.rows, row_ids=row_ids))
            start += wf.rows
        groups = _group_addresses(addrs)
        updated, removed = await _delete_offsets(ds, m, groups)
        top_ids = {f.name: f.id for f in lschema.fields}
        op = Update(
            removed_fragment_ids=removed, updated_fragments=updated, new_fragments=tuple(new_frags),
            fields_modified=(), update_mode=REWRITE_ROWS,
            fields_for_preserving_frag_bitmap=tuple(top_ids[n] for n in values),
        )
        return await commit_on(ds, op, loaded=lm, affected_rows=groups), len(addrs)
    except BaseException:
        await writer.cleanup()
        raise


__all__ = ["delete_async", "update_async"]
