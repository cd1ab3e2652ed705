"""Reading the same columns of many consecutive scan units (small fragments) at once.

A *member* is a unit ``(fragment reader, lo, hi)``: a half-open physical row range of one
fragment.  :func:`read_members` reads top-level fields at the live rows of every member and
returns ONE Arrow array per field for all of them, in member order, through
:func:`lancejit.file.multi_decode.read_files` (one plan kernel, one data buffer, one decode
kernel per column for all the members' files): the Python work per member is a few dictionary
lookups, not a read and a decode per column.  Members whose fields are spread over several data
files, or files / columns the multi-file decoder does not take, make it return None (callers
read unit by unit then).
"""

from __future__ import annotations

import asyncio
import weakref
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np
import pyarrow as pa

from ..meta.context import DatasetContext
from .datafile import collector_paused
from ..meta.fields import TopField
from lancejit.file.multi_decode import file_scan, read_scans
from lancejit.io.local import LocalStore

from .fragment import FragmentReader, unit_live_offsets as _live

if TYPE_CHECKING:  # pragma: no cover
    from ..filter.compile import CompiledFilter

Member = tuple[FragmentReader, int, int]

#: Per fragment reader (kept with the version index) and column set: ``(FileScan, handle)``
#: of the data file holding all the columns, or None when they do not qualify.
_SCANS: "weakref.WeakKeyDictionary[FragmentReader, dict]" = weakref.WeakKeyDictionary()


_UNKNOWN = object()



def _known_scan(frag: FragmentReader, key: tuple[str, ...]) -> Any:
    """The cached answer of :func:`_file_scan` (``_UNKNOWN`` when not made yet)."""
    per = _SCANS.get(frag)
    return _UNKNOWN if per is None else per.get(key, _UNKNOWN)


async def _file_scan(frag: FragmentReader, tops: Sequence[TopField]) -> Any:
    """The ``FileScan`` of the data file of ``frag`` holding all of ``tops`` (opened on first
    use), or None when they do not qualify; kept per fragment reader and column set."""
    return (await _file_scans(frag.ctx, tops, [frag]))[0]


#: ``(each data file's field ids, column names)`` -> the position of the one data file that
#: holds every column, or -1 (the same for every fragment written alike: decided once, not per
#: fragment).
_HOLDER: dict[tuple, int] = {}


def _one_file(frag: FragmentReader, tops: Sequence[TopField], key: tuple[str, ...]) -> Any:
    """The data file of ``frag`` that holds every field of ``tops`` (each field's file chosen
    as ``FragmentReader.file_for`` does), or None when they are spread over several files or
    one is missing."""
    files = frag.fragment.files
    k = (tuple(df.fields for df in files), key) if len(files) != 1 else (files[0].fields, key)
    at = _HOLDER.get(k)
    if at is None:
        at = _holder(files, tops)
        if len(_HOLDER) >= 1024:
            _HOLDER.clear()
        _HOLDER[k] = at
    return files[at] if at >= 0 else None


def _holder(files: Sequence[Any], tops: Sequence[TopField]) -> int:
    sets = [set(df.fields) for df in files]
    at = -1
    for t in tops:
        i = next((i for i, f in enumerate(sets) if t.id in f), -1)
        if i < 0:
            i = next((i for i, f in enumerate(sets) if not t.ids.isdisjoint(f)), -1)
        if i < 0 or (at >= 0 and i != at):
            return -1
        at = i
    return at


async def _file_scans(ctx: DatasetContext, tops: Sequence[TopField], frags: Sequence[FragmentReader]) -> list[Any]:
    """:func:`_file_scan` of several fragments: their data files not opened yet opened together
    (:func:`.datafile.open_data_files`: one batched tail read), the take tables of those files
    built with one read of all their chunk metadata words (:func:`_take_tables`), each file's
    scan made once; kept per fragment reader and column set."""
    key = tuple(t.name for t in tops)
    schema = ctx.schema
    types = tuple(schema.field(t.name).type for t in tops)
    out: list[Any] = [None] * len(frags)
    todo = []
    for i, frag in enumerate(frags):
        per = _SCANS.get(frag)
        if per is None:
            per = _SCANS[frag] = {}
        if key in per:
            out[i] = per[key]
            continue
        df = _one_file(frag, tops, key)
        if df is None:
            per[key] = None
        else:
            todo.append((i, per, df, frag))
    if not todo:
        return out
    # the collector policy of batched opens, shared with the take (datafile.collector_paused)
    with collector_paused(ctx, len(todo)):
        await _open_scans(ctx, tops, key, types, todo, out)
    return out


