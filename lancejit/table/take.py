"""Random access: rows by logical offset (after deletions) or by row id / row address.

One take groups the requested rows by fragment and reads every touched fragment at once; the
result comes back in request order (duplicates allowed).
"""

from __future__ import annotations

import asyncio
from typing import Any

import numpy as np
import pyarrow as pa

from lancejit.core.errors import InvalidInputError, RowIndexError

from .context import DatasetContext
from .deletion import physical_of_logical
from .fragment import FragmentReader
from .rowids import RowIdIndex, split_addresses
from .scan import ScanSpec, assemble_batch, output_schema


def as_int_array(values: Any, what: str) -> np.ndarray:
    """Request values as a 1-D integer numpy array (int64 or uint64)."""
    if isinstance(values, (pa.Array, pa.ChunkedArray)):
        if values.null_count:
            raise InvalidInputError(f"{what} must not contain nulls")
        values = values.to_numpy()
    try:
        arr = np.asarray(values)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"{what} must be integers: {exc}") from None
    arr = arr.reshape(-1)
    if arr.size == 0:
        return np.zeros(0, dtype=np.int64)
    if arr.dtype.kind not in "iu":
        if arr.dtype == object:
            try:
                arr = np.array([int(v) for v in arr], dtype=np.uint64 if any(int(v) > 2**63 - 1 for v in arr) else np.int64)
            except (TypeError, ValueError, OverflowError):
                raise InvalidInputError(f"{what} must be integers") from None
        else:
            raise InvalidInputError(f"{what} must be integers, got dtype {arr.dtype}")
    return arr


async def _read_groups(
    ctx: DatasetContext,
    spec: ScanSpec,
    groups: list[tuple[FragmentReader, np.ndarray]],
) -> list[pa.RecordBatch]:
    """One batch per (fragment, sorted unique physical offsets), all fragments concurrently."""

    async def one(frag: FragmentReader, offsets: np.ndarray) -> pa.RecordBatch:
        arrays = await frag.read(list(spec.tops), offsets)
        by_top = {t.name: a for t, a in zip(spec.tops, arrays)}
        meta = dict(await frag.meta_columns(offsets, spec.with_row_id, spec.with_row_address))
        return assemble_batch(ctx, spec, by_top, meta, len(offsets))

    if len(groups) == 1:  # one fragment (e.g. a one-row take): no task
        return [await one(*groups[0])]
    return list(await asyncio.gather(*(one(f, o) for f, o in groups)))


async def _row_counts(frags: list[FragmentReader]) -> np.ndarray:
    """Live rows of each fragment; only fragments whose count needs their deletion file
    read are awaited (the others are known from the manifest)."""
    counts = np.empty(len(frags), dtype=np.int64)
    slow: list[int] = []
    for i, f in enumerate(frags):
        d = f.fragment.deletion_file
        if d is None:
            counts[i] = f.physical_rows
        elif d.num_deleted_rows is not None:
            counts[i] = f.physical_rows - d.num_deleted_rows
        else:
            slow.append(i)
    if slow:
        counts[slow] = await asyncio.gather(*(frags[i].count_rows() for i in slow))
    return counts


def _assemble(ctx: DatasetContext, spec: ScanSpec, batches: list[pa.RecordBatch], positions: np.ndarray) -> pa.Table:
    schema = output_schema(ctx, spec)
    if not batches:
        return schema.empty_table()
    if len(schema) == 0:
        return pa.Table.from_batches([pa.RecordBatch.from_struct_array(pa.array([{}] * len(positions), type=pa.struct([])))])
    table = pa.Table.from_batches(batches, schema=schema)
    if len(positions) == table.num_rows and np.array_equal(positions, np.arange(len(positions))):
        return table.combine_chunks()
    return table.take(pa.array(positions, pa.int64())).combine_chunks()


async def _group_by_fragment(
    frags: dict[int, FragmentReader], frag_ids: np.ndarray, offsets: np.ndarray
) -> tuple[list[tuple[FragmentReader, np.ndarray]], np.ndarray]:
    """Group (fragment, physical offset) requests; returns groups and each request's row in the
    concatenation of the groups' results."""
    groups: list[tuple[FragmentReader, np.ndarray]] = []
    positions = np.empty(len(offsets), dtype=np.int64)
    base = 0
    for fid in sorted(set(frag_ids.tolist())):
        sel = np.flatnonzero(frag_ids == fid)
        uniq, inverse = np.unique(offsets[sel], return_inverse=True)
        groups.append((frags[fid], uniq.astype(np.int64)))
        positions[sel] = base + inverse
        base += len(uniq)
    return groups, positions


