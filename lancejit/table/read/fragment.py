"""Reading one fragment: its deletion vector, row ids, and columns at chosen rows.

Rows of a fragment are addressed by *physical offset* ``[0, physical_rows)``; the live rows are
those not in the deletion file.  Row selections are either a half-open range ``(start, end)``
or a sorted, unique ``int64`` array of offsets.  A top-level column is read from the data file
that holds its field ids; a column held by no file of the fragment reads as nulls.
"""

from __future__ import annotations

import asyncio
import weakref
from dataclasses import dataclass
from typing import Sequence

import numpy as np
import pyarrow as pa

from lancejit.core.errors import CorruptFileError, LanceJitError, NotFoundError
from lancejit.io.store import ObjectStore

from ..meta.context import DatasetContext
from .datafile import DataFileHandle, open_data_file
from ..meta.deletion import decode_deletion_file, live_offsets
from ..meta.fields import TopField
from ..meta.manifest import DataFile, ExternalFile, Fragment
from ..meta.rowids import decode_row_id_sequence, row_addresses

ROWID = "_rowid"
ROWADDR = "_rowaddr"

def numpy_array(values: np.ndarray, type_: pa.DataType) -> pa.Array:
    """A fixed-width Arrow array (no nulls) over the numeric NumPy ``values`` of matching width,
    without copying.  (Unlike ``pa.array``, whose first call imports pandas: tenths of a second
    in a fresh process.)"""
    values = np.ascontiguousarray(values)
    return pa.Array.from_buffers(type_, len(values), [None, pa.py_buffer(values)])


def sel_len(rows: tuple[int, int] | np.ndarray) -> int:
    return rows[1] - rows[0] if isinstance(rows, tuple) else len(rows)


def sel_offsets(rows: tuple[int, int] | np.ndarray) -> np.ndarray:
    return np.arange(rows[0], rows[1], dtype=np.int64) if isinstance(rows, tuple) else rows


@dataclass(frozen=True, slots=True)
class _Group:
    """The columns of one read that one data file holds."""

    data_file: DataFile
    #: Positions of the columns in the read's ``tops``.
    idxs: list[int]
    tops: tuple[TopField, ...]
    #: The dataset's Arrow type of each column.
    types: tuple[pa.DataType, ...]


#: Bytes of a deletion file read by the first request.
DELETION_READ_BYTES = 64 * 1024