async def _open_scans(ctx: DatasetContext, tops: Sequence[TopField], key: tuple[str, ...], types: tuple,
                      todo: list, out: list) -> None:
    """Open ``todo``'s data files (``(index in out, per-fragment cache, data file, fragment
    reader)``) and put each one's ``FileScan`` (or None) in ``out`` and in its fragment's cache;
    a data file holding fewer rows than its fragment records is refused as the per-fragment
    read refuses it."""
    from lancejit.core.errors import LanceJitError

    from ..meta.context import with_context
    from .datafile import open_data_files

    handles = await open_data_files(ctx, [df for _, _, df, _ in todo])
    for (_, _, df, frag), handle in zip(todo, handles):
        frag.check_file_rows(df, handle.num_rows)
    names = [handle._columns(tops) for handle in handles]
    if len(todo) > 1:
        await _take_tables([(h, u) for h, (n, u) in zip(handles, names) if len(n) == len(u)])
    for (i, per, _, _), handle, (names_i, unique) in zip(todo, handles, names):
        got = None
        if len(unique) == len(names_i):
            try:
                scan = await file_scan(handle.reader, tuple(names_i))  # (its table kept by the reader)
            except LanceJitError as exc:
                raise with_context(exc, ctx.describe_where(handle.store_path, handle.store)) from exc
            if scan is not None and all(ix.arrow_type == t for ix, t in zip(scan.table.columns, types)):
                got = scan
        out[i] = per[key] = got


async def _take_tables(files: Sequence[tuple[Any, list[str]]]) -> None:
    """Build the take tables (kept by each file's reader) of ``(handle, file column names)``
    of files not read yet from ONE read of all their chunk metadata words
    (``reader.take_table_request`` / ``take_table_from``, :func:`~lancejit.file.take_plan.read_many`).
    Files needing more, or whose words fail a check, are left to ``reader.take_table``
    (through :func:`file_scan`, which reports damage)."""
    from lancejit.core.errors import LanceJitError
    from lancejit.file.take_plan import read_many

    wait = []
    for handle, cols in files:
        try:
            done, req = handle.reader.take_table_request(cols)
        except LanceJitError:
            continue  # reported with the file named by file_scan
        if not done and req is not None and req.ranges:
            wait.append((handle.reader, req, cols))
    if wait:
        bufs = await read_many([r.range_reader for r, _, _ in wait], [q.ranges for _, q, _ in wait])
        for (reader, req, cols), b in zip(wait, bufs):
            reader.take_table_from(cols, req, b)


async def read_members(
    ctx: DatasetContext, tops: Sequence[TopField], members: Sequence[Member],
    lives: Sequence[np.ndarray | None],
) -> list[pa.Array] | None:
    """Fields ``tops`` at the live rows of every member (``lives[i]``: member ``i``'s live
    physical offsets, None = all of ``[lo, hi)``), concatenated in member order; None when the
    members do not qualify (nothing was read then)."""
    if not tops or not members:
        return None
    key = tuple(t.name for t in tops)
    scans = [_known_scan(frag, key) for frag, _, _ in members]
    missing = [i for i, s in enumerate(scans) if s is _UNKNOWN]
    if not missing:
        return await _read_known(ctx, scans, members, lives)
    # files not opened yet: opened together; on local disk their descriptors (and tails) are
    # kept from the open to the end of the read (each file opened once, not twice)
    held = ctx.store if isinstance(ctx.store, LocalStore) else None
    if held is not None:
        held.hold_files()
    try:
        got = await _batched_scans(ctx, tops, key, [members[i][0] for i in missing])
        for i, s in zip(missing, got):
            scans[i] = s
        return await _read_known(ctx, scans, members, lives)
    finally:
        if held is not None:
            held.release_files()


class _OpenBatch:
    """Fragments whose files groups started in one event-loop turn open together."""

    __slots__ = ("frags", "done")

    def __init__(self) -> None:
        self.frags: dict[FragmentReader, None] = {}
        self.done: asyncio.Future = asyncio.get_running_loop().create_future()


#: Open batches being gathered, by (event loop, context, column set): see :func:`_batched_scans`.
_BATCHES: dict[tuple[int, int, tuple[str, ...]], _OpenBatch] = {}