async def take_offsets(ctx: DatasetContext, indices: Any, spec: ScanSpec) -> pa.Table:
    """Rows at logical ``indices`` of the version (as the reference's ``Dataset.take``)."""
    idx = as_int_array(indices, "indices")
    frag_list = [FragmentReader(ctx, f) for f in ctx.manifest.fragments]
    counts = await _row_counts(frag_list)
    total = int(counts.sum())
    if idx.size and (idx.dtype.kind == "i" and int(idx.min()) < 0 or int(idx.max()) >= total):
        bad = int(idx.min()) if idx.dtype.kind == "i" and int(idx.min()) < 0 else int(idx.max())
        raise RowIndexError(f"dataset {ctx.uri} version {ctx.version}: row offset {bad} is out of range for {total} rows")
    idx = idx.astype(np.int64)
    starts = np.concatenate([[0], np.cumsum(counts)])
    which = np.searchsorted(starts, idx, side="right") - 1
    local = idx - starts[which]
    physical = np.empty(len(idx), dtype=np.int64)
    touched = sorted(set(which.tolist()))

    async def to_physical(i: int) -> None:
        sel = which == i
        physical[sel] = physical_of_logical(local[sel], await frag_list[i].deleted())

    with_deletions = []
    for i in touched:
        if frag_list[i].fragment.deletion_file is None:
            sel = which == i
            physical[sel] = local[sel]
        else:
            with_deletions.append(i)
    if with_deletions:
        await asyncio.gather(*(to_physical(i) for i in with_deletions))
    frags = {i: frag_list[i] for i in touched}
    groups, positions = await _group_by_fragment(frags, which, physical)
    batches = await _read_groups(ctx, spec, groups)
    return _assemble(ctx, spec, batches, positions)


async def row_id_index(ctx: DatasetContext) -> RowIdIndex:
    """The row-id -> address index of this version (built once, cached)."""

    async def build() -> RowIdIndex:
        frags = [FragmentReader(ctx, f) for f in ctx.manifest.fragments]

        async def part(frag: FragmentReader):
            ids = await frag.row_ids()
            live = await frag.live_offsets()
            return frag.id, ids[live], live

        parts = await asyncio.gather(*(part(f) for f in frags))
        return RowIdIndex.build(list(parts))

    return await ctx.caches.row_id_index.get(("index", ctx.manifest_path), build)


async def take_rows(ctx: DatasetContext, row_ids: Any, spec: ScanSpec, stable: bool) -> pa.Table:
    """Rows by stable row id (``stable``) or by row address; deleted/unknown ids are skipped."""
    ids = as_int_array(row_ids, "row ids")
    if ids.size and ids.dtype.kind == "i" and int(ids.min()) < 0:
        raise RowIndexError(f"row id {int(ids.min())} is negative")
    ids = ids.astype(np.uint64)
    if stable:
        index = await row_id_index(ctx)
        addrs, found = index.lookup(ids)
        addrs = addrs[found]
    else:
        addrs = ids
    frag_ids, offsets = split_addresses(addrs)
    by_id = {f.id: FragmentReader(ctx, f) for f in ctx.manifest.fragments}
    keep = np.ones(len(addrs), dtype=bool)
    touched = sorted(set(frag_ids.tolist()))
    for fid in touched:
        frag = by_id.get(fid)
        sel = frag_ids == fid
        if frag is None:
            raise RowIndexError(
                f"dataset {ctx.uri} version {ctx.version}: row address in fragment {fid}, which does not exist"
            )
        if int(offsets[sel].max()) >= frag.physical_rows:
            raise RowIndexError(
                f"dataset {ctx.uri} version {ctx.version}: row offset {int(offsets[sel].max())} "
                f"is past the {frag.physical_rows} rows of fragment {fid}"
            )
    deletions = await asyncio.gather(*(by_id[fid].deleted() for fid in touched))
    for fid, deleted in zip(touched, deletions):
        if deleted is not None and len(deleted):
            sel = frag_ids == fid
            keep[sel] = ~np.isin(offsets[sel], deleted.astype(np.int64))
    frag_ids, offsets = frag_ids[keep], offsets[keep]
    frags = {fid: by_id[fid] for fid in set(frag_ids.tolist())}
    groups, positions = await _group_by_fragment(frags, frag_ids, offsets)
    batches = await _read_groups(ctx, spec, groups)
    return _assemble(ctx, spec, batches, positions)
