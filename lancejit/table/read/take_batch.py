"""Cross-caller batching of ``Dataset.take_async`` / ``take_rows_async``.

A service awaits many small takes at once (``await ds.take_async(ids)`` from many request
handlers).  Calls on the same dataset version (the same :class:`~.context.DatasetContext`) with
the same projection and options that arrive within one *window* on one event loop are merged
into one take: their indices are concatenated, the existing take function
(:func:`lancejit.table.read.take.take_offsets` / :func:`~lancejit.table.read.take.take_rows`) runs once
-- one version-index lookup, one ``np.unique`` over all requested rows, one I/O plan, one batched
read per touched column page, one decode per column -- and the result is split back, each
caller getting exactly its rows in its own order (zero-copy slices of the merged table).

Window: the first caller of a batch (the leader) yields for the window while later callers join.
``window_ms = 0`` (the default) yields one event-loop iteration (``asyncio.sleep(0)``), merging
the calls made in the same iteration: a lone async caller pays that one iteration (a small part
of even a 1-row take); callers that are already concurrent pay nothing extra and share one take
(many concurrent small takes: a higher throughput than unbatched takes).  If nobody joined, the
leader runs its own take inline (no task).  A positive window waits that long: every call's
latency grows by up to the window, in exchange for larger merged takes (fewer reads and Python
calls per row) when callers arrive spread out in time.  The sync API's inline path (local and
memory stores, a coroutine driven outside any task) cannot have concurrent callers and skips
batching.  Batching can be turned off per call (``batch=False``) or with the ``take_batch`` knob
(:mod:`lancejit.core.config`); ``take_batch_window_ms`` sets the window and
``take_batch_max_callers`` caps the callers one take serves (default: no cap).

Isolation:

* errors: each caller's request is converted (and, for offsets, range-checked against the
  version index) before it joins a batch; a caller whose request is invalid runs alone and gets
  its own error.  If a merged take fails anyway, every caller of the batch is retried alone, so
  an error reaches only the callers whose rows cause it;
* cancellation: callers wait on their own future; the merged take runs in a task of its own
  that a cancelled caller does not cancel (the others still get their rows);
* state is per event loop (the sync bridge's loop and user loops never share a batch).

Row ids (``take_rows``) skip deleted / unknown ids, so a caller's share of the merged result is
not its request length: the merged take also returns ``_rowid`` (equal to the requested id or
address), a request value survives iff it appears there, and each caller's share is the number
of its values that survive (the column is dropped again unless the caller asked for it).
"""

from __future__ import annotations

import asyncio
import weakref
from dataclasses import dataclass
from typing import Any, Awaitable, Callable, Hashable

import numpy as np
import pyarrow as pa

from lancejit.core.config import settings

from . import take as _take
from .fragment import ROWID
from .version_index import dataset_index
from .spec import output_columns

#: A take function: ``(ctx, request values, spec) -> table``.
TakeFn = Callable[[Any, np.ndarray, Any], Awaitable[pa.Table]]


@dataclass(frozen=True, slots=True)
class BatchStats:
    """Counters since the process started (or :func:`reset_stats`): ``calls`` batched calls,
    ``takes`` underlying take-function calls made for them, ``merged`` of those that served more
    than one caller, ``fallbacks`` merged takes that failed and were retried per caller."""

    calls: int
    takes: int
    merged: int
    fallbacks: int


_COUNTS = {"calls": 0, "takes": 0, "merged": 0, "fallbacks": 0}


def stats() -> BatchStats:
    """The batching counters (see :class:`BatchStats`)."""
    return BatchStats(**_COUNTS)


def reset_stats() -> None:
    for k in _COUNTS:
        _COUNTS[k] = 0


class _Batch:
    """Callers that joined a leader's batch: their raw requests and futures, and how to serve
    them (``fn`` merged, ``fn_alone`` one caller, ``prepare`` checks/converts one request:
    ``None`` = serve it alone, an exception = that caller's error)."""

    __slots__ = ("fn", "fn_alone", "prepare", "ctx", "spec", "split", "requests", "futures")

    def __init__(self, fn: TakeFn, fn_alone: TakeFn, prepare: Callable[[Any, Any], Awaitable[np.ndarray | None]],
                 ctx: Any, spec: Any, split: Callable[..., list[pa.Table]]) -> None:
        self.fn, self.fn_alone, self.prepare = fn, fn_alone, prepare
        self.ctx, self.spec, self.split = ctx, spec, split
        self.requests: list[Any] = []
        self.futures: list[asyncio.Future] = []


class _LoopState:
    __slots__ = ("pending", "tasks")

    def __init__(self) -> None:
        self.pending: dict[Hashable, _Batch] = {}
        self.tasks: set[asyncio.Task] = set()


