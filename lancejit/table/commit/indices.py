"""Carrying a dataset's index list (the manifest's IndexSection) into the next version.

lancejit does not build indices, but commits on datasets that have them must keep the index
metadata consistent, as the reference does:

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

from .operations import CreateIndex, Delete, Merge, Operation, Overwrite, Project, Update


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


__all__ = ["adjust_index_section"]
