"""Building IVF_FLAT / IVF_PQ / IVF_SQ indices in the reference's format (see :mod:`.ivf`), so
the reference searches them too.

1. The column's live vectors are read with their row ids; null and non-finite vectors are left
   out; cosine vectors are normalized (and then handled as l2).
2. IVF: k-means (:func:`kmeans`) on a sample of ``sample_rate * num_partitions`` rows,
   ``max_iters`` Lloyd iterations from random distinct rows (kernels
   :func:`.kernels.assign` / :func:`.kernels.accumulate`), then every row goes to its nearest
   centroid.
3. Storage: FLAT the vectors; SQ 8-bit codes over the global ``[min, max]`` of the values; PQ:
   ``num_sub_vectors`` codebooks of ``2**num_bits`` centroids trained by k-means on a sample of
   ``sample_rate * 2**num_bits`` rows of the residuals to the partition centroid (l2, cosine)
   or the vectors (dot), each row coded by its nearest centroid per sub-vector.
4. ``index.idx`` and ``auxiliary.idx`` are written under ``_indices/<uuid>/`` and a
   ``CreateIndex`` transaction adds the manifest entry (covering every fragment read).
"""

from __future__ import annotations

import json
import time
import uuid as _uuid
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
from pyroaring import BitMap

from lancejit.core.errors import InvalidInputError, NotSupportedError
from lancejit.io.store import join_path

from ..indices.vector import kernels as K
from ..indices.vector import pb
from .flat import vectors_of
from ..indices.vector.ivf import AUX_FILE, INDEX_FILE
from ..indices.vector.query import METRIC_NAMES, metric_code, vector_type
from ..indices.vector.topk import WORKERS, pool

if TYPE_CHECKING:  # pragma: no cover
    from ..read.dataset_reader import DatasetReader

BUILD_KINDS = ("IVF_FLAT", "IVF_PQ", "IVF_SQ")
DEFAULT_SAMPLE_RATE = 256
DEFAULT_MAX_ITERS = 50
_HINTS = {"lance.ivf.max_iters": "50", "lance.ivf.sample_rate": "256", "lance.skip_transpose": "false"}


def _assign(data: np.ndarray, centroids: np.ndarray, metric: int) -> tuple[np.ndarray, np.ndarray]:
    """Nearest centroid and distance of every row (:func:`.kernels.assign` over the worker
    threads, one slice of rows each)."""
    n = len(data)
    part = np.empty(n, np.int32)
    dist = np.empty(n, np.float32)
    ct = np.ascontiguousarray(centroids.T, np.float32)
    cn = np.einsum("ij,ij->i", centroids, centroids).astype(np.float32)
    parts = WORKERS if n >= 4096 else 1
    bounds = np.linspace(0, n, parts + 1).astype(np.int64)
    futs = [pool().submit(K.assign, data[lo:hi], ct, cn, metric, part[lo:hi], dist[lo:hi])
            for lo, hi in zip(bounds[:-1], bounds[1:]) if hi > lo]
    for f in futs:
        f.result()
    return part, dist


def kmeans(data: np.ndarray, k: int, metric: int, max_iters: int, rng: np.random.Generator) -> tuple[np.ndarray, float]:
    """``k`` centroids (float32 ``(k, dim)``) of ``data`` (float32, C order) and the final loss
    (sum of distances).  Empty clusters take the row farthest from its centroid."""
    n = len(data)
    if n < k:
        raise InvalidInputError(f"cannot train {k} centroids from {n} vectors")
    cent = data[rng.choice(n, k, replace=False)].astype(np.float32)
    loss = np.inf
    for _ in range(max(1, max_iters)):
        part, dist = _assign(data, cent, metric)
        sums = np.zeros((k, data.shape[1]), np.float64)
        counts = np.zeros(k, np.int64)
        K.accumulate(data, part, sums, counts)
        empty = np.flatnonzero(counts == 0)
        new = (sums / np.maximum(counts, 1)[:, None]).astype(np.float32)
        if len(empty):
            far = np.argsort(-dist)[: len(empty)]
            new[empty] = data[far]
        new_loss = float(dist.sum())
        shift = float(np.abs(new - cent).max())
        cent = new
        if shift == 0.0 or (np.isfinite(loss) and abs(loss - new_loss) <= 1e-4 * max(loss, 1e-12)):
            loss = new_loss
            break
        loss = new_loss
    return cent, loss


def _sample(n: int, size: int, rng: np.random.Generator) -> np.ndarray:
    return np.arange(n) if n <= size else np.sort(rng.choice(n, size, replace=False))


