"""Scanning the same columns of many (small) files at once: one plan kernel, one data buffer,
one decode kernel per column for all of them.

A scan of many small fragments used to pay one take plan, one read and one decoder call per
column per file.  Here the files' segment tables (:class:`~lancejit.file.take_plan.TakeTable`,
built once per file and projection, kept by the reader) are concatenated (once per run of
files, cached), one kernel (:func:`lancejit.encoding.kernels.scan.plan_runs`) maps the selected
rows of every file to *runs* of consecutive rows of one segment with a merge walk (rows are
ascending: no search, no sort), files held whole in memory (small data files, see
:mod:`lancejit.table.read.datafile`) are used as they are and the others read with one
``read_ranges`` call each (adjacent segments merged into one range), and each column is decoded
for all files by ONE kernel call (one copy per run) into ONE Arrow array.

Columns qualify when every file has a take index for them (one leaf, no repetition; a nullable
item's def levels out-of-line bit-packed) of a value kind decoded here (fixed width, bit-packed,
plain variable or FSST); otherwise :func:`file_scan` returns None and the caller reads file by
file.  Runs of files whose columns differ in kind or type are decoded one run after the other.
"""

from __future__ import annotations

import asyncio
import operator
import os
import threading
from dataclasses import dataclass, replace
from typing import Any, Sequence

import numpy as np
import pyarrow as pa

from lancejit.core.config import settings
from lancejit.core.cores import idle_core
from lancejit.core.errors import CorruptFileError, RowIndexError
from lancejit.file.take_plan import TakeTable, _as_ranges

#: Value kinds decoded here (dictionary pages keep the per-file path).
_INT32_MAX = (1 << 31) - 1
_KINDS = frozenset({"fixed", "bitpacked", "variable", "fsst"})
_NO_ROWS = np.zeros(0, dtype=np.int64)


@dataclass(frozen=True, slots=True)
class FileScan:
    """What scanning some columns of one opened file needs, made once per file and projection
    (:func:`file_scan`): the reader, the columns' take table, the encodings the file's columns
    share with other files decoded together (``sig``), the file's bytes when its range reader
    holds them all (small data files, see :mod:`lancejit.table.read.datafile`): ``whole`` when the
    columns are most of the file (the buffer is used as it is), else ``mem`` (the columns'
    ranges are sliced from it), and its rows."""

    reader: Any
    table: TakeTable
    #: Files decoded together share it (their columns' encodings and types, numbered).
    sig: int
    whole: memoryview | None
    num_rows: int
    mem: memoryview | None = None
    #: The file as a source of :func:`lancejit.io.multi_read.read_files` (None: a range reader
    #: it does not know, read with ``read_ranges``).
    source: Any = None


async def file_scan(reader: Any, columns: tuple[str, ...]) -> FileScan | None:
    """The :class:`FileScan` of top-level ``columns`` (file field names) of ``reader`` (an
    ``AsyncLanceFileReader``), or None when they do not qualify (see the module docstring)."""
    if not columns:
        return None
    table = await reader.take_table(columns)
    if table is None:
        return None
    parts = []
    for ix in table.columns:
        if ix.kind not in _KINDS:
            return None
        parts.append((ix.kind, ix.width, str(ix.arrow_type), ix.list_size, ix.large_offsets))
    sig = _SIGNATURES.setdefault(tuple(parts), len(_SIGNATURES))
    rr = reader.range_reader
    source = None
    if hasattr(rr, "store") and hasattr(rr, "store_path"):
        from lancejit.io.multi_read import FileSource

        source = FileSource.of(rr)
    whole = getattr(rr, "whole", None)
    if whole is not None:
        nbytes = int(table.seg_len.sum())  # (full-zip pages count one row: read as ranges then)
        if nbytes * 2 < len(whole):  # a few of the file's columns: read their ranges only
            return FileScan(reader, table, sig, None, reader.num_rows, whole, source)
    return FileScan(reader, table, sig, whole, reader.num_rows, source=source)


@dataclass(frozen=True, slots=True)
class _Layout:
    """The concatenated segment tables of a run of files (cached per run of take tables)."""

    tables: tuple[TakeTable, ...]
    seg: tuple[np.ndarray, ...]  # key, b0, stride, len, szw, count, def
    seg_base: np.ndarray
    blk_g0: np.ndarray
    blk_g1: np.ndarray
    blk_kbase: np.ndarray
    any_stride: bool
    indexes: tuple[Any, ...]


#: Runs of files whose concatenated segment tables are kept (repeated scans of one version).
MAX_LAYOUTS = 64
_LAYOUTS: dict[tuple[int, ...], _Layout] = {}