class FragmentReader:
    """Reads one fragment of one dataset version."""

    def __init__(self, ctx: DatasetContext | None, fragment: Fragment, physical_rows: int | None = None,
                 weak: bool = False) -> None:
        #: ``ctx`` itself, or (``weak``: readers cached under the context, by its index) a weak
        #: reference to it, so that the cache makes no reference cycle; None: a reader of an
        #: index built without a dataset (its fragment and rows only).
        self._ctx: DatasetContext | weakref.ref[DatasetContext] | None = (
            weakref.ref(ctx) if weak and ctx is not None else ctx)
        self.fragment = fragment
        #: Physical rows: the manifest's count, or the count the dataset index resolved for
        #: legacy fragments whose manifest records 0 (see :mod:`.index`).
        self.physical_rows = fragment.physical_rows if physical_rows is None else physical_rows
        #: Per column set (top-level names): the data files to read and whether they hold all.
        self._layouts: dict[tuple[str, ...], tuple[list[_Group], bool]] = {}
        self._last_layout: tuple[Sequence[TopField], tuple[list[_Group], bool]] | None = None
        #: Opened data files by path: ``(handle, store, path)`` (looked up once per reader).
        self._handles: dict[str, tuple[DataFileHandle, ObjectStore, str]] = {}

    @property
    def ctx(self) -> DatasetContext:
        """The context of the dataset version read."""
        ref = self._ctx
        if not isinstance(ref, weakref.ref):
            if ref is None:
                raise LanceJitError("this fragment reader was built without a dataset")
            return ref
        ctx = ref()
        if ctx is None:  # only reachable by holding a reader without its dataset
            raise LanceJitError("the dataset this fragment reader belongs to was closed")
        return ctx

    @property
    def id(self) -> int:
        return self.fragment.id

    # ------------------------------------------------------------------ deletions, row ids
    async def deleted(self) -> np.ndarray | None:
        """Sorted deleted offsets (uint32), or None without a deletion file."""
        d = self.fragment.deletion_file
        if d is None:
            return None
        store, path = self.ctx.deletion_file_location(self.fragment.id, d)

        async def load() -> np.ndarray:
            with self.ctx.errors(path, store):
                try:
                    reader = self.ctx.reader(store, path)
                    # deletion files are small: one read of their last 64 KiB (inline on local
                    # stores), a second one for the rest of a bigger file
                    data: bytes | memoryview
                    size, data = await reader.read_tail(DELETION_READ_BYTES)
                    if size > len(data):
                        (head,) = await reader.read_ranges([(0, size - len(data))])
                        data = bytes(head) + bytes(data)
                except NotFoundError:
                    raise NotFoundError("deletion file is missing") from None
                return decode_deletion_file(data, d, self.physical_rows, store.uri(path))

        return await self.ctx.caches.deletions.get(store.uri(path), load)

    async def live_offsets(self) -> np.ndarray:
        """Physical offsets (int64, ascending) of the live rows."""
        return live_offsets(self.physical_rows, await self.deleted())

    async def count_rows(self) -> int:
        d = self.fragment.deletion_file
        if d is None:
            return self.physical_rows
        if d.num_deleted_rows is not None:
            return self.physical_rows - d.num_deleted_rows
        deleted = await self.deleted()
        assert deleted is not None  # the fragment has a deletion file
        return self.physical_rows - len(deleted)

    async def row_ids(self) -> np.ndarray | None:
        """Stable row id of every physical row (uint64), or None without stable row ids."""
        src = self.fragment.row_ids
        if src is None:
            return None
        key = (self.ctx.path(src.path), src.offset, src.size) if isinstance(src, ExternalFile) else ("inline", self.ctx.manifest_path, self.fragment.id)

        async def load() -> np.ndarray:
            if isinstance(src, ExternalFile):
                path = self.ctx.path(src.path)
                with self.ctx.errors(path):
                    (data,) = await self.ctx.reader(self.ctx.store, path).read_ranges([(src.offset, src.offset + src.size)])
                    ids = decode_row_id_sequence(data, self.ctx.store.uri(path), self.physical_rows or None)
            else:
                with self.ctx.errors(self.ctx.manifest_path):
                    ids = decode_row_id_sequence(src, f"fragment {self.fragment.id} row ids", self.physical_rows or None)
            if len(ids) != self.physical_rows:
                raise CorruptFileError(
                    f"{self.ctx.describe_where(self.ctx.manifest_path)}: fragment {self.fragment.id} has "
                    f"{self.physical_rows} rows but {len(ids)} row ids"
                )
            return ids

        return await self.ctx.caches.row_ids.get(key, load)

    # --------------------------------------------------------------------------- columns
    def file_for(self, top: TopField) -> DataFile | None:
        """The data file holding top-level field ``top`` (None: the field reads as nulls)."""
        for df in self.fragment.files:
            if top.id in df.fields:
                return df
        for df in self.fragment.files:
            if not top.ids.isdisjoint(df.fields):
                return df
        return None

    def _layout(self, tops: Sequence[TopField]) -> tuple[list[_Group], bool]:
        """The data files holding ``tops`` (one :class:`_Group` each) and whether they hold all
        of them; cached per column set (and for the last ``tops`` object seen)."""
        last = self._last_layout
        if last is not None and last[0] is tops:
            return last[1]
        key = tuple(t.name for t in tops)
        layout = self._layouts.get(key)
        if layout is None:
            groups: dict[str, tuple[DataFile, list[int]]] = {}
            for i, top in enumerate(tops):
                df = self.file_for(top)
                if df is not None:
                    groups.setdefault(df.path, (df, []))[1].append(i)
            schema = self.ctx.schema
            out = [
                _Group(df, idxs, tuple(tops[i] for i in idxs), tuple(schema.field(tops[i].name).type for i in idxs))
                for df, idxs in groups.values()
            ]
            layout = self._layouts[key] = (out, sum(len(g.idxs) for g in out) == len(tops))
        self._last_layout = (tops, layout)
        return layout

    async def _handle(self, df: DataFile) -> tuple[DataFileHandle, ObjectStore, str]:
        got = self._handles.get(df.path)
        if got is None:
            handle = await open_data_file(self.ctx, df)
            store, path = self.check_file_rows(df, handle.num_rows)
            got = self._handles[df.path] = (handle, store, path)
        return got

    def check_file_rows(self, df: DataFile, num_rows: int) -> tuple[ObjectStore, str]:
        """The data file's ``(store, path)``; :class:`CorruptFileError` when it holds fewer
        rows than the fragment records."""
        store, path = self.ctx.data_file_location(df)
        if self.physical_rows and num_rows < self.physical_rows:
            with self.ctx.errors(path, store):
                raise CorruptFileError(
                    f"fragment {self.fragment.id} records {self.physical_rows} rows but its data "
                    f"file holds {num_rows}")
        return store, path

    async def read(
        self, tops: Sequence[TopField], rows: tuple[int, int] | np.ndarray
    ) -> list[pa.Array]:
        """Arrays of the top-level fields ``tops`` at ``rows`` (a range or sorted offsets)."""
        n = sel_len(rows)
        out: list[pa.Array | None] = [None] * len(tops)
        layout, complete = self._layout(tops)
        if n == 0 or not complete:
            schema = self.ctx.schema
            held = {i for g in layout for i in g.idxs}
            for i, t in enumerate(tops):
                if i not in held or n == 0:
                    out[i] = pa.nulls(n, schema.field(t.name).type) if n else pa.array([], schema.field(t.name).type)
            if n == 0:
                return out
        if layout and (isinstance(rows, tuple) and rows[1] > self.physical_rows or (
            not isinstance(rows, tuple) and len(rows) and int(rows[-1]) >= self.physical_rows
        )):
            _, store, path = await self._handle(layout[0].data_file)
            with self.ctx.errors(path, store):
                raise CorruptFileError("row selection past the fragment's end")

        async def read_group(g: _Group) -> None:
            handle, store, path = await self._handle(g.data_file)
            with self.ctx.errors(path, store):
                if isinstance(rows, tuple):
                    arrays = await handle.read_range(g.tops, rows[0], rows[1])
                else:
                    arrays = await handle.take(g.tops, rows)
                lschema = self.ctx.lance_schema
                arrays = [handle.conform(t, a, lschema, ty) for t, a, ty in zip(g.tops, arrays, g.types)]
            for i, arr in zip(g.idxs, arrays):
                out[i] = arr

        if len(layout) == 1:  # one data file (the usual case): no task
            await read_group(layout[0])
        else:
            await asyncio.gather(*(read_group(g) for g in layout))
        return out

    async def meta_columns(
        self, rows: tuple[int, int] | np.ndarray, with_row_id: bool, with_row_address: bool
    ) -> list[tuple[str, pa.Array]]:
        """``_rowid`` / ``_rowaddr`` (uint64) for ``rows``."""
        out: list[tuple[str, pa.Array]] = []
        if not (with_row_id or with_row_address):
            return out
        offsets = sel_offsets(rows)
        addrs = row_addresses(self.fragment.id, offsets)
        if with_row_id:
            ids = await self.row_ids()
            out.append((ROWID, numpy_array(addrs if ids is None else ids[offsets], pa.uint64())))
        if with_row_address:
            out.append((ROWADDR, numpy_array(addrs, pa.uint64())))
        return out


@dataclass(frozen=True, slots=True)
class FragmentInfo:
    """What ``Dataset.get_fragments()`` returns for one fragment."""

    fragment_id: int
    physical_rows: int
    num_deletions: int | None
    files: tuple[DataFile, ...]
    deletion_file: str | None
    has_row_ids: bool

    @property
    def id(self) -> int:
        return self.fragment_id

    @property
    def num_rows(self) -> int | None:
        return None if self.num_deletions is None else self.physical_rows - self.num_deletions


async def unit_live_offsets(frag: FragmentReader, lo: int, hi: int) -> np.ndarray | None:
    """Physical offsets (int64) of the live rows of ``[lo, hi)``; None when all are live."""
    deleted = await frag.deleted()
    if deleted is None or not len(deleted):
        return None
    a, b = np.searchsorted(deleted, [lo, hi])
    if b <= a:
        return None
    mask = np.ones(hi - lo, dtype=bool)
    mask[deleted[a:b].astype(np.int64) - lo] = False
    return np.flatnonzero(mask).astype(np.int64) + lo
