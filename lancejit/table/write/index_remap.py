"""Scalar indices across compaction: which fragments may move together, and the indices
rewritten for the rows' new addresses, as the reference does.

An index listing row addresses (every index without stable row ids; with them, the reference's
BTREE of index version 1) must follow the rows compaction moves.  The BTREE, BITMAP and
LABEL_LIST indices lancejit reads are *remapped*: every ``(value, address)`` pair of a rewritten
fragment gets the row's new address (pairs of rows deleted before the rewrite are dropped), the
index is rebuilt from the pairs under a new uuid, and the ``Rewrite`` transaction lists it in
``rewritten_indices`` (old uuid, new uuid, details, version, files); the commit then swaps the
entry and moves its coverage to the new fragments.  An index listing stable row ids keeps its
files: only its coverage moves.  Fragments covered by an index lancejit cannot carry (vector
indices, zone maps, other kinds, indices it cannot open) are left alone.

As in the reference, a compaction task only merges fragments covered by the same set of
indices (:func:`index_set_keys`).
"""

from __future__ import annotations

import asyncio
import uuid as _uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np
import pyarrow as pa
from pyroaring import BitMap

from lancejit.io.store import join_path
from lancejit.pb import table_pb2, transaction_pb2

from ..indices.scalar import writers
from ..indices.coverage import coverage_of_section
from ..indices.scalar.catalog import segments_of
from ..indices.scalar.domain import Unusable
from ..indices.scalar.opened import ScalarIndex, open_segment

if TYPE_CHECKING:  # pragma: no cover
    from ..commit.operations import RewriteGroup
    from ..meta.context import DatasetContext


@dataclass(frozen=True, slots=True)
class Remappable:
    """An index compaction can carry: its manifest entry and opened reader (None for an index of
    stable row ids: nothing to rewrite)."""

    uuid: str
    entry: Any
    index: ScalarIndex | None


async def plan_index_sets(ctx: "DatasetContext", section_raw: bytes | None, frag_ids: np.ndarray,
                          stable: bool) -> tuple[np.ndarray, dict[str, Remappable]]:
    """Per fragment (``frag_ids``, dataset order) an index-set key for :func:`..compaction.plan_bins`
    (0: no index; -1: covered by an index lancejit cannot carry, never rewritten; otherwise one
    key per distinct set of covering indices) and the indices to carry by uuid."""
    n = len(frag_ids)
    if section_raw is None:
        return np.zeros(n, dtype=np.int64), {}
    section = table_pb2.IndexSection()
    section.ParseFromString(section_raw)
    user = [ix for ix in section.indices if not ix.name.startswith("__")]  # system indices pin nothing
    usable = {s.uuid: s for s in segments_of(coverage_of_section(section, ctx.store.uri(ctx.manifest_path)).segments,
                                              ctx)}
    carry: dict[str, Remappable] = {}
    pinned = np.zeros(n, dtype=bool)
    sets: list[list[str]] = [[] for _ in range(n)]
    ids = np.asarray(frag_ids, dtype=np.int64)
    for ix in user:
        uid = str(_uuid.UUID(bytes=bytes(ix.uuid.uuid)))
        if not ix.fragment_bitmap:
            pinned[:] = True  # coverage unknown
            continue
        cov = np.isin(ids, np.array(BitMap.deserialize(bytes(ix.fragment_bitmap)).to_array(), dtype=np.int64))
        if not cov.any():
            continue
        ok = False
        opened: ScalarIndex | None = None
        seg = usable.get(uid)
        if seg is not None:
            try:
                got = await open_segment(ctx, seg.uuid, seg.kind, seg.column_type)
                ok = True
            except Unusable:
                ok = False
            else:
                opened = None if seg.holds_row_ids(stable, got.kind) else got  # (None: row ids do not move)
        if not ok:
            pinned |= cov
            continue
        carry[uid] = Remappable(uid, ix, opened)
        for i in np.flatnonzero(cov).tolist():
            sets[i].append(uid)
    keys = np.zeros(n, dtype=np.int64)
    seen: dict[tuple[str, ...], int] = {}
    for i, s in enumerate(sets):
        if s:
            keys[i] = seen.setdefault(tuple(sorted(s)), len(seen) + 1)
    keys[pinned] = -1
    return keys, carry


