"""``lancejit explain take``: the plan of a take before it runs, and measured against planned.

With the file's metadata loaded (the dataset's manifests, deletion files and data-file
footers too), the plan lists for every data file touched:

* the **pages** of each projected column holding the taken rows (from page metadata alone);
* every batch of byte ranges the file reader hands to the I/O scheduler (*steps*; the ranges
  asked for: mini-block chunks, value ranges, offsets...) and the physical **requests** and
  bytes the scheduler makes of them (:func:`lancejit.io.planner.plan_reads` under the
  scheduler's ``block_size`` / ``max_request_size``);
* the predicted request count (the sum over calls; this is what the store's counters then
  measure) and, given a :class:`~lancejit.bench.model.LatencyModel`, the predicted latency.

The plan is made by the SAME machinery as the real read, so it follows the reader as it
evolves (:mod:`lancejit.bench.observe`): the reader's own take runs over a probed copy of the
file's reader chain.  Its ``CoalescingReader`` merges the reads of one loop tick (all fields)
into one batch; decoders with step plans (``take_steps``: 2.0, legacy, and 2.1/2.2 when they
have them) run in lockstep, step 1 known from metadata (``source="metadata"``), later steps
from the bytes of earlier ones (``source="data"``); other decoders' batches are
``source="recorded"``.  Data files the dataset layer holds whole in memory (the open's tail
read covered them) plan 0 requests (``in_memory``).  The take runs twice: the first run loads
the decoders' cached page metadata (chunk tables, dictionaries...: ``warmup_requests``), the
second is the plan.

Byte ranges are half-open ``(start, end)``; row ranges ``[start, end)``; times in seconds.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from lancejit.core.errors import InvalidInputError


# ----------------------------------------------------------------------------- values
@dataclass(frozen=True, slots=True)
class PageTouch:
    """Pages of one physical column holding taken rows: ``pages`` indices of ``num_pages``."""

    field: str
    column: int
    pages: tuple[int, ...]
    num_pages: int
    bytes: int  # encoded bytes of the touched pages (all their buffers)


@dataclass(frozen=True, slots=True)
class CallPlan:
    """One ``read_ranges`` call of one field's take: step ``step`` (1-based).

    ``ranges``: what the decoders ask for in one scheduler batch (same-tick calls of several
    fields merged, as the file reader's ``CoalescingReader`` merges them); ``requests``: the
    physical reads the scheduler plans for them (none when ``in_memory``: the file is held
    whole in memory).  ``source``: ``"metadata"`` (first step of step-plan decoders: known
    from metadata), ``"data"`` (a later step: depends on bytes of an earlier one) or
    ``"recorded"`` (decoders without step plans, observed while they ran).
    """

    field: str
    step: int
    source: str
    ranges: tuple[tuple[int, int], ...]
    requests: tuple[tuple[int, int], ...]
    in_memory: bool = False

    @property
    def num_requests(self) -> int:
        return len(self.requests)

    @property
    def bytes_requested(self) -> int:
        return sum(e - s for s, e in self.ranges)

    @property
    def bytes_read(self) -> int:
        return sum(e - s for s, e in self.requests)


@dataclass(slots=True)
class FilePlan:
    """The take plan of one data file: ``rows`` sorted unique row offsets in the file."""

    uri: str
    version: str
    rows: int
    fragment: int | None = None
    pages: list[PageTouch] = field(default_factory=list)
    calls: list[CallPlan] = field(default_factory=list)
    warmup_requests: int = 0

    @property
    def num_requests(self) -> int:
        return sum(c.num_requests for c in self.calls)

    @property
    def bytes_read(self) -> int:
        return sum(c.bytes_read for c in self.calls)


@dataclass(slots=True)
class TakePlan:
    """The plan of a whole take (one file, or the files of a dataset's fragments)."""

    uri: str
    kind: str  # "file" or "dataset"
    rows: int
    unique_rows: int
    columns: list[str]
    block_size: int
    max_request_size: int
    files: list[FilePlan] = field(default_factory=list)
    predicted_seconds: float | None = None
    measured: dict[str, Any] | None = None

    @property
    def num_requests(self) -> int:
        """Predicted physical requests (what the store's ``read_iops`` counter will show)."""
        return sum(f.num_requests for f in self.files)

    @property
    def bytes_read(self) -> int:
        return sum(f.bytes_read for f in self.files)

    @property
    def bytes_requested(self) -> int:
        return sum(c.bytes_requested for f in self.files for c in f.calls)

    def steps(self) -> list[list[int]]:
        """Request sizes per step (step k of every file and field runs concurrently)."""
        out: list[list[int]] = []
        for f in self.files:
            for c in f.calls:
                while len(out) < c.step:
                    out.append([])
                out[c.step - 1].extend(e - s for s, e in c.requests)
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": "take_plan",
            "uri": self.uri,
            "target": self.kind,
            "rows": self.rows,
            "unique_rows": self.unique_rows,
            "columns": self.columns,
            "block_size": self.block_size,
            "max_request_size": self.max_request_size,
            "predicted_requests": self.num_requests,
            "predicted_bytes_read": self.bytes_read,
            "bytes_requested": self.bytes_requested,
            "predicted_seconds": self.predicted_seconds,
            "files": [
                {
                    "uri": f.uri, "version": f.version, "fragment": f.fragment, "rows": f.rows,
                    "warmup_requests": f.warmup_requests,
                    "pages": [{"field": p.field, "column": p.column, "pages": list(p.pages),
                               "num_pages": p.num_pages, "bytes": p.bytes} for p in f.pages],
                    "calls": [{"field": c.field, "step": c.step, "source": c.source,
                               "in_memory": c.in_memory, "ranges": [list(r) for r in c.ranges],
                               "requests": [list(r) for r in c.requests]} for c in f.calls],
                }
                for f in self.files
            ],
            "measured": self.measured,
        }

    def render(self, max_ranges: int = 6) -> str:
        """Human-readable plan (and measured figures after :func:`run_take`)."""
        from lancejit.bench.report import human_bytes, human_seconds

        lines = [
            f"take of {self.rows} rows ({self.unique_rows} unique) from {self.kind} {self.uri}",
            f"columns: {', '.join(self.columns)}",
            f"coalescing: block_size {human_bytes(self.block_size)}, "
            f"max request {human_bytes(self.max_request_size)}",
        ]
        for f in self.files:
            frag = f" (fragment {f.fragment})" if f.fragment is not None else ""
            lines.append(f"file {f.uri}{frag}: Lance {f.version}, {f.rows} rows taken")
            for p in f.pages:
                shown = ", ".join(map(str, p.pages[:12])) + (" ..." if len(p.pages) > 12 else "")
                lines.append(f"  column {p.column} ({p.field}): {len(p.pages)} of {p.num_pages} pages "
                             f"[{shown}], {human_bytes(p.bytes)} encoded")
            if f.warmup_requests:
                lines.append(f"  (first take loads cached page metadata: {f.warmup_requests} requests)")
            for c in f.calls:
                rng = ", ".join(f"[{s}, {e})" for s, e in c.ranges[:max_ranges])
                more = f" ... +{len(c.ranges) - max_ranges}" if len(c.ranges) > max_ranges else ""
                lines.append(
                    f"  {c.field} step {c.step} ({c.source}): {len(c.ranges)} ranges, "
                    f"{human_bytes(c.bytes_requested)} -> {c.num_requests} requests, "
                    f"{human_bytes(c.bytes_read)}{' (held in memory)' if c.in_memory else ''}: {rng}{more}"
                )
        lines.append(f"planned: {self.num_requests} requests, {human_bytes(self.bytes_read)} read "
                     f"({human_bytes(self.bytes_requested)} asked for), {len(self.steps())} sequential steps")
        if self.predicted_seconds is not None:
            lines.append(f"predicted latency: {human_seconds(self.predicted_seconds)}")
        if self.measured is not None:
            m = self.measured
            match = "matches" if m["requests"] == self.num_requests else "DIFFERS from"
            lines.append(f"measured: {m['requests']} requests, {human_bytes(m['bytes_read'])} read, "
                         f"{human_seconds(m['seconds'])} ({match} the plan)")
        return "\n".join(lines)


# ----------------------------------------------------------------------------- file plans
def _field_columns(metadata: Any) -> dict[str, range]:
    """Physical columns of every top-level field (schema pre-order)."""
    out: dict[str, range] = {}
    version = metadata.version
    if version == "2.0":
        from lancejit.encoding.v20.field import column_count

        col = 0
        for f in metadata.schema.fields:
            n = column_count(f)
            out.setdefault(f.name, range(col, col + n))
            col += n
    elif version in ("2.1", "2.2"):
        from lancejit.encoding.v21.columns import count_columns

        col = 0
        for f in metadata.arrow_schema:
            n = count_columns(f)
            out.setdefault(f.name, range(col, col + n))
            col += n
    return out


def page_touches(metadata: Any, names: Sequence[str], idx: np.ndarray) -> list[PageTouch]:
    """Pages of each column of ``names`` holding rows ``idx`` (sorted): a page's first row is its
    ``priority`` when those increase, else the sum of the previous pages' ``num_rows``."""
    out: list[PageTouch] = []
    try:
        cols = _field_columns(metadata)
    except ImportError:  # pragma: no cover - decoders missing in this build
        return out
    num_rows = int(metadata.num_rows)
    for name in names:
        for c in cols.get(name, ()):
            pages = metadata.columns[c].pages
            if not pages:
                continue
            firsts = np.array([p.priority for p in pages], dtype=np.int64)
            if len(pages) > 1 and not bool(np.all(firsts[1:] > firsts[:-1])):
                # no usable priorities (2.0 writers leave them 0): pages follow each other by rows
                counts = np.array([p.num_rows for p in pages], dtype=np.int64)
                firsts = np.concatenate([[0], np.cumsum(counts)[:-1]])
            which = np.unique(np.searchsorted(firsts, idx, side="right") - 1)
            which = which[(which >= 0) & (which < len(pages))]
            # pages with no top-level rows of their own (e.g. continuation pages) have equal priority
            touched = tuple(int(i) for i in which if firsts[i] < num_rows)
            nbytes = sum(sum(pages[i].buffer_sizes) for i in touched)
            out.append(PageTouch(name, c, touched, len(pages), nbytes))
    return out


async def plan_file_take(source: Any, metadata: Any, names: Sequence[str], idx: np.ndarray,
                         *, uri: str | None = None, fragment: int | None = None,
                         store: Any = None, stats: Any = None) -> FilePlan:
    """The plan of taking sorted unique rows ``idx`` of top-level fields ``names`` of one file.

    ``source``: the :class:`~lancejit.core.ranges.RangeReader` the real reads go through (a
    ``FileScheduler``, or the dataset layer's wrapper of one, e.g. the whole-file reader of
    small data files).  The take runs through a private
    :class:`~lancejit.file.reader.AsyncLanceFileReader` over a probed copy of ``source``
    (:mod:`lancejit.bench.observe`): the batches its ``CoalescingReader`` issues are the calls,
    and the physical reads ``plan_reads`` makes of what reaches the scheduler (under the
    scheduler's config) are the requests; ranges served from memory plan none.  The take runs
    twice: the first run loads the decoders' cached page metadata (``warmup_requests``).
    """
    from lancejit.bench.observe import BatchRecorder, LabelledDecoder, probe_chain
    from lancejit.file.reader import AsyncLanceFileReader

    idx = np.ascontiguousarray(idx, dtype=np.int64)
    name = uri or getattr(source, "uri", None) or source.path
    plan = FilePlan(name, metadata.version, int(idx.size), fragment, page_touches(metadata, names, idx))
    if idx.size == 0 or not names:
        return plan
    recorder = BatchRecorder(probe_chain(source))
    store = store if store is not None else getattr(source, "store", None)
    reader = AsyncLanceFileReader(name, store, getattr(source, "store_path", name), recorder, metadata, stats)
    names = list(names)
    # Label each lockstep batch with the fields asking for ranges in it: the reader's decoders
    # (made by its own factory over the probed chain) are wrapped where it keeps them.
    stepped = False
    decoders_for, made = getattr(reader, "_decoders_for", None), getattr(reader, "_decoders", None)
    if decoders_for is not None and isinstance(made, dict):
        decoders = await decoders_for(names)
        stepped = all(hasattr(d, "take_steps") for d in decoders.values())
        if stepped:
            for n, d in decoders.items():
                made[n] = LabelledDecoder(d, n, recorder)
    await reader.take_rows(idx, names)  # warm-up: loads cached page metadata
    warm = sum(len(b.requests) for b in recorder.batches)
    recorder.batches.clear()
    recorder.pending_labels.clear()
    await reader.take_rows(idx, names)
    recorder.recording = False
    for step, batch in enumerate(recorder.batches, start=1):
        if stepped:
            source_kind = "metadata" if step == 1 else "data"
            label = ",".join(batch.labels) or ",".join(names)
        else:
            source_kind, label = "recorded", ",".join(names)
        plan.calls.append(CallPlan(label, step, source_kind, batch.ranges, batch.requests,
                                   in_memory=not batch.reached_scheduler))
    plan.warmup_requests = max(0, warm - plan.num_requests)
    return plan


# ----------------------------------------------------------------------------- targets
def _top_names(schema_names: Sequence[str], columns: Sequence[str] | None) -> list[str]:
    if columns is None:
        return list(schema_names)
    out: list[str] = []
    for col in columns:
        if col in schema_names:
            out.append(col)
            continue
        parts = col.split(".")
        for cut in range(len(parts) - 1, 0, -1):
            if ".".join(parts[:cut]) in schema_names:
                out.append(".".join(parts[:cut]))
                break
        else:
            raise InvalidInputError(f"no column {col!r} (columns: {list(schema_names)})")
    return list(dict.fromkeys(out))


@dataclass(slots=True)
class TakeTarget:
    """An opened file or dataset that takes can be planned and run on."""

    uri: str
    kind: str
    store: Any
    handle: Any  # AsyncLanceFileReader or Dataset
    scheduler: Any = None  # the file's scheduler (files only)

    @property
    def schema_names(self) -> list[str]:
        return list(self.handle.schema.names)

    @property
    def num_rows(self) -> int:
        if self.kind == "file":
            return self.handle.num_rows
        return int(self.handle.count_rows())

    async def num_rows_async(self) -> int:
        if self.kind == "file":
            return self.handle.num_rows
        return int(await self.handle.count_rows_async())


async def open_target(uri: str, storage_options: dict[str, Any] | None = None) -> TakeTarget:
    """Open ``uri`` as a Lance file, or else as a dataset."""
    from lancejit.core.errors import NotFoundError
    from lancejit.file.reader import AsyncLanceFileReader
    from lancejit.io import FileScheduler, IOStats, open_store

    store, path = open_store(uri, storage_options)
    try:
        sched = FileScheduler(store, path, stats=IOStats())
        reader = await AsyncLanceFileReader.from_reader(sched, uri=uri, store=store)
        return TakeTarget(uri, "file", store, reader, sched)
    except (InvalidInputError, NotFoundError) as file_error:
        from lancejit.table.dataset import Dataset

        try:
            ds = await Dataset.open_async(uri, None, storage_options)
        except NotFoundError:
            raise file_error from None
        return TakeTarget(uri, "dataset", ds.store, ds)


async def plan_take(target: TakeTarget, rows: Any, columns: Sequence[str] | None = None,
                    model: Any = None) -> TakePlan:
    """Plan taking ``rows`` (file row offsets, or dataset offsets after deletions)."""
    rows = np.asarray(rows, dtype=np.int64).reshape(-1)
    total = await target.num_rows_async()
    if rows.size and (int(rows.min()) < 0 or int(rows.max()) >= total):
        from lancejit.core.errors import RowIndexError

        raise RowIndexError(f"row offsets must be in [0, {total})")
    unique = np.unique(rows)
    names = _top_names(target.schema_names, columns)
    cfg = target.store.config
    plan = TakePlan(target.uri, target.kind, int(rows.size), int(unique.size),
                    list(columns) if columns is not None else names, cfg.block_size, cfg.max_request_size)
    if target.kind == "file":
        reader = target.handle
        plan.files.append(await plan_file_take(target.scheduler, reader.file_metadata, names, unique,
                                               uri=target.uri, store=target.store))
    else:
        plan.files.extend(await _plan_dataset(target.handle, unique, columns))
    if model is not None:
        plan.predicted_seconds = model.predict(plan.steps())
    return plan


async def _plan_dataset(ds: Any, offsets: np.ndarray, columns: Sequence[str] | None) -> list[FilePlan]:
    """File plans of a dataset take: offsets -> (fragment, physical offset) -> data files."""
    from lancejit.table.read.datafile import open_data_file
    from lancejit.table.read.fragment import FragmentReader

    ctx = ds.context
    spec = ds._spec(columns, None, None, None, False, False, nested_as_struct=True)
    frags = [FragmentReader(ctx, f) for f in ctx.manifest.fragments]
    counts = np.array(await asyncio.gather(*(f.count_rows() for f in frags)), dtype=np.int64)
    starts = np.concatenate([[0], np.cumsum(counts)])
    which = np.searchsorted(starts, offsets, side="right") - 1
    plans: list[FilePlan] = []
    for i in sorted(set(which.tolist())):
        frag = frags[i]
        local = offsets[which == i] - starts[i]
        physical = local if frag.fragment.deletion_file is None else (await frag.live_offsets())[local]
        physical = np.unique(physical.astype(np.int64))
        groups: dict[str, tuple[Any, list[Any]]] = {}
        for top in spec.tops:
            df = frag.file_for(top)
            if df is not None:
                groups.setdefault(df.path, (df, []))[1].append(top)
        for df, tops in groups.values():
            handle = await open_data_file(ctx, df)
            store, path = ctx.data_file_location(df)
            names = list(dict.fromkeys(handle._file_name(t) for t in tops))
            # the reader chain the real take reads through (scheduler, or the whole-file reader)
            source = getattr(handle.reader, "_scheduler", None)
            if source is None:
                source = ctx.reader(store, path, handle.reader.file_metadata.file_size)
            plans.append(await plan_file_take(source, handle.reader.file_metadata, names, physical,
                                              uri=store.uri(path), fragment=frag.id, store=store))
    return plans


async def run_take(target: TakeTarget, plan: TakePlan, rows: Any, columns: Sequence[str] | None = None) -> Any:
    """Run the take, fill ``plan.measured`` (requests/bytes by the store's counters, seconds,
    bytes returned) and return the table."""
    stats = target.store.stats
    before = stats.snapshot()
    t0 = time.perf_counter()
    if target.kind == "file":
        table = await target.handle.take_rows(rows, columns)
    else:
        table = await target.handle.take_async(rows, columns)
    seconds = time.perf_counter() - t0
    delta = stats.snapshot() - before
    plan.measured = {"requests": delta.read_iops, "bytes_read": delta.read_bytes, "seconds": seconds,
                     "bytes_returned": int(table.nbytes), "rows": table.num_rows}
    return table


def explain_take(uri: str, rows: Any, columns: Sequence[str] | None = None, *,
                 storage_options: dict[str, Any] | None = None, run: bool = False,
                 model: Any = None) -> TakePlan:
    """Synchronous plan (and, with ``run``, execution) of a take; see the module docstring."""
    from lancejit.io.sync import run_sync

    async def go() -> TakePlan:
        target = await open_target(uri, storage_options)
        plan = await plan_take(target, rows, columns, model)
        if run:
            await run_take(target, plan, rows, columns)
        return plan

    return run_sync(go())


__all__ = [
    "CallPlan",
    "FilePlan",
    "PageTouch",
    "TakePlan",
    "TakeTarget",
    "explain_take",
    "open_target",
    "page_touches",
    "plan_file_take",
    "plan_take",
    "run_take",
]