def pq_train(resid: np.ndarray, m: int, nbits: int, metric: int, max_iters: int,
             rng: np.random.Generator) -> np.ndarray:
    """Codebooks float32 ``(m, 2**nbits, dim / m)`` of the sub-vectors of ``resid``."""
    kc = 1 << nbits
    sw = resid.shape[1] // m
    book = np.empty((m, kc, sw), np.float32)
    for s in range(m):
        sub = np.ascontiguousarray(resid[:, s * sw:(s + 1) * sw])
        book[s], _ = kmeans(sub, kc, metric, max_iters, rng)
    return book


def pq_encode(resid: np.ndarray, book: np.ndarray, metric: int) -> np.ndarray:
    """Codes uint8 ``(n, m)`` (one per sub-vector) of ``resid`` against ``book``."""
    m, kc, sw = book.shape
    codes = np.empty((len(resid), m), np.uint8)
    for s in range(m):
        part, _ = _assign(np.ascontiguousarray(resid[:, s * sw:(s + 1) * sw]), book[s], metric)
        codes[:, s] = part
    return codes


def _transposed(codes: np.ndarray, offsets: np.ndarray, lengths: np.ndarray, nbits: int) -> np.ndarray:
    """Per partition, codes packed (4-bit: pairs of sub-vectors in one byte, the even one low)
    and transposed (byte ``b`` of row ``i`` at ``b * n + i``), back in ``(rows, bytes)`` shape."""
    if nbits == 4:
        codes = (codes[:, 0::2] | (codes[:, 1::2] << 4)).astype(np.uint8)
    out = np.empty_like(codes)
    width = codes.shape[1]
    for off, n in zip(offsets, lengths):
        block = codes[off:off + n]
        out[off:off + n] = np.ascontiguousarray(block.T).reshape(n, width)
    return out


def _fsl(values: np.ndarray) -> pa.Array:
    return pa.FixedSizeListArray.from_arrays(pa.array(values.reshape(-1)), values.shape[1])


async def _write_file(ds: "DatasetReader", path: str, table: pa.Table, metadata: dict[str, str],
                      buffers: list[tuple[str, bytes]]) -> int:
    """Write one index file: global buffers ``buffers`` (their positions, 1, 2, ..., under their
    keys in the schema metadata unless a key starts with ``_``), ``metadata``, the rows of
    ``table``; returns the file's size in bytes."""
    from lancejit.file.writer import AsyncLanceFileWriter

    w = AsyncLanceFileWriter(ds.context.store.uri(path), table.schema, version="2.2")
    try:
        for key, data in buffers:
            pos = await w.add_global_buffer(data)
            if not key.startswith("_"):
                metadata[key] = str(pos)
        for k, v in metadata.items():
            w.add_schema_metadata(k, v)
        if table.num_rows:
            await w.write_batch(table)
        await w.close()
        return w.bytes_written
    except BaseException:
        await w.abort()
        raise


async def _read_vectors(ds: "DatasetReader", column: str, dim: int) -> tuple[np.ndarray, np.ndarray]:
    """The column's live, non-null, finite vectors (the column's float type, ``(n, dim)``) and
    their row ids."""
    vals_l, ids_l = [], []
    async for b in ds.scanner(columns=[column], with_row_id=True, batch_size=1 << 17).batches_async():
        v, keep = vectors_of(b.column(column), dim)
        ok = np.isfinite(v).all(axis=1)
        if len(keep):
            ok &= keep.astype(bool)
        vals_l.append(v[ok])
        ids_l.append(b.column("_rowid").to_numpy()[ok])
    if not vals_l:
        return np.empty((0, dim), np.float32), np.empty(0, np.uint64)
    return np.ascontiguousarray(np.concatenate(vals_l)), np.concatenate(ids_l).astype(np.uint64)


def _pq_params(dim: int, num_sub_vectors: int | None, num_bits: int) -> int:
    m = num_sub_vectors if num_sub_vectors is not None else (dim // 16 if dim % 16 == 0 else dim // 8 if dim % 8 == 0
                                                             else 1)
    if num_bits not in (4, 8):
        raise InvalidInputError(f"num_bits must be 4 or 8, got {num_bits}")
    if not isinstance(m, (int, np.integer)) or m < 1 or dim % m:
        raise InvalidInputError(f"num_sub_vectors {m!r} must be a positive divisor of the dimension {dim}")
    if num_bits == 4 and m % 2:
        raise InvalidInputError(f"num_sub_vectors must be even for num_bits=4, got {m}")
    return int(m)