_STATES: "weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _LoopState]" = weakref.WeakKeyDictionary()


def _state(loop: asyncio.AbstractEventLoop) -> _LoopState:
    st = _STATES.get(loop)
    if st is None:
        st = _STATES[loop] = _LoopState()
    return st


async def _alone(fn: TakeFn, ctx: Any, values: Any, spec: Any) -> pa.Table:
    _COUNTS["takes"] += 1
    return await fn(ctx, values, spec)


async def _batched(key: Hashable, raw: Any, alone: Callable[[], Awaitable[pa.Table]],
                   make_batch: Callable[[], _Batch]) -> pa.Table:
    """Serve one caller.  The first caller of ``key`` on this loop leads: it opens a batch, yields
    for the window (one loop iteration by default) while later callers join, then closes it.
    Nobody joined: it runs its own take (``alone()``) inline, no task, nothing validated twice.
    Otherwise the batch runs as one task (see :func:`_run`) that nobody's cancellation cancels."""
    loop = asyncio.get_running_loop()
    if asyncio.current_task(loop) is None:
        # driven directly, outside any task (the sync API's inline path, one caller per thread):
        # nothing can run concurrently with it, so nothing to merge
        return await alone()
    _COUNTS["calls"] += 1
    st = _state(loop)
    batch = st.pending.get(key)
    if batch is not None:  # follower
        fut = loop.create_future()
        batch.requests.append(raw)
        batch.futures.append(fut)
        if len(batch.requests) + 1 >= (settings().take_batch_max_callers or 1 << 30):  # full: the next opens another
            del st.pending[key]
        return await fut
    batch = st.pending[key] = make_batch()
    try:
        window = settings().take_batch_window_ms
        await asyncio.sleep(window / 1e3 if window > 0 else 0)
    except BaseException:  # the leader was cancelled: the followers go on without it
        if st.pending.get(key) is batch:
            del st.pending[key]
        if batch.requests:
            _launch(loop, st, batch)
        raise
    if st.pending.get(key) is batch:
        del st.pending[key]
    if not batch.requests:
        _COUNTS["takes"] += 1
        return await alone()
    fut = loop.create_future()
    batch.requests.insert(0, raw)
    batch.futures.insert(0, fut)
    _launch(loop, st, batch)
    return await fut


def _launch(loop: asyncio.AbstractEventLoop, st: _LoopState, batch: _Batch) -> None:
    task = loop.create_task(_run(batch))
    st.tasks.add(task)
    task.add_done_callback(st.tasks.discard)


def _deliver(fut: asyncio.Future, result: Any, error: BaseException | None) -> None:
    if fut.done():  # the caller was cancelled meanwhile
        return
    if error is not None:
        fut.set_exception(error)
    else:
        fut.set_result(result)


async def _serve_alone(batch: _Batch, fut: asyncio.Future, raw: Any) -> None:
    try:
        out = await _alone(batch.fn_alone, batch.ctx, raw, batch.spec)
    except Exception as exc:  # noqa: BLE001 - goes to its caller
        _deliver(fut, None, exc)
    else:
        _deliver(fut, out, None)


async def _run(batch: _Batch) -> None:
    """Serve the callers of a closed batch: invalid requests alone, the rest merged."""
    futs: list[asyncio.Future] = []
    reqs: list[np.ndarray] = []
    single: list[tuple[asyncio.Future, Any]] = []
    try:
        for f, raw in zip(batch.futures, batch.requests):
            if f.done():  # cancelled before the batch ran
                continue
            try:
                values = await batch.prepare(batch.ctx, raw)
            except Exception as exc:  # noqa: BLE001 - bad input: that caller's error
                _deliver(f, None, exc)
                continue
            if values is None:
                single.append((f, raw))
            else:
                futs.append(f)
                reqs.append(values)
        if len(reqs) == 1:
            single.append((futs.pop(), reqs.pop()))
        jobs = [_serve_alone(batch, f, r) for f, r in single]
        if reqs:
            jobs.append(_serve_merged(batch, futs, reqs))
        if len(jobs) == 1:
            await jobs[0]
        elif jobs:
            await asyncio.gather(*jobs)
    except BaseException as exc:  # cancelled (loop shutdown): nobody is left waiting forever
        for f in batch.futures:
            if not f.done():
                f.cancel() if isinstance(exc, asyncio.CancelledError) else f.set_exception(exc)
        raise


