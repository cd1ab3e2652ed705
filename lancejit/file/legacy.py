"""The legacy (0.1) file container: footer, ``Metadata``, embedded schema and page table.

Layout of a 0.1 file's tail (all protobufs framed as ``u32 LE length + message``)::

    [pages ...][page table][statistics pages + their page table][dictionary values]
    [Manifest (schema only)][Metadata][footer: i64 metadata position, u16 major=0, u16 minor<=2, "LANC"]

:func:`parse_legacy_metadata` ``(reader, tail, file_size)`` (the file layer calls it once the
16-byte footer says 0.x; the order ``(reader, file_size, tail)`` is accepted too) returns a
:class:`LegacyMetadata`.  It parses what the tail holds and reads at most two more ranges
(the metadata region before the tail, then dictionary values not in it).

:class:`LegacyMetadata` fields (what the file layer needs to build a ``FileMetadata``):

* ``schema``: :class:`lancejit.core.schema.LanceSchema` from the embedded ``lance.table.Manifest``
  (fields 1 and 5), field ids as written; ``arrow_schema``: ``schema.to_arrow(dataset=True)``.
* ``schema_metadata``: schema-level metadata (``str -> bytes``).
* ``num_rows``: rows in the file (last batch offset); ``batch_offsets``: cumulative rows per batch,
  starting at 0 (``num_batches + 1`` entries, int64 NumPy array).
* ``page_table``: int64 array of shape ``(max_field_id - min_field_id + 1, num_batches, 2)``:
  ``(position, length)`` of the page of field ``min_field_id + i`` in batch ``b`` (structs (0, 0));
  ``min_field_id``: the id of row 0 of the page table.
* ``dictionaries``: ``{field_id: pyarrow.Array}`` decoded dictionary values of dictionary fields.
* ``metadata_position``, ``manifest_position``, ``page_table_position``: byte positions;
  ``metadata_nbytes``: bytes of metadata parsed (for cache sizing); ``path``.
* ``statistics``: the page statistics (:mod:`lancejit.file.stats`), None without them.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np
import pyarrow as pa
from google.protobuf.message import DecodeError

from lancejit.core.errors import CorruptFileError, NotSupportedError
from lancejit.core.ranges import RangeReader
from lancejit.core.schema import LanceSchema
from lancejit.file.region import MetadataRegion
from lancejit.pb import file_pb2, table_pb2

LEGACY_FOOTER_LEN = 16
MAGIC = b"LANC"


@dataclass(frozen=True, slots=True)
class LegacyMetadata:
    """Everything parsed from a 0.1 file's tail (see the module docstring)."""

    path: str
    schema: LanceSchema
    arrow_schema: pa.Schema
    schema_metadata: Mapping[str, bytes]
    num_rows: int
    batch_offsets: np.ndarray
    page_table: np.ndarray
    min_field_id: int
    dictionaries: Mapping[int, pa.Array]
    metadata_position: int
    manifest_position: int
    page_table_position: int
    major: int = 0
    minor: int = 2
    metadata_nbytes: int = 0
    #: Page statistics (:class:`lancejit.file.stats.PageStatistics`), None when the file has none.
    statistics: Any = None

    @property
    def num_batches(self) -> int:
        return len(self.batch_offsets) - 1

    def page(self, field_id: int, batch: int) -> tuple[int, int]:
        """``(position, length)`` of field ``field_id``'s page in ``batch``."""
        i = field_id - self.min_field_id
        if not (0 <= i < self.page_table.shape[0]) or not (0 <= batch < self.page_table.shape[1]):
            raise CorruptFileError(f"no page for field {field_id} in batch {batch}", path=self.path)
        pos, length = self.page_table[i, batch]
        return int(pos), int(length)


def _framed(region: MetadataRegion, pos: int, msg, what: str, path: str, limit: int):
    if not region.covers(pos, pos + 4):
        raise CorruptFileError(f"{what} position {pos} outside the file's metadata", path=path)
    (n,) = struct.unpack("<I", region.get(pos, pos + 4))
    if pos + 4 + n > limit or not region.covers(pos + 4, pos + 4 + n):
        raise CorruptFileError(f"{what} of {n} bytes at {pos} runs past its region", path=path)
    try:
        msg.ParseFromString(bytes(region.get(pos + 4, pos + 4 + n)))
    except DecodeError as exc:
        raise CorruptFileError(f"cannot parse {what}: {exc}", path=path) from None
    return msg, n + 4


