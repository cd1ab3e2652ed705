"""The scalar index segments of a version: which BTREE / BITMAP / LABEL_LIST index covers which
fragments of which column.

:func:`scalar_segments` lists the manifest's index entries (one per segment) that lancejit can
use to answer filters: one field, a top-level column of the current schema whose type the
index was built for, located in the dataset's own ``_indices/`` (no base path), kind from the
index details (``""``: an entry written before details existed, kind inferred when opened).
Each comes with its covered fragment ids (``fragment_bitmap``; an entry without one covers
nothing).

What an index's ids are: row addresses, except on datasets with stable row ids, where BITMAP and
LABEL_LIST indices (and BTREE indices of index version 0) hold row ids; the reference's BTREE
of index version 1 holds addresses there too (:meth:`ScalarSegment.holds_row_ids`).
"""

from __future__ import annotations

import uuid as _uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from lancejit.core.errors import CorruptFileError

from ...meta.manifest import decode_index_section
from .opened import DETAILS, details_kind

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


def _fragments(raw: bytes, where: str) -> np.ndarray:
    if not raw:
        return np.zeros(0, dtype=np.int64)
    from pyroaring import BitMap

    try:
        return np.array(BitMap.deserialize(raw).to_array(), dtype=np.int64)
    except (ValueError, OverflowError) as exc:
        raise CorruptFileError(f"index fragment bitmap does not decode: {exc}", path=where) from None


async def index_section(ctx: "DatasetContext") -> Any:
    """The decoded ``IndexSection`` of this version (None without indices; cached per version)."""
    if ctx.manifest.index_section is None:
        return None

    async def load() -> Any:
        _, data = await ctx.reader(ctx.store, ctx.manifest_path).read_tail(1 << 62)
        return decode_index_section(data, ctx.manifest, ctx.store.uri(ctx.manifest_path))

    return await ctx.caches.indexes.get(("section", ctx.manifest_path), load)


def segments_of(section: Any, ctx: "DatasetContext") -> list[ScalarSegment]:
    """The usable scalar entries of a decoded section (see the module docstring)."""
    out: list[ScalarSegment] = []
    if section is None:
        return out
    by_id = {t.id: t for t in ctx.top_fields}
    where = ctx.store.uri(ctx.manifest_path)
    for ix in section.indices:
        if len(ix.fields) != 1 or ix.HasField("base_id"):
            continue
        has_details = ix.HasField("index_details") and ix.index_details.type_url
        kind = DETAILS.get(details_kind(ix.index_details.type_url), None) if has_details else ""
        if kind is None:
            continue
        top = by_id.get(int(ix.fields[0]))
        if top is None:
            continue
        try:
            name = str(_uuid.UUID(bytes=bytes(ix.uuid.uuid)))
        except ValueError:
            continue
        out.append(ScalarSegment(name, ix.name, kind, top.name, top.id, ctx.schema.field(top.name).type,
                                 _fragments(bytes(ix.fragment_bitmap), where), ix, int(ix.index_version)))
    return out


async def scalar_segments(ctx: "DatasetContext") -> list[ScalarSegment]:
    """The usable scalar index segments of this version (cached per version)."""
    if ctx.manifest.index_section is None:
        return []

    async def load() -> list[ScalarSegment]:
        return segments_of(await index_section(ctx), ctx)

    return await ctx.caches.indexes.get(("scalar segments", ctx.manifest_path), load)


__all__ = ["ScalarSegment", "index_section", "scalar_segments", "segments_of"]
