"""Random access: rows by logical offset (after deletions) or by row id / row address.

One take groups the requested rows by fragment and reads every touched fragment at once; the
result comes back in request order (duplicates allowed).
"""

from __future__ import annotations

import asyncio
from typing import Any

import numpy as np
import pyarrow as pa

from lancejit.core.arrow_compute import take as arrow_take
from lancejit.core.errors import (
    CorruptFileError, InvalidInputError, LanceJitError, NegativeIndexError, RowIndexError,
)

from ..meta.context import DatasetContext, with_context
from ..meta.deletion import physical_of_logical
from ..meta.features import FLAG_STABLE_ROW_IDS
from .fragment import ROWADDR, ROWID, FragmentReader, numpy_array
from .version_index import DatasetIndex, dataset_index
from ..meta.rowids import RowIdIndex, split_addresses
from .assemble import assemble_batch, output_schema
from .spec import ScanSpec
from .take_files import slots_of, state_for


def as_int_array(values: Any, what: str) -> np.ndarray:
    """Request values as a 1-D integer numpy array (int64 or uint64)."""
    if type(values) is np.ndarray and values.ndim == 1 and values.dtype.kind in "iu" and values.size:
        return values
    if isinstance(values, (pa.Array, pa.ChunkedArray)):
        if values.null_count:
            raise InvalidInputError(f"{what} must not contain nulls")
        values = values.to_numpy()
    if values is None or isinstance(values, (str, bytes)):
        raise InvalidInputError(f"{what} must be a 1-D array of integers, got {type(values).__name__}")
    try:
        arr = np.asarray(values)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"{what} must be a 1-D array of integers: {exc}") from None
    if arr.ndim > 1:  # the reference refuses these too (no silent flattening)
        raise InvalidInputError(f"{what} must be a 1-D array of integers, got shape {arr.shape}")
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


def _concat(parts: list[Any]) -> pa.Array:
    """One array from per-fragment arrays (or chunked arrays) of one column."""
    if len(parts) == 1 and isinstance(parts[0], pa.Array):
        return parts[0]
    chunks = [c for p in parts for c in (p.chunks if isinstance(p, pa.ChunkedArray) else (p,))]
    return pa.concat_arrays(chunks) if len(chunks) != 1 else chunks[0]


async def _read_groups(
    ctx: DatasetContext,
    spec: ScanSpec,
    groups: list[tuple[FragmentReader, np.ndarray]],
) -> pa.RecordBatch:
    """The rows of every (fragment, sorted unique physical offsets) group, concatenated in
    group order as one batch: all fragments read concurrently, then one array per column and
    one batch assembled (output columns, struct pruning, meta columns) for all of them."""
    tops = spec.tops
    meta_wanted = spec.with_row_id or spec.with_row_address

    async def one(frag: FragmentReader, offsets: np.ndarray) -> tuple[list[pa.Array], list[tuple[str, pa.Array]]]:
        arrays = await frag.read(tops, offsets)
        meta = await frag.meta_columns(offsets, spec.with_row_id, spec.with_row_address) if meta_wanted else []
        return arrays, meta

    if len(groups) == 1:  # one fragment (e.g. a one-row take): no task
        parts = [await one(*groups[0])]
    else:
        parts = list(await asyncio.gather(*(one(f, o) for f, o in groups)))
    n = sum(len(o) for _, o in groups)
    by_top = {t.name: _concat([p[0][i] for p in parts]) for i, t in enumerate(tops)}
    meta = {name: _concat([p[1][j][1] for p in parts]) for j, (name, _) in enumerate(parts[0][1])}
    return assemble_batch(ctx, spec, by_top, meta, n)


def _assemble(ctx: DatasetContext, spec: ScanSpec, batch: pa.RecordBatch | pa.Table | None,
              positions: np.ndarray) -> pa.Table:
    """The result table: ``batch`` rows at ``positions`` (request order)."""
    if batch is None:
        return output_schema(ctx, spec).empty_table()
    if batch.num_columns == 0:
        return pa.Table.from_batches([pa.RecordBatch.from_struct_array(pa.array([{}] * len(positions), type=pa.struct([])))])
    table = batch if isinstance(batch, pa.Table) else pa.Table.from_batches([batch])
    if len(positions) == batch.num_rows and (len(positions) < 2 or bool((positions[1:] > positions[:-1]).all())):
        return table  # sorted unique request: the batch is the answer
    return arrow_take(table, numpy_array(positions, pa.int64()))