async def _batched_scans(ctx: DatasetContext, tops: Sequence[TopField], key: tuple[str, ...],
                         frags: list[FragmentReader]) -> list[Any]:
    """:func:`_file_scans` of ``frags``, opened together with those of every group of the scan
    started in the same event-loop turn (a cold scan's first groups): the files open on the
    loop thread before any group hands decoding to the worker threads.  (Opening a file
    releases the GIL; while a worker runs Python between kernels, getting it back costs up
    to the 5 ms switch interval, a noticeable share of a cold scan of a few small files.)"""
    bkey = (id(asyncio.get_running_loop()), id(ctx), key)
    batch = _BATCHES.get(bkey)
    if batch is not None:  # the group that started the batch opens ours with its own
        batch.frags.update(dict.fromkeys(frags))
        got = await asyncio.shield(batch.done)
        return [got[f] for f in frags]
    batch = _BATCHES[bkey] = _OpenBatch()
    batch.frags.update(dict.fromkeys(frags))
    try:
        await asyncio.sleep(0)  # the other groups started with this one add theirs
    finally:
        del _BATCHES[bkey]
    every = list(batch.frags)
    try:
        got = dict(zip(every, await _file_scans(ctx, tops, every)))
    except BaseException as exc:
        if isinstance(exc, asyncio.CancelledError):
            batch.done.cancel()
        else:
            batch.done.set_exception(exc)
            batch.done.exception()  # (retrieved: waiting groups, if any, raise it too)
        raise
    batch.done.set_result(got)
    return [got[f] for f in frags]


async def member_fields(ctx: DatasetContext, tops: Sequence[TopField], frag: FragmentReader) -> list[bool]:
    """Per field of ``tops``, whether :func:`read_members` reads it from ``frag`` (asked field by
    field: a field it does not take leaves the others to it; kept like the scans)."""
    got = [await _file_scan(frag, (t,)) for t in tops] if any(
        _known_scan(frag, (t.name,)) is _UNKNOWN for t in tops) else [_known_scan(frag, (t.name,)) for t in tops]
    return [g is not None for g in got]


async def _read_known(ctx: DatasetContext, scans: list[Any], members: Sequence[Member],
                      lives: Sequence[np.ndarray | None]) -> list[pa.Array] | None:
    for scan, (frag, _, hi) in zip(scans, members):
        if scan is None or hi > frag.physical_rows:
            return None
    with ctx.errors():
        return await read_scans(scans, [m[1] for m in members], [m[2] for m in members], lives)


async def member_lives(members: Sequence[Member]) -> list[np.ndarray | None]:
    """Live physical offsets (int64) of every member's ``[lo, hi)``, None when all are live."""

    return [None if frag.fragment.deletion_file is None else await _live(frag, lo, hi)
            for frag, lo, hi in members]


async def evaluate_members(
    ctx: DatasetContext, compiled: "CompiledFilter", members: Sequence[Member],
) -> tuple[list[TopField], list[np.ndarray | None], list[Any], np.ndarray, np.ndarray] | None:
    """The filter's columns read for the live rows of every member at once and evaluated ONCE:
    ``(the filter's top-level fields, lives, their arrays (one per field, every member's live rows
    back to back), positions of the matching rows among all members' live rows (int64,
    ascending), bounds: member i's live rows are [bounds[i], bounds[i + 1]))``; None when the
    members do not qualify for :func:`read_members` (only deletion vectors were read then)."""
    ftops = [t for t in ctx.top_fields if t.name in compiled.columns]
    if not ftops:
        return None
    lives = await member_lives(members)
    arrays = await read_members(ctx, ftops, members, lives)
    if arrays is None:
        return None
    bounds = np.zeros(len(members) + 1, dtype=np.int64)
    np.cumsum([(hi - lo) if live is None else len(live) for (_, lo, hi), live in zip(members, lives)],
              out=bounds[1:])
    schema = pa.schema([ctx.schema.field(t.name) for t in ftops])
    from ..filter.compile import filter_positions  # sqlglot loads with the first filter

    matches = filter_positions(compiled, pa.Table.from_arrays(arrays, schema=schema), int(bounds[-1]))
    return ftops, lives, arrays, matches, bounds


async def filter_members(
    ctx: DatasetContext, compiled: "CompiledFilter", members: Sequence[Member],
) -> tuple[list[np.ndarray | None], np.ndarray, np.ndarray] | None:
    """:func:`evaluate_members` without the filter columns' arrays: ``(lives, matches, bounds)``."""
    got = await evaluate_members(ctx, compiled, members)
    if got is None:
        return None
    _, lives, _, matches, bounds = got
    return lives, matches, bounds


__all__ = ["Member", "evaluate_members", "filter_members", "member_fields", "member_lives", "read_members"]
