"""The multi-file take: the rows of every touched fragment planned, read and decoded at once.

A take touching many fragments used to run one asyncio chain per fragment (fragment reader ->
data file -> file reader -> take plan -> scheduler -> store).  Here the touched fragments whose
one data file holds every requested column with the array take path
(:class:`~lancejit.file.take_plan.TakeTable`, Lance 2.1/2.2) are served together:

1. their take tables are copied once into one *segment arena* per dataset version and
   projection (:class:`FileTakeState`, kept on the version's
   :class:`~.index.DatasetIndex`); each fragment position gets a *slot* (its segment range,
   key span, reader) in a position-indexed array, so finding the touched slots is one
   vectorized lookup, no Python work per fragment;
2. ONE kernel (:func:`~lancejit.encoding.kernels.take.plan_take_files`) maps every (column, row)
   to its segment and byte position and coalesces the byte ranges per file;
3. ONE read call (:func:`lancejit.io.multi_read.read_files`) fetches every file's ranges
   (locally: one inline loop of ``preadv``) into one buffer;
4. one decode kernel per column over all files writes the rows in order (files whose column
   encodings differ, FSST and dictionary columns decode per file), giving one array per
   column: no concatenation.

Fragments that do not qualify (columns over several data files, columns some file lacks,
2.0 / legacy files, nested columns, a data file whose row count differs from the manifest's)
keep the per-fragment path of :mod:`.take` (their slot is :data:`NOT_ELIGIBLE`).  Deletions
and row ids are resolved before (physical offsets in), so they do not matter here.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np
import pyarrow as pa

from lancejit.core.errors import CorruptFileError, LanceJitError
from lancejit.io.local import LocalStore
from lancejit.io.multi_read import FileSource, read_files

from ..meta.context import with_context
from .datafile import collector_paused, open_data_files
from ..meta.fields import TopField

if TYPE_CHECKING:  # pragma: no cover
    from ..meta.context import DatasetContext
    from .version_index import DatasetIndex

#: ``slot_of_pos`` values: not looked at yet / served by the per-fragment path (UNKNOWN is the
#: smallest: one minimum tells whether a take must admit fragments first).
UNKNOWN, NOT_ELIGIBLE = -2, -1

_MIN, _MAX = np.minimum.reduce, np.maximum.reduce

#: Column kinds one decode call serves across files (FSST with the arena's symbol tables;
#: dictionary columns decode per file: an index is checked against its own file's dictionary).
_MERGEABLE = frozenset({"fixed", "bitpacked", "variable", "fsst"})

#: An arena holding more segments than this (56 bytes each) is dropped after the take that grew
#: it past the bound; later takes build a new one from the files' cached take tables.
MAX_ARENA_SEGMENTS = 1 << 20

_SEG_ROWS = 7  # seg arena rows: key, b0, stride, len, szw, count, def
_SLOT_ROWS = 3  # slot rows: lo, hi, span


class FileTakeState:
    """The segment arena of one dataset version and projection (see the module docstring).

    ``slot_of_pos[p]``: the slot of fragment position ``p``, :data:`UNKNOWN` or
    :data:`NOT_ELIGIBLE`.  ``segs`` ``(7, capacity)`` int64: every slot's segment table (its
    :class:`TakeTable` arrays, keys as in the table); ``slots`` ``(3, capacity)``: per slot the
    segment range ``[lo, hi)`` and the key span (file rows + 1); ``seg0[s, j]``: slot ``s``'s
    first segment of column ``j``; ``colsig[s, j]``: the encoding signature of the slot's column
    ``j`` (a column's slots of one signature decode together) and ``rowsig[s]`` that of all its
    columns (one comparison tells a take whether every column decodes in one call).  Grown by doubling; entries never change once written, and a
    slot is published (``slot_of_pos``) after its arrays, so concurrent takes see whole slots.
    """

    def __init__(self, nfrags: int, ncols: int) -> None:
        self.ncols = ncols
        self.slot_of_pos = np.full(nfrags, UNKNOWN, dtype=np.int64)
        #: Stores held by :meth:`admit` (``LocalStore.hold_files``) until the next :meth:`take` read.
        self._holds: list[LocalStore] = []
        self.segs = np.zeros((_SEG_ROWS, 256), dtype=np.int64)
        self.nseg = 0
        self.slots = np.zeros((_SLOT_ROWS, 64), dtype=np.int64)
        self.seg0 = np.zeros((64, ncols), dtype=np.int64)
        self.rowsig = np.zeros(64, dtype=np.int64)
        self.colsig = np.zeros((64, ncols), dtype=np.int64)
        self.nslots = 0
        #: Per slot: the file (a :class:`~lancejit.io.multi_read.FileSource`) and its column
        #: take indexes.
        self.readers: list[Any] = []
        self.columns: list[tuple[Any, ...]] = []
        #: Per column signature id: the index one decode call over all slots of the signature
        #: uses (None: decode per file); per row signature id: its column signature ids.
        self.colmerged: list[Any] = []
        self.colcol: list[int] = []  # per column signature id: its column
        self.rowcols: list[tuple[int, ...]] = []
        #: Per row signature id: every column decodes across files with one call.
        self.rowfull: list[bool] = []
        self._col_ids: dict[tuple, int] = {}
        self._row_ids: dict[tuple, int] = {}
        #: Coalescing gap (bytes): the smallest block size of the files' stores.
        self.block = 1 << 62
        self._lock = threading.Lock()
        #: The ``tops`` object last used to find this state (see :func:`state_for`).
        self.tops: Any = None
        #: Per spec object: see :meth:`output`.
        self._outputs: dict[int, tuple[Any, Any]] = {}
        #: Per FSST column: every slot's symbol tables (see :class:`_FsstArena`); bumped by
        #: every admission (merged FSST indexes are rebuilt when it changed).
        self._fsst: dict[int, _FsstArena] = {}
        self._fsst_ix: dict[int, tuple[int, Any]] = {}
        self.version = 0

    # ------------------------------------------------------------------------- admission
    def _add(self, pos: int, table: Any, reader: FileSource) -> None:
        """Copy ``table`` (a ``TakeTable`` of this projection's columns) into the arena as a
        new slot for fragment position ``pos``."""
        with self._lock:
            if self.slot_of_pos[pos] >= 0:  # a concurrent take admitted it meanwhile
                return
            n = table.seg_key.size
            lo = self.nseg
            if lo + n > self.segs.shape[1]:
                grown = np.zeros((_SEG_ROWS, max(2 * self.segs.shape[1], lo + n)), dtype=np.int64)
                grown[:, :lo] = self.segs[:, :lo]
                self.segs = grown
            segs = self.segs
            for row, arr in enumerate((table.seg_key, table.seg_b0, table.seg_stride, table.seg_len,
                                       table.seg_szw, table.seg_count, table.seg_def)):
                segs[row, lo:lo + n] = arr
            s = self.nslots
            if s >= self.slots.shape[1]:
                cap = 2 * self.slots.shape[1]
                slots = np.zeros((_SLOT_ROWS, cap), dtype=np.int64)
                slots[:, :s] = self.slots[:, :s]
                seg0 = np.zeros((cap, self.ncols), dtype=np.int64)
                seg0[:s] = self.seg0[:s]
                rowsig = np.zeros(cap, dtype=np.int64)
                rowsig[:s] = self.rowsig[:s]
                colsig = np.zeros((cap, self.ncols), dtype=np.int64)
                colsig[:s] = self.colsig[:s]
                self.slots, self.seg0, self.rowsig, self.colsig = slots, seg0, rowsig, colsig
            for j, c in enumerate(table.columns):
                if c.kind == "fsst":
                    fa = self._fsst.get(j)
                    if fa is None:
                        fa = self._fsst[j] = _FsstArena()
                    fa.add(c.fsst, lo + int(table.seg0[j]), self.segs.shape[1])
            self.version += 1
            self.slots[0, s], self.slots[1, s] = lo, lo + n
            self.slots[2, s] = int(table.col_base[1]) if self.ncols > 1 else 0
            self.seg0[s] = lo + np.asarray(table.seg0, dtype=np.int64)
            self.rowsig[s] = self._signature(s, table.columns)
            self.readers.append(reader)
            self.columns.append(table.columns)
            block = getattr(getattr(reader.reader, "config", None), "block_size", None)
            if block is not None:
                self.block = min(self.block, int(block))
            self.nseg = lo + n
            self.nslots = s + 1
            self.slot_of_pos[pos] = s

    def _signature(self, s: int, columns: Sequence[Any]) -> int:
        """Slot ``s``'s column signature ids (``colsig[s]``, registering their merged decode
        indexes) and the id of their tuple (returned)."""
        ids = []
        for j, c in enumerate(columns):
            key = (j, c.kind, c.width, c.arrow_type, c.list_size, c.large_offsets)
            cid = self._col_ids.get(key)
            if cid is None:
                cid = self._col_ids[key] = len(self.colmerged)
                self.colmerged.append(c if c.kind in _MERGEABLE else None)
                self.colcol.append(j)
            m = self.colmerged[cid]
            if m is not None and c.nullable and not m.nullable:  # validity when any file has nulls
                self.colmerged[cid] = replace(m, nullable=True)
            ids.append(cid)
        self.colsig[s] = ids
        row_key = tuple(ids)
        rid = self._row_ids.get(row_key)
        if rid is None:
            rid = self._row_ids[row_key] = len(self.rowcols)
            self.rowcols.append(row_key)
            self.rowfull.append(all(self.colmerged[c] is not None for c in row_key))
        return rid

    async def admit(self, ctx: "DatasetContext", index: "DatasetIndex", tops: Sequence[TopField],
                    positions: list[int]) -> None:
        """Look at fragment positions not seen yet: open their data files (all at once), build
        their take tables, and give a slot to every one that qualifies."""
        cands: list[tuple[int, int, _Group]] = []
        ids = [t.id for t in tops]
        types = None
        fragments, physical = index.fragments, index.physical_rows
        for p in positions:
            rows = int(physical[p])
            files = fragments[p].files
            if len(files) == 1 and rows > 0:  # one data file holding every column by its id
                df = files[0]
                fields = df.fields
                for i in ids:
                    if i not in fields:
                        break
                else:
                    if types is None:
                        schema = ctx.schema
                        types = tuple(schema.field(t.name).type for t in tops)
                    cands.append((p, rows, _Group(df, tops, types)))
                    continue
            frag = index.reader(p)  # the general rule (e.g. columns found by nested ids)
            layout, complete = frag._layout(tops)
            if complete and len(layout) == 1 and frag.physical_rows > 0 and len(layout[0].tops) == len(tops):
                g = layout[0]
                cands.append((p, frag.physical_rows, _Group(g.data_file, g.tops, g.types)))
            else:
                self.slot_of_pos[p] = NOT_ELIGIBLE
        if not cands:
            return
        store = ctx.store
        if isinstance(store, LocalStore):  # new files' descriptors and tails kept until this take's read ends
            store.hold_files()
            self._holds.append(store)
        with collector_paused(ctx, len(cands)):  # (the open, the tables and the slots)
            try:
                handles = await open_data_files(ctx, [g.data_file for _, _, g in cands])
                tables = await _take_tables(ctx, cands, handles)
            except BaseException:
                self._release_one()
                raise
            added = False
            for (p, _, _), handle, table in zip(cands, handles, tables):
                if table is None:
                    self.slot_of_pos[p] = NOT_ELIGIBLE
                else:
                    self._add(p, table, FileSource.of(handle.reader.range_reader))
                    added = True
        if not added:  # no take read follows for these files
            self._release_one()

    def _release_one(self) -> None:
        """End one hold of :meth:`admit` (if any is open)."""
        if self._holds:
            self._holds.pop().release_files()

    # ------------------------------------------------------------------------------ take
    def mergeable(self, row_slot: np.ndarray) -> bool:
        """True when every column of the slots ``row_slot`` decodes with one call across them
        (then :meth:`take` serves rows in any order)."""
        rs = self.rowsig[row_slot]
        if rs.size > 1 and _MIN(rs) != _MAX(rs):
            return False
        return self.rowfull[rs[0]]

    async def take(self, row_slot: np.ndarray, rows: np.ndarray, grouped: bool = True) -> list[pa.Array]:
        """Columns at rows ``rows`` (int64 physical offsets) of slots ``row_slot``, in that order
        (any order, duplicates allowed, when :meth:`mergeable`; else each slot's rows contiguous:
        ``grouped``): one plan, one read, one decode per column."""
        from lancejit.encoding.kernels.take import plan_take_files
        from lancejit.encoding.v21.take_index import take_column

        k = rows.size
        ncols = self.ncols
        n = ncols * k
        work = np.empty(7 * n, dtype=np.int64)
        item_seg, item_in, item_pos = work[:n], work[n:2 * n], work[2 * n:3 * n]
        reads = work[3 * n:].reshape(n, 4)
        segs, slots = self.segs, self.slots
        nr = plan_take_files(segs[0], segs[1], segs[2], segs[3], slots[0], slots[1], slots[2], row_slot, rows,
                             ncols, self.block, item_seg, item_in, item_pos, reads)
        _, first, last, at = reads[nr - 1].tolist()
        try:
            data = await read_files(self.readers, reads[:nr], at + last - first, priority=int(rows[0]),
                                    scattered=True)
        finally:
            self._release_one()
        data.flags.writeable = False  # the file take's decode kernels are compiled for read-only data
        one_slot = k == 1 or (grouped and row_slot[0] == row_slot[k - 1])  # a slot's rows are contiguous
        if one_slot or _MIN(self.rowsig[row_slot]) == _MAX(self.rowsig[row_slot]):
            cids = self.rowcols[self.rowsig[row_slot[0]]]
        else:
            cids = None
        out = []
        for j in range(ncols):
            lo, hi = j * k, (j + 1) * k
            if cids is not None:
                cid = cids[j]
            else:  # files of several signatures: this column may still share one
                cs = self.colsig[row_slot, j]
                cid = int(cs[0]) if _MIN(cs) == _MAX(cs) else -1
            ix = self.colmerged[cid] if cid >= 0 else None
            if ix is not None and ix.kind == "fsst":
                ix = self._fsst_merged(cid, ix)
            arr = None
            if ix is not None:
                try:
                    arr = take_column(ix, data, item_pos[lo:hi], item_in[lo:hi], item_seg[lo:hi], segs[4], segs[3],
                                      segs[5], segs[6], 0)
                except CorruptFileError:
                    arr = None  # decoded per file below: the error names the file
            if arr is None:
                if one_slot:
                    s = int(row_slot[0])
                    arr = take_column(self.columns[s][j], data, item_pos[lo:hi], item_in[lo:hi], item_seg[lo:hi],
                                      segs[4], segs[3], segs[5], segs[6], int(self.seg0[s, j]))
                else:
                    arr = self._per_file(j, data, row_slot, item_pos[lo:hi], item_in[lo:hi], item_seg[lo:hi],
                                         segs)
            out.append(arr)
        return out

    def _fsst_merged(self, cid: int, base: Any) -> Any:
        """The index decoding an FSST column of signature ``cid`` across files: ``base`` with
        the arena's symbol tables (``seg_tab`` by arena segment, so ``seg0`` is 0)."""
        got = self._fsst_ix.get(cid)
        version = self.version
        if got is not None and got[0] == version:
            return got[1]
        from lancejit.encoding.v21.take_index import FsstTables

        fa = self._fsst[self.colcol[cid]]
        t = fa.count
        ix = replace(base, fsst=FsstTables(fa.words[:t], fa.lens[:t], fa.enabled[:t], fa.seg_tab))
        self._fsst_ix[cid] = (version, ix)
        return ix

    def _per_file(self, j: int, data: np.ndarray, row_slot: np.ndarray, pos: np.ndarray, inn: np.ndarray,
                  seg: np.ndarray, segs: np.ndarray) -> pa.Array:
        """Column ``j`` decoded file by file (each with its own take index), concatenated."""
        from lancejit.encoding.v21.take_index import take_column

        cuts = np.flatnonzero(row_slot[1:] != row_slot[:-1]) + 1
        bounds = [0, *cuts.tolist(), row_slot.size]
        parts = []
        for a, b in zip(bounds[:-1], bounds[1:]):
            s = int(row_slot[a])
            parts.append(take_column(self.columns[s][j], data, pos[a:b], inn[a:b], seg[a:b], segs[4], segs[3],
                                     segs[5], segs[6], int(self.seg0[s, j])))
        return parts[0] if len(parts) == 1 else pa.concat_arrays(parts)

    def output(self, ctx: "DatasetContext", spec: Any) -> tuple[pa.Schema, tuple[int, ...]] | None:
        """``(schema, sources)`` of a take spec whose output columns are the projection's whole
        columns and meta columns (``sources``: per output column its index in the projection's
        arrays, or -1 ``_rowid``, -2 ``_rowaddr``), None when it needs :func:`assemble_batch`;
        cached per spec object."""
        got = self._outputs.get(id(spec))
        if got is not None and got[0] is spec:
            return got[1]
        from .fragment import ROWADDR, ROWID
        from .assemble import output_schema
        from .spec import output_columns

        names = [t.name for t in spec.tops]
        sources: list[int | None] = []
        for c in output_columns(spec):
            if c.top is None:
                sources.append(-1 if c.name == ROWID else -2 if c.name == ROWADDR else None)
            elif c.path or c.prune is not None or c.top not in names:
                sources.append(None)
            else:
                sources.append(names.index(c.top))
        known = tuple(s for s in sources if s is not None)
        plan = (output_schema(ctx, spec), known) if len(known) == len(sources) else None
        if len(self._outputs) >= 64:
            self._outputs.clear()
        self._outputs[id(spec)] = (spec, plan)
        return plan


class _FsstArena:
    """The FSST symbol tables of one column of every slot: ``words``/``lens`` ``(capacity, 256)``
    uint64, ``enabled``, ``count`` tables used; ``seg_tab``: per arena segment, its table."""

    def __init__(self) -> None:
        self.words = np.zeros((8, 256), dtype=np.uint64)
        self.lens = np.zeros((8, 256), dtype=np.uint64)
        self.enabled = np.zeros(8, dtype=np.bool_)
        self.count = 0
        self.seg_tab = np.zeros(256, dtype=np.int64)

    def add(self, tabs: Any, seg_lo: int, seg_capacity: int) -> None:
        """Append one column index's tables; its segments start at arena segment ``seg_lo``."""
        t0, t = self.count, len(tabs.enabled)
        if t0 + t > len(self.enabled):
            cap = max(2 * len(self.enabled), t0 + t)
            for name in ("words", "lens"):
                grown = np.zeros((cap, 256), dtype=np.uint64)
                grown[:t0] = getattr(self, name)[:t0]
                setattr(self, name, grown)
            enabled = np.zeros(cap, dtype=np.bool_)
            enabled[:t0] = self.enabled[:t0]
            self.enabled = enabled
        if seg_capacity > len(self.seg_tab):
            segs = np.zeros(seg_capacity, dtype=np.int64)
            segs[:len(self.seg_tab)] = self.seg_tab
            self.seg_tab = segs
        self.words[t0:t0 + t] = tabs.words
        self.lens[t0:t0 + t] = tabs.lens
        self.enabled[t0:t0 + t] = tabs.enabled
        self.seg_tab[seg_lo:seg_lo + len(tabs.seg_tab)] = tabs.seg_tab + t0
        self.count = t0 + t


async def _take_tables(ctx: "DatasetContext", cands: list[tuple[int, int, _Group]], handles: list[Any]) -> list[Any]:
    """The take table of each candidate ``(position, physical rows, group)``'s data file (opened:
    ``handles``), None when the multi-file take cannot serve it.  Tables not cached yet are
    built from the files' metadata with ONE read of every file's chunk metadata words
    (:func:`~lancejit.file.take_plan.read_many`); the rare file whose table needs more (or
    whose words fail a check) is built by its own reader, which reports any damage."""
    from lancejit.file.take_plan import read_many, tables_from

    tables: list[Any] = [None] * len(cands)
    wait: list[tuple[int, Any, Any]] = []  # (candidate, request, columns)
    slow: list[tuple[int, Any]] = []  # (candidate, columns): await reader.take_table
    for i, ((_, rows, group), handle) in enumerate(zip(cands, handles)):
        if handle.num_rows != rows:
            continue  # the per-fragment path reports it
        try:
            names, unique = handle._columns(group.tops)
            if names != unique:
                continue
            done, got = handle.reader.take_table_request(unique)
        except LanceJitError as exc:
            raise with_context(exc, ctx.describe_where(handle.store_path, handle.store)) from exc
        if done:
            tables[i] = got
        elif got is None:
            slow.append((i, unique))
        elif got.ranges:
            wait.append((i, got, unique))
        else:
            slow.append((i, unique))
    if wait:
        bufs = await read_many([handles[i].reader.range_reader for i, _, _ in wait], [r.ranges for _, r, _ in wait])
        for (i, _, unique), table in zip(wait, tables_from([r for _, r, _ in wait], bufs)):
            if table is None:
                slow.append((i, unique))
            else:
                tables[i] = table
                handles[i].reader.keep_take_table(unique, table)
    for i, unique in slow:
        handle = handles[i]
        with ctx.errors(handle.store_path, handle.store):
            tables[i] = await handle.reader.take_table(unique)
    lschema = ctx.lance_schema
    for i, ((_, _, group), handle, table) in enumerate(zip(cands, handles, tables)):
        if table is None:
            continue
        if len(table.columns) != len(group.tops):
            tables[i] = None
            continue
        for top, ix, ty in zip(group.tops, table.columns, group.types):
            if ix.arrow_type != ty:
                tables[i] = None
                break
            probe = _probe(ty)
            if probe is not None and handle.conform(top, probe, lschema, ty) is not probe:
                tables[i] = None  # children matched by id: the per-fragment path conforms them
                break
    return tables


@dataclass(frozen=True, slots=True)
class _Group:
    """A fragment's one data file holding every column of a take (as ``fragment._Group``)."""

    data_file: Any
    tops: Sequence[TopField]
    types: tuple[pa.DataType, ...]


_PROBES: dict[pa.DataType, Any] = {}


def _probe(ty: pa.DataType) -> pa.Array | None:
    """An empty array of nested type ``ty`` (conforming it tells whether a file's field needs
    its children matched by id), None for types without children (read as they are)."""
    got = _PROBES.get(ty, False)
    if got is False:
        got = _PROBES[ty] = pa.array([], type=ty) if pa.types.is_nested(ty) else None
    return got


def state_for(index: "DatasetIndex", tops: Sequence[TopField]) -> FileTakeState:
    """The :class:`FileTakeState` of ``index``'s version for the columns ``tops`` (found by the
    ``tops`` object first: specs keep theirs)."""
    states = index.take_state
    st = states.get(id(tops))
    if st is not None and st.tops is tops:
        return st
    key = tuple(t.name for t in tops)
    st = states.get(key)
    if st is None:
        st = states.setdefault(key, FileTakeState(len(index), len(tops)))
    if len(states) < 256:
        states[id(tops)] = st
        st.tops = tops
    return st


def _distinct(x: np.ndarray) -> np.ndarray:
    """The distinct values of ``x``, ascending: a sort and a neighbour compare (plain ``np.unique``
    imports ``numpy.ma`` on first use in NumPy 2, milliseconds of a fresh process's first take)."""
    x = np.sort(x)
    return x[np.concatenate(([True], x[1:] != x[:-1]))] if x.size > 1 else x


async def slots_of(ctx: "DatasetContext", index: "DatasetIndex", state: FileTakeState,
                   tops: Sequence[TopField], upos: np.ndarray) -> tuple[np.ndarray, int]:
    """The slot of each fragment position in ``upos`` (sorted), admitting the positions not
    looked at yet (:data:`NOT_ELIGIBLE`: fragments the per-fragment path serves), and the
    smallest of them (>= 0: all served by the multi-file take)."""
    slots = state.slot_of_pos[upos]
    low = int(slots[0]) if slots.size == 1 else int(_MIN(slots))
    if low == UNKNOWN:
        new = _distinct(upos[slots == UNKNOWN]).tolist()
        await state.admit(ctx, index, tops, new)
        slots = state.slot_of_pos[upos]
        low = int(_MIN(slots))
        if state.nseg > MAX_ARENA_SEGMENTS:  # this take uses it; the next ones start afresh
            for key in [k for k, v in index.take_state.items() if v is state]:
                index.take_state.pop(key, None)
    return slots, low


__all__ = ["FileTakeState", "NOT_ELIGIBLE", "UNKNOWN", "slots_of", "state_for"]
