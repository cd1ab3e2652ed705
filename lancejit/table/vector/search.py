"""Vector search of a dataset version: through an IVF index when one covers the column (and
``use_index``), else flat; then the result rows.

Index search, per query vector: partitions are ranked by the distance of their centroid to
the query (l2 for l2 and cosine (query normalized), dot for dot); the nearest
``minimum_nprobes`` (default 20) are searched, and at least those within a factor of the
nearest centroid's distance (0.6 for k = 1, 7 up to k = 10, 81 beyond: the reference's early
pruning), then further ones while fewer than ``k`` rows were found, up to ``maximum_nprobes``
(default all).  When a prefilter matches at most ``k`` rows, those the first partitions missed
are returned at an infinite distance instead of probing further (as the reference does).  Each partition's rows are scored from
their stored form (raw vectors, PQ distance tables, SQ codes) into one top-``k * refine_factor``
heap; rows deleted since the index was built (and, with ``prefilter``, rows failing the filter)
are skipped.  With ``refine_factor`` the candidates' raw vectors are read and re-ranked by exact
distance.  Fragments the index does not cover are searched flat and merged; the index's
candidates then get their exact distances too (as in the reference's plan, which scores the
union of both again).

Result: the projected columns, ``_distance`` (float32), ``_rowid`` when asked for, rows nearest
first; a batched query (2-D ``q``) leads with ``query_index`` (int32).  A filter without
``prefilter`` applies to the ``k`` rows found (the reference's postfilter: fewer rows may come
back); ``offset`` / ``limit`` apply last.  Concurrent calls are merged (:mod:`.merge`).
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np


from ..indices.vector import kernels as K
from .flat import flat_search, qnorms, vectors_of
from ..indices.vector.ivf import IvfIndex, index_entries, load_index
from ..indices.vector.query import NearestQuery
from ..indices.vector.topk import Heaps, Result

if TYPE_CHECKING:  # pragma: no cover
    from ..read.dataset_reader import DatasetReader

DISTANCE = "_distance"
ROWID = "_rowid"
ROWADDR = "_rowaddr"
QUERY_INDEX = "query_index"


def _normalized(q: np.ndarray) -> np.ndarray:
    n = np.sqrt(np.einsum("ij,ij->i", q, q)).astype(q.dtype)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.ascontiguousarray(q / n[:, None])


def partition_order(index: IvfIndex, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Partitions nearest first for one (normalized for cosine) query, and their centroid
    distances in that order (squared l2; dot: ``1 - q.c``)."""
    c = index.centroids
    qf = q.astype(np.float32)
    if index.metric == K.DOT:
        d = np.float32(1) - c @ qf
    else:
        diff = c - qf[None, :]
        d = np.einsum("ij,ij->i", diff, diff)
    order = np.argsort(d, kind="stable")
    return order, d[order]


#: The reference probes at least the partitions whose centroid distance is within this factor
#: of the nearest one's (by k: 1, up to 10, more).
_PRUNING = ((1, 0.6), (10, 7.0), (None, 81.0))


def pruned_probes(dists: np.ndarray, k: int) -> int:
    """Partitions (of ``dists``, ascending) within the pruning factor of the nearest."""
    if len(dists) == 0:
        return 0
    factor = next(f for bound, f in _PRUNING if bound is None or k <= bound)
    return int(np.searchsorted(dists, dists[0] * np.float32(factor), side="right"))


def _keep_for(row_ids: np.ndarray, allowed: np.ndarray | None) -> np.ndarray:
    if allowed is None:
        return np.empty(0, np.uint8)
    pos = np.searchsorted(allowed, row_ids)
    pos[pos >= len(allowed)] = 0
    return (allowed[pos] == row_ids).astype(np.uint8) if len(allowed) else np.zeros(len(row_ids), np.uint8)


