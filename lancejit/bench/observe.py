"""Observing a real take's reads to plan them exactly as the I/O scheduler will issue them.

``explain take`` does not re-derive the reader's behaviour: it runs the file reader's own take
(same decoders, same lockstep step plans, same :class:`~lancejit.io.coalesce.CoalescingReader`)
over a copy of the data file's reader chain with two probes inserted:

* :class:`BatchRecorder`, directly under the reader's ``CoalescingReader``: every batch the
  coalescing layer issues (the byte ranges of one loop tick, all fields merged) is one
  :class:`ObservedBatch`;
* :class:`SchedulerProbe`, in place of the chain's :class:`~lancejit.io.scheduler.FileScheduler`:
  the ranges that reach the scheduler are planned with :func:`lancejit.io.planner.plan_reads`
  under the scheduler's own ``block_size`` / ``max_request_size`` (what ``FileScheduler`` does
  before it issues them; the store's counters then count one request per physical read).

Wrappers between the two (e.g. the dataset layer's whole-file reader serving files held in
memory) are kept, so ranges they serve without reaching the scheduler plan **0 requests**.
Batches are matched to the probe's plans through a context variable (batches may run
concurrently in separate tasks).  Byte ranges are half-open ``(start, end)``.
"""

from __future__ import annotations

import contextvars
from dataclasses import dataclass
from typing import Any, Generator, Sequence

import numpy as np

from lancejit.io.forwarding import ForwardingReader
from lancejit.io.planner import plan_reads
from lancejit.io.scheduler import FileScheduler

#: The physical reads planned for the batch running in the current task (None: not observed).
_BATCH_READS: contextvars.ContextVar[list[tuple[int, int]] | None] = contextvars.ContextVar(
    "lancejit_bench_batch_reads", default=None)


@dataclass(frozen=True, slots=True)
class ObservedBatch:
    """One ``read_ranges`` batch the coalescing layer issued.

    ``labels``: the fields whose step plans asked for ranges in this batch (empty when the
    decoders have no step plans); ``ranges``: the byte ranges asked for; ``requests``: the
    physical reads the scheduler plans for them (empty when served from memory).
    """

    labels: tuple[str, ...]
    ranges: tuple[tuple[int, int], ...]
    requests: tuple[tuple[int, int], ...]
    reached_scheduler: bool


def _pairs(ranges: Any) -> list[tuple[int, int]]:
    arr = np.asarray(ranges, dtype=np.int64).reshape(-1, 2)
    return [(int(a), int(b)) for a, b in arr.tolist()]


class SchedulerProbe(ForwardingReader):
    """In place of a ``FileScheduler``: plans each call's ranges as the scheduler will
    (``plan_reads`` with its config) into the current batch, then forwards the call."""

    async def read_ranges(self, ranges: Sequence[tuple[int, int]] | Any, *, priority: int = 0) -> list[Any]:
        config = getattr(self.inner, "config", None)
        if config is None:
            config = self.inner.store.config
        plan = plan_reads(ranges, config.block_size, config.max_request_size)
        sink = _BATCH_READS.get()
        if sink is not None:
            sink.extend(zip(plan.read_starts, plan.read_ends))
            sink.append((-1, -1))  # marks "reached the scheduler" even for empty plans
        return await self.inner.read_ranges(ranges, priority=priority)


class BatchRecorder(ForwardingReader):
    """Top of the probed chain: records every batch (see :class:`ObservedBatch`) while
    ``recording`` is true.  ``pending_labels`` is filled by :func:`labelled_steps`."""

    def __init__(self, inner: Any) -> None:
        super().__init__(inner)
        self.recording = True
        self.batches: list[ObservedBatch] = []
        self.pending_labels: list[str] = []

    async def read_ranges(self, ranges: Sequence[tuple[int, int]] | Any, *, priority: int = 0) -> list[Any]:
        labels = tuple(dict.fromkeys(self.pending_labels))
        self.pending_labels.clear()
        sink: list[tuple[int, int]] = []
        token = _BATCH_READS.set(sink)
        try:
            out = await self.inner.read_ranges(ranges, priority=priority)
        finally:
            _BATCH_READS.reset(token)
        if self.recording:
            reads = tuple(r for r in sink if r != (-1, -1))
            self.batches.append(ObservedBatch(labels, tuple(_pairs(ranges)), reads, bool(sink)))
        return out


def probe_chain(source: Any) -> Any:
    """A copy of the reader chain ``source`` whose ``FileScheduler`` is wrapped in a
    :class:`SchedulerProbe` (wrappers are copied with ``inner`` replaced; the originals are
    untouched).  A chain without a scheduler is probed at its bottom."""
    if isinstance(source, FileScheduler):
        return SchedulerProbe(source)
    state = getattr(source, "__dict__", None)
    if not state or state.get("inner") is None:
        return SchedulerProbe(source)
    inner = state["inner"]
    clone = object.__new__(type(source))
    clone.__dict__.update(state)
    clone.inner = probe_chain(inner)
    if "_batch" in state:  # a coalescing layer: start with no batch of its own
        clone._batch = None
    return clone


class LabelledDecoder:
    """A decoder whose ``take_steps`` / ``range_steps`` generators note ``name`` in
    ``recorder.pending_labels`` whenever they ask for ranges; all else is ``inner`` 's."""

    def __init__(self, inner: Any, name: str, recorder: BatchRecorder) -> None:
        self._inner = inner
        self._name = name
        self._recorder = recorder

    def __getattr__(self, name: str) -> Any:
        if name == "_inner":
            raise AttributeError(name)
        attr = getattr(self._inner, name)
        if name in ("take_steps", "range_steps"):
            def steps(*args: Any, **kwargs: Any) -> Generator[Any, Any, Any]:
                return labelled_steps(attr(*args, **kwargs), self._name, self._recorder)
            return steps
        return attr


def labelled_steps(gen: Generator[Any, Any, Any], name: str, recorder: BatchRecorder) -> Generator[Any, Any, Any]:
    """``gen`` unchanged, noting ``name`` for each non-empty step it yields."""
    try:
        req = next(gen)
    except StopIteration as stop:
        return stop.value
    while True:
        if len(req):
            recorder.pending_labels.append(name)
        try:
            got = yield req
        except GeneratorExit:
            gen.close()
            raise
        except BaseException as exc:  # noqa: BLE001 - handed to the wrapped generator
            try:
                req = gen.throw(exc)
            except StopIteration as stop:
                return stop.value
            continue
        try:
            req = gen.send(got)
        except StopIteration as stop:
            return stop.value


__all__ = ["BatchRecorder", "LabelledDecoder", "ObservedBatch", "SchedulerProbe", "labelled_steps", "probe_chain"]
