"""Exact (flat) k-nearest-neighbour search over a dataset's rows.

The vector column is scanned with row ids (deleted rows skipped by the scan; a prefilter, if
any, applied by it), in blocks of :data:`BLOCK_ROWS` rows; every block is scored by
:func:`.kernels.flat_topk` (or ``hamming_topk``) on the worker threads while the scan reads the
next blocks.  Null vectors and NaN distances never make the result (the reference's
``_distance IS NOT NULL``).
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np
import pyarrow as pa

from ..indices.vector import cache as vcache
from ..indices.vector import kernels as K
from ..indices.vector.topk import Heaps, Result, TopK

if TYPE_CHECKING:  # pragma: no cover
    from ..read.dataset_reader import DatasetReader

    from ..indices.vector.query import NearestQuery

#: Rows per scanned block.
BLOCK_ROWS = 1 << 17
_ROWID = "_rowid"
_ROWADDR = "_rowaddr"


def vectors_of(arr: pa.Array | pa.ChunkedArray, dim: int) -> tuple[np.ndarray, np.ndarray]:
    """``(values (n, dim), keep)`` of a fixed-size-list array: ``keep`` uint8 (1 = valid), empty
    when no value is null; float16 values widened to float32."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks() if arr.num_chunks != 1 else arr.chunk(0)
    if isinstance(arr.type, pa.BaseExtensionType):
        arr = arr.storage
    n = len(arr)
    child = arr.values.slice(arr.offset * dim, n * dim)
    if child.null_count:
        child = child.fill_null(0)
    vals = child.to_numpy(zero_copy_only=False).reshape(n, dim)
    if vals.dtype == np.float16:
        vals = vals.astype(np.float32)
    keep = np.empty(0, np.uint8)
    if arr.null_count:
        keep = np.asarray(arr.is_valid(), dtype=np.uint8)
    return np.ascontiguousarray(vals), keep


def qnorms(q: np.ndarray) -> np.ndarray:
    """``|q_j|^2`` of each query row (the query's dtype)."""
    return np.einsum("ij,ij->i", q, q).astype(q.dtype)


def score_block(top: TopK, vals: np.ndarray, rowids: np.ndarray, keep: np.ndarray, q: np.ndarray,
                qn: np.ndarray, metric: int):
    """A :meth:`TopK.run` callback scoring the rows ``[lo, hi)`` of one block."""

    def fn(h: Heaps, lo: int, hi: int) -> None:
        kp = keep[lo:hi] if len(keep) else keep
        if metric == K.HAMMING:
            K.hamming_topk(vals[lo:hi], q, rowids[lo:hi], kp, h.d, h.ids, h.n)
        else:
            K.flat_topk(vals[lo:hi], q, qn, rowids[lo:hi], kp, metric, h.d, h.ids, h.n)

    return fn


def _fragment_key(ds: "DatasetReader", frag: Any, column: str) -> tuple:
    c = ds.context
    dfile = frag.deletion_file
    dkey = None if dfile is None else (dfile.file_type, dfile.read_version, dfile.id, dfile.base_id)
    return (c.store.uri(c.root), frag.id, tuple((f.path, f.base_id) for f in frag.files), dkey, column)


def _split_by_fragment(addr: np.ndarray) -> list[tuple[int, int, int]]:
    """``(fragment id, lo, hi)`` runs of a batch's row addresses (fragments in scan order)."""
    frag = (addr >> np.uint64(32)).astype(np.int64)
    cuts = np.flatnonzero(frag[1:] != frag[:-1]) + 1
    bounds = np.concatenate([[0], cuts, [len(frag)]])
    return [(int(frag[bounds[i]]), int(bounds[i]), int(bounds[i + 1])) for i in range(len(bounds) - 1)]