_TABLE = operator.attrgetter("table")
#: Column encodings and types of a file -> its ``FileScan.sig``.
_SIGNATURES: dict[tuple, int] = {}


def _layout(scans: Sequence[FileScan]) -> _Layout:
    tables = tuple(map(_TABLE, scans))
    key = tuple(map(id, tables))
    got = _LAYOUTS.get(key)
    if got is not None:
        return got
    nfiles, ncols = len(tables), len(tables[0].columns)
    names = ("seg_key", "seg_b0", "seg_stride", "seg_len", "seg_szw", "seg_count", "seg_def")
    if nfiles == 1:
        seg = tuple(getattr(tables[0], n) for n in names)
    else:
        seg = tuple(np.concatenate([getattr(t, n) for t in tables]) for n in names)
    seg_n = np.fromiter((t.seg_key.size for t in tables), dtype=np.int64, count=nfiles)
    seg_base = np.zeros(nfiles + 1, dtype=np.int64)
    np.cumsum(seg_n, out=seg_base[1:])
    firsts = np.fromiter((g for t in tables for g in t.seg0), dtype=np.int64, count=nfiles * ncols)
    blk_g0 = firsts.reshape(nfiles, ncols) + seg_base[:-1, None]
    blk_g1 = np.empty_like(blk_g0)
    blk_g1[:, :-1] = blk_g0[:, 1:]
    blk_g1[:, -1] = seg_base[1:]
    kbase = np.concatenate([t.col_base for t in tables]) if nfiles > 1 else tables[0].col_base
    indexes = tuple(_group_index(tables, j, seg_base) for j in range(ncols))
    got = _Layout(tables, seg, seg_base, blk_g0.reshape(-1), blk_g1.reshape(-1),
                  np.ascontiguousarray(kbase, dtype=np.int64), bool((seg[2] > 0).any()), indexes)
    if len(_LAYOUTS) >= MAX_LAYOUTS:
        _LAYOUTS.pop(next(iter(_LAYOUTS)))
    _LAYOUTS[key] = got
    return got


async def read_scans(scans: Sequence[FileScan], lo: Sequence[int], hi: Sequence[int],
                     rows: Sequence[np.ndarray | None]) -> list[pa.Array]:
    """The columns of every file ``scans[i]`` at rows ``[lo[i], hi[i])`` (half-open; or at the
    sorted unique offsets ``rows[i]`` inside it when not None), concatenated in order: one Arrow
    array per column.  Runs of files sharing their encodings are decoded together (one plan
    kernel and one decode kernel per column each)."""
    sigs = [s.sig for s in scans]
    cuts = [0] + [i for i in range(1, len(sigs)) if sigs[i] != sigs[i - 1]] + [len(sigs)]
    if len(cuts) == 2:
        return await _read(scans, lo, hi, rows)
    runs = [await _read(scans[a:b], lo[a:b], hi[a:b], rows[a:b]) for a, b in zip(cuts, cuts[1:])]
    return [pa.concat_arrays([r[j] for r in runs]) for j in range(len(runs[0]))]


