"""Compaction (``ds.optimize.compact_files``): merge small fragments, materialize deletions.

Planning follows the reference (``optimize.rs``): walking the fragments in dataset order, a
fragment is a candidate when more than ``materialize_deletions_threshold`` of its rows are
deleted ("compact itself") or when it has fewer than ``target_rows_per_fragment`` physical rows
("compact with neighbours"); runs of adjacent candidates form bins, a bin holding a single
"with neighbours" fragment is dropped, and bins are split into tasks of at least
``target_rows_per_fragment`` live rows (the remainder joins the last task).  Fragments covered by
an index are left alone: lancejit cannot remap index files (pylance 14 rewrites its indices on
compaction, stable row ids or not).

Each task's live rows are read in order and written to new fragments of at most
``target_rows_per_fragment`` rows.  As the reference does, fragment ids are reserved first by a
``ReserveFragments`` commit, then one ``Rewrite`` commit (read version = the planned version)
replaces each group's old fragments in place.  With stable row ids the rows keep their ids and
created-at / last-updated-at versions (the sequences of the live rows move with them), so
``take_rows`` of ids taken before returns the same rows after.  A concurrent commit touching
the same fragments makes the commit retryable: compaction re-plans on the latest version
(``max_retries`` times), so rows deleted meanwhile never come back.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Sequence

import numpy as np
import pyarrow as pa
from pyroaring import BitMap

from lancejit.core.errors import InvalidInputError, NotSupportedError, RetryableCommitError
from lancejit.core.schema import LanceSchema
from lancejit.pb import table_pb2
from lancejit.core.config import settings

from ..commit import ReserveFragments, Transaction, commit, commit_transaction, load_manifest, read_deleted_offsets
from ..commit.operations import Rewrite, RewriteGroup
from ..commit.rowid_writer import decode_version_runs, encode_row_id_sequence, encode_version_runs
from ..read.fragment import ROWADDR, ROWID
from .data_files import DEFAULT_MAX_BYTES_PER_FILE, FragmentFileWriter, normalize_storage_version

if TYPE_CHECKING:  # pragma: no cover
    from ..read.dataset_reader import DatasetReader

#: Rows gathered from the scan before each write (the writer's per-call cost dominates otherwise).
WRITE_CHUNK_ROWS = 64 * 1024


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
    in the reference, a task never mixes fragments of different index sets (lancejit passes only
    0 and -1 today)."""
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


def pinned_by_indices(index_section: bytes | None, frag_ids: np.ndarray) -> np.ndarray:
    """True for fragments an index covers (or all, when an index's coverage is unknown): their
    rows cannot move, since lancejit cannot remap index files (pylance 14 rewrites its scalar
    indices on compaction even with stable row ids)."""
    n = len(frag_ids)
    if index_section is None:
        return np.zeros(n, dtype=bool)
    section = table_pb2.IndexSection()
    section.ParseFromString(index_section)
    user = [ix for ix in section.indices if not ix.name.startswith("__")]  # system indices pin nothing
    if any(not ix.fragment_bitmap for ix in user):
        return np.ones(n, dtype=bool)
    covered = BitMap()
    for ix in user:
        covered |= BitMap.deserialize(ix.fragment_bitmap)
    return np.isin(np.asarray(frag_ids, dtype=np.int64), np.array(covered.to_array(), dtype=np.int64))


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
class _TaskResult:
    group: RewriteGroup
    metrics: CompactionMetrics
    writer: FragmentFileWriter


async def _rewrite_task(ds: "DatasetReader", lschema: LanceSchema, storage: str, frags: list[table_pb2.DataFragment],
                        options: CompactionOptions) -> _TaskResult:
    c = ds.context
    writer = FragmentFileWriter(
        c.store, c.root, lschema.fields, dict(lschema.metadata), storage,
        max_rows_per_file=options.target_rows_per_fragment,
        max_bytes_per_file=options.max_bytes_per_file or DEFAULT_MAX_BYTES_PER_FILE,
        storage_options=c.storage_options,
    )
    file_schema = writer.file_schema
    stable = ds.has_stable_row_ids
    ids, addrs = [], []
    pending: list[pa.RecordBatch] = []
    pending_rows = 0
    try:
        scanner = ds.scanner(columns=file_schema.names, with_row_id=stable, with_row_address=stable,
                             fragment_ids=[f.id for f in frags], batch_size=options.batch_size)
        async for batch in scanner.batches_async():
            if batch.num_rows == 0:
                continue
            if stable:
                ids.append(batch.column(ROWID).to_numpy())
                addrs.append(batch.column(ROWADDR).to_numpy())
            pending.append(pa.RecordBatch.from_arrays([batch.column(n) for n in file_schema.names],
                                                      schema=file_schema))
            pending_rows += batch.num_rows
            if pending_rows >= WRITE_CHUNK_ROWS:  # small fragments give small batches: write in bulk
                await writer.write(pa.concat_batches(pending))
                pending, pending_rows = [], 0
        if pending:
            await writer.write(pa.concat_batches(pending))
        files = await writer.finish()
    except BaseException:
        await writer.cleanup()
        raise
    new_frags = [table_pb2.DataFragment(physical_rows=wf.rows, files=[writer.data_file(wf)]) for wf in files]
    if stable:
        _carry_row_meta(frags, new_frags, np.concatenate(ids) if ids else np.empty(0, np.uint64),
                        np.concatenate(addrs) if addrs else np.empty(0, np.uint64))
    metrics = CompactionMetrics(
        fragments_removed=len(frags), fragments_added=len(new_frags),
        files_removed=sum(len(f.files) + int(f.HasField("deletion_file")) for f in frags),
        files_added=sum(len(f.files) for f in new_frags),
    )
    return _TaskResult(RewriteGroup(tuple(frags), tuple(new_frags)), metrics, writer)


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


