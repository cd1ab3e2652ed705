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


async def _fetch(reader: RangeReader, region: MetadataRegion, file_size: int, path: str,
                 ranges: list[tuple[int, int]]) -> list[memoryview]:
    """``ranges`` from ``region`` when it holds them, the others in one request."""
    for a, b in ranges:
        if a < 0 or b > file_size or b < a:
            raise CorruptFileError("statistics page outside the file", path=path)
    missing = [(a, b) for a, b in ranges if not region.covers(a, b)]
    got = iter(await reader.read_ranges(missing, priority=0)) if missing else iter(())
    return [region.get(a, b) if region.covers(a, b) else next(got) for a, b in ranges]


def _is_string(typ: pa.DataType) -> bool:
    return pa.types.is_string(typ) or pa.types.is_large_string(typ) or pa.types.is_binary(typ) \
        or pa.types.is_large_binary(typ)


async def _load(reader: RangeReader, stats_pb, region: MetadataRegion, file_size: int,
                batch_offsets: np.ndarray, path: str) -> PageStatistics | None:
    """Decode with NumPy / Arrow buffers only (opening a file loads no kernel): PLAIN pages of
    fixed-width values, VAR_BINARY pages (values, then ``n + 1`` i64 absolute positions)."""
    num_batches = len(batch_offsets) - 1
    schema = LanceSchema.from_pb(stats_pb.schema, {}, path=path)
    ids = schema.field_ids()
    min_id, max_id = min(ids), max(ids)
    nfields = max_id - min_id + 1
    ptpos = int(stats_pb.page_table_position)
    (raw,) = await _fetch(reader, region, file_size, path, [(ptpos, ptpos + nfields * 16)])
    table = np.frombuffer(raw, dtype="<i8").reshape(nfields, 2)
    pages: list[tuple[int, str, pa.DataType, int]] = []  # (data field id, child, type, position)
    for top in schema.fields:
        kids = {c.name: c for c in top.children}
        if not top.name.isdigit() or set(_STAT_CHILDREN) - set(kids):
            continue
        found = []
        for name in _STAT_CHILDREN:
            f = kids[name]
            pos, length = (int(x) for x in table[f.id - min_id])
            typ = f.arrow_type(path=path)
            if length != num_batches:
                raise CorruptFileError(f"statistics page of field {top.name} has {length} rows", path=path)
            if not (_is_string(typ) or pa.types.is_primitive(typ) and typ.bit_width % 8 == 0):
                break
            found.append((int(top.name), name, typ, pos))
        if len(found) == 3:
            pages.extend(found)
    if not pages:
        return None
    n = num_batches
    width = [8 * (n + 1) if _is_string(t) else n * t.bit_width // 8 for _, _, t, _ in pages]
    first = await _fetch(reader, region, file_size, path, [(p, p + w) for (_, _, _, p), w in zip(pages, width)])
    positions = {i: np.frombuffer(b, dtype="<i8") for i, ((_, _, t, _), b) in enumerate(zip(pages, first))
                 if _is_string(t)}
    for vpos in positions.values():
        if np.any(np.diff(vpos) < 0):
            raise CorruptFileError("statistics value positions decrease", path=path)
    values = dict(zip(positions, await _fetch(reader, region, file_size, path,
                                             [(int(p[0]), int(p[-1])) for p in positions.values()])))
    got: dict[int, dict[str, pa.Array]] = {}
    for i, (fid, name, typ, _) in enumerate(pages):
        if i in positions:
            offsets = positions[i] - positions[i][0]
            valid = np.packbits(np.diff(offsets) != 0, bitorder="little")  # empty reads back as null
            large = pa.large_binary() if pa.types.is_binary(typ) or pa.types.is_large_binary(typ) else pa.large_string()
            arr = pa.Array.from_buffers(large, n, [pa.py_buffer(valid), pa.py_buffer(offsets.tobytes()),
                                                   pa.py_buffer(bytes(values[i]))]).cast(typ)
        else:
            arr = pa.Array.from_buffers(typ, n, [None, pa.py_buffer(bytes(first[i]))])
        got.setdefault(fid, {})[name] = arr
    columns = {
        fid: ColumnStatistics(fid, np.asarray(parts["null_count"].to_numpy(zero_copy_only=False), dtype=np.int64),
                              parts["min_value"], parts["max_value"])
        for fid, parts in got.items()
    }
    return PageStatistics(np.asarray(batch_offsets, dtype=np.int64), columns)


__all__ = ["ColumnStatistics", "PageStatistics", "load_legacy_statistics"]
