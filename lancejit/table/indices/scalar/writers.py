"""Building BTREE, BITMAP and LABEL_LIST index files in the reference's format (see
:mod:`.btree` and :mod:`.bitmap` for the layouts), from a column's values and their row ids.

Inputs: ``values`` (an Arrow array of the indexed column) and ``ids`` (uint64 row addresses, or
stable row ids, aligned with ``values``).  Each builder returns the tables and metadata of its
files; :func:`write_index` writes them under an index directory.

* BTREE: rows sorted by value (NULLs first; NaN after every number; ties in id order), cut into
  pages of ``batch_size`` rows (4096), one lookup row per page (first / last value, NULL count).
* BITMAP: one row per distinct value in value order (the NULL key first), its rows as a
  serialized ``RowIdTreeMap``.
* LABEL_LIST: a bitmap over the list items (a row appears under each label it holds; NULL items
  under the NULL key), the rows whose list is NULL in global buffer 1
  (``lance:label_list_nulls``), index version 1.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lancejit.io.store import join_path

from . import bitmap as _bm
from . import btree as _bt
from .rowset import encode_treemap

#: Index format versions the reference records in the manifest (``IndexMetadata.index_version``).
INDEX_VERSIONS = {"BTREE": 0, "BITMAP": 0, "LABEL_LIST": 1}
#: ``index_details`` type URLs.
DETAILS_URLS = {"BTREE": "/lance.table.BTreeIndexDetails", "BITMAP": "/lance.table.BitmapIndexDetails",
                "LABEL_LIST": "/lance.table.LabelListIndexDetails"}


@dataclass(frozen=True, slots=True)
class IndexFile:
    """One file to write: ``name`` in the index directory, rows, schema metadata, global buffers."""

    name: str
    table: pa.Table
    metadata: dict[str, str]
    buffers: tuple[tuple[str, bytes], ...] = field(default=())


def _combined(values: pa.Array | pa.ChunkedArray) -> pa.Array:
    if isinstance(values, pa.ChunkedArray):
        return values.combine_chunks() if values.num_chunks != 1 else values.chunk(0)
    return values


def _sorted_order(values: pa.Array, ids: np.ndarray) -> np.ndarray:
    """Row order by (value, id): NULLs first, NaN after every number (Arrow's sort would put
    NaN with the NULLs)."""
    if pa.types.is_floating(values.type):
        vals = values.to_numpy(zero_copy_only=False).astype(np.float64)
        valid = ~values.is_null().to_numpy(zero_copy_only=False) if values.null_count else np.ones(len(vals), bool)
        nan = np.isnan(vals) & valid
        return np.lexsort((ids, np.where(valid & ~nan, vals, 0.0), nan, valid))
    by_id = np.argsort(ids, kind="stable")
    in_order = values.take(pa.array(by_id))
    order = pc.array_sort_indices(in_order, null_placement="at_start")  # (stable)
    return by_id[order.to_numpy()]


def btree_files(values: pa.Array | pa.ChunkedArray, ids: np.ndarray,
                batch_size: int = _bt.DEFAULT_BATCH_SIZE) -> list[IndexFile]:
    """``page_data.lance`` and ``page_lookup.lance`` of a BTREE over ``values``."""
    values = _combined(values)
    ids = np.asarray(ids, dtype=np.uint64)
    order = _sorted_order(values, ids)
    svals = values.take(pa.array(order))
    sids = ids[order]
    n = len(svals)
    starts = np.arange(0, n, batch_size, dtype=np.int64)
    ends = np.minimum(starts + batch_size, n)
    valid = ~svals.is_null().to_numpy(zero_copy_only=False) if svals.null_count else np.ones(n, dtype=bool)
    nulls = np.add.reduceat((~valid).astype(np.int64), starts) if n else np.zeros(0, dtype=np.int64)
    vt = values.type
    data = pa.table([svals, pa.array(sids, pa.uint64())],
                    schema=pa.schema([pa.field(_bt.VALUES, vt), pa.field(_bt.IDS, pa.uint64(), nullable=False)]))
    lookup = pa.table([
        svals.take(pa.array(starts)) if n else pa.array([], vt),
        svals.take(pa.array(ends - 1)) if n else pa.array([], vt),
        pa.array(nulls.astype(np.uint32), pa.uint32()),
        pa.array(np.arange(len(starts), dtype=np.uint32), pa.uint32()),
    ], schema=pa.schema([pa.field("min", vt), pa.field("max", vt), pa.field("null_count", pa.uint32(), nullable=False),
                         pa.field("page_idx", pa.uint32(), nullable=False)]))
    return [IndexFile(_bt.PAGES_FILE, data, {}),
            IndexFile(_bt.LOOKUP_FILE, lookup, {"batch_size": str(batch_size), "range_partitioned": "false"})]


def _groups(values: pa.Array, ids: np.ndarray) -> tuple[pa.Array, list[bytes]]:
    """Distinct values in value order (NULL first when present) and each one's rows, serialized."""
    ids = np.asarray(ids, dtype=np.uint64)
    n = len(values)
    if n == 0:
        return pa.array([], values.type), []
    enc = pc.dictionary_encode(values, null_encoding="encode") if values.null_count else pc.dictionary_encode(values)
    dictionary = enc.dictionary
    codes = enc.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    key_order = pc.array_sort_indices(dictionary, null_placement="at_start").to_numpy()
    rank = np.empty(len(dictionary), dtype=np.int64)
    rank[key_order] = np.arange(len(dictionary))
    r = rank[codes]
    order = np.lexsort((ids, r))
    r, sids = r[order], ids[order]
    cuts = np.flatnonzero(r[1:] != r[:-1]) + 1
    bounds = [0, *cuts.tolist(), n]
    bitmaps = [encode_treemap(sids[a:b]) for a, b in zip(bounds[:-1], bounds[1:])]
    keys = dictionary.take(pa.array(key_order[r[np.asarray(bounds[:-1])]]))
    return keys, bitmaps