_I64 = np.dtype(np.int64)
_FIRST = np.zeros(1, dtype=np.int64)
_FIRST.flags.writeable = False


def _unique(pos: np.ndarray, offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(positions, offsets, inverse)``: the requested (fragment position, physical offset)
    pairs sorted and deduplicated (one ``np.unique``), and each request's row among them."""
    if pos.size == 1:
        if pos.dtype != _I64:
            pos = pos.astype(np.int64)
        if offsets.dtype != _I64:
            offsets = offsets.astype(np.int64)
        return pos, offsets, _FIRST
    keys = (pos.astype(np.int64) << 32) | offsets.astype(np.int64)
    ukeys, inverse = np.unique(keys, return_inverse=True)
    return ukeys >> 32, ukeys & 0xFFFFFFFF, inverse.reshape(-1).astype(np.int64, copy=False)


def _groups(
    index: DatasetIndex, pos: np.ndarray, offsets: np.ndarray
) -> tuple[list[tuple[FragmentReader, np.ndarray]], np.ndarray]:
    """Group (fragment position, physical offset) requests: one sorted unique offset array per
    touched fragment (in position order) and each request's row in the concatenation of the
    groups' results."""
    upos, uoff, positions = _unique(pos, offsets)
    return _groups_of(index, upos, uoff), positions


def _groups_of(index: DatasetIndex, upos: np.ndarray, uoff: np.ndarray) -> list[tuple[FragmentReader, np.ndarray]]:
    """One sorted unique offset array per touched fragment (in position order) of sorted unique
    (position, offset) pairs; the loop is over touched fragments."""
    if len(upos) == 1:
        return [(index.reader(int(upos[0])), uoff)]
    cuts = np.flatnonzero(upos[1:] != upos[:-1]) + 1
    bounds = [0, *cuts.tolist(), len(upos)]
    return [(index.reader(int(upos[a])), uoff[a:b]) for a, b in zip(bounds[:-1], bounds[1:])]


async def _meta(ctx: DatasetContext, index: DatasetIndex, spec: ScanSpec, upos: np.ndarray,
                uoff: np.ndarray) -> dict[str, pa.Array]:
    """``_rowid`` / ``_rowaddr`` of rows (positions, physical offsets, any order) when the spec
    asks."""
    if not (spec.with_row_id or spec.with_row_address):
        return {}
    addrs = (index.fragment_ids[upos].astype(np.uint64) << np.uint64(32)) | uoff.astype(np.uint64)
    out = {}
    if spec.with_row_id:
        ids = addrs
        if ctx.manifest.reader_feature_flags & FLAG_STABLE_ROW_IDS:
            ids = addrs.copy()
            for p in np.unique(upos).tolist():
                rid = await index.reader(p).row_ids()
                if rid is not None:
                    sel = upos == p
                    ids[sel] = rid[uoff[sel]]
        out[ROWID] = numpy_array(ids, pa.uint64())
    if spec.with_row_address:
        out[ROWADDR] = numpy_array(addrs, pa.uint64())
    return out


async def _read(ctx: DatasetContext, spec: ScanSpec, index: DatasetIndex, upos: np.ndarray,
                uoff: np.ndarray) -> pa.RecordBatch | pa.Table:
    """The rows at sorted unique (position, physical offset) pairs, in that order: the fragments
    the multi-file take serves (:mod:`.take_files`) all at once, the others per fragment."""
    tops = spec.tops
    if not tops:
        return await _read_groups(ctx, spec, _groups_of(index, upos, uoff))
    state = state_for(index, tops)
    slots, low = await slots_of(ctx, index, state, tops, upos)
    if low >= 0:  # every touched fragment served by the multi-file take
        return await _fast_batch(ctx, spec, index, state, slots, upos, uoff, True)
    fast = slots >= 0
    if not fast.any():
        return await _read_groups(ctx, spec, _groups_of(index, upos, uoff))
    # some fragments each way: both parts, then rows back in (position, offset) order
    part_fast = await _read(ctx, spec, index, upos[fast], uoff[fast])
    part_slow = await _read_groups(ctx, spec, _groups_of(index, upos[~fast], uoff[~fast]))
    both = pa.Table.from_batches([part_fast, part_slow])
    order = np.empty(len(upos), dtype=np.int64)
    order[fast] = np.arange(len(part_fast))
    order[~fast] = len(part_fast) + np.arange(len(part_slow))
    return arrow_take(both, numpy_array(order, pa.int64()))


async def _fast_batch(ctx: DatasetContext, spec: ScanSpec, index: DatasetIndex, state: Any, slots: np.ndarray,
                      pos: np.ndarray, off: np.ndarray, grouped: bool) -> pa.RecordBatch:
    """The rows (positions ``pos``, physical offsets ``off``, slots ``slots``) read by the
    multi-file take, in that order (``grouped``: each slot's rows are contiguous)."""
    try:
        arrays = await state.take(slots, off, grouped)
    except LanceJitError as exc:
        raise with_context(exc, ctx.describe_where()) from exc
    meta = await _meta(ctx, index, spec, pos, off) if spec.with_row_id or spec.with_row_address else {}
    plan = state.output(ctx, spec)
    if plan is None:
        return assemble_batch(ctx, spec, {t.name: a for t, a in zip(spec.tops, arrays)}, meta, len(pos))
    schema, sources = plan
    cols = [arrays[i] if i >= 0 else meta[ROWID if i == -1 else ROWADDR] for i in sources]
    return pa.RecordBatch.from_arrays(cols, schema=schema)


#: Takes of at most this many rows whose fragments the multi-file take serves with one decode
#: call per column are decoded straight in request order (no sort, no dedup, no reordering
#: take); larger ones sorted and deduplicated first (neighbouring rows share decoded chunks).
#: Request order is faster for small takes (no sort, no reordering), sorted for larger ones
#: (rows sharing a chunk decode it once); this bound sits where the two cross.
DIRECT_ROWS = 256


async def _read_direct(ctx: DatasetContext, spec: ScanSpec, index: DatasetIndex, pos: np.ndarray,
                       off: np.ndarray) -> pa.Table | None:
    """The rows at (positions, physical offsets) in request order when the multi-file take
    decodes all of them with one call per column, else None."""
    tops = spec.tops
    if not tops or pos.size > DIRECT_ROWS:
        return None
    state = state_for(index, tops)
    slots, low = await slots_of(ctx, index, state, tops, pos)
    if low < 0 or not state.mergeable(slots):
        return None
    return pa.Table.from_batches([await _fast_batch(ctx, spec, index, state, slots, pos, off, False)])


async def _physical(index: DatasetIndex, pos: np.ndarray, local: np.ndarray) -> np.ndarray:
    """Physical offsets of logical offsets ``local`` within fragments ``pos``: deletion files
    are read (cached) only for the touched fragments that have one."""
    any_dels = index.take_state.get("any deletions")
    if any_dels is None:
        any_dels = index.take_state["any deletions"] = bool(index.has_deletions.any())
    if not any_dels:
        return local
    dels = index.has_deletions[pos]
    if not dels.any():
        return local
    physical = local.copy()
    touched = np.unique(pos[dels]).tolist()
    deleted = await asyncio.gather(*(index.reader(p).deleted() for p in touched))
    for p, d in zip(touched, deleted):
        sel = pos == p
        physical[sel] = physical_of_logical(local[sel], d)
    return physical


async def take_offsets(ctx: DatasetContext, indices: Any, spec: ScanSpec) -> pa.Table:
    """Rows at logical ``indices`` of the version (as the reference's ``Dataset.take``).

    Cost: O(rows taken + fragments touched); the fragments are found by binary search on the
    version index's live-row prefix sums."""
    idx = as_int_array(indices, "indices")
    index = await dataset_index(ctx)
    total = index.total_rows
    if idx.size:
        lo, hi = (int(idx[0]), int(idx[0])) if idx.size == 1 else (int(idx.min()), int(idx.max()))
        if (idx.dtype.kind == "i" and lo < 0) or hi >= total:
            bad = lo if idx.dtype.kind == "i" and lo < 0 else hi
            error = NegativeIndexError if bad < 0 else RowIndexError
            raise error(f"dataset {ctx.uri} version {ctx.version}: row offset {bad} is out of range for {total} rows")
    if idx.dtype != _I64:
        idx = idx.astype(np.int64)
    if idx.size == 0:
        return _assemble(ctx, spec, None, idx)
    pos, local = index.locate(idx)
    physical = await _physical(index, pos, local)
    direct = await _read_direct(ctx, spec, index, pos, physical)
    if direct is not None:
        return direct
    upos, uoff, positions = _unique(pos, physical)
    return _assemble(ctx, spec, await _read(ctx, spec, index, upos, uoff), positions)


async def row_id_index(ctx: DatasetContext) -> RowIdIndex:
    """The row-id -> address index of this version (built once, cached)."""

    async def build() -> RowIdIndex:
        index = await dataset_index(ctx)
        frags = [index.reader(p) for p in range(len(index))]

        async def part(frag: FragmentReader) -> tuple[int, np.ndarray, np.ndarray]:
            ids = await frag.row_ids()
            if ids is None:
                raise CorruptFileError(f"{ctx.describe_where(ctx.manifest_path)}: fragment {frag.id} has no "
                                       "row ids in a dataset with stable row ids")
            live = await frag.live_offsets()
            return frag.id, ids[live], live

        parts = await asyncio.gather(*(part(f) for f in frags))
        return RowIdIndex.build(list(parts))

    return await ctx.caches.row_id_index.get(("index", ctx.manifest_path), build)


async def take_rows(ctx: DatasetContext, row_ids: Any, spec: ScanSpec, stable: bool) -> pa.Table:
    """Rows by stable row id (``stable``) or by row address; deleted/unknown ids are skipped."""
    ids = as_int_array(row_ids, "row ids")
    if ids.size and ids.dtype.kind == "i" and int(ids.min()) < 0:
        raise NegativeIndexError(f"row id {int(ids.min())} is negative")
    ids = ids.astype(np.uint64)
    if stable:
        addrs, found = (await row_id_index(ctx)).lookup(ids)
        addrs = addrs[found]
    else:
        addrs = ids
    index = await dataset_index(ctx)
    frag_ids, offsets = split_addresses(addrs)
    pos, found = index.positions_of(frag_ids)
    if not found.all():
        fid = int(frag_ids[np.argmin(found)])
        raise RowIndexError(
            f"dataset {ctx.uri} version {ctx.version}: row address in fragment {fid}, which does not exist"
        )
    past = offsets >= index.physical_rows[pos]
    if past.any():
        fid = int(frag_ids[np.argmax(past)])
        p = int(index.positions_of(np.array([fid]))[0][0])
        worst = int(offsets[frag_ids == fid].max())
        raise RowIndexError(
            f"dataset {ctx.uri} version {ctx.version}: row offset {worst} "
            f"is past the {int(index.physical_rows[p])} rows of fragment {fid}"
        )
    dels = index.has_deletions[pos]
    if dels.any():
        keep = np.ones(len(addrs), dtype=bool)
        touched = np.unique(pos[dels]).tolist()
        deleted = await asyncio.gather(*(index.reader(p).deleted() for p in touched))
        for p, d in zip(touched, deleted):
            if d is not None and len(d):
                sel = pos == p
                keep[sel] = ~np.isin(offsets[sel], d.astype(np.int64))
        pos, offsets = pos[keep], offsets[keep]
    if len(pos) == 0:
        return _assemble(ctx, spec, None, pos)
    if offsets.dtype != _I64:
        offsets = offsets.astype(np.int64)
    direct = await _read_direct(ctx, spec, index, pos, offsets)
    if direct is not None:
        return direct
    upos, uoff, positions = _unique(pos, offsets)
    return _assemble(ctx, spec, await _read(ctx, spec, index, upos, uoff), positions)
