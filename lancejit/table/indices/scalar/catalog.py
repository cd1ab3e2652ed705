"""The scalar index segments of a version: which BTREE / BITMAP / LABEL_LIST index covers which
fragments of which column.

:func:`scalar_segments` lists, among the version's index segments (:mod:`..coverage`: one per
``IndexMetadata``, with the fragments it covers), those lancejit can use to answer filters: one
field, a top-level column of the current schema, located in the dataset's own ``_indices/`` (no
base path), kind from the index details (``""``: an entry written before details existed, kind
inferred when opened).
Each comes with its covered fragment ids (the coverage's: ``fragment_bitmap``; an entry without
one covers nothing): an index answers only on the fragments it covers, every other is scanned.

What an index's ids are: row addresses, except on datasets with stable row ids, where BITMAP and
LABEL_LIST indices (and BTREE indices of index version 0) hold row ids; the reference's BTREE
of index version 1 holds addresses there too (:meth:`ScalarSegment.holds_row_ids`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np
import pyarrow as pa

from ..coverage import IndexSegment, PerVersion, index_coverage
from .opened import DETAILS

if TYPE_CHECKING:  # pragma: no cover
    from ...meta.context import DatasetContext


@dataclass(frozen=True, slots=True)
class ScalarSegment:
    """One usable scalar index entry: ``uuid``, ``name``, ``kind`` (``BTREE``, ``BITMAP``,
    ``LABEL_LIST`` or ``""`` = inferred on open), ``column`` (top-level name), ``field_id``,
    ``column_type``, ``fragments`` (sorted int64 covered fragment ids) and the raw ``metadata``."""

    uuid: str
    name: str
    kind: str
    column: str
    field_id: int
    column_type: pa.DataType
    fragments: np.ndarray
    metadata: Any
    index_version: int = 0

    def holds_row_ids(self, stable_row_ids: bool, kind: str | None = None) -> bool:
        """Whether the index's ids are stable row ids (else row addresses); ``kind`` when the
        entry's is inferred."""
        if not stable_row_ids:
            return False
        return not ((kind or self.kind) == "BTREE" and self.index_version >= 1)


async def index_entries(ctx: "DatasetContext") -> list[Any]:
    """Every ``IndexMetadata`` of this version (the index coverage's raw entries, in order)."""
    return [seg.metadata for seg in (await index_coverage(ctx)).segments]


def segments_of(segments: Sequence[IndexSegment], ctx: "DatasetContext") -> list[ScalarSegment]:
    """The usable scalar entries among the coverage's ``segments`` (see the module docstring)."""
    out: list[ScalarSegment] = []
    by_id = {t.id: t for t in ctx.top_fields}
    for seg in segments:
        if len(seg.fields) != 1 or seg.base_id is not None:
            continue
        kind = DETAILS.get(seg.kind) if seg.kind else ""
        if kind is None:
            continue
        top = by_id.get(int(seg.fields[0]))
        if top is None:
            continue
        version = int(seg.metadata.index_version) if seg.metadata is not None else 0
        out.append(ScalarSegment(seg.uuid, seg.name, kind, top.name, top.id, ctx.schema.field(top.name).type,
                                 seg.fragments, seg.metadata, version))
    return out


_SCALAR = PerVersion("scalar segments")


async def scalar_segments(ctx: "DatasetContext") -> list[ScalarSegment]:
    """The usable scalar index segments of this version (built once per version)."""
    if ctx.manifest.index_section is None:
        return []

    async def load() -> list[ScalarSegment]:
        return segments_of((await index_coverage(ctx)).segments, ctx)

    return await _SCALAR.get(ctx, load)


__all__ = ["ScalarSegment", "index_entries", "scalar_segments", "segments_of"]
