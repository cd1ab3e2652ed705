"""Field-id bookkeeping of a dataset schema (the manifest's flattened ``lance.file.Field`` list).

Maps each top-level column to its field id and the ids of all its descendants, so a
fragment's data file holding a column can be found from ``DataFile.fields`` (2.1+ files list
only the leaves that own columns; 2.0 and legacy files list every field).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from lancejit.core.errors import CorruptFileError


@dataclass(frozen=True, slots=True)
class TopField:
    """A top-level field: ``name``, its ``id`` and ``ids`` = itself plus every descendant."""

    name: str
    id: int
    ids: frozenset[int]


def top_level_fields(fields: Sequence[Any], where: str) -> list[TopField]:
    """Top-level fields in schema order from pre-order ``lance.file.Field`` messages."""
    parent_of: dict[int, int] = {}
    tops: list[tuple[str, int]] = []
    for f in fields:
        if f.id in parent_of:
            raise CorruptFileError(f"schema repeats field id {f.id}", path=where)
        parent_of[f.id] = f.parent_id
        if f.parent_id < 0:
            tops.append((f.name, f.id))
    members: dict[int, set[int]] = {fid: {fid} for _, fid in tops}
    for fid in parent_of:
        node, seen = fid, 0
        while parent_of.get(node, -1) >= 0:
            node = parent_of[node]
            seen += 1
            if seen > len(parent_of):
                raise CorruptFileError(f"schema has a parent cycle at field {fid}", path=where)
        if node not in members:
            raise CorruptFileError(f"field {fid} has a missing parent", path=where)
        members[node].add(fid)
    return [TopField(name, fid, frozenset(members[fid])) for name, fid in tops]
