"""Compaction (``ds.optimize.compact_files``): merge small fragments, materialize deletions.

Planning follows the reference (``optimize.rs``): walking the fragments in dataset order, a
fragment is a candidate when more than ``materialize_deletions_threshold`` of its rows are
deleted ("compact itself") or when it has fewer than ``target_rows_per_fragment`` physical rows
("compact with neighbours"); runs of adjacent candidates form bins, a bin holding a single
"with neighbours" fragment is dropped, and bins are split into tasks of at least
``target_rows_per_fragment`` live rows (the remainder joins the last task).  A task only merges
fragments covered by the same set of indices; BTREE, BITMAP and LABEL_LIST indices covering
rewritten fragments are remapped to the rows' new addresses (:mod:`.index_remap`), fragments
covered by indices lancejit cannot remap (vector indices, zone maps...) are left alone.

Each task's live rows are read in order and written to new fragments.  As the reference does,
fragment ids are reserved first by a
``ReserveFragments`` commit, then one ``Rewrite`` commit (read version = the planned version)
replaces each group's old fragments in place.  With stable row ids the rows keep their ids and
created-at / last-updated-at versions (the sequences of the live rows move with them), so
``take_rows`` of ids taken before returns the same rows after.  A concurrent commit touching
the same fragments makes the commit retryable: compaction re-plans on the latest version
(``max_retries`` times), so rows deleted meanwhile never come back.

As in the reference, a task's live rows are written to ``max(1, rows // target_rows_per_fragment)``
files of equal size (the first ones one row longer): 40 fragments of 100 rows with deletions
compacted to a target of 1,000 make 3 fragments (1,029 / 1,028 / 1,372 rows), not files cut
at the target.  ``max_bytes_per_file`` starts a new file once that many bytes are written.

The work is split as the reference splits it (``Compaction.plan`` / ``CompactionTask.execute`` /
``Compaction.commit``): :func:`plan_compaction_async` returns plain values (tasks of protobuf
fragments), :func:`execute_compaction_task_async` rewrites one task anywhere the dataset can be
opened (another process or machine) and returns a :class:`RewriteResult`, and
:func:`commit_compaction_async` commits the results once.  A task's fragments are read by one
scan (small fragments opened in batches) streamed through the file writer.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Sequence

import numpy as np
import pyarrow as pa

from lancejit.core.config import settings
from lancejit.core.errors import InvalidInputError, NotSupportedError, RetryableCommitError
from lancejit.core.schema import LanceSchema
from lancejit.io.store import join_path
from lancejit.pb import table_pb2

from ..commit import (CommitResult, ReserveFragments, Transaction, commit_transaction, parse_manifest_file,
                      read_deleted_offsets)
from ..commit.operations import Rewrite, RewriteGroup
from ..commit.rowid_writer import decode_version_runs, encode_row_id_sequence, encode_version_runs
from ..read.dataset_reader import Scanner
from ..read.fragment import ROWADDR, ROWID
from .data_files import DATA_DIR, DEFAULT_MAX_BYTES_PER_FILE, FragmentFileWriter, normalize_storage_version
from .index_remap import Remappable, plan_index_sets, remap_indices
from .index_remap import delete_rewritten as delete_remapped
from .on_version import loaded_manifest, open_committed

if TYPE_CHECKING:  # pragma: no cover
    from ..read.dataset_reader import DatasetReader

#: Most rows per scan unit while rewriting (see ``execute_compaction_task_async``).
REWRITE_UNIT_ROWS = 1 << 22


@dataclass(frozen=True, slots=True)
class CompactionOptions:
    """``target_rows_per_fragment``: fragments with fewer physical rows are merged with their
    neighbours, and new fragments hold at most this many rows; ``max_rows_per_group`` is accepted
    for API compatibility (2.x files have no row groups); ``max_bytes_per_file`` in bytes;
    deletions are materialized when more than ``materialize_deletions_threshold`` (a fraction)
    of a fragment's rows are deleted; ``num_threads`` tasks are rewritten at once;
    ``excluded_fragment_ids`` are never rewritten."""

    target_rows_per_fragment: int = 1024 * 1024
    max_rows_per_group: int = 1024
    max_bytes_per_file: int | None = None
    materialize_deletions: bool = True
    materialize_deletions_threshold: float = 0.1
    num_threads: int | None = None
    batch_size: int | None = None
    excluded_fragment_ids: tuple[int, ...] = ()

    def validated(self) -> "CompactionOptions":
        for name in ("target_rows_per_fragment", "max_rows_per_group"):
            v = getattr(self, name)
            if not isinstance(v, (int, np.integer)) or v <= 0:
                raise InvalidInputError(f"{name} must be a positive int, got {v!r}")
        if self.max_bytes_per_file is not None and self.max_bytes_per_file <= 0:
            raise InvalidInputError("max_bytes_per_file must be positive")
        if self.num_threads is not None and self.num_threads <= 0:
            raise InvalidInputError("num_threads must be positive")
        if self.batch_size is not None and self.batch_size <= 0:
            raise InvalidInputError("batch_size must be positive")
        return self

    @property
    def materializes(self) -> bool:
        return self.materialize_deletions and self.materialize_deletions_threshold < 1.0


@dataclass(frozen=True, slots=True)
class CompactionMetrics:
    """What a compaction did: fragments and files (data files plus deletion files) removed and
    added (all zero when there was nothing to compact)."""

    fragments_removed: int = 0
    fragments_added: int = 0
    files_removed: int = 0
    files_added: int = 0

    def __add__(self, other: "CompactionMetrics") -> "CompactionMetrics":
        return CompactionMetrics(self.fragments_removed + other.fragments_removed,
                                 self.fragments_added + other.fragments_added,
                                 self.files_removed + other.files_removed, self.files_added + other.files_added)


# ------------------------------------------------------------------------------ planning
def plan_bins(
    physical_rows: np.ndarray, deleted_rows: np.ndarray, index_set: np.ndarray, options: CompactionOptions
) -> list[tuple[int, int]]:
    """Tasks as half-open ranges ``[start, end)`` of fragment positions (dataset order).

    ``physical_rows`` / ``deleted_rows``: per fragment; ``index_set``: per fragment, an id of the
    set of indices covering it (0 = none), or -1 for a fragment that must not be rewritten.  As
    in the reference, a task never mixes fragments of different index sets."""
    phys = np.asarray(physical_rows, dtype=np.int64)
    dels = np.asarray(deleted_rows, dtype=np.int64)
    key = np.asarray(index_set, dtype=np.int64)
    n = len(phys)
    if n == 0:
        return []
    frac = np.divide(dels, phys, out=np.zeros(n, dtype=np.float64), where=phys > 0)
    itself = (frac > options.materialize_deletions_threshold) if options.materializes else np.zeros(n, bool)
    cand = (itself | (phys < options.target_rows_per_fragment)) & (key >= 0)
    # runs of adjacent candidates with the same index set
    brk = np.ones(n + 1, dtype=bool)
    brk[1:n] = ~cand[1:] | ~cand[:-1] | (key[1:] != key[:-1])
    starts = np.flatnonzero(brk[:n] & cand)
    bounds = np.flatnonzero(brk)
    ends = bounds[np.searchsorted(bounds, starts, side="right")]
    live = phys - dels
    target = options.target_rows_per_fragment
    out: list[tuple[int, int]] = []
    for s, e in zip(starts.tolist(), ends.tolist()):
        if e - s == 1 and not itself[s]:
            continue  # a lone small fragment: nothing to merge it with
        csum = np.cumsum(live[s:e])
        total, base, pos = int(csum[-1]), 0, s
        while True:
            # fewest fragments from pos reaching `target` live rows
            k = int(np.searchsorted(csum, base + target, side="left")) + 1
            k = min(k, e - s)
            if k < e - s and total - int(csum[k - 1]) >= target:
                out.append((pos, s + k))
                pos, base = s + k, int(csum[k - 1])
            else:
                out.append((pos, e))
                break
    return out


async def _deleted_counts(ds: "DatasetReader", frags: Sequence[table_pb2.DataFragment]) -> np.ndarray:
    out = np.zeros(len(frags), dtype=np.int64)
    c = ds.context
    for i, f in enumerate(frags):
        if not f.HasField("deletion_file"):
            continue
        n = f.deletion_file.num_deleted_rows
        if n == 0:  # written by an old writer without the count
            n = len(await read_deleted_offsets(c.store, c.root, f))
        out[i] = n
    return out


# ------------------------------------------------------------------------------ rewriting
def _version_runs(frag: table_pb2.DataFragment, created: bool) -> np.ndarray:
    """Per physical row: created-at (or last-updated-at) versions (the reference's default: 1,
    and last-updated defaults to created-at)."""
    n = frag.physical_rows
    raw = frag.inline_created_at_versions if created else frag.inline_last_updated_at_versions
    if raw:
        return decode_version_runs(raw, n)
    if not created:
        return _version_runs(frag, True)
    return np.ones(n, dtype=np.uint64)


@dataclass(frozen=True, slots=True)
class CompactionTask:
    """One rewrite: adjacent ``fragments`` of version ``read_version`` (as they were there, in
    dataset order) rewritten into new fragments holding their ``live_rows`` rows.  A plain value
    (protobuf fragments): it can be shipped to another process and executed there
    (:func:`execute_compaction_task_async`)."""

    read_version: int
    fragments: tuple[table_pb2.DataFragment, ...]
    #: Live rows of the fragments (None: unknown, counted while rewriting).
    live_rows: int | None = None

    def __reduce__(self) -> tuple:
        return (_task_from_bytes, (self.read_version, _frag_bytes(self.fragments), self.live_rows))


def _frag_bytes(frags: Sequence[table_pb2.DataFragment]) -> tuple[bytes, ...]:
    return tuple(f.SerializeToString() for f in frags)


def _frags_from(raw: Sequence[bytes]) -> tuple[table_pb2.DataFragment, ...]:
    return tuple(table_pb2.DataFragment.FromString(b) for b in raw)


def _task_from_bytes(read_version: int, raw: tuple[bytes, ...], live_rows: int | None = None) -> "CompactionTask":
    return CompactionTask(read_version, _frags_from(raw), live_rows)


@dataclass(frozen=True, slots=True)
class CompactionPlan:
    """What a compaction of version ``read_version`` rewrites: ``tasks`` (none: nothing to do).
    Tasks, plans and results pickle (fragments as their protobuf bytes)."""

    read_version: int
    tasks: tuple[CompactionTask, ...]
    options: CompactionOptions

    def num_tasks(self) -> int:
        return len(self.tasks)


@dataclass(frozen=True, slots=True)
class RewriteResult:
    """A task's outcome: its old fragments, the new fragments holding their live rows (id 0:
    numbered at commit), the metrics, and the written data files (names under ``data/``)."""

    group: RewriteGroup
    metrics: CompactionMetrics
    files: tuple[str, ...]
    #: The old addresses of the rows rewritten, in their new order (for remapping indices).
    addresses: np.ndarray

    def __reduce__(self) -> tuple:
        return (_result_from_bytes, (_frag_bytes(self.group.old_fragments), _frag_bytes(self.group.new_fragments),
                                     self.metrics, self.files, self.addresses))


def _result_from_bytes(old: tuple[bytes, ...], new: tuple[bytes, ...], metrics: CompactionMetrics,
                       files: tuple[str, ...], addresses: np.ndarray) -> RewriteResult:
    return RewriteResult(RewriteGroup(_frags_from(old), _frags_from(new)), metrics, files, addresses)


def file_rows(live_rows: int, target: int) -> list[int]:
    """Rows of each file a task of ``live_rows`` rows is written to, as the reference splits
    it: ``max(1, live_rows // target)`` files of equal size, the first ones one row longer."""
    n = max(1, live_rows // target)
    base, extra = divmod(live_rows, n)
    return [base + 1] * extra + [base] * (n - extra)


async def plan_compaction_async(ds: "DatasetReader", options: CompactionOptions) -> CompactionPlan:
    """The tasks compacting ``ds`` (its checked-out version) with ``options``."""
    options = options.validated()
    lm = await loaded_manifest(ds)
    frags = list(lm.manifest.fragments)
    if not frags:
        return CompactionPlan(ds.version, (), options)
    ids = np.fromiter((f.id for f in frags), dtype=np.int64, count=len(frags))
    phys = np.fromiter((f.physical_rows for f in frags), dtype=np.int64, count=len(frags))
    excluded = np.isin(ids, np.array(options.excluded_fragment_ids, dtype=np.int64))
    keys, _ = await plan_index_sets(ds.context, lm.index_section, ids, ds.has_stable_row_ids)
    keys = np.where(excluded, -1, keys)
    deleted = await _deleted_counts(ds, frags)
    live = phys - deleted
    bins = plan_bins(phys, deleted, keys, options)
    known = phys > 0  # legacy fragments may not record their rows: counted while rewriting
    tasks = tuple(CompactionTask(ds.version, tuple(frags[lo:hi]), int(live[lo:hi].sum()) if known[lo:hi].all() else None)
                  for lo, hi in bins)
    return CompactionPlan(ds.version, tasks, options)


async def execute_compaction_task_async(ds: "DatasetReader", task: CompactionTask, options: CompactionOptions,
                                        *, name_prefix: str = "") -> RewriteResult:
    """Rewrite ``task``'s fragments (``ds`` must be at ``task.read_version``): their live rows
    are read by one scan and streamed through the file writer; the new data files are named
    with ``name_prefix`` first.  A failure deletes what it wrote."""
    if ds.version != task.read_version:
        raise InvalidInputError(f"compaction task of version {task.read_version} executed on version {ds.version}")
    c = ds.context
    lschema = c.lance_schema or LanceSchema.from_pb(c.manifest.fields, dict(c.manifest.schema_metadata))
    storage = normalize_storage_version(c.manifest.data_storage_version or "2.0")
    frags = list(task.fragments)
    quotas = file_rows(task.live_rows, options.target_rows_per_fragment) if task.live_rows is not None else None
    writer = FragmentFileWriter(
        c.store, c.root, lschema.fields, dict(lschema.metadata), storage,
        max_rows_per_file=options.target_rows_per_fragment if quotas is None else max(quotas),
        max_bytes_per_file=options.max_bytes_per_file or DEFAULT_MAX_BYTES_PER_FILE,
        storage_options=c.storage_options, name_prefix=name_prefix, file_rows=quotas,
    )
    file_schema = writer.file_schema
    stable = ds.has_stable_row_ids
    ids, addrs = [], []
    try:
        scanner = ds.scanner(columns=file_schema.names, with_row_id=stable, with_row_address=True,
                             fragment_ids=[f.id for f in frags], batch_size=options.batch_size)
        # whole fragments: each one's columns read together (one request per fragment on object
        # stores, as the reference), the scan's byte bound still cutting very big fragments
        scanner = Scanner(c, replace(scanner.spec, unit_rows=REWRITE_UNIT_ROWS))
        async for batch in scanner.batches_async(ramp=False):
            if batch.num_rows == 0:
                continue
            if stable:
                ids.append(batch.column(ROWID).to_numpy())
            addrs.append(batch.column(ROWADDR).to_numpy())
            batch = pa.RecordBatch.from_arrays([batch.column(n) for n in file_schema.names], schema=file_schema)
            await writer.write(batch)
        files = await writer.finish()
    except BaseException:
        await writer.cleanup()
        raise
    new_frags = [table_pb2.DataFragment(physical_rows=wf.rows, files=[writer.data_file(wf)]) for wf in files]
    moved = np.concatenate(addrs).astype(np.uint64) if addrs else np.empty(0, np.uint64)
    if stable:
        _carry_row_meta(frags, new_frags, np.concatenate(ids) if ids else np.empty(0, np.uint64), moved)
    metrics = CompactionMetrics(
        fragments_removed=len(frags), fragments_added=len(new_frags),
        files_removed=sum(len(f.files) + int(f.HasField("deletion_file")) for f in frags),
        files_added=sum(len(f.files) for f in new_frags),
    )
    return RewriteResult(RewriteGroup(tuple(frags), tuple(new_frags)), metrics, tuple(wf.name for wf in files),
                         moved)


def _carry_row_meta(old: list[table_pb2.DataFragment], new: list[table_pb2.DataFragment],
                    row_ids: np.ndarray, addrs: np.ndarray) -> None:
    """Give ``new`` fragments the row ids and version sequences of the rows they now hold."""
    frag_of = (addrs >> np.uint64(32)).astype(np.int64)
    offset = (addrs & np.uint64(0xFFFFFFFF)).astype(np.int64)
    # per-row versions of all old fragments, concatenated; one gather picks the live rows
    old_ids = np.array([f.id for f in old], dtype=np.int64)
    base = np.concatenate([[0], np.cumsum([f.physical_rows for f in old])]).astype(np.int64)
    order = np.argsort(old_ids, kind="stable")
    pos = order[np.searchsorted(old_ids[order], frag_of)]
    where = base[pos] + offset
    created = np.concatenate([_version_runs(f, True) for f in old])[where]
    updated = np.concatenate([_version_runs(f, False) for f in old])[where]
    start = 0
    for f in new:
        end = start + f.physical_rows
        f.inline_row_ids = encode_row_id_sequence(row_ids[start:end])
        f.inline_created_at_versions = encode_version_runs(created[start:end])
        f.inline_last_updated_at_versions = encode_version_runs(updated[start:end])
        start = end


def _numbered(groups: Sequence[RewriteGroup], first_id: int) -> list[RewriteGroup]:
    """``groups`` with their new fragments numbered from ``first_id`` (copies: the results
    given stay as they were)."""
    out, next_id = [], first_id
    for g in groups:
        new = []
        for f in g.new_fragments:
            n = table_pb2.DataFragment()
            n.CopyFrom(f)
            n.id = next_id
            next_id += 1
            new.append(n)
        out.append(RewriteGroup(g.old_fragments, tuple(new)))
    return out


async def commit_compaction_async(ds: "DatasetReader", results: Sequence[RewriteResult],
                                  carry: dict[str, Remappable] | None = None) -> CompactionMetrics:
    """:func:`commit_results`' metrics."""
    return (await commit_results(ds, results, carry))[0]


async def commit_results(ds: "DatasetReader", results: Sequence[RewriteResult],
                         carry: dict[str, Remappable] | None = None
                         ) -> tuple[CompactionMetrics, CommitResult | None]:
    """Commit the tasks' ``results`` as one ``Rewrite`` of ``ds``'s version (the plan's read
    version), fragment ids reserved first by a ``ReserveFragments`` commit; the scalar indices
    covering rewritten fragments (``carry``: found again on ``ds`` when None) are remapped to
    the rows' new addresses in the same commit.
    :class:`RetryableCommitError` when a concurrent commit touched the same fragments (plan again
    on the latest version); the results' files are not deleted here on failure (see
    :func:`delete_rewritten`)."""
    total = CompactionMetrics()
    if not results:
        return total, None
    c = ds.context
    lm = await loaded_manifest(ds)
    if carry is None:
        ids = np.fromiter((f.id for f in lm.manifest.fragments), dtype=np.int64, count=len(lm.manifest.fragments))
        _, carry = await plan_index_sets(c, lm.index_section, ids, ds.has_stable_row_ids)
    known = {c.manifest_path: lm}
    count = sum(len(r.group.new_fragments) for r in results)
    reserved = await commit_transaction(c.store, c.root, Transaction(ds.version, ReserveFragments(count)), known=known)
    known[reserved.path] = parse_manifest_file(reserved.data, c.store.uri(reserved.path))
    groups = _numbered([r.group for r in results], reserved.manifest.max_fragment_id + 1 - count)
    rewritten = await remap_indices(c, carry, groups, [r.addresses for r in results])
    try:
        done = await commit_transaction(c.store, c.root, Transaction(ds.version, Rewrite(tuple(groups), rewritten)),
                                        known=known)
    except BaseException:
        await delete_remapped(c, rewritten)
        raise
    for r in results:
        total = total + r.metrics
    return total, done


async def delete_rewritten(ds: "DatasetReader", results: Sequence[RewriteResult]) -> None:
    """Delete the data files of ``results`` (best effort: unreferenced files are harmless)."""
    c = ds.context
    paths = [join_path(c.root, DATA_DIR, name) for r in results for name in r.files]
    try:
        await c.store.delete_many(paths)
    except Exception:  # noqa: BLE001
        pass


async def _compact_once(ds: "DatasetReader", options: CompactionOptions
                        ) -> tuple[CompactionMetrics, CommitResult | None]:
    plan = await plan_compaction_async(ds, options)
    if not plan.tasks:
        return CompactionMetrics(), None
    limit = asyncio.Semaphore(options.num_threads or 2)

    async def run(task: CompactionTask) -> RewriteResult:
        async with limit:
            return await execute_compaction_task_async(ds, task, plan.options)

    results = await asyncio.gather(*(run(t) for t in plan.tasks), return_exceptions=True)
    failed = [r for r in results if isinstance(r, BaseException)]
    done = [r for r in results if not isinstance(r, BaseException)]
    try:
        if failed:
            raise failed[0]
        return await commit_results(ds, done)
    except BaseException:
        await delete_rewritten(ds, done)
        raise


async def compact_files_async(ds: "DatasetReader", options: CompactionOptions,
                              max_retries: int | None = None,
                              on_commit: Callable[["DatasetReader"], Awaitable[None]] | None = None
                              ) -> CompactionMetrics:
    """Compact ``ds`` (re-planned on the latest version when a concurrent commit touched the
    same fragments); returns the metrics (all zero and no commit when nothing needed it).
    ``on_commit`` is given the dataset at the version committed (opened from the manifest
    written: no read)."""
    options = options.validated()
    current = ds.snapshot()
    if max_retries is None:
        max_retries = settings().conflict_retries
    for attempt in range(max_retries + 1):
        try:
            metrics, done = await _compact_once(current, options)
            if done is not None and on_commit is not None:
                await on_commit(open_committed(current, done))
            return metrics
        except RetryableCommitError:
            if attempt >= max_retries:
                raise
            current = await current.latest_async()
    raise AssertionError("unreachable")  # pragma: no cover


class DatasetOptimizer:
    """``ds.optimize``: table maintenance with the reference's API shape."""

    def __init__(self, ds: "DatasetReader",
                 on_commit: Callable[["DatasetReader"], Awaitable[None]] | None = None) -> None:
        self._ds = ds
        self._on_commit = on_commit

    async def compact_files_async(self, **kwargs: Any) -> CompactionMetrics:
        max_retries = kwargs.pop("max_retries", None)
        return await compact_files_async(self._ds, CompactionOptions(**kwargs), max_retries, self._on_commit)

    def compact_files(
        self,
        *,
        target_rows_per_fragment: int | None = None,
        max_rows_per_group: int | None = None,
        max_bytes_per_file: int | None = None,
        materialize_deletions: bool | None = None,
        materialize_deletions_threshold: float | None = None,
        num_threads: int | None = None,
        batch_size: int | None = None,
        defer_index_remap: bool | None = None,
        compaction_mode: str | None = None,
        excluded_fragment_ids: Sequence[int] | None = None,
        max_retries: int | None = None,
    ) -> CompactionMetrics:
        """Merge small fragments into fragments of about ``target_rows_per_fragment`` rows and
        rewrite fragments with more than ``materialize_deletions_threshold`` (fraction) of their
        rows deleted; see :mod:`lancejit.table.write.compaction`.  None means the reference's default;
        ``excluded_fragment_ids`` are never rewritten.  Returns :class:`CompactionMetrics`."""
        from lancejit.io.sync import run_sync

        if defer_index_remap:
            raise NotSupportedError("defer_index_remap (a fragment reuse index) is not supported by lancejit")
        if compaction_mode not in (None, "reencode", "try_binary_copy"):
            raise NotSupportedError(f"compaction_mode {compaction_mode!r} is not supported (lancejit re-encodes)")
        d = CompactionOptions()
        opts = CompactionOptions(
            d.target_rows_per_fragment if target_rows_per_fragment is None else target_rows_per_fragment,
            d.max_rows_per_group if max_rows_per_group is None else max_rows_per_group,
            max_bytes_per_file,
            d.materialize_deletions if materialize_deletions is None else materialize_deletions,
            d.materialize_deletions_threshold if materialize_deletions_threshold is None
            else materialize_deletions_threshold,
            num_threads, batch_size,
            tuple(int(i) for i in excluded_fragment_ids) if excluded_fragment_ids is not None else (),
        )
        return run_sync(compact_files_async(self._ds, opts, max_retries, self._on_commit), store=self._ds.context.store)

    async def optimize_indices_async(self, *, index_names: Sequence[str] | None = None, **kwargs: Any) -> None:
        """Extend the scalar indices (all, or ``index_names``) over fragments they do not cover
        (see :func:`..write.scalar_index.optimize_indices_async`); the dataset moves to the new
        version."""
        from .scalar_index import optimize_indices_async

        new = await optimize_indices_async(self._ds, index_names, **kwargs)
        if self._on_commit is not None and new.version != self._ds.version:
            await self._on_commit(new)

    def optimize_indices(self, *, index_names: Sequence[str] | None = None, **kwargs: Any) -> None:
        """Synchronous :meth:`optimize_indices_async`."""
        from lancejit.io.sync import run_sync

        run_sync(self.optimize_indices_async(index_names=index_names, **kwargs), store=self._ds.store)


__all__ = ["CompactionMetrics", "CompactionOptions", "CompactionPlan", "CompactionTask", "DatasetOptimizer",
           "RewriteResult", "commit_compaction_async", "compact_files_async", "delete_rewritten",
           "execute_compaction_task_async", "file_rows", "plan_bins", "plan_compaction_async"]
