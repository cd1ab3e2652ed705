"""Reading the reference's IVF vector indices (IVF_FLAT, IVF_PQ, IVF_SQ; the IVF_HNSW_* variants'
storage too, searched without their graph).

An index listed in the manifest's index section with details ``VectorIndexDetails`` stores two
Lance files under ``_indices/<uuid>/``:

* ``index.idx``: no rows; schema metadata ``lance:index`` (JSON ``{"type", "distance_type"}``)
  and ``lance:ivf`` (the global buffer holding the ``IVF`` message whose ``centroids_tensor``
  is ``(num_partitions, dim)``); HNSW variants also hold their graphs here;
* ``auxiliary.idx``: one row per indexed vector, partition after partition: ``_rowid``
  (uint64) and the stored vector: ``flat`` (raw, normalized for cosine), ``__pq_code``
  (uint8 x ``num_sub_vectors`` (8-bit) or half that (4-bit); each partition's codes transposed:
  byte ``b`` of row ``i`` at ``b * n + i`` of the partition's flattened codes) or ``__sq_code``
  (uint8 x dim); schema metadata ``lance:ivf`` (the ``IVF`` message whose ``offsets`` /
  ``lengths`` place the partitions), ``distance_type`` and ``storage_metadata`` (JSON list of
  one JSON string: PQ ``{"codebook_position", "nbits", "num_sub_vectors", "dimension",
  "transposed"}`` with the codebook a float ``Tensor`` in global buffer ``codebook_position``
  (``(2**nbits, dim)``: sub-vector ``s``'s centroids are the ``s``-th ``2**nbits * dim / m``
  values), SQ ``{"dim", "num_bits", "bounds": {"start", "end"}}``, FLAT ``{"dim"}``).

L2 and cosine (on normalized vectors, as l2) PQ codes quantize the residual to the partition's
centroid; dot codes quantize the vector itself.  Loaded indices are cached per process by
index directory (an index's files never change).
"""

from __future__ import annotations

import json
from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from lancejit.core.errors import CorruptFileError, LanceJitError, NotSupportedError
from lancejit.io.store import join_path

from . import pb
from .query import metric_code
from ..coverage import IndexCoverage, index_coverage

if TYPE_CHECKING:  # pragma: no cover
    from lancejit.table.meta.context import DatasetContext

INDEX_FILE = "index.idx"
AUX_FILE = "auxiliary.idx"
KINDS = ("IVF_FLAT", "IVF_PQ", "IVF_SQ", "IVF_HNSW_FLAT", "IVF_HNSW_PQ", "IVF_HNSW_SQ")


@dataclass(frozen=True, slots=True)
class IndexEntry:
    """A vector index of the manifest: ``uuid`` (text), ``name``, ``field_id``, the
    ``fragment_ids`` it covers, ``dataset_version`` it was built at, ``details``."""

    uuid: str
    name: str
    field_id: int
    fragment_ids: frozenset[int]
    dataset_version: int
    details: Any


@dataclass(frozen=True, slots=True)
class IvfIndex:
    """A loaded IVF index.  ``kind``: the index type (``IVF_HNSW_*`` too; :attr:`storage` names
    the storage searched: ``IVF_FLAT`` / ``IVF_PQ`` / ``IVF_SQ``); ``metric``: a :mod:`.kernels` code; ``centroids`` float32
    ``(P, dim)``; ``offsets`` / ``lengths`` int64 ``(P,)``; ``row_ids`` uint64 (every row,
    partition after partition); ``codes``: FLAT ``(n, dim)`` floats, PQ ``(n, code bytes)``
    uint8 (transposed per partition), SQ ``(n, dim)`` uint8; PQ: ``codebook`` float32
    ``(m, 2**nbits, dim / m)`` and ``nbits``; SQ: ``bounds`` ``(start, end)``."""

    kind: str
    metric: int
    centroids: np.ndarray
    offsets: np.ndarray
    lengths: np.ndarray
    row_ids: np.ndarray
    codes: np.ndarray
    codebook: np.ndarray | None = None
    nbits: int = 8
    bounds: tuple[float, float] = (0.0, 0.0)

    @property
    def num_partitions(self) -> int:
        return len(self.offsets)

    @property
    def storage(self) -> str:
        return self.kind.replace("HNSW_", "")