def _search_partition(index: IvfIndex, p: int, q: np.ndarray, keep: np.ndarray, h: Heaps) -> None:
    lo, n = int(index.offsets[p]), int(index.lengths[p])
    if n == 0:
        return
    rid = index.row_ids[lo:lo + n]
    kind = index.storage
    if kind == "IVF_FLAT":
        metric = index.metric
        qq = q[None, :].astype(index.codes.dtype)
        K.flat_topk(index.codes[lo:lo + n], qq, qnorms(qq), rid, keep, metric, h.d, h.ids, h.n)
    elif kind == "IVF_SQ":
        start, end = index.bounds
        rng = end - start
        if rng == 0:
            qcode = np.zeros(len(q), np.uint8)
        else:
            v = (q.astype(np.float64) - start) * 255.0 / rng
            qcode = np.clip(np.nan_to_num(np.floor(v), nan=0.0), 0, 255).astype(np.uint8)
        metric = K.DOT if index.metric == K.DOT else K.L2
        K.sq_topk(index.codes[lo:lo + n], qcode, metric, np.float32(np.float32(rng) ** 2), rid, keep,
                  h.d, h.ids, h.n)
    else:
        assert index.codebook is not None  # IVF_PQ indices carry their codebook
        m = index.codebook.shape[0]
        if index.metric == K.DOT:
            r, bias, metric = np.ascontiguousarray(q, np.float32), np.float32(-(m - 1)), K.DOT
        else:
            r, bias, metric = np.ascontiguousarray(q - index.centroids[p], np.float32), np.float32(0), K.L2
        K.pq_topk(index.codes[lo:lo + n].reshape(-1), n, index.codebook, r, metric, index.nbits, rid, keep, bias,
                  h.d, h.ids, h.n)


def ann_one(index: IvfIndex, q: np.ndarray, k: int, kk: int, lo_probes: int, hi_probes: int | None,
            allowed: np.ndarray | None, filtered: bool) -> Result:
    """One query's ``kk`` best candidates from the index (see the module docstring).  ``allowed``:
    sorted row ids the search may return (None: any); ``filtered``: they are a prefilter's
    matches (when fewer than ``k``, those the probed partitions missed come back at an infinite
    distance, as the reference returns them)."""
    q = q.astype(np.float64 if index.codes.dtype == np.float64 else np.float32)
    if index.metric == K.COSINE:
        q = _normalized(q[None, :])[0]
    order, dists = partition_order(index, q)
    hi = len(order) if hi_probes is None else min(len(order), max(hi_probes, 1))
    lo = min(hi, max(lo_probes, 1, pruned_probes(dists, k)))
    matches = allowed if filtered else None  # a prefilter's matches
    wanted = k if matches is None else min(k, len(matches))
    h = Heaps.empty(1, kk)
    for i, p in enumerate(order[:hi]):
        if i == lo and matches is not None and h.n[0] < wanted and len(matches) <= k:
            break  # every match is known: the missed ones are added below
        if i >= lo and h.n[0] >= wanted:
            break
        off, n = int(index.offsets[p]), int(index.lengths[p])
        keep = _keep_for(index.row_ids[off:off + n], allowed)
        _search_partition(index, int(p), q, keep, h)
    n = int(h.n[0])
    d, ids = h.d[0, :n], h.ids[0, :n]
    if matches is not None and hi > lo and n < len(matches) <= k:  # (no late search when lo == hi)
        missed = np.setdiff1d(matches, ids)
        d = np.concatenate([d, np.full(len(missed), np.inf, np.float32)])
        ids = np.concatenate([ids, missed.astype(np.uint64)])
    order2 = np.lexsort((ids, d))
    return Result(d[order2], ids[order2])


def _merge(a: Result, b: Result, k: int) -> Result:
    d = np.concatenate([a.distances, b.distances])
    ids = np.concatenate([a.row_ids, b.row_ids])
    order = np.lexsort((ids, d))[:k]
    return Result(d[order], ids[order])


