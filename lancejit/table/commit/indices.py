"""Carrying a dataset's index list (the manifest's IndexSection) into the next version.

Commits on datasets with indices keep the index metadata consistent, as the reference does:

* CreateIndex: the new entries added, the removed ones (and older ones of the same name) dropped;
* Rewrite (compaction): without stable row ids, each index the rewrite remapped
  (``rewritten_indices``: old uuid -> new uuid, details, version, files) takes its new uuid and
  files, and in its ``fragment_bitmap`` each rewritten group's old fragments are replaced by
  its new ones; indices not remapped keep their bitmap (the new fragments are not covered, so
  they are scanned).  With stable row ids every index keeps its files (row ids do not change)
  and every bitmap is updated that way;
* Overwrite: no index survives;
* Update: an index covering a modified field no longer covers the updated fragments (they are
  removed from its ``fragment_bitmap``, a portable Roaring bitmap of fragment ids);
* Delete / Update / Merge / Project: indices on fields no longer in the schema are dropped
  (system indices, named ``__...``, are kept);
* everything else: unchanged (the raw bytes are reused).

Fragments not in an index's bitmap are simply scanned, so leaving new fragments out is always safe.
"""

from __future__ import annotations

from pyroaring import BitMap

from lancejit.pb import table_pb2

from .operations import CreateIndex, Delete, Merge, Operation, Overwrite, Project, Rewrite, Update

#: ``Manifest.reader_feature_flags`` bit of stable row ids (see ``meta.features``).
_STABLE_ROW_IDS = 2


def _is_system(index: table_pb2.IndexMetadata) -> bool:
    return index.name.startswith("__")


def adjust_index_section(
    raw: bytes | None, op: Operation, manifest: table_pb2.Manifest
) -> bytes | None:
    """The IndexSection protobuf bytes for the version ``manifest`` built by ``op`` from a version
    whose section was ``raw`` (None: no indices)."""
    if isinstance(op, CreateIndex):
        return _with_new_indices(raw, op)
    if raw is None:
        return None
    if isinstance(op, Overwrite):
        return None
    if isinstance(op, Rewrite):
        return _rewritten(raw, op, bool(manifest.reader_feature_flags & _STABLE_ROW_IDS))
    if not isinstance(op, (Delete, Update, Merge, Project)):
        return raw
    section = table_pb2.IndexSection()
    section.ParseFromString(raw)
    changed = False
    if isinstance(op, Update) and op.fields_modified:
        modified = set(op.fields_modified)
        updated_ids = [f.id for f in op.updated_fragments]
        for index in section.indices:
            if modified & set(index.fields) and index.fragment_bitmap:
                bm = BitMap.deserialize(index.fragment_bitmap)
                before = len(bm)
                bm.difference_update(BitMap(updated_ids))
                if len(bm) != before:
                    index.fragment_bitmap = bm.serialize()
                    changed = True
    field_ids = {f.id for f in manifest.fields}
    keep = [ix for ix in section.indices if _is_system(ix) or all(fid in field_ids for fid in ix.fields)]
    if len(keep) != len(section.indices):
        kept = [table_pb2.IndexMetadata.FromString(ix.SerializeToString()) for ix in keep]
        del section.indices[:]
        section.indices.extend(kept)
        changed = True
    if not changed:
        return raw
    return section.SerializeToString() if len(section.indices) else None


def _with_new_indices(raw: bytes | None, op: CreateIndex) -> bytes:
    """The section with ``op.removed_indices`` and indices named like a new one dropped, then
    ``op.new_indices`` appended."""
    section = table_pb2.IndexSection()
    if raw is not None:
        section.ParseFromString(raw)
    gone = {bytes(ix.uuid.uuid) for ix in op.removed_indices}
    names = {ix.name for ix in op.new_indices}
    kept = [table_pb2.IndexMetadata.FromString(ix.SerializeToString()) for ix in section.indices
            if bytes(ix.uuid.uuid) not in gone and ix.name not in names]
    del section.indices[:]
    section.indices.extend(kept)
    section.indices.extend(op.new_indices)
    return section.SerializeToString()


def _remapped_bitmap(raw: bytes, op: Rewrite) -> bytes:
    """A fragment bitmap with each rewrite group's old fragments replaced by its new ones
    (groups it does not cover fully are left as they are: their new fragments are scanned)."""
    bm = BitMap.deserialize(raw)
    changed = False
    for g in op.groups:
        old = [f.id for f in g.old_fragments]
        if old and all(i in bm for i in old):
            bm -= BitMap(old)
            bm |= BitMap([f.id for f in g.new_fragments])
            changed = True
    return bm.serialize() if changed else raw


def _rewritten(raw: bytes, op: Rewrite, stable: bool) -> bytes:
    section = table_pb2.IndexSection()
    section.ParseFromString(raw)
    by_old = {bytes(r.old_id.uuid): r for r in op.rewritten_indices}
    for index in section.indices:
        r = by_old.get(bytes(index.uuid.uuid))
        if r is None and not stable:
            continue
        if index.fragment_bitmap:
            index.fragment_bitmap = _remapped_bitmap(bytes(index.fragment_bitmap), op)
        if r is not None:
            index.uuid.uuid = bytes(r.new_id.uuid)
            if r.HasField("new_index_details"):
                index.index_details.CopyFrom(r.new_index_details)
            index.index_version = r.new_index_version
            del index.files[:]
            index.files.extend(r.new_index_files)
    return section.SerializeToString()


__all__ = ["adjust_index_section"]