async def _serve_merged(batch: _Batch, futs: list[asyncio.Future], reqs: list[np.ndarray]) -> None:
    merged = np.concatenate(reqs)
    try:
        out = await _alone(batch.fn, batch.ctx, merged, batch.spec)
        parts = batch.split(out, reqs, merged)
    except Exception:  # noqa: BLE001 - retried per caller so errors reach only their owners
        _COUNTS["fallbacks"] += 1
        await asyncio.gather(*(_serve_alone(batch, f, r) for f, r in zip(futs, reqs)))
        return
    _COUNTS["merged"] += 1
    for f, part in zip(futs, parts):
        _deliver(f, part, None)


def _split_by_lengths(out: pa.Table, reqs: list[np.ndarray], merged: np.ndarray) -> list[pa.Table]:
    parts, start = [], 0
    for r in reqs:
        parts.append(out.slice(start, len(r)))
        start += len(r)
    if start != out.num_rows:
        raise AssertionError(f"merged take returned {out.num_rows} rows for {start} requested")
    return parts


def _enabled(batch: bool | None) -> bool:
    return settings().take_batch if batch is None else bool(batch)


async def take_offsets(ctx: Any, indices: Any, spec: Any, key: Hashable, batch: bool | None = None) -> pa.Table:
    """:func:`lancejit.table.read.take.take_offsets`, merged with the concurrent calls of the same
    ``ctx`` and ``key`` (the projection and options that built ``spec``) on this event loop."""
    if not _enabled(batch):
        return await _take.take_offsets(ctx, indices, spec)
    return await _batched(
        ("offsets", id(ctx), key), indices, lambda: _take.take_offsets(ctx, indices, spec),
        lambda: _Batch(_take.take_offsets, _take.take_offsets, _prepare_offsets, ctx, spec, _split_by_lengths))


async def _prepare_offsets(ctx: Any, indices: Any) -> np.ndarray | None:
    """The request as int64 offsets, or None when out of range (served alone: its own error)."""
    idx = _take.as_int_array(indices, "indices")
    total = (await dataset_index(ctx)).total_rows
    if idx.size and ((idx.dtype.kind == "i" and int(idx.min()) < 0) or int(idx.max()) >= total):
        return None
    return idx.astype(np.int64, copy=False)


def _split_by_survivors(hidden: bool) -> Callable[..., list[pa.Table]]:
    def split(out: pa.Table, reqs: list[np.ndarray], merged: np.ndarray) -> list[pa.Table]:
        got = out.column(ROWID).to_numpy().astype(np.uint64, copy=False)
        survives = np.isin(merged, got)
        bounds = np.r_[0, np.cumsum([len(r) for r in reqs])]
        seen = np.r_[0, np.cumsum(survives, dtype=np.int64)]
        counts = seen[bounds[1:]] - seen[bounds[:-1]]
        if int(counts.sum()) != out.num_rows:
            raise AssertionError(f"merged take returned {out.num_rows} rows, {int(counts.sum())} expected")
        if hidden:
            out = out.drop_columns([ROWID])
        parts, start = [], 0
        for c in counts.tolist():
            parts.append(out.slice(start, c))
            start += c
        return parts

    return split


async def take_rows(ctx: Any, row_ids: Any, make_spec: Callable[[bool], Any], stable: bool, key: Hashable,
                    batch: bool | None = None) -> pa.Table:
    """:func:`lancejit.table.read.take.take_rows`, merged like :func:`take_offsets`.

    ``make_spec(with_row_id)`` builds the caller's spec (with ``_rowid`` forced on or not)."""
    spec = make_spec(False)
    if not _enabled(batch):
        return await _take.take_rows(ctx, row_ids, spec, stable)

    def make_batch() -> _Batch:
        hidden = ROWID not in [o.name for o in output_columns(spec)]
        merged_spec = make_spec(True) if hidden else spec

        async def fn(c: Any, values: np.ndarray, s: Any) -> pa.Table:
            return await _take.take_rows(c, values, s, stable)

        async def fn_alone(c: Any, values: Any, s: Any) -> pa.Table:
            out = await _take.take_rows(c, values, s, stable)
            return out.drop_columns([ROWID]) if hidden else out

        return _Batch(fn, fn_alone, _prepare_ids, ctx, merged_spec, _split_by_survivors(hidden))

    return await _batched(("rows", id(ctx), key, stable), row_ids,
                          lambda: _take.take_rows(ctx, row_ids, spec, stable), make_batch)


async def _prepare_ids(ctx: Any, row_ids: Any) -> np.ndarray | None:
    """The request as uint64 ids, or None when it has a negative id (served alone)."""
    ids = _take.as_int_array(row_ids, "row ids")
    if ids.size and ids.dtype.kind == "i" and int(ids.min()) < 0:
        return None
    return ids.astype(np.uint64, copy=False)