async def parse_legacy_metadata(reader: RangeReader, tail, file_size, *, schema: LanceSchema | None = None
                                ) -> LegacyMetadata:
    """Parse a 0.1 file's metadata from its last bytes ``tail`` (see the module docstring).

    ``schema``: the fields stored in this file (ids as in the dataset manifest) for files that
    do not embed their schema (``manifest_position`` 0); when given it replaces the embedded one.
    """
    if isinstance(tail, int) and not isinstance(file_size, int):
        tail, file_size = file_size, tail
    path = reader.path
    tail = memoryview(tail).cast("B") if memoryview(tail).format != "B" else memoryview(tail)
    if file_size < LEGACY_FOOTER_LEN or len(tail) < LEGACY_FOOTER_LEN:
        raise CorruptFileError("file too small for a legacy footer", path=path)
    meta_pos, major, minor, magic = struct.unpack("<qHH4s", tail[-LEGACY_FOOTER_LEN:])
    if magic != MAGIC:
        raise CorruptFileError("missing LANC magic", path=path)
    if major != 0 or minor > 2:
        raise NotSupportedError(f"{path}: legacy footer version {major}.{minor}")
    footer_start = file_size - LEGACY_FOOTER_LEN
    if not (0 <= meta_pos < footer_start):
        raise CorruptFileError(f"metadata position {meta_pos} outside the file", path=path)
    region = MetadataRegion(file_size - len(tail), tail)
    if not region.covers(meta_pos, footer_start):
        (buf,) = await reader.read_ranges([(meta_pos, footer_start)], priority=0)
        region = MetadataRegion(meta_pos, memoryview(buf))
    md, _ = _framed(region, meta_pos, file_pb2.Metadata(), "metadata", path, footer_start)
    mpos = int(md.manifest_position)
    ptpos = int(md.page_table_position)
    batch_offsets = np.asarray(list(md.batch_offsets), dtype=np.int64)
    if len(batch_offsets) == 0:
        batch_offsets = np.zeros(1, dtype=np.int64)
    if batch_offsets[0] != 0 or np.any(np.diff(batch_offsets) < 0):
        raise CorruptFileError("batch offsets are not cumulative row counts from 0", path=path)
    embedded = schema is None
    if embedded and mpos == 0:
        raise NotSupportedError(f"{path}: legacy file without an embedded schema (pass the dataset's)")
    if not (0 <= mpos < meta_pos) or not (0 <= ptpos <= meta_pos):
        raise CorruptFileError("manifest or page table position outside the file", path=path)
    lo = min(mpos, ptpos) if embedded else ptpos
    if not region.covers(lo, meta_pos):
        (buf,) = await reader.read_ranges([(lo, footer_start)], priority=0)
        region = MetadataRegion(lo, memoryview(buf))
    if schema is None:  # embedded
        manifest, _ = _framed(region, mpos, table_pb2.Manifest(), "manifest", path, meta_pos)
        schema = LanceSchema.from_pb(manifest.fields, dict(manifest.schema_metadata), path=path)
    ids = schema.field_ids()
    num_batches = len(batch_offsets) - 1
    if ids:
        min_id, max_id = min(ids), max(ids)
    else:
        min_id, max_id = 0, -1
    nfields = max_id - min_id + 1
    pt_bytes = nfields * num_batches * 16
    if ptpos + pt_bytes > meta_pos or not region.covers(ptpos, ptpos + pt_bytes):
        raise CorruptFileError("page table runs past the metadata", path=path)
    table = np.frombuffer(region.get(ptpos, ptpos + pt_bytes), dtype="<i8").reshape(nfields, num_batches, 2).copy()
    if np.any(table < 0) or np.any(table[:, :, 0] > file_size):
        raise CorruptFileError("page table entry outside the file", path=path)
    dictionaries = await _load_dictionaries(reader, schema, region, file_size, path)
    from lancejit.file.stats import load_legacy_statistics

    statistics = await load_legacy_statistics(
        reader, md.statistics if md.HasField("statistics") else None, region, file_size, batch_offsets, path
    )
    arrow_schema = schema.to_arrow(dataset=True, path=path)
    return LegacyMetadata(
        path=path,
        schema=schema,
        arrow_schema=arrow_schema,
        schema_metadata=dict(schema.metadata),
        num_rows=int(batch_offsets[-1]),
        batch_offsets=batch_offsets,
        page_table=table,
        min_field_id=min_id,
        dictionaries=dictionaries,
        metadata_position=meta_pos,
        manifest_position=mpos,
        page_table_position=ptpos,
        major=major,
        minor=minor,
        metadata_nbytes=file_size - region.start if region.start < file_size else len(tail),
        statistics=statistics,
    )


async def _load_dictionaries(reader: RangeReader, schema: LanceSchema, region: MetadataRegion, file_size: int, path: str) -> dict[int, pa.Array]:
    """Decode the values of every dictionary field (``Field.dictionary {offset, length}``),
    serving ranges from ``region`` when it holds them; all other ranges go in one request per step."""
    from lancejit.encoding.legacy.values import read_dictionary_values
    from lancejit.encoding.v20.steps import gather

    gens = []
    ids = []
    for f in schema.walk():
        if f.logical_type.startswith("dict:"):
            if f.dictionary is None:
                raise CorruptFileError(f"dictionary field {f.name!r} has no dictionary values", path=path)
            offset, length = f.dictionary
            if offset < 0 or length < 0 or offset > file_size or length > file_size:
                raise CorruptFileError(f"dictionary of field {f.name!r} outside the file", path=path)
            value_type = f.arrow_type(path=path).value_type
            gens.append(read_dictionary_values(value_type, int(offset), int(length), path))
            ids.append(f.id)
    if not gens:
        return {}
    values = await run_region_steps(gather(gens), reader, region, file_size, path, "dictionary values")
    return dict(zip(ids, values))


async def run_region_steps(gen, reader: RangeReader, region: MetadataRegion, file_size: int, path: str,
                           what: str) -> Any:
    """Drive the step generator ``gen`` to its result: ranges ``region`` holds are served from
    it, the others read in one request per step; ranges outside the file raise
    :class:`CorruptFileError` naming ``what``."""
    try:
        req = next(gen)
        while True:
            for s, e in req:
                if s < 0 or e > file_size or e < s:
                    raise CorruptFileError(f"{what} outside the file", path=path)
            missing = [(s, e) for s, e in req if not region.covers(s, e)]
            got = iter(await reader.read_ranges(missing, priority=0)) if missing else iter(())
            bufs = [region.get(s, e) if region.covers(s, e) else next(got) for s, e in req]
            req = gen.send(bufs)
    except StopIteration as stop:
        return stop.value