def vector_indices(coverage: IndexCoverage) -> list[IndexEntry]:
    """The vector index entries among a version's index segments (their fragment bitmaps as
    :mod:`..coverage` reads them: a fragment outside one is searched flat)."""
    out = []
    for seg in coverage.segments:
        if not seg.kind.endswith("VectorIndexDetails") or len(seg.fields) != 1:
            continue
        try:
            details = pb.VectorIndexDetails.FromString(seg.metadata.index_details.value)
        except Exception:  # an unreadable detail: the index files say what it is
            details = None
        out.append(IndexEntry(seg.uuid, seg.name, seg.fields[0], frozenset(seg.fragments.tolist()),
                              seg.dataset_version, details))
    return out


async def index_entries(ctx: "DatasetContext") -> list[IndexEntry]:
    """The vector indices of this version (from its :func:`~..coverage.index_coverage`, built
    once per version)."""
    return vector_indices(await index_coverage(ctx))


async def _open(ctx: "DatasetContext", path: str) -> tuple[Any, Any]:
    from lancejit.file.reader import AsyncLanceFileReader

    r = await AsyncLanceFileReader.from_reader(ctx.reader(ctx.store, path), uri=ctx.store.uri(path), store=ctx.store)
    return r, r.file_metadata


async def _global_buffer(ctx: "DatasetContext", path: str, meta: Any, key: str) -> bytes:
    raw = meta.schema_metadata.get(key)
    try:
        pos = int(raw)
        start, size = meta.global_buffers[pos]
    except (TypeError, ValueError, IndexError) as exc:
        raise CorruptFileError(f"schema metadata {key!r} = {raw!r} names no global buffer",
                               path=ctx.store.uri(path)) from exc
    if start < 0 or size < 0 or start + size > meta.file_size:
        raise CorruptFileError(f"global buffer {pos} lies outside the file", path=ctx.store.uri(path))
    (buf,) = await ctx.store.read_ranges(path, [(start, start + size)])
    return bytes(buf)


def _fsl_values(col: pa.ChunkedArray | pa.Array) -> np.ndarray:
    arr = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
    width = arr.type.list_size
    vals = arr.values.slice(arr.offset * width, len(arr) * width).to_numpy(zero_copy_only=False)
    return vals.reshape(len(arr), width)


async def load_index(ctx: "DatasetContext", entry: IndexEntry) -> IvfIndex:
    """Read index ``entry``'s two files (cached per process by index directory)."""
    root = join_path(ctx.root, "_indices", entry.uuid)
    key = ctx.store.uri(root)
    got = _CACHE.get(key)
    if got is not None:
        _CACHE.move_to_end(key)
        return got
    idx = await _load(ctx, root)
    _CACHE[key] = idx
    while len(_CACHE) > _CACHE_MAX:
        _CACHE.popitem(last=False)
    return idx