async def _read(scans: Sequence[FileScan], lo: Sequence[int], hi: Sequence[int],
                sel: Sequence[np.ndarray | None]) -> list[pa.Array]:
    from lancejit.encoding.kernels.scan import plan_runs

    lay = _layout(scans)
    ncols = len(lay.indexes)
    nfiles = len(scans)
    los = np.array(lo, dtype=np.int64)
    his = np.array(hi, dtype=np.int64)
    bad = (los < 0) | (his > np.array([s.num_rows for s in scans], dtype=np.int64)) | (his < los)
    if bool(bad.any()):
        f = int(np.flatnonzero(bad)[0])
        raise RowIndexError(f"rows [{lo[f]}, {hi[f]}) are outside the file's {scans[f].num_rows} rows")
    picked = not all([r is None for r in sel])
    counts = his - los
    if picked:
        counts = np.array([(b - a) if r is None else len(r) for a, b, r in zip(lo, hi, sel)], dtype=np.int64)
    rows_off = np.zeros(nfiles + 1, dtype=np.int64)
    np.cumsum(counts, out=rows_off[1:])
    k_all = int(rows_off[-1])
    # every selected row: ranges expanded at once, explicit selections copied in (a plain scan
    # of row ranges builds none: the kernel walks each file's range)
    rows = _NO_ROWS
    if picked:
        rows = np.arange(k_all, dtype=np.int64) + np.repeat(los - rows_off[:-1], counts)
        for f, r in enumerate(sel):
            if r is not None and len(r):
                if int(r[0]) < lo[f] or int(r[-1]) >= hi[f]:
                    raise RowIndexError(f"rows outside [{lo[f]}, {hi[f]}) selected")
                rows[rows_off[f]:rows_off[f + 1]] = r
    # (per call: a take table, cached with its file, may serve a reader holding the file whole
    # and another reading ranges)
    wsize = np.array([0 if s.whole is None else len(s.whole) for s in scans], dtype=np.int64)
    whole, wbase, w_at = wsize > 0, np.cumsum(wsize) - wsize, int(wsize.sum())
    wholes = [s.whole for s in scans if s.whole is not None]
    seg_key, seg_b0, seg_stride, seg_len, seg_szw, seg_count, seg_def = lay.seg
    items = ncols * k_all
    partial = items - ncols * int(counts[whole].sum())
    cap = partial if lay.any_stride else min(partial, int(seg_key.size))
    # runs: at most one per item (untouched pages of np.empty cost nothing)
    work = np.empty(4 * items + 3 * cap + ncols, dtype=np.int64)
    run_seg, run_in, run_len, run_pos = (work[i * items:(i + 1) * items] for i in range(4))
    ranges = work[4 * items:4 * items + 2 * cap].reshape(cap, 2)
    range_file = work[4 * items + 2 * cap:4 * items + 3 * cap]
    nrun = work[4 * items + 3 * cap:]
    nr = plan_runs(seg_key, seg_b0, seg_stride, seg_len, lay.blk_g0, lay.blk_g1, lay.blk_kbase, rows, rows_off,
                   los, ncols, whole, wbase, w_at, run_seg, run_in, run_len, run_pos, nrun, ranges, range_file)
    if nr < 0:
        raise CorruptFileError("a column's segments do not start at row 0", path=scans[0].reader.uri)
    data = await _gather_bytes(scans, wholes, wsize, w_at, ranges, range_file, nr, int(lo[0]) if len(lo) else 0)
    data.flags.writeable = False
    jobs = []
    for j in range(ncols):
        a = j * k_all
        b = a + int(nrun[j])
        runs = (run_seg[a:b], run_in[a:b], run_len[a:b], run_pos[a:b])
        jobs.append((lay.indexes[j], data, runs, k_all, seg_szw, seg_len, seg_count, seg_def))
    knobs = settings()
    if k_all < knobs.decode_offload_rows or k_all < knobs.decode_offload_file_rows * nfiles or not _BUSY.take():
        return [_decode_runs(*job) for job in jobs]
    # the group's columns decode in a worker thread (the kernels release the GIL) while the
    # event loop plans and reads the next group; when every worker is busy, this thread decodes
    # the group itself (a queued group would wait while this thread idles: one busy thread more
    # than there are cores only slows the event loop's planning down)
    try:
        job = _decode_pool().submit(_decode_all, jobs)
    except BaseException:
        _BUSY.give()
        raise
    return await asyncio.wrap_future(job)




def offload_threads() -> int:
    """Threads decoding groups (one job per group: its columns one after the other); the thread
    that reads decodes too (see :func:`_read`).  The ``decode_threads`` knob: -1 = one per spare
    core (at most 2), 0 = every group in the reading thread."""
    n = settings().decode_threads
    return max(1, min(2, (os.cpu_count() or 2) - 1)) if n < 0 else n

#: Workers are used only while another core is idle (:func:`lancejit.core.cores.idle_core`).
_POOL: Any = None


