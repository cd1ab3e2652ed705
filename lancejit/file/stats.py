"""Page statistics of legacy (0.1) files: per batch ("page") null count, min and max of a column.

The reference's 0.1 writer (pylance 14: ``data_storage_version="legacy"``) collects them for
every primitive, string and binary column and stores them after the page table as a one-batch
"statistics file" (``Metadata.statistics``: its own Lance schema, leaf field ids and page table)::

    struct "<data field id>" { null_count: int64, min_value: T, max_value: T }   one row per batch

Bounds are inclusive.  Strings and binaries longer than 64 bytes are truncated (the min to a
prefix, the max to an incremented prefix, or null when none exists).  An all-null batch has the
type's full range (numbers) or null bounds.  NaN never enters a float bound.  A null bound means
"unbounded" here (nullable legacy strings read an empty min back as null).

:func:`load_legacy_statistics` decodes them from the bytes the metadata parse already holds
(the page table region), without another request when they are there.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Mapping

import numpy as np
import pyarrow as pa

from lancejit.core.errors import CorruptFileError, LanceJitError
from lancejit.core.ranges import RangeReader
from lancejit.core.schema import LanceSchema
from lancejit.file.region import MetadataRegion

_STAT_CHILDREN = ("null_count", "min_value", "max_value")


@dataclass(frozen=True, slots=True)
class ColumnStatistics:
    """One column's statistics: ``null_count`` (int64) and inclusive bounds ``min_value`` /
    ``max_value`` (Arrow arrays, null = unbounded) for every batch (page) of the file."""

    field_id: int
    null_count: np.ndarray
    min_value: pa.Array
    max_value: pa.Array


@dataclass(frozen=True, slots=True)
class PageStatistics:
    """Statistics of a 0.1 file: ``batch_offsets`` (int64, ``num_batches + 1`` cumulative rows,
    so batch ``b`` holds rows ``[batch_offsets[b], batch_offsets[b + 1])``) and the columns that
    have statistics, by Lance field id."""

    batch_offsets: np.ndarray
    columns: Mapping[int, ColumnStatistics]

    @property
    def num_batches(self) -> int:
        return len(self.batch_offsets) - 1


async def load_legacy_statistics(reader: RangeReader, stats_pb, region: MetadataRegion, file_size: int,
                                 batch_offsets: np.ndarray, path: str) -> PageStatistics | None:
    """Decode ``Metadata.statistics`` (``stats_pb``) of a 0.1 file; None when the file has none,
    or when they cannot be used (malformed or of a shape this reader does not know: statistics
    are optional, so the scan then simply reads every page)."""
    if stats_pb is None or not len(stats_pb.schema):
        return None
    try:
        return await _load(reader, stats_pb, region, file_size, batch_offsets, path)
    except (LanceJitError, ValueError, TypeError, KeyError, struct.error):
        return None


async def _load(reader: RangeReader, stats_pb, region: MetadataRegion, file_size: int,
                batch_offsets: np.ndarray, path: str) -> PageStatistics | None:
    from lancejit.encoding.legacy.values import is_binary_like, is_fixed_stride, read_plain, read_var_binary
    from lancejit.encoding.v20.steps import gather
    from lancejit.file.legacy import run_region_steps

    num_batches = len(batch_offsets) - 1
    schema = LanceSchema.from_pb(stats_pb.schema, {}, path=path)
    ids = schema.field_ids()
    min_id, max_id = min(ids), max(ids)
    nfields = max_id - min_id + 1
    ptpos = int(stats_pb.page_table_position)
    if ptpos < 0 or ptpos + nfields * 16 > file_size:
        raise CorruptFileError("statistics page table outside the file", path=path)
    (raw,) = [region.get(ptpos, ptpos + nfields * 16)] if region.covers(ptpos, ptpos + nfields * 16) else \
        await reader.read_ranges([(ptpos, ptpos + nfields * 16)], priority=0)
    table = np.frombuffer(raw, dtype="<i8").reshape(nfields, 2)
    whole = np.array([[0, num_batches]], dtype=np.int64)
    gens, keys = [], []
    for top in schema.fields:
        if not top.name.isdigit() or not top.children:
            continue
        kids = {c.name: c for c in top.children}
        if set(_STAT_CHILDREN) - set(kids):
            continue
        for name in _STAT_CHILDREN:
            f = kids[name]
            pos, length = (int(x) for x in table[f.id - min_id])
            if length != num_batches or pos < 0 or pos > file_size:
                raise CorruptFileError(f"statistics page of field {top.name} has {length} rows", path=path)
            typ = f.arrow_type(path=path)
            if is_binary_like(typ):
                gens.append(read_var_binary(typ, True, pos, length, whole, path))
            elif is_fixed_stride(typ) and not pa.types.is_fixed_size_list(typ):
                gens.append(read_plain(typ, pos, length, whole, path))
            else:
                break
            keys.append((int(top.name), name))
    if not gens:
        return None
    values = await run_region_steps(gather(gens), reader, region, file_size, path, "statistics page")
    got: dict[int, dict[str, pa.Array]] = {}
    for (fid, name), arr in zip(keys, values):
        got.setdefault(fid, {})[name] = arr
    columns = {}
    for fid, parts in got.items():
        if len(parts) == 3:
            columns[fid] = ColumnStatistics(
                fid, np.asarray(parts["null_count"].to_numpy(zero_copy_only=False), dtype=np.int64),
                parts["min_value"], parts["max_value"],
            )
    return PageStatistics(np.asarray(batch_offsets, dtype=np.int64), columns) if columns else None


__all__ = ["ColumnStatistics", "PageStatistics", "load_legacy_statistics"]