def _bitmap_table(keys: pa.Array, bitmaps: list[bytes]) -> pa.Table:
    return pa.table([keys, pa.array(bitmaps, pa.binary())],
                    schema=pa.schema([pa.field(_bm.KEYS, keys.type), pa.field(_bm.BITMAPS, pa.binary())]))


def bitmap_files(values: pa.Array | pa.ChunkedArray, ids: np.ndarray) -> list[IndexFile]:
    """``bitmap_page_lookup.lance`` of a BITMAP over ``values``."""
    keys, bitmaps = _groups(_combined(values), ids)
    meta = {_bm.STATS_KEY: json.dumps({"num_bitmaps": len(bitmaps)}, separators=(",", ":"))}
    return [IndexFile(_bm.LOOKUP_FILE, _bitmap_table(keys, bitmaps), meta)]


def label_list_files(lists: pa.Array | pa.ChunkedArray, ids: np.ndarray) -> list[IndexFile]:
    """``bitmap_page_lookup.lance`` of a LABEL_LIST over the list column ``lists``."""
    lists = _combined(lists)
    ids = np.asarray(ids, dtype=np.uint64)
    items = pc.list_flatten(lists)
    parents = pc.list_parent_indices(lists).to_numpy(zero_copy_only=False)
    null_lists = np.sort(ids[lists.is_null().to_numpy(zero_copy_only=False)]) if lists.null_count else ids[:0]
    return label_pair_files(items, ids[parents], null_lists)


def label_pair_files(items: pa.Array, ids: np.ndarray, null_lists: np.ndarray) -> list[IndexFile]:
    """A LABEL_LIST's file from (label, row) pairs and the sorted rows whose list is NULL."""
    keys, bitmaps = _groups(_combined(items), ids)
    meta = {_bm.STATS_KEY: json.dumps({"num_bitmaps": len(bitmaps)}, separators=(",", ":"))}
    return [IndexFile(_bm.LOOKUP_FILE, _bitmap_table(keys, bitmaps), meta,
                      ((_bm.LIST_NULLS_KEY, encode_treemap(null_lists)),))]


def index_files(kind: str, values: pa.Array | pa.ChunkedArray, ids: np.ndarray) -> list[IndexFile]:
    """The files of an index of ``kind`` (``BTREE``, ``BITMAP``, ``LABEL_LIST``)."""
    if kind == "BTREE":
        return btree_files(values, ids)
    if kind == "BITMAP":
        return bitmap_files(values, ids)
    return label_list_files(values, ids)


async def write_index(store: Any, directory: str, files: list[IndexFile],
                      storage_options: dict[str, Any] | None = None) -> list[tuple[str, int]]:
    """Write ``files`` under ``directory`` (a store path); ``(name, size in bytes)`` of each."""
    from ..files import write_index_file

    out = []
    for f in files:
        size = await write_index_file(store.uri(join_path(directory, f.name)), f.table, f.metadata, f.buffers,
                                      storage_options)
        out.append((f.name, size))
    return out


__all__ = ["DETAILS_URLS", "INDEX_VERSIONS", "IndexFile", "bitmap_files", "btree_files", "index_files",
           "label_list_files", "label_pair_files", "write_index"]