def _sq_codes(data: np.ndarray) -> tuple[np.ndarray, float, float]:
    """8-bit codes over the values' ``[min, max]`` (the reference's saturating scale)."""
    lo, hi = (float(data.min()), float(data.max())) if data.size else (0.0, 0.0)
    rg = hi - lo
    if rg == 0:
        return np.zeros(data.shape, np.uint8), lo, hi
    return np.clip(np.floor((data.astype(np.float64) - lo) * 255.0 / rg), 0, 255).astype(np.uint8), lo, hi


async def create_index_async(ds: "DatasetReader", column: str, index_type: str, *, num_partitions: int | None = None,
                             num_sub_vectors: int | None = None, num_bits: int = 8, metric: str = "l2",
                             name: str | None = None, replace: bool = True, sample_rate: int = DEFAULT_SAMPLE_RATE,
                             max_iters: int = DEFAULT_MAX_ITERS, seed: int | None = None) -> "DatasetReader":
    """Build an index of ``index_type`` on ``column`` and commit it; returns the new version.

    ``num_partitions`` default: ``sqrt(rows)``; ``num_sub_vectors`` (IVF_PQ) default: ``dim / 16``
    (else ``dim / 8``, else 1); ``num_bits`` 4 or 8 (PQ); ``metric`` l2 / cosine / dot;
    ``name`` default ``<column>_idx`` (an index of that name is replaced unless ``replace`` is
    False); ``sample_rate``: training rows per centroid; ``max_iters``: k-means iterations;
    ``seed``: the sampling and initialization seed."""
    kind = str(index_type).upper()
    if kind not in BUILD_KINDS:
        raise NotSupportedError(f"building a {index_type!r} index is not supported (use one of {BUILD_KINDS})")
    dim, vt = vector_type(ds.schema, column)
    if not pa.types.is_floating(vt):
        raise NotSupportedError(f"vector indices need float vectors, {column!r} holds {vt}")
    code = metric_code(metric)
    if code == K.HAMMING:
        raise NotSupportedError("vector indices with the hamming distance are not supported")
    m = _pq_params(dim, num_sub_vectors, num_bits) if kind == "IVF_PQ" else 0
    if num_partitions is not None and (isinstance(num_partitions, bool) or not isinstance(num_partitions, (int, np.integer))
                                       or num_partitions < 1):
        raise InvalidInputError(f"num_partitions must be a positive int, got {num_partitions!r}")
    rng = np.random.default_rng(seed)
    frag_ids = [f.id for f in ds.context.manifest.fragments]
    t0 = time.time()
    raw, row_ids = await _read_vectors(ds, column, dim)
    n = len(raw)
    num_partitions = int(num_partitions) if num_partitions is not None else max(1, int(np.sqrt(n)))
    if n < num_partitions:
        raise InvalidInputError(f"cannot train {num_partitions} partitions from {n} vectors")
    if code == K.COSINE:  # cosine: unit vectors, then l2
        norms = np.linalg.norm(raw.astype(np.float64), axis=1)
        raw = np.ascontiguousarray(raw / np.where(norms == 0, 1, norms)[:, None].astype(raw.dtype))
    data = np.ascontiguousarray(raw, np.float32)
    inner = K.L2 if code == K.COSINE else code
    col_dtype = np.dtype(vt.to_pandas_dtype())  # centroids, codebooks and flat vectors are stored in it
    centroids, loss = kmeans(np.ascontiguousarray(data[_sample(n, num_partitions * sample_rate, rng)]),
                             num_partitions, inner, max_iters, rng)
    centroids = centroids.astype(col_dtype).astype(np.float32)
    part, _ = _assign(data, centroids, inner)
    order = np.argsort(part, kind="stable")
    lengths = np.bincount(part, minlength=num_partitions).astype(np.int64)
    offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
    data, row_ids, part = data[order], row_ids[order], part[order]

    details = pb.VectorIndexDetails(metric_type=code)
    details.runtime_hints.update(_HINTS)
    buffers: list[tuple[str, bytes]] = []
    storage: dict[str, Any]
    if kind == "IVF_FLAT":  # the vectors in the column's own float type
        details.flat.SetInParent()
        flat = raw[order].astype(col_dtype)
        col = pa.field("flat", pa.list_(pa.from_numpy_dtype(col_dtype), dim), nullable=False)
        stored = _fsl(flat)
        storage = {"dim": dim}
    elif kind == "IVF_SQ":
        details.sq.num_bits = 8
        codes, lo, hi = _sq_codes(data)
        col = pa.field("__sq_code", pa.list_(pa.uint8(), dim))
        stored = _fsl(codes)
        storage = {"dim": dim, "num_bits": 8, "bounds": {"start": lo, "end": hi}}
    else:
        details.pq.num_bits = num_bits
        details.pq.num_sub_vectors = m
        kc = 1 << num_bits
        if n < kc:
            raise InvalidInputError(f"PQ with {num_bits} bits needs at least {kc} vectors, got {n}")
        resid = np.ascontiguousarray(data - centroids[part] if inner == K.L2 else data, np.float32)
        book = pq_train(np.ascontiguousarray(resid[_sample(n, sample_rate * kc, rng)]), m, num_bits, inner,
                        max_iters, rng).astype(col_dtype).astype(np.float32)
        codes = _transposed(pq_encode(resid, book, inner), offsets, lengths, num_bits)
        col = pa.field("__pq_code", pa.list_(pa.uint8(), codes.shape[1]))
        stored = _fsl(codes)
        buffers.append(("_codebook", pb.tensor_of(book.reshape(kc, dim).astype(col_dtype)).SerializeToString()))
        # global buffers: 1 the IVF partitions, 2 the codebook
        storage = {"codebook_position": 2, "nbits": num_bits, "num_sub_vectors": m, "dimension": dim,
                   "codebook_tensor": [], "transposed": True}
    uid = _uuid.uuid4()
    root = join_path(ds.context.root, "_indices", str(uid))
    aux_table = pa.table([pa.array(row_ids, pa.uint64()), stored],
                         schema=pa.schema([pa.field("_rowid", pa.uint64()), col]))
    aux_meta = {"distance_type": METRIC_NAMES[code],
                "storage_metadata": json.dumps([json.dumps(storage, separators=(",", ":"))])}
    aux_ivf = pb.IVF(offsets=offsets.tolist(), lengths=lengths.tolist())
    aux_size = await _write_file(ds, join_path(root, AUX_FILE), aux_table, aux_meta,
                                 [("lance:ivf", aux_ivf.SerializeToString())] + buffers)
    ivf = pb.IVF(offsets=[0] * num_partitions, lengths=[0] * num_partitions,
                 centroids_tensor=pb.tensor_of(centroids.astype(col_dtype)), loss=loss)
    index_meta = {"lance:index": json.dumps({"type": kind, "distance_type": METRIC_NAMES[code]},
                                            separators=(",", ":")),
                  "lance:flat": json.dumps([""] * num_partitions, separators=(",", ":"))}
    marker = pa.table([pa.array([], pa.uint64())], schema=pa.schema([pa.field("__flat_marker", pa.uint64(), False)]))
    index_size = await _write_file(ds, join_path(root, INDEX_FILE), marker, index_meta,
                                   [("lance:ivf", ivf.SerializeToString())])
    return await _commit(ds, column, uid, name or f"{column}_idx", frag_ids, details,
                         [(AUX_FILE, aux_size), (INDEX_FILE, index_size)], replace, t0)