async def _allowed_rows(ds: "DatasetReader", fragment_ids: Sequence[int], prefilter: Any) -> np.ndarray:
    """Sorted row ids of the live rows of ``fragment_ids`` (matching ``prefilter``)."""
    if not fragment_ids:
        return np.empty(0, np.uint64)
    ids = []
    async for b in ds.scanner(columns=[ROWID], filter=prefilter, fragment_ids=list(fragment_ids)).batches_async():
        ids.append(b.column(ROWID).to_numpy())
    return np.sort(np.concatenate(ids)) if ids else np.empty(0, np.uint64)


async def _exact(ds: "DatasetReader", query: NearestQuery, metric: int, q: np.ndarray, cands: Result, k: int) -> Result:
    """Re-rank ``cands`` by exact distance to ``q`` (refine)."""
    if len(cands.row_ids) == 0:
        return cands
    t = await ds.take_rows_async(cands.row_ids, columns=[query.column], with_row_id=True)
    vals, keep = vectors_of(t.column(query.column), query.dim)
    rid = t.column(ROWID).to_numpy()
    qq = q[None, :].astype(vals.dtype if vals.dtype == np.float64 else np.float32)
    vals = vals.astype(qq.dtype, copy=False)
    h = Heaps.empty(1, k)
    if metric == K.HAMMING:
        K.hamming_topk(vals, qq.astype(np.uint8), rid, keep, h.d, h.ids, h.n)
    else:
        K.flat_topk(np.ascontiguousarray(vals), qq, qnorms(qq), rid, keep, metric, h.d, h.ids, h.n)
    n = int(h.n[0])
    order = np.lexsort((h.ids[0, :n], h.d[0, :n]))
    return Result(h.d[0, :n][order], h.ids[0, :n][order])


async def search(ds: "DatasetReader", query: NearestQuery, *, filter: Any = None, prefilter: bool = False) -> list[Result]:
    """Each query vector's nearest rows (sorted), through an index when usable."""
    prefilter_expr = filter if prefilter else None
    ctx = ds.context
    rows = await ds.count_rows_async()
    if query.k > rows:  # heaps are sized by k: never beyond the rows there are
        query = replace(query, k=max(1, rows))
    field_id = next((t.id for t in ctx.top_fields if t.name == query.column), None)
    entry = None
    if query.use_index:
        entries = [e for e in await index_entries(ctx) if e.field_id == field_id]
        entry = entries[0] if entries else None
    if entry is not None:
        index = await load_index(ctx, entry)
        if query.metric is not None and query.metric != index.metric:
            entry = None
    if entry is None:
        metric = query.metric_or(K.L2)
        return await flat_search(ds, query, metric, query.k, prefilter=prefilter_expr)
    k = query.k
    kk = min(k * (query.refine_factor or 1), max(1, rows))
    present = {f.id: f for f in ctx.manifest.fragments}
    covered = sorted(f for f in entry.fragment_ids if f in present)
    uncovered = sorted(f for f in present if f not in entry.fragment_ids)
    needs_mask = prefilter_expr is not None or any(present[f].deletion_file is not None for f in covered) \
        or len(covered) != len(entry.fragment_ids)
    allowed = await _allowed_rows(ds, covered, prefilter_expr) if needs_mask else None
    flat = await flat_search(ds, query, index.metric, kk, fragment_ids=uncovered, prefilter=prefilter_expr) \
        if uncovered else None
    out = []
    for j in range(query.q.shape[0]):
        got = ann_one(index, query.q[j], k, kk, query.minimum_nprobes, query.maximum_nprobes, allowed,
                      prefilter_expr is not None)
        if query.refine_factor:
            got = await _exact(ds, query, index.metric, query.q[j], got, k)
        elif flat is not None:  # the union with the flat results is scored exactly (the reference's plan)
            got = await _exact(ds, query, index.metric, query.q[j], got, kk)
        if flat is not None:
            got = _merge(got, flat[j], k)
        else:
            got = Result(got.distances[:k], got.row_ids[:k])
        out.append(got)
    return out


__all__ = ["DISTANCE", "QUERY_INDEX", "ann_one", "partition_order", "pruned_probes", "search"]