async def flat_search(ds: "DatasetReader", query: "NearestQuery", metric: int, k: int, *,
                      fragment_ids: Sequence[int] | None = None, prefilter: Any = None) -> list[Result]:
    """Each query's ``k`` nearest live rows (of ``fragment_ids``, default all; matching the
    ``prefilter`` SQL text or expression if given), sorted by distance then row id.  Each
    fragment's decoded vectors are kept in :mod:`.cache` (unless it is off); a prefilter's
    matching rows are then found by a scan of its columns alone and masked over them."""
    top = TopK(query.q.shape[0], k)
    q = query.q
    qn = qnorms(q) if metric == K.COSINE else np.zeros(q.shape[0], q.dtype)
    wanted = None if fragment_ids is None else set(int(f) for f in fragment_ids)
    frags = [f for f in ds.manifest.fragments if wanted is None or f.id in wanted]
    if not frags:
        return top.results()

    async def score(vals: np.ndarray, rowids: np.ndarray, keep: np.ndarray) -> None:
        if vals.dtype != q.dtype and metric != K.HAMMING:
            vals = vals.astype(q.dtype)
        await top.run(len(vals), score_block(top, vals, rowids, keep, q, qn, metric))

    if vcache.budget() <= 0:  # no cache: one scan, the prefilter applied by it
        async for batch in ds.scanner(columns=[query.column], filter=prefilter, with_row_id=True,
                                      fragment_ids=[f.id for f in frags], batch_size=BLOCK_ROWS).batches_async():
            if batch.num_rows:
                vals, keep = vectors_of(batch.column(query.column), query.dim)
                await score(vals, batch.column(_ROWID).to_numpy(), keep)
        return top.results()
    blocks: dict[int, tuple[vcache.Block, ...]] = {}
    missing: dict[int, tuple] = {}
    for f in frags:
        key = _fragment_key(ds, f, query.column)
        hit = vcache.get(key)
        if hit is None:
            missing[f.id] = key
            continue
        blocks[f.id] = hit.blocks
        if prefilter is None:
            for b in hit.blocks:
                await score(b.values, b.row_ids, b.keep)
    # a prefilter's matching rows are read while the vectors are (two scans at once)
    masks_task = asyncio.ensure_future(_filter_masks(ds, [f.id for f in frags], prefilter)) \
        if prefilter is not None else None
    try:
        if missing:
            blocks.update(await _read_fragments(ds, query, missing, score if prefilter is None else None))
    except BaseException:
        if masks_task is not None:
            masks_task.cancel()
        raise
    if masks_task is not None:
        masks = await masks_task
        for f in frags:
            for b, keep in _masked(blocks.get(f.id, ()), masks.get(f.id)):
                await score(b.values, b.row_ids, keep)
    return top.results()


async def _read_fragments(ds: "DatasetReader", query: "NearestQuery", keys: dict[int, tuple],
                          score: Any) -> dict[int, tuple[vcache.Block, ...]]:
    """Scan the vectors of the fragments ``keys`` names (fragment id -> cache key), each batch
    offered to ``score`` (unless None) as it arrives; each fragment's blocks are cached and
    returned."""
    pieces: dict[int, list[vcache.Block]] = {}
    stable = ds.has_stable_row_ids  # else a row's id is its address
    scanner = ds.scanner(columns=[query.column], with_row_id=stable, with_row_address=True,
                         fragment_ids=list(keys), batch_size=BLOCK_ROWS)
    async for batch in scanner.batches_async():
        if batch.num_rows == 0:
            continue
        vals, keep = vectors_of(batch.column(query.column), query.dim)
        addr = batch.column(_ROWADDR).to_numpy()
        rowids = batch.column(_ROWID).to_numpy() if stable else addr
        if score is not None:
            await score(vals, rowids, keep)
        for fid, lo, hi in _split_by_fragment(addr):
            pieces.setdefault(fid, []).append(
                vcache.Block(vals[lo:hi], rowids[lo:hi], keep[lo:hi] if len(keep) else keep, addr[lo:hi]))
    out = {}
    for fid, key in keys.items():  # fragments with no live row cache an empty entry
        out[fid] = tuple(pieces.get(fid, ()))
        vcache.put(key, vcache.Entry(out[fid]))
    return out


def _masked(blocks: Sequence[vcache.Block], sel: np.ndarray | None) -> list[tuple[vcache.Block, np.ndarray]]:
    """``(block, keep)`` for the blocks of one fragment holding rows at the sorted offsets
    ``sel`` (the prefilter's matches; None: none match)."""
    fb = [b for b in blocks if len(b.addrs)]
    if sel is None or not fb:
        return []
    low = np.uint64(0xFFFFFFFF)
    mask = np.zeros(max(int(sel[-1]), int(fb[-1].addrs[-1] & low)) + 1, np.uint8)
    mask[sel] = 1
    out = []
    for b in fb:
        keep = mask[(b.addrs & low).astype(np.int64)]
        if len(b.keep):
            keep &= b.keep
        out.append((b, keep))
    return out


async def _filter_masks(ds: "DatasetReader", fragment_ids: list[int], prefilter: Any) -> dict[int, np.ndarray]:
    """Per fragment, the sorted row offsets (int64) of its rows matching ``prefilter``."""
    addrs = []
    async for b in ds.scanner(columns=[_ROWADDR], filter=prefilter, fragment_ids=fragment_ids,
                              batch_size=1 << 20).batches_async():
        addrs.append(b.column(_ROWADDR).to_numpy())
    if not addrs:
        return {}
    addr = np.concatenate(addrs)
    frag = (addr >> np.uint64(32)).astype(np.int64)
    off = (addr & np.uint64(0xFFFFFFFF)).astype(np.int64)
    if len(addr) > 1 and not bool(np.all(addr[1:] > addr[:-1])):  # scans give them ascending
        order = np.argsort(addr, kind="stable")
        frag, off = frag[order], off[order]
    cuts = np.flatnonzero(frag[1:] != frag[:-1]) + 1
    bounds = np.concatenate([[0], cuts, [len(frag)]])
    return {int(frag[bounds[i]]): off[bounds[i]:bounds[i + 1]] for i in range(len(bounds) - 1)}


__all__ = ["BLOCK_ROWS", "flat_search", "qnorms", "score_block", "vectors_of"]