async def _reserve_ids(ds: "DatasetReader", groups: list[RewriteGroup]) -> list[RewriteGroup]:
    """Reserve fragment ids with a ``ReserveFragments`` commit and number the new fragments."""
    c = ds.context
    count = sum(len(g.new_fragments) for g in groups)
    res = await commit_transaction(c.store, c.root, Transaction(ds.version, ReserveFragments(count)))
    next_id = res.manifest.max_fragment_id + 1 - count
    out = []
    for g in groups:
        for f in g.new_fragments:
            f.id = next_id
            next_id += 1
        out.append(g)
    return out


async def _compact_once(ds: "DatasetReader", options: CompactionOptions) -> tuple[CompactionMetrics, int | None]:
    c = ds.context
    lm = await load_manifest(c.store, c.root, ds.version)
    m = lm.manifest
    frags = list(m.fragments)
    if not frags:
        return CompactionMetrics(), None
    ids = np.fromiter((f.id for f in frags), dtype=np.int64, count=len(frags))
    phys = np.fromiter((f.physical_rows for f in frags), dtype=np.int64, count=len(frags))
    excluded = np.isin(ids, np.array(options.excluded_fragment_ids, dtype=np.int64))
    pinned = pinned_by_indices(lm.index_section, ids) | excluded
    keys = np.where(pinned, -1, 0)
    bins = plan_bins(phys, await _deleted_counts(ds, frags), keys, options)
    if not bins:
        return CompactionMetrics(), None
    lschema = LanceSchema.from_pb(m.fields, dict(m.schema_metadata))
    storage = normalize_storage_version(m.data_format.version or "2.0")
    limit = asyncio.Semaphore(options.num_threads or 2)

    async def run(lo: int, hi: int) -> _TaskResult:
        async with limit:
            return await _rewrite_task(ds, lschema, storage, frags[lo:hi], options)

    results = await asyncio.gather(*(run(lo, hi) for lo, hi in bins), return_exceptions=True)
    failed = [r for r in results if isinstance(r, BaseException)]
    done = [r for r in results if not isinstance(r, BaseException)]
    try:
        if failed:
            raise failed[0]
        groups = await _reserve_ids(ds, [r.group for r in done])
        version = await commit(c.store, c.root, Rewrite(tuple(groups)), ds.version)
    except BaseException:
        for r in done:
            await _delete_written(r.writer)
        raise
    total = CompactionMetrics()
    for r in done:
        total = total + r.metrics
    return total, version


async def _delete_written(writer: FragmentFileWriter) -> None:
    paths = [writer.path_of(f.name) for f in writer.files]
    try:
        await writer.store.delete_many(paths)
    except Exception:  # noqa: BLE001 - best effort: unreferenced files are harmless
        pass


async def compact_files_async(ds: "DatasetReader", options: CompactionOptions,
                              max_retries: int | None = None,
                              on_commit: Callable[[int], Awaitable[None]] | None = None) -> CompactionMetrics:
    """Compact ``ds`` (re-planned on the latest version when a concurrent commit touched the
    same fragments); returns the metrics (all zero and no commit when nothing needed it).
    ``on_commit`` is given the version committed."""
    options = options.validated()
    current = ds.snapshot()
    if max_retries is None:
        max_retries = settings().conflict_retries
    for attempt in range(max_retries + 1):
        try:
            metrics, version = await _compact_once(current, options)
            if version is not None and on_commit is not None:
                await on_commit(version)
            return metrics
        except RetryableCommitError:
            if attempt >= max_retries:
                raise
            current = await current.latest_async()
    raise AssertionError("unreachable")  # pragma: no cover


class DatasetOptimizer:
    """``ds.optimize``: table maintenance with the reference's API shape."""

    def __init__(self, ds: "DatasetReader", on_commit: Callable[[int], Awaitable[None]] | None = None) -> None:
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
        return run_sync(compact_files_async(self._ds, opts, max_retries, self._on_commit))


__all__ = ["CompactionMetrics", "CompactionOptions", "DatasetOptimizer", "compact_files_async", "plan_bins"]
