"""Concurrent vector searches on one dataset version merged into one batched search.

Searches awaited together (``await asyncio.gather(*(nearest_table(ds, ...) ...))`` from many
request handlers) with the same column and options, on the same version and event loop, made in
the same event-loop iteration, become one search whose query is every caller's vectors stacked:
a flat search then reads (or walks the cached) vectors once for all of them, scoring each
cached chunk against every query while it is in cache; an index search loads the index once.
Each caller gets its own queries' results.  The first caller (the leader) yields one event-loop
iteration while others join; the merged search runs in a task of its own, so a cancelled caller
does not cancel the others; an error reaches every caller of the batch.
The ``vector_merge`` knob turns merging off.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Hashable

import numpy as np

from ..indices.vector.query import NearestQuery
from ..indices.vector.topk import Result

from lancejit.core.config import settings

if TYPE_CHECKING:  # pragma: no cover
    from ..read.dataset_reader import DatasetReader

_PENDING: dict[Hashable, list[tuple[NearestQuery, asyncio.Future]]] = {}


def _key(ds: "DatasetReader", q: NearestQuery, filter: Any, prefilter: bool) -> Hashable:
    return (id(asyncio.get_running_loop()), id(ds.context), q.column, q.metric, q.k, q.use_index,
            q.minimum_nprobes, q.maximum_nprobes, q.refine_factor, q.ef, q.q.dtype.str,
            None if filter is None else (type(filter).__name__, str(filter)), bool(prefilter))


async def search_merged(ds: "DatasetReader", query: NearestQuery, *, filter: Any = None,
                        prefilter: bool = False) -> list[Result]:
    """:func:`.search.search`, merged with concurrent callers (see the module docstring)."""
    from .search import search

    if not settings().vector_merge:
        return await search(ds, query, filter=filter, prefilter=prefilter)
    loop = asyncio.get_running_loop()
    key = _key(ds, query, filter, prefilter)
    fut: asyncio.Future = loop.create_future()
    group = _PENDING.get(key)
    if group is not None:
        group.append((query, fut))
        return await fut
    group = [(query, fut)]
    _PENDING[key] = group
    try:
        await asyncio.sleep(0)
    finally:
        _PENDING.pop(key, None)
    if len(group) == 1:
        return await search(ds, query, filter=filter, prefilter=prefilter)
    merged = replace(query, q=np.concatenate([g[0].q for g in group]), batched=True)
    task = asyncio.ensure_future(search(ds, merged, filter=filter, prefilter=prefilter))

    def done(t: asyncio.Task) -> None:
        if t.cancelled():
            for _, f in group:
                if not f.done():
                    f.cancel()
            return
        exc = t.exception()
        if exc is not None:
            for _, f in group:
                if not f.done():
                    f.set_exception(exc)
            return
        results = t.result()
        at = 0
        for q, f in group:
            n = q.q.shape[0]
            if not f.done():
                f.set_result(results[at:at + n])
            at += n

    task.add_done_callback(done)
    return await fut


__all__ = ["search_merged"]
