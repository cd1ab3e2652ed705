"""Zone-map scalar indices (``create_scalar_index(col, index_type="ZONEMAP")`` in the reference).

An index listed in the manifest's index section with details ``lance.table.ZoneMapIndexDetails``
stores ``_indices/<uuid>/zonemap.lance``: one row per zone of ``rows_per_zone`` (8192) rows of a
fragment: ``min``, ``max`` (the column's type, inclusive, NaN excluded), ``null_count``,
``nan_count``, ``fragment_id``, ``zone_start`` (offset in the fragment), ``zone_length``.

Zones count the rows the index was trained on (the live rows then), so a fragment's zones are
physical row ranges only when their lengths add up to the fragment's physical rows; for other
fragments (rows were deleted before the index was built) and for fragments the index does not
cover, :meth:`ZoneMap.zones_of` returns None and nothing is pruned there.

:func:`zone_maps` loads every zone map of a version once per process (cached by manifest URI):
one read of the manifest file for its index section and one open + read of each zone-map file.
"""

from __future__ import annotations

import uuid as _uuid
from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from lancejit.core.errors import CorruptFileError, LanceJitError
from lancejit.io.store import join_path

from ..meta.manifest import decode_index_section

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
    """The zone map of one column (Lance ``field_id``) over the fragments it covers."""

    field_id: int
    fragment_ids: np.ndarray
    zone_start: np.ndarray
    zone_length: np.ndarray
    mins: pa.Array
    maxs: pa.Array
    null_count: np.ndarray
    nan_count: np.ndarray

    def zones_of(self, fragment_id: int, physical_rows: int) -> FragmentZones | None:
        """The zones of a fragment as physical row ranges, None when unusable (module docstring)."""
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


async def _load(ctx: "DatasetContext") -> dict[int, ZoneMap]:
    from lancejit.file.reader import AsyncLanceFileReader

    m = ctx.manifest
    if m.index_section is None:
        return {}
    _, data = await ctx.reader(ctx.store, ctx.manifest_path).read_tail(1 << 62)
    section = decode_index_section(data, m, ctx.store.uri(ctx.manifest_path))
    out: dict[int, ZoneMap] = {}
    for ix in section.indices if section is not None else ():
        if not ix.index_details.type_url.endswith(ZONEMAP_DETAILS) or len(ix.fields) != 1 or ix.HasField("base_id"):
            continue
        try:
            name = str(_uuid.UUID(bytes=bytes(ix.uuid.uuid)))
        except ValueError:
            continue
        path = join_path(ctx.root, "_indices", name, ZONEMAP_FILE)
        try:
            reader = await AsyncLanceFileReader.from_reader(ctx.reader(ctx.store, path), uri=ctx.store.uri(path),
                                                           store=ctx.store)
            table = await reader.read_all()
        except LanceJitError:
            continue  # an index we cannot read prunes nothing
        if any(c not in table.column_names for c in _COLUMNS):
            continue

        def ints(name: str) -> np.ndarray:
            return np.asarray(table.column(name).to_numpy(), dtype=np.int64)

        zm = ZoneMap(int(ix.fields[0]), ints("fragment_id"), ints("zone_start"), ints("zone_length"),
                     table.column("min").combine_chunks(), table.column("max").combine_chunks(),
                     ints("null_count"), ints("nan_count"))
        if np.any(zm.zone_start < 0) or np.any(zm.zone_length <= 0):
            raise CorruptFileError("zone map has negative zone starts or empty zones", path=ctx.store.uri(path))
        out[zm.field_id] = zm
    return out


#: Zone maps by manifest URI (a manifest and the index files it names never change), so
#: datasets opened again reuse them; bounded to :data:`_CACHE_MAX` versions.
_CACHE: "OrderedDict[str, dict[int, ZoneMap]]" = OrderedDict()
_CACHE_MAX = 64


async def zone_maps(ctx: "DatasetContext") -> dict[int, ZoneMap]:
    """Zone maps of this version by field id (empty without zone-map indices)."""
    if ctx.manifest.index_section is None:
        return {}
    key = ctx.store.uri(ctx.manifest_path)
    got = _CACHE.get(key)
    if got is None:
        got = await ctx.caches.indexes.get(("zonemaps", ctx.manifest_path), lambda: _load(ctx))
        _CACHE[key] = got
        while len(_CACHE) > _CACHE_MAX:
            _CACHE.popitem(last=False)
    else:
        _CACHE.move_to_end(key)
    return got


__all__ = ["FragmentZones", "ZoneMap", "zone_maps"]
