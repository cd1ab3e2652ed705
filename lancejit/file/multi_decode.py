"""Scanning the same columns of many (small) files at once: one plan kernel, one data buffer,
one decode kernel per column for all of them.

A scan of many small fragments used to pay one take plan, one read and one decoder call per
column per file.  Here the files' segment tables (:class:`~lancejit.file.take_plan.TakeTable`,
built once per file and projection, kept by the reader) are concatenated, one kernel
(:func:`lancejit.encoding.kernels.scan.plan_scan`) maps every selected row of every file to its
segment with a merge walk (rows are ascending: no search, no sort), files held whole in memory
(small data files, see :mod:`lancejit.table.datafile`) are used as they are and the others read
with one ``read_ranges`` call each (adjacent segments merged into one range), and each column
is decoded for all files by ONE call of the take decode kernels into ONE Arrow array.

Columns qualify when every file has a take index for them of one value kind (fixed width,
bit-packed, plain variable or FSST), with the same Arrow type, and stores no def levels;
otherwise :func:`file_scan` returns None and the caller reads file by file.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, replace
from typing import Any, Sequence

import numpy as np
import pyarrow as pa

from lancejit.core.errors import CorruptFileError, RowIndexError
from lancejit.file.take_plan import TakeTable, _as_ranges

#: Value kinds decoded here (dictionary pages keep the per-file path).
_INT32_MAX = (1 << 31) - 1
_KINDS = frozenset({"fixed", "bitpacked", "variable", "fsst"})


@dataclass(frozen=True, slots=True)
class FileScan:
    """What scanning some columns of one opened file needs, made once per file and projection
    (:func:`file_scan`): the reader, the columns' take table, the encodings the file's columns
    share with other files decoded together (``sig``), the file's bytes when its range reader
    holds them all (small data files, see :mod:`lancejit.table.datafile`) and its rows."""

    reader: Any
    table: TakeTable
    sig: tuple
    whole: memoryview | None
    num_rows: int


async def file_scan(reader: Any, columns: tuple[str, ...]) -> FileScan | None:
    """The :class:`FileScan` of top-level ``columns`` (file field names) of ``reader`` (an
    ``AsyncLanceFileReader``), or None when they do not qualify (see the module docstring)."""
    if not columns:
        return None
    table = await reader.take_table(columns)
    if table is None:
        return None
    sig = []
    for ix in table.columns:
        if ix.kind not in _KINDS or ix.nullable:
            return None
        sig.append((ix.kind, ix.width, ix.arrow_type, ix.list_size, ix.large_offsets))
    whole = getattr(reader.range_reader, "whole", None)
    return FileScan(reader, table, tuple(sig), whole, reader.num_rows)


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


def _layout(scans: Sequence[FileScan]) -> _Layout:
    tables = tuple(s.table for s in scans)
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
    from lancejit.encoding.kernels.scan import plan_scan

    lay = _layout(scans)
    ncols = len(lay.indexes)
    nfiles = len(scans)
    counts = np.fromiter(((b - a) if r is None else len(r) for a, b, r in zip(lo, hi, sel)), dtype=np.int64,
                         count=nfiles)
    rows_off = np.zeros(nfiles + 1, dtype=np.int64)
    np.cumsum(counts, out=rows_off[1:])
    k_all = int(rows_off[-1])
    los = np.fromiter(lo, dtype=np.int64, count=nfiles)
    his = np.fromiter(hi, dtype=np.int64, count=nfiles)
    nums = np.fromiter((s.num_rows for s in scans), dtype=np.int64, count=nfiles)
    if bool((los < 0).any() | (his > nums).any() | (his < los).any()):
        f = int(np.flatnonzero((los < 0) | (his > nums) | (his < los))[0])
        raise RowIndexError(f"rows [{lo[f]}, {hi[f]}) are outside the file's {scans[f].num_rows} rows")
    # every selected row: ranges expanded at once, explicit selections copied in
    rows = np.arange(k_all, dtype=np.int64) + np.repeat(los - rows_off[:-1], counts)
    for f, r in enumerate(sel):
        if r is not None and len(r):
            if int(r[0]) < lo[f] or int(r[-1]) >= hi[f]:
                raise RowIndexError(f"rows outside [{lo[f]}, {hi[f]}) selected")
            rows[rows_off[f]:rows_off[f + 1]] = r
    whole = np.fromiter((s.whole is not None for s in scans), dtype=np.bool_, count=nfiles)
    wholes = [s.whole for s in scans if s.whole is not None]
    wsize = np.fromiter((0 if s.whole is None else len(s.whole) for s in scans), dtype=np.int64, count=nfiles)
    wbase = np.cumsum(wsize) - wsize
    w_at = int(wsize.sum())
    seg_key, seg_b0, seg_stride, seg_len, seg_szw, seg_count, seg_def = lay.seg
    items = ncols * k_all
    partial = items - ncols * int(counts[whole].sum())
    cap = partial if lay.any_stride else min(partial, int(seg_key.size))
    work = np.empty(3 * items + 2 * cap, dtype=np.int64)
    item_seg, item_in, item_pos = work[:items], work[items:2 * items], work[2 * items:3 * items]
    ranges = work[3 * items:].reshape(cap, 2)
    range_file = np.empty(cap, dtype=np.int64)
    nr = plan_scan(seg_key, seg_b0, seg_stride, seg_len, lay.blk_g0, lay.blk_g1, lay.blk_kbase, rows, rows_off,
                   ncols, whole, wbase, w_at, item_seg, item_in, item_pos, ranges, range_file)
    if nr < 0:
        raise CorruptFileError("a column's segments do not start at row 0", path=scans[0].reader.uri)
    bufs = wholes
    if nr:
        cuts = np.searchsorted(range_file[:nr], np.arange(nfiles + 1)).tolist()
        todo = [(f, cuts[f], cuts[f + 1]) for f in range(nfiles) if cuts[f + 1] > cuts[f]]

        async def one(f: int, a: int, b: int) -> list:
            src = scans[f].reader.range_reader
            return await src.read_ranges(_as_ranges(src, ranges[a:b]), priority=int(lo[f]))

        got = [await one(*todo[0])] if len(todo) == 1 else await asyncio.gather(*(one(*x) for x in todo))
        bufs = list(wholes)
        for g in got:
            bufs.extend(g)
    data = np.frombuffer(bufs[0] if len(bufs) == 1 else b"".join(bufs), dtype=np.uint8)
    data.flags.writeable = False
    from lancejit.encoding.v21.take_index import take_column

    out = []
    for j in range(ncols):
        a, b = j * k_all, (j + 1) * k_all
        args = (data, item_pos[a:b], item_in[a:b], item_seg[a:b], seg_szw, seg_len, seg_count, seg_def)
        got = _scan_column(lay.indexes[j], *args)
        out.append(got if got is not None else take_column(lay.indexes[j], *args, 0))
    return out


def _scan_column(ix: Any, data: np.ndarray, item_pos: np.ndarray, item_in: np.ndarray, item_seg: np.ndarray,
                 seg_szw: np.ndarray, seg_len: np.ndarray, seg_count: np.ndarray,
                 seg_def: np.ndarray) -> pa.Array | None:
    """Fixed-width and plain variable-width values of a column without nulls, a run of one
    chunk per copy; None for the other kinds (decoded by the take kernels)."""
    from lancejit.encoding.kernels import scan as ks

    k = item_pos.size
    t = ix.arrow_type
    if ix.kind == "fixed":
        w = ix.width
        out = np.empty(k * w, dtype=np.uint8)
        if ks.scan_fixed(data, item_pos, item_in, item_seg, seg_szw, seg_len, seg_def, w, out):
            raise CorruptFileError(f"column {ix.column}: a chunk shorter than its values", path=ix.path)
        if ix.list_size:
            child = pa.Array.from_buffers(t.value_type, k * ix.list_size, [None, pa.py_buffer(out)])
            return pa.Array.from_buffers(t, k, [None], children=[child])
        return pa.Array.from_buffers(t, k, [None, pa.py_buffer(out)])
    if ix.kind != "variable":
        return None
    offsets = np.empty(k + 1, dtype=np.int64)
    nbytes = ks.scan_offsets(data, item_pos, item_in, item_seg, seg_szw, seg_len, seg_count, seg_def, ix.width,
                             offsets)
    if nbytes < 0:
        raise CorruptFileError(f"column {ix.column}: value offsets out of order or out of bounds", path=ix.path)
    values = np.empty(nbytes, dtype=np.uint8)
    ks.scan_copy(data, item_pos, item_in, item_seg, seg_szw, seg_len, seg_def, ix.width, offsets, values)
    if not ix.large_offsets:
        if nbytes > _INT32_MAX:
            raise CorruptFileError("scanned values exceed 2 GiB for a 32-bit-offset type", path=ix.path)
        offsets = offsets.astype(np.int32)
    return pa.Array.from_buffers(t, k, [None, pa.py_buffer(offsets), pa.py_buffer(values)])


def _group_index(tables: list[TakeTable], j: int, seg_base: np.ndarray) -> Any:
    """Column ``j``'s take index standing for all files (FSST: every file's symbol tables,
    indexed by global segment)."""
    ix = tables[0].columns[j]
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
