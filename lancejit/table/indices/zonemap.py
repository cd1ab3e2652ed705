"""Zone-map scalar indices (``create_scalar_index(col, index_type="ZONEMAP")`` in the reference).

An index segment with details ``lance.table.ZoneMapIndexDetails`` stores
``_indices/<uuid>/zonemap.lance``: one row per zone of ``rows_per_zone`` (8192) rows of a
fragment: ``min``, ``max`` (the column's type, inclusive, NaN excluded), ``null_count``,
``nan_count``, ``fragment_id``, ``zone_start`` (offset in the fragment), ``zone_length``.

Coverage (:mod:`.coverage`): a zone map describes only the fragments of its segment's fragment
bitmap.  The file may still hold zones of fragments the reference has since dropped from the
bitmap (their indexed column was rewritten in place): those zones are stale and never used.

Zones count the rows the index was trained on (the live rows then), so a fragment's zones are
physical row ranges only when their lengths add up to the fragment's physical rows; for other
fragments (rows were deleted before the index was built) and for fragments the segment does
not cover, :meth:`ZoneMaps.zones_of` returns None and nothing is pruned there.

Bounds stay Arrow arrays of the column's own type (never converted to float64: int64 beyond
2**53 and uint64 beyond 2**63 compare exactly).

:func:`zone_maps` loads every zone map of a version once per process (cached by manifest URI):
one open + read of each zone-map file, after the version's :func:`~.coverage.index_coverage`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from lancejit.core.errors import CorruptFileError, LanceJitError
from lancejit.io.store import join_path

from .coverage import IndexSegment, PerVersion, index_coverage

if TYPE_CHECKING:  # pragma: no cover
    from ..meta.context import DatasetContext

ZONEMAP_DETAILS = "ZoneMapIndexDetails"
ZONEMAP_FILE = "zonemap.lance"
_COLUMNS = ("min", "max", "null_count", "nan_count", "fragment_id", "zone_start", "zone_length")


@dataclass(frozen=True, slots=True)
class FragmentZones:
    """One fragment's zones, sorted by start: ``offsets`` (int64, ``k + 1`` boundaries: zone ``i``
    holds physical rows ``[offsets[i], offsets[i + 1])``), bounds and counts per zone."""

    offsets: np.ndarray
    mins: pa.Array
    maxs: pa.Array
    null_count: np.ndarray
    nan_count: np.ndarray


@dataclass(frozen=True, slots=True)
class ZoneMap:
    """The zone map of one index segment on one column (Lance ``field_id``)."""

    field_id: int
    segment: IndexSegment
    fragment_ids: np.ndarray
    zone_start: np.ndarray
    zone_length: np.ndarray
    mins: pa.Array
    maxs: pa.Array
    null_count: np.ndarray
    nan_count: np.ndarray

    def zones_of(self, fragment_id: int, physical_rows: int) -> FragmentZones | None:
        """The zones of a fragment as physical row ranges, None when unusable: the segment does
        not cover the fragment, or its zones are not the fragment's physical rows."""
        if not self.segment.covers(fragment_id):
            return None
        idx = np.flatnonzero(self.fragment_ids == fragment_id)
        if len(idx) == 0:
            return None
        idx = idx[np.argsort(self.zone_start[idx], kind="stable")]
        starts, lengths = self.zone_start[idx], self.zone_length[idx]
        offsets = np.concatenate([starts, starts[-1:] + lengths[-1:]])
        if offsets[0] != 0 or np.any(starts[1:] != starts[:-1] + lengths[:-1]) or offsets[-1] != physical_rows:
            return None
        take = pa.array(idx)
        return FragmentZones(offsets, self.mins.take(take), self.maxs.take(take),
                             self.null_count[idx], self.nan_count[idx])


@dataclass(frozen=True, slots=True)
class ZoneMaps:
    """The readable zone maps of a version, by field id (each field: one per segment)."""

    by_field: dict[int, tuple[ZoneMap, ...]]

    def __contains__(self, field_id: object) -> bool:
        return field_id in self.by_field

    def zones_of(self, field_id: int, fragment_id: int, physical_rows: int) -> FragmentZones | None:
        """The zones of field ``field_id`` in a fragment from the segment covering it, or None."""
        for zm in self.by_field.get(field_id, ()):
            got = zm.zones_of(fragment_id, physical_rows)
            if got is not None:
                return got
        return None


NO_ZONE_MAPS = ZoneMaps({})


async def _read_segment(ctx: "DatasetContext", seg: IndexSegment) -> ZoneMap | None:
    from lancejit.file.reader import AsyncLanceFileReader

    path = join_path(ctx.root, "_indices", seg.uuid, ZONEMAP_FILE)
    try:
        reader = await AsyncLanceFileReader.from_reader(ctx.reader(ctx.store, path), uri=ctx.store.uri(path),
                                                       store=ctx.store)
        table = await reader.read_all()
    except LanceJitError:
        return None  # an index we cannot read prunes nothing
    if any(c not in table.column_names for c in _COLUMNS):
        return None

    def ints(name: str) -> np.ndarray:
        return np.asarray(table.column(name).to_numpy(), dtype=np.int64)

    zm = ZoneMap(seg.fields[0], seg, ints("fragment_id"), ints("zone_start"), ints("zone_length"),
                 table.column("min").combine_chunks(), table.column("max").combine_chunks(),
                 ints("null_count"), ints("nan_count"))
    if np.any(zm.zone_start < 0) or np.any(zm.zone_length <= 0):
        raise CorruptFileError("zone map has negative zone starts or empty zones", path=ctx.store.uri(path))
    return zm


async def _load(ctx: "DatasetContext") -> ZoneMaps:
    coverage = await index_coverage(ctx)
    out: dict[int, list[ZoneMap]] = {}
    for seg in coverage.segments:
        if seg.kind != ZONEMAP_DETAILS or len(seg.fields) != 1 or seg.base_id is not None or not len(seg.fragments):
            continue
        zm = await _read_segment(ctx, seg)
        if zm is not None:
            out.setdefault(zm.field_id, []).append(zm)
    return ZoneMaps({k: tuple(v) for k, v in out.items()})


_ZONE_MAPS = PerVersion("zonemaps")


async def zone_maps(ctx: "DatasetContext") -> ZoneMaps:
    """Zone maps of this version (empty without zone-map indices; loaded once per version and
    process)."""
    if ctx.manifest.index_section is None:
        return NO_ZONE_MAPS
    return await _ZONE_MAPS.get(ctx, lambda: _load(ctx))


__all__ = ["FragmentZones", "NO_ZONE_MAPS", "ZONEMAP_DETAILS", "ZoneMap", "ZoneMaps", "zone_maps"]