def _mapping(groups: Sequence["RewriteGroup"], old_addrs: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray,
                                                                                        np.ndarray]:
    """``(old addresses sorted, their new addresses, rewritten fragment ids sorted)``: each
    group's live rows, in order, land in its new fragments in order."""
    olds: list[np.ndarray] = []
    news: list[np.ndarray] = []
    frags: list[int] = []
    for g, old in zip(groups, old_addrs):
        frags.extend(f.id for f in g.old_fragments)
        parts = [(np.uint64(f.id) << np.uint64(32)) | np.arange(f.physical_rows, dtype=np.uint64)
                 for f in g.new_fragments]
        new = np.concatenate(parts) if parts else np.zeros(0, dtype=np.uint64)
        if len(new) != len(old):
            raise AssertionError("a rewrite group's rows do not add up")  # pragma: no cover
        olds.append(np.asarray(old, dtype=np.uint64))
        news.append(new)
    old = np.concatenate(olds) if olds else np.zeros(0, dtype=np.uint64)
    new = np.concatenate(news) if news else np.zeros(0, dtype=np.uint64)
    order = np.argsort(old, kind="stable")
    return old[order], new[order], np.unique(np.array(frags, dtype=np.int64))


def remap_ids(ids: np.ndarray, old: np.ndarray, new: np.ndarray, rewritten: np.ndarray) -> tuple[np.ndarray,
                                                                                              np.ndarray]:
    """``(keep, new ids)``: ids of rewritten fragments get their row's new address (dropped when
    the row was not carried over, i.e. deleted); other ids are kept as they are."""
    ids = np.asarray(ids, dtype=np.uint64)
    frag = (ids >> np.uint64(32)).astype(np.int64)
    moved = np.isin(frag, rewritten)
    keep = np.ones(len(ids), dtype=bool)
    out = ids.copy()
    if moved.any() and len(old):
        i = np.searchsorted(old, ids[moved])
        ic = np.minimum(i, len(old) - 1)
        found = old[ic] == ids[moved]
        out[np.flatnonzero(moved)[found]] = new[ic[found]]
        keep[np.flatnonzero(moved)[~found]] = False
    elif moved.any():
        keep[moved] = False
    return keep, out[keep]


async def _remap_one(ctx: "DatasetContext", r: Remappable, old: np.ndarray, new: np.ndarray,
                     rewritten: np.ndarray) -> Any:
    si = r.index
    assert si is not None
    values, ids = await si.entries(ctx)
    keep, new_ids = remap_ids(ids, old, new, rewritten)
    values = values.filter(pa.array(keep)) if not keep.all() else values
    if si.kind == "BTREE":
        files = writers.btree_files(values, new_ids)
    elif si.kind == "BITMAP":
        files = writers.bitmap_files(values, new_ids)
    else:
        nulls = si.lookup.list_nulls if si.lookup.list_nulls is not None else np.zeros(0, dtype=np.uint64)
        _, null_ids = remap_ids(nulls, old, new, rewritten)
        files = writers.label_pair_files(values, new_ids, np.sort(null_ids))
    uid = _uuid.uuid4()
    written = await writers.write_index(ctx.store, join_path(ctx.root, "_indices", str(uid)), files,
                                        ctx.storage_options)
    msg = transaction_pb2.Transaction.Rewrite.RewrittenIndex()
    msg.old_id.uuid = _uuid.UUID(r.uuid).bytes
    msg.new_id.uuid = uid.bytes
    if r.entry.HasField("index_details"):
        msg.new_index_details.CopyFrom(r.entry.index_details)
    else:
        from google.protobuf import any_pb2

        msg.new_index_details.CopyFrom(any_pb2.Any(type_url=writers.DETAILS_URLS[si.kind], value=b""))
    msg.new_index_version = int(r.entry.index_version)
    for name, size in sorted(written):
        msg.new_index_files.add(path=name, size_bytes=size)
    return msg


async def remap_indices(ctx: "DatasetContext", carry: dict[str, Remappable], groups: Sequence["RewriteGroup"],
                        old_addrs: Sequence[np.ndarray]) -> tuple[Any, ...]:
    """The ``RewrittenIndex`` messages of the carried indices covering a rewritten fragment
    (their new files written); empty with stable row ids."""
    todo = [r for r in carry.values() if r.index is not None]
    if not todo:
        return ()
    old, new, rewritten = _mapping(groups, old_addrs)
    touched = []
    for r in todo:
        frags = np.array(BitMap.deserialize(bytes(r.entry.fragment_bitmap)).to_array(), dtype=np.int64)
        if np.isin(rewritten, frags).any():
            touched.append(r)
    return tuple(await asyncio.gather(*(_remap_one(ctx, r, old, new, rewritten) for r in touched)))


async def delete_rewritten(ctx: "DatasetContext", rewritten: Sequence[Any]) -> None:
    """Best effort: remove the files of remapped indices a failed commit left unreferenced."""
    paths = [join_path(ctx.root, "_indices", str(_uuid.UUID(bytes=bytes(m.new_id.uuid))), f.path)
             for m in rewritten for f in m.new_index_files]
    if paths:
        try:
            await ctx.store.delete_many(paths)
        except Exception:  # noqa: BLE001 - unreferenced files are harmless
            pass


__all__ = ["Remappable", "delete_rewritten", "plan_index_sets", "remap_ids", "remap_indices"]