async def _load(ctx: "DatasetContext", root: str) -> IvfIndex:
    ipath, apath = join_path(root, INDEX_FILE), join_path(root, AUX_FILE)
    where = ctx.store.uri(ipath)
    _, imeta = await _open(ctx, ipath)
    try:
        info = json.loads(imeta.schema_metadata.get("lance:index", b"{}"))
        kind = str(info["type"]).upper()
        metric = metric_code(str(info["distance_type"]))
    except (ValueError, KeyError, TypeError, LanceJitError):
        raise CorruptFileError("lance:index metadata does not name a type and distance type", path=where) from None
    if kind not in KINDS:
        raise NotSupportedError(f"vector index type {kind} is not supported")
    try:
        ivf = pb.IVF.FromString(await _global_buffer(ctx, ipath, imeta, "lance:ivf"))
        centroids = pb.tensor_array(ivf.centroids_tensor).astype(np.float32)
    except (ValueError, TypeError) as exc:
        raise CorruptFileError(f"IVF centroids do not decode: {exc}", path=where) from None
    if centroids.ndim != 2:
        raise CorruptFileError(f"IVF centroids have shape {centroids.shape}", path=where)
    areader, ameta = await _open(ctx, apath)
    awhere = ctx.store.uri(apath)
    try:
        aivf = pb.IVF.FromString(await _global_buffer(ctx, apath, ameta, "lance:ivf"))
        storage = json.loads(json.loads(ameta.schema_metadata.get("storage_metadata", b"[]"))[0])
    except (ValueError, TypeError, IndexError) as exc:
        raise CorruptFileError(f"auxiliary index metadata does not decode: {exc}", path=awhere) from None
    offsets = np.asarray(aivf.offsets, dtype=np.int64)
    lengths = np.asarray(aivf.lengths, dtype=np.int64)
    table = await areader.read_all()
    n = table.num_rows
    if (len(offsets) != len(centroids) or len(lengths) != len(offsets) or np.any(offsets < 0)
            or np.any(offsets + lengths > n)):
        raise CorruptFileError("partition offsets/lengths do not fit the stored rows", path=awhere)
    if "_rowid" not in table.column_names:
        raise CorruptFileError("auxiliary index file has no _rowid column", path=awhere)
    row_ids = np.ascontiguousarray(table.column("_rowid").to_numpy(), dtype=np.uint64)
    storage_kind = kind.replace("HNSW_", "")
    dim = centroids.shape[1]
    if storage_kind == "IVF_FLAT":
        codes = np.ascontiguousarray(_fsl_values(table.column("flat")))
        if codes.dtype == np.float16:
            codes = codes.astype(np.float32)
        return IvfIndex(kind, metric, centroids, offsets, lengths, row_ids, codes)
    if storage_kind == "IVF_SQ":
        codes = np.ascontiguousarray(_fsl_values(table.column("__sq_code")), dtype=np.uint8)
        b = storage.get("bounds", {})
        return IvfIndex(kind, metric, centroids, offsets, lengths, row_ids, codes,
                        bounds=(float(b.get("start", 0.0)), float(b.get("end", 0.0))))
    codes = np.ascontiguousarray(_fsl_values(table.column("__pq_code")), dtype=np.uint8)
    nbits = int(storage.get("nbits", 8))
    m = int(storage.get("num_sub_vectors", 0))
    if nbits not in (4, 8) or m <= 0 or dim % m:
        raise CorruptFileError(f"PQ storage with nbits={nbits}, num_sub_vectors={m}, dim={dim}", path=awhere)
    if not storage.get("transposed", False):
        raise NotSupportedError("PQ storage with codes not transposed is not supported")
    try:
        tensor = pb.Tensor.FromString(await _global_buffer(
            ctx, apath, _with_key(ameta, "codebook", storage.get("codebook_position")), "codebook"))
        book = pb.tensor_array(tensor).astype(np.float32)
    except (ValueError, TypeError) as exc:
        raise CorruptFileError(f"PQ codebook does not decode: {exc}", path=awhere) from None
    kc = 1 << nbits
    if book.size != kc * dim:
        raise CorruptFileError(f"PQ codebook has {book.size} values, expected {kc * dim}", path=awhere)
    codebook = np.ascontiguousarray(book.reshape(m, kc, dim // m))
    return IvfIndex(kind, metric, centroids, offsets, lengths, row_ids, codes, codebook=codebook, nbits=nbits)


class _with_key:
    """A file metadata view whose schema metadata maps ``key`` to ``value`` (to read the
    global buffer a JSON field names)."""

    def __init__(self, meta: Any, key: str, value: Any) -> None:
        self.schema_metadata = {key: str(value).encode()}
        self.global_buffers = meta.global_buffers
        self.file_size = meta.file_size


#: Vector index entries by manifest URI.
#: Loaded indices by index directory URI.
_CACHE: "OrderedDict[str, IvfIndex]" = OrderedDict()
_CACHE_MAX = 16


__all__ = ["AUX_FILE", "INDEX_FILE", "IndexEntry", "IvfIndex", "KINDS", "index_entries", "load_index",
           "vector_indices"]