class _Slots:
    """Decode workers not busy (taken without waiting: :meth:`take` is False when none is, or
    when no core is idle)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.busy = 0

    def take(self) -> bool:
        if not idle_core():
            return False
        with self._lock:
            if self.busy >= offload_threads():
                return False
            self.busy += 1
            return True

    def give(self) -> None:
        with self._lock:
            self.busy -= 1


_BUSY = _Slots()


def _decode_pool() -> Any:
    """The decode threads (made on first use, again in a forked child)."""
    global _POOL
    if _POOL is None:
        from concurrent.futures import ThreadPoolExecutor

        _POOL = ThreadPoolExecutor(max(1, offload_threads()), thread_name_prefix="lancejit-decode")
    return _POOL


def _forget_pool() -> None:  # in a forked child: the parent's threads (and their jobs) are not there
    global _POOL, _BUSY
    _POOL = None
    _BUSY = _Slots()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool)


def _decode_all(jobs: list) -> list[pa.Array]:
    """A group's columns, in a decode worker (its slot given back as soon as it is done, not
    when the event loop next resumes the group)."""
    try:
        return [_decode_runs(*job) for job in jobs]
    finally:
        _BUSY.give()


async def _gather_bytes(scans: Sequence[FileScan], wholes: list, wsize: np.ndarray, w_at: int,
                        ranges: np.ndarray, range_file: np.ndarray, nr: int, priority: int) -> np.ndarray:
    """ONE buffer holding the whole files (in order, from ``wbase``) then the ``nr`` byte
    ranges planned (``ranges``, half-open, file-major, of files ``range_file``): read with one
    :func:`lancejit.io.multi_read.read_files` call into place (local files: one inline
    ``preadv`` loop; files held in memory copied), no per-file read call and no join copy."""
    sources = [s.source for s in scans]
    if not nr or any(src is None for src in sources) or all(
            s.whole is not None or s.mem is not None for s in scans):
        # files held in memory (joined: cheaper than read_files' copies), or a range reader
        # the multi-file read does not know
        return await _gather_joined(scans, wholes, ranges, range_file, nr, priority)
    from lancejit.io.multi_read import read_files

    wf = np.flatnonzero(wsize)
    reads = np.empty((wf.size + nr, 4), dtype=np.int64)
    reads[:wf.size, 0] = wf
    reads[:wf.size, 1] = 0
    reads[:wf.size, 2] = wsize[wf]
    reads[:wf.size, 3] = np.cumsum(wsize[wf]) - wsize[wf]
    if nr:
        part = reads[wf.size:]
        part[:, 0] = range_file[:nr]
        part[:, 1:3] = ranges[:nr]
        lens = ranges[:nr, 1] - ranges[:nr, 0]
        part[:, 3] = np.cumsum(lens) - lens + w_at
        total = w_at + int(lens.sum())
    else:
        total = w_at
    # (files held in memory, "whole" or "mem", are copied from there: their source's whole)
    return await read_files(sources, reads, total, priority=priority)


async def _gather_joined(scans: Sequence[FileScan], wholes: list, ranges: np.ndarray, range_file: np.ndarray,
                         nr: int, priority: int) -> np.ndarray:
    """:func:`_gather_bytes` for range readers :func:`read_files` does not take: one
    ``read_ranges`` call per file, the pieces joined."""
    bufs = list(wholes)
    if nr:
        nfiles = len(scans)
        cuts = np.searchsorted(range_file[:nr], np.arange(nfiles + 1)).tolist()
        todo = [(f, cuts[f], cuts[f + 1]) for f in range(nfiles) if cuts[f + 1] > cuts[f]]
        mems = [s.mem for s in scans]
        if all(mems[f] is not None for f, _, _ in todo):  # small files held in memory: sliced
            part = ranges[:nr]
            bufs += [mems[f][a:b] for f, a, b in zip(range_file[:nr].tolist(), part[:, 0].tolist(),
                                                      part[:, 1].tolist())]
        else:
            async def one(f: int, a: int, b: int) -> list:
                src = scans[f].reader.range_reader
                return await src.read_ranges(_as_ranges(src, ranges[a:b]), priority=priority)

            got = [await one(*todo[0])] if len(todo) == 1 else await asyncio.gather(*(one(*x) for x in todo))
            for g in got:
                bufs.extend(g)
    return np.frombuffer(bufs[0] if len(bufs) == 1 else b"".join(bufs), dtype=np.uint8)


def _decode_runs(ix: Any, data: np.ndarray, runs: tuple[np.ndarray, ...], k: int, seg_szw: np.ndarray,
                 seg_len: np.ndarray, seg_count: np.ndarray, seg_def: np.ndarray) -> pa.Array:
    """The ``k`` values of one column's runs (see :func:`~lancejit.encoding.kernels.scan.plan_runs`)
    as one Arrow array: one copy per run for fixed-width, bit-packed and plain variable-width
    values; FSST values through the take kernels (runs expanded to items)."""
    from lancejit.encoding.kernels import scan as ks

    t = ix.arrow_type
    validity = None
    nulls = 0
    if ix.nullable:
        words = np.empty(2048, dtype=np.uint16)  # staging block, unpacked block
        valid = np.empty(k, dtype=np.uint8)
        nulls = ks.runs_valid(data, *runs, seg_szw, seg_len, seg_count, seg_def, words[:1024],
                              words[:1024].view(np.uint8), words[1024:], valid)
        if nulls < 0:
            _corrupt(ix, "malformed definition levels")
        if nulls:
            validity = pa.py_buffer(np.packbits(valid, bitorder="little"))
    if ix.kind == "fixed":
        w = ix.width
        out = np.empty(k * w, dtype=np.uint8)
        if ks.runs_fixed(data, *runs, seg_szw, seg_len, seg_def, w, out):
            _corrupt(ix, "a chunk shorter than its values")
        if ix.list_size:
            child = pa.Array.from_buffers(t.value_type, k * ix.list_size, [None, pa.py_buffer(out)])
            return pa.Array.from_buffers(t, k, [validity], children=[child], null_count=nulls)
        return pa.Array.from_buffers(t, k, [validity, pa.py_buffer(out)], null_count=nulls)
    if ix.kind == "bitpacked":
        word = np.dtype(f"u{ix.width // 8}")
        buf = np.empty(2049 + k, dtype=word)  # staging words, unpacked chunk, output
        tmpw = buf[:1025]
        err = ks.runs_bitpacked(data, *runs, seg_szw, seg_len, seg_count, seg_def, tmpw, tmpw.view(np.uint8),
                                buf[1025:2049], buf[2049:])
        if err:
            _corrupt(ix, "a malformed bit-packed chunk")
        return pa.Array.from_buffers(t, k, [validity, pa.py_buffer(buf[2049:])], null_count=nulls)
    if ix.kind == "fsst":  # decoded straight from the runs (offsets checked while decoding)
        nbytes = ks.runs_fsst_bound(data, *runs, seg_szw, seg_len, seg_count, seg_def, ix.width)
        if nbytes < 0:
            _corrupt(ix, "value offsets out of order or out of bounds")
        tabs = ix.fsst
        values = np.empty(8 * nbytes + 8, dtype=np.uint8)
        offsets = np.empty(k + 1, dtype=np.uint64)
        nbytes, bad = ks.runs_fsst(data, *runs, seg_szw, seg_len, seg_def, ix.width, tabs.seg_tab, tabs.words,
                                   tabs.lens, tabs.enabled, offsets, values)
        if nbytes < 0:
            _corrupt(ix, "value offsets out of order or out of bounds")
        if bad >= 0:
            _corrupt(ix, f"FSST value {bad} uses an unknown code or ends in an escape")
        offsets = offsets.view(np.int64)
    else:
        offsets = np.empty(k + 1, dtype=np.int64)
        nbytes = ks.runs_offsets(data, *runs, seg_szw, seg_len, seg_count, seg_def, ix.width, offsets)
        if nbytes < 0:
            _corrupt(ix, "value offsets out of order or out of bounds")
        values = np.empty(nbytes, dtype=np.uint8)
        ks.runs_copy(data, *runs, seg_szw, seg_len, seg_def, ix.width, offsets, values)
    if not ix.large_offsets:
        if nbytes > _INT32_MAX:
            raise CorruptFileError("scanned values exceed 2 GiB for a 32-bit-offset type", path=ix.path)
        offsets = offsets.astype(np.int32)
    return pa.Array.from_buffers(t, k, [validity, pa.py_buffer(offsets), pa.py_buffer(values)], null_count=nulls)


def _corrupt(ix: Any, what: str) -> None:
    raise CorruptFileError(f"column {ix.column}: {what}", path=ix.path)


def _group_index(tables: Sequence[TakeTable], j: int, seg_base: np.ndarray) -> Any:
    """Column ``j``'s take index standing for all files (FSST: every file's symbol tables,
    indexed by global segment)."""
    ix = tables[0].columns[j]
    if not ix.nullable and any(t.columns[j].nullable for t in tables):
        ix = replace(ix, nullable=True)  # files with def levels and files without
    if ix.kind != "fsst":
        return ix
    from lancejit.encoding.v21.take_index import FsstTables

    words, lens, enabled = [], [], []
    seg_tab = np.zeros(int(seg_base[-1]), dtype=np.int64)
    ntab = 0
    for f, t in enumerate(tables):
        c = t.columns[j]
        fs = c.fsst
        g0 = int(seg_base[f]) + t.seg0[j]
        seg_tab[g0:g0 + fs.seg_tab.size] = fs.seg_tab + ntab
        words.append(fs.words)
        lens.append(fs.lens)
        enabled.append(fs.enabled)
        ntab += fs.words.shape[0]
    if len(tables) > 1:
        tabs = FsstTables(np.concatenate(words), np.concatenate(lens), np.concatenate(enabled), seg_tab)
    else:
        tabs = FsstTables(words[0], lens[0], enabled[0], seg_tab)
    return replace(ix, fsst=tabs)


__all__ = ["FileScan", "file_scan", "read_scans"]