async def _commit(ds: "DatasetReader", column: str, uid: _uuid.UUID, name: str, frag_ids: list[int], details: Any,
                  files: list[tuple[str, int]], replace: bool, t0: float) -> "DatasetReader":
    from google.protobuf import any_pb2

    from lancejit.pb import table_pb2
    from lancejit.table.commit import CreateIndex, commit

    from ..indices.vector.ivf import index_entries

    ctx = ds.context
    field_id = next(t.id for t in ctx.top_fields if t.name == column)
    existing = [e for e in await index_entries(ctx) if e.name == name]
    if existing and not replace:
        raise InvalidInputError(f"index {name!r} already exists (pass replace=True)")
    meta = table_pb2.IndexMetadata(name=name, fields=[field_id], dataset_version=ctx.version,
                                   fragment_bitmap=BitMap(frag_ids).serialize(), index_version=1,
                                   created_at=int(t0 * 1000))
    meta.uuid.uuid = uid.bytes
    meta.index_details.CopyFrom(any_pb2.Any(type_url=pb.DETAILS_TYPE_URL, value=details.SerializeToString()))
    for path, size in files:
        meta.files.add(path=path, size_bytes=size)
    removed = []
    for e in existing:
        r = table_pb2.IndexMetadata(name=e.name, fields=[e.field_id], dataset_version=e.dataset_version)
        r.uuid.uuid = _uuid.UUID(e.uuid).bytes
        removed.append(r)
    await commit(ctx.store, ctx.root, CreateIndex((meta,), tuple(removed)), ctx.version)
    return await ds.latest_async()


__all__ = ["BUILD_KINDS", "create_index_async", "kmeans", "pq_encode", "pq_train"]
