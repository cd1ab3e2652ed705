"""What indices a version has, as the reference's ``describe_indices()`` / ``list_indices()``
describe them: per index (name) its type, fields, segments (uuid, covered fragments, versions,
size) and the live rows of the fragments it covers."""

from __future__ import annotations

import uuid as _uuid
from typing import TYPE_CHECKING, Any

from ..indices.coverage import index_coverage
from ..indices.scalar.catalog import segments_of
from ..indices.scalar.opened import TYPE_NAMES, details_kind

if TYPE_CHECKING:  # pragma: no cover
    from .dataset_reader import DatasetReader


async def describe_indices_async(ds: "DatasetReader") -> list["IndexDescription"]:
    """Every index of the version, as the reference's ``describe_indices()`` describes them."""
    c = ds.context
    segs = (await index_coverage(c)).segments
    if not segs:
        return []
    from pyroaring import BitMap

    names = {t.id: t.name for t in c.top_fields}
    by_name: dict[str, list[Any]] = {}
    for ix in (seg.metadata for seg in segs):
        if ix.name.startswith("__"):
            continue
        by_name.setdefault(ix.name, []).append(ix)
    scalar = {s.uuid: s for s in segments_of(segs, c)}
    live = {f.id: f.physical_rows - (f.num_deleted_rows or 0) for f in c.manifest.fragments}
    out = []
    for name, entries in sorted(by_name.items()):
        first = entries[0]
        url = first.index_details.type_url if first.HasField("index_details") else ""
        segments = []
        rows = 0
        for ix in entries:
            frags = sorted(BitMap.deserialize(ix.fragment_bitmap)) if ix.fragment_bitmap else []
            rows += sum(live.get(f, 0) for f in frags)
            uid = str(_uuid.UUID(bytes=bytes(ix.uuid.uuid)))
            segments.append(IndexSegmentDescription(
                uid, frags, int(ix.dataset_version), int(ix.index_version),
                int(ix.created_at) if ix.HasField("created_at") else None,
                sum(int(f.size_bytes) for f in ix.files), int(ix.base_id) if ix.HasField("base_id") else None,
                [int(f) for f in ix.fields]))
        seg = scalar.get(segments[0].uuid)
        kind = seg.kind if seg is not None and seg.kind else ""
        index_type = TYPE_NAMES.get(kind) or _type_from_url(url)
        out.append(IndexDescription(name, url, rows, [int(f) for f in first.fields],
                                    [names.get(int(f), str(f)) for f in first.fields], segments,
                                    sum(s.size_bytes or 0 for s in segments), index_type))
    return out


def _type_from_url(url: str) -> str:
    kind = details_kind(url)
    table = {"BTreeIndexDetails": "BTree", "BitmapIndexDetails": "Bitmap", "LabelListIndexDetails": "LabelList",
             "ZoneMapIndexDetails": "ZoneMap", "VectorIndexDetails": "Vector", "InvertedIndexDetails": "Inverted",
             "NGramIndexDetails": "NGram", "BloomFilterIndexDetails": "BloomFilter"}
    return table.get(kind, kind or "Unknown")


class IndexSegmentDescription:
    """One segment of an index (``uuid``, ``fragment_ids``, ``dataset_version_at_last_update``,
    ``index_version``, ``created_at`` (ms), ``size_bytes``, ``base_id``, ``covering_fields``)."""

    __slots__ = ("uuid", "fragment_ids", "dataset_version_at_last_update", "index_version", "created_at",
                 "size_bytes", "base_id", "covering_fields")

    def __init__(self, uuid: str, fragment_ids: list[int], dataset_version: int, index_version: int,
                 created_at: int | None, size_bytes: int | None, base_id: int | None, fields: list[int]) -> None:
        self.uuid = uuid
        self.fragment_ids = set(fragment_ids)
        self.dataset_version_at_last_update = dataset_version
        self.index_version = index_version
        self.created_at = created_at
        self.size_bytes = size_bytes
        self.base_id = base_id
        self.covering_fields = fields

    def __repr__(self) -> str:
        return f"IndexSegmentDescription(uuid={self.uuid!r}, fragment_ids={sorted(self.fragment_ids)})"


class IndexDescription:
    """One index as the reference's ``describe_indices()`` shows it: ``name``, ``type_url``,
    ``num_rows_indexed`` (live rows of the covered fragments), ``fields``, ``field_names``,
    ``segments``, ``num_segments``, ``total_size_bytes``, ``index_type`` (``BTree``...)."""

    __slots__ = ("name", "type_url", "num_rows_indexed", "fields", "field_names", "segments", "total_size_bytes",
                 "index_type", "details")

    def __init__(self, name: str, type_url: str, num_rows_indexed: int, fields: list[int], field_names: list[str],
                 segments: list[IndexSegmentDescription], total_size_bytes: int, index_type: str) -> None:
        self.name = name
        self.type_url = type_url
        self.num_rows_indexed = num_rows_indexed
        self.fields = fields
        self.field_names = field_names
        self.segments = segments
        self.total_size_bytes = total_size_bytes
        self.index_type = index_type
        self.details: dict[str, Any] = {}

    @property
    def num_segments(self) -> int:
        return len(self.segments)

    def __repr__(self) -> str:
        return (f"IndexDescription(name={self.name!r}, type_url={self.type_url!r}, "
                f"num_rows_indexed={self.num_rows_indexed}, fields={self.fields}, field_names={self.field_names}, "
                f"num_segments={self.num_segments}, total_size_bytes={self.total_size_bytes})")


def list_indices(descriptions: list[IndexDescription]) -> list[dict[str, Any]]:
    """The reference's (deprecated) ``list_indices()`` view: one dict per segment."""
    return [{"name": d.name, "type": d.index_type, "uuid": s.uuid, "fields": d.field_names,
             "version": s.dataset_version_at_last_update, "fragment_ids": set(s.fragment_ids),
             "base_id": s.base_id} for d in descriptions for s in d.segments]


__all__ = ["IndexDescription", "IndexSegmentDescription", "describe_indices_async", "list_indices"]
