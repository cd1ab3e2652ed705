"""The 2.1/2.2 :class:`~lancejit.encoding.protocol.FieldDecoder`: leaf columns -> one Arrow field.

Each leaf column (:class:`LeafColumn`) returns rep/def levels and stored values for row ranges;
the field decoder reads all its leaves concurrently, turns each leaf's levels into per-node
validity/offsets (:func:`repdef.unravel`) and assembles the nested array from the first leaf
under every struct/list node.  Row ranges are half-open ``[start, end)``.
"""

from __future__ import annotations

import bisect

import asyncio
import struct
from typing import Any

import numpy as np
import pyarrow as pa

from lancejit.core.cores import off_loop_if_idle
from lancejit.core.errors import CorruptFileError, LanceJitError, NotSupportedError, RowIndexError
from lancejit.core.ranges import RangeReader
from lancejit.encoding import arrow_build as ab
from lancejit.encoding.field_base import FieldDecoderBase
from lancejit.encoding.pages import ColumnInfo
from lancejit.encoding.v21.columns import LeafPath, count_columns, leaf_paths
from lancejit.encoding.v21.constant import ConstantPage
from lancejit.encoding.v21.context import ColumnContext, Steps
from lancejit.encoding.v20.steps import gather as gather_steps
from lancejit.encoding.v21.fullzip import FullZipPage
from lancejit.encoding.v21.levels import LeafRows, concat_rows
from lancejit.encoding.v21.miniblock import MiniBlockPage
from lancejit.encoding.v21.repdef import FSL_BASE, LIST, NodeLevels, is_fsl, canonical_levels, def_translation, unravel


#: Up to this many row ranges, :meth:`LeafColumn._split` looks pages up with scalars.
SMALL_SPLIT = 16


def indices_to_ranges(indices: np.ndarray) -> np.ndarray:
    """Sorted unique row indices -> half-open runs of consecutive rows, an ``(n, 2)`` int64
    array of ``[start, end)`` rows."""
    idx = np.asarray(indices, dtype=np.int64)
    if idx.size == 0:
        return np.zeros((0, 2), dtype=np.int64)
    if idx.size == 1:
        i = int(idx[0])
        return np.array([[i, i + 1]], dtype=np.int64)
    breaks = np.flatnonzero(np.diff(idx) != 1) + 1
    starts = np.concatenate([[0], breaks])
    ends = np.concatenate([breaks, [idx.size]])
    return np.stack([idx[starts], idx[ends - 1] + 1], axis=1)


def as_range_array(ranges: Any) -> np.ndarray:
    """Row ranges (a sequence of ``(start, end)`` or an ``(n, 2)`` array) as an int64 array."""
    arr = np.asarray(ranges, dtype=np.int64)
    return arr.reshape(-1, 2)


class LeafColumn:
    """One physical column: its pages and how to read rows from them."""

    def __init__(self, ctx: ColumnContext, column: ColumnInfo, leaf: LeafPath) -> None:
        self.ctx = ctx
        self.leaf = leaf
        self.pages: list[Any] = []
        starts = [0]
        for i, page in enumerate(column.pages):
            self.pages.append(make_page(ctx, page, i))
            starts.append(starts[-1] + page.num_rows)
        self.page_starts = np.asarray(starts, dtype=np.int64)
        # Structural fixed-size lists count their pages in items: rows * dimensions.
        scale = 1
        for k in leaf.kinds:
            if is_fsl(k):
                scale *= k - FSL_BASE
        if scale > 1 and ctx.canon.max_rep > 0:
            raise NotSupportedError("fixed-size lists of structs inside lists are not supported")
        self.row_scale = scale
        if starts[-1] % scale:
            raise CorruptFileError(f"column {ctx.column_index} has {starts[-1]} items, not whole lists of {scale}", path=ctx.path)
        self.num_rows = int(starts[-1]) // scale

    async def read(self, ranges: Any) -> LeafRows:
        """Rows in the half-open ``ranges`` (sorted, disjoint, column-relative; an ``(n, 2)``
        array or a sequence of pairs)."""
        per_page = self._split(ranges)
        if not per_page:
            return concat_rows([], self.ctx.value_type)
        if len(per_page) == 1:
            p, rr = per_page[0]
            return await self.pages[p].read(rr)
        results = await asyncio.gather(*(self.pages[p].read(rr) for p, rr in per_page))
        return concat_rows(list(results), self.ctx.value_type)

    def read_steps(self, ranges: Any) -> Steps:
        """Step generator for :meth:`read`: every touched page's steps in lockstep (one set of
        byte ranges per step); returns :class:`LeafRows`."""
        per_page = self._split(ranges)
        if len(per_page) == 1:
            p, rr = per_page[0]
            return (yield from self.pages[p].read_steps(rr))
        results = yield from gather_steps([self.pages[p].read_steps(rr) for p, rr in per_page])
        return concat_rows(list(results), self.ctx.value_type)

    def _split_small(self, r: np.ndarray) -> list[tuple[int, np.ndarray]] | None:
        """:meth:`_split` for a few ranges (small takes) with scalar lookups; None when a
        range crosses a page boundary (the general path splits it)."""
        starts = self.page_starts.tolist()
        last = starts[-1]
        out: dict[int, list[list[int]]] = {}
        for a, b in r.tolist():
            if a < 0 or b > last:
                raise RowIndexError(f"rows outside column of {self.num_rows} rows")
            if b <= a:
                return None  # (empty ranges: as the general path)
            p = bisect.bisect_right(starts, a) - 1
            if b > starts[p + 1]:
                return None
            ps = starts[p]
            out.setdefault(p, []).append([a - ps, b - ps])
        return [(p, np.array(rr, dtype=np.int64).reshape(-1, 2)) for p, rr in out.items()]

    def _split(self, ranges: Any) -> list[tuple[int, np.ndarray]]:
        """``(page, page-relative (n, 2) row ranges)`` for the column-relative ``ranges``."""
        r = as_range_array(ranges)
        if r.shape[0] == 0:
            return []
        if self.row_scale != 1:
            r = r * self.row_scale
        ra, rb = r[:, 0], r[:, 1]
        if r.shape[0] <= SMALL_SPLIT:
            small = self._split_small(r)
            if small is not None:
                return small
        if ra.min() < 0 or rb.max() > self.page_starts[-1]:
            raise RowIndexError(f"rows outside column of {self.num_rows} rows")
        pa_ = np.searchsorted(self.page_starts, ra, side="right") - 1
        pb_ = np.searchsorted(self.page_starts, rb - 1, side="right") - 1
        if np.any(pa_ != pb_):
            # split ranges that cross page boundaries
            pieces_a, pieces_b = [], []
            for k in range(ra.size):
                a, b = int(ra[k]), int(rb[k])
                for p in range(int(pa_[k]), int(pb_[k]) + 1):
                    lo = max(a, int(self.page_starts[p]))
                    hi = min(b, int(self.page_starts[p + 1]))
                    if hi > lo:
                        pieces_a.append(lo)
                        pieces_b.append(hi)
            ra = np.asarray(pieces_a, dtype=np.int64)
            rb = np.asarray(pieces_b, dtype=np.int64)
            pa_ = np.searchsorted(self.page_starts, ra, side="right") - 1
        order, first = np.unique(pa_, return_index=True)
        order = order[np.argsort(first)]
        bounds = np.searchsorted(pa_, order, side="left"), np.searchsorted(pa_, order, side="right")
        out = []
        for p, lo, hi in zip(order.tolist(), bounds[0].tolist(), bounds[1].tolist()):
            ps = self.page_starts[p]
            out.append((p, np.stack([ra[lo:hi] - ps, rb[lo:hi] - ps], axis=1)))
        return out

    def encoded_bytes(self) -> int:
        return sum(sum(p.page.buffer_sizes) for p in self.pages)


def make_page(ctx: ColumnContext, page: Any, index: int) -> Any:
    """The page reader for one 2.1/2.2 page (``page.encoding`` is a ``PageLayout``)."""
    layout = page.encoding
    which = layout.WhichOneof("layout") if layout is not None else None
    if which == "mini_block_layout":
        inner = layout.mini_block_layout
        return MiniBlockPage(ctx, page, inner, index, def_translation(tuple(inner.layers), ctx.canon, path=ctx.path))
    if which == "full_zip_layout":
        inner = layout.full_zip_layout
        return FullZipPage(ctx, page, inner, index, def_translation(tuple(inner.layers), ctx.canon, path=ctx.path))
    if which == "all_null_layout":
        inner = layout.all_null_layout
        return ConstantPage(ctx, page, inner, index, def_translation(tuple(inner.layers), ctx.canon, path=ctx.path))
    if which == "blob_layout":
        from lancejit.encoding.v21.blob import BlobPage

        return BlobPage(ctx, page, layout.blob_layout, index, make_page)
    raise CorruptFileError(f"unknown page layout {which!r} in column {ctx.column_index}", path=ctx.path)


class StructuralFieldDecoder(FieldDecoderBase):
    """Decodes one top-level field of a 2.1/2.2 file."""

    def __init__(self, arrow_field: pa.Field, leaves: list[LeafColumn], num_rows: int, path: str) -> None:
        self._field = arrow_field
        self.leaves = leaves
        self._num_rows = num_rows
        self.path = path
        for lc in leaves:
            if lc.num_rows != num_rows:
                raise CorruptFileError(
                    f"column {lc.ctx.column_index} has {lc.num_rows} rows, file has {num_rows}", path=path
                )

    def estimated_bytes_per_row(self) -> float:
        if not self._num_rows:
            return 0.0
        return sum(lc.encoded_bytes() for lc in self.leaves) / self._num_rows

    def _check_range(self, start: int, end: int) -> None:
        """:class:`RowIndexError` unless ``[start, end)`` is a row range of this field."""
        if start < 0 or end > self._num_rows or end < start:
            raise RowIndexError(f"rows [{start}, {end}) outside field of {self._num_rows} rows")

    def _check_indices(self, indices: np.ndarray) -> np.ndarray:
        """``indices`` as int64; :class:`RowIndexError` unless sorted, unique and in range."""
        idx = np.asarray(indices, dtype=np.int64)
        if idx.size == 0:
            return idx
        if idx[0] < 0 or idx[-1] >= self._num_rows:
            raise RowIndexError(f"row index out of range for field of {self._num_rows} rows")
        if idx.size > 1 and np.any(np.diff(idx) <= 0):
            raise RowIndexError("take indices must be sorted and unique")
        return idx

    async def read_range(self, start: int, end: int) -> pa.Array:
        """Rows ``[start, end)`` as one array."""
        self._check_range(start, end)
        if end == start:
            return ab.empty_array(self._field.type)
        return await self._read(np.asarray([[start, end]], dtype=np.int64), end - start)

    async def take(self, indices: np.ndarray) -> pa.Array:
        """Rows at sorted unique ``indices``, in that order."""
        idx = self._check_indices(indices)
        if idx.size == 0:
            return ab.empty_array(self._field.type)
        return await self._read(indices_to_ranges(idx), int(idx.size))

    # -- step generators (the 2.0 decoders' shape) -----------------
    def range_steps(self, start: int, end: int) -> Steps:
        """Step generator for rows ``[start, end)``: yields absolute byte ranges (step 1: page
        metadata not yet loaded or cached, step 2: data, step 3: variable full-zip values
        after their repetition-index entries), receives one buffer per range, and returns
        the Arrow array.  Decoding runs synchronously inside ``send``."""
        self._check_range(start, end)
        if end == start:
            return ab.empty_array(self._field.type)
        return (yield from self._steps(np.asarray([[start, end]], dtype=np.int64), end - start))

    def take_steps(self, indices: np.ndarray) -> Steps:
        """Step generator for the rows at sorted unique ``indices`` (see :meth:`range_steps`)."""
        idx = self._check_indices(indices)
        if idx.size == 0:
            return ab.empty_array(self._field.type)
        return (yield from self._steps(indices_to_ranges(idx), int(idx.size)))

    def _steps(self, ranges: np.ndarray, nrows: int) -> Steps:
        try:
            if len(self.leaves) == 1:
                parts = [(yield from self.leaves[0].read_steps(ranges))]
            else:
                parts = yield from gather_steps([lc.read_steps(ranges) for lc in self.leaves])
            return self._assemble(list(parts), nrows)
        except LanceJitError:
            raise
        except (ValueError, IndexError, TypeError, OverflowError, KeyError, ArithmeticError, struct.error) as exc:
            raise CorruptFileError(
                f"cannot decode field {self._field.name!r} ({type(exc).__name__}: {exc})", path=self.path
            ) from exc

    async def _read(self, ranges: np.ndarray, nrows: int) -> pa.Array:
        try:
            if len(self.leaves) == 1:
                parts = [await self.leaves[0].read(ranges)]
            else:
                parts = await asyncio.gather(*(lc.read(ranges) for lc in self.leaves))
            nbytes = sum(p.values.nbytes for p in parts)
            if nbytes > (1 << 20):
                return await off_loop_if_idle(self._assemble, list(parts), nrows)
            return self._assemble(list(parts), nrows)
        except LanceJitError:
            raise
        except (ValueError, IndexError, TypeError, OverflowError, KeyError, ArithmeticError, struct.error) as exc:
            # Last line of defence: malformed bytes that slipped past the explicit checks.
            raise CorruptFileError(
                f"cannot decode field {self._field.name!r} ({type(exc).__name__}: {exc})", path=self.path
            ) from exc

    def _assemble(self, parts: list[LeafRows], nrows: int) -> pa.Array:
        decoded = []
        for lc, rows in zip(self.leaves, parts):
            nodes = unravel(lc.ctx.canon, rows.rep, rows.deff, rows.num_levels, path=self.path)
            if nodes[-1].count != len(rows.values):
                raise CorruptFileError(
                    f"column {lc.ctx.column_index}: levels need {nodes[-1].count} values, {len(rows.values)} decoded",
                    path=self.path,
                )
            decoded.append((lc.leaf, nodes, rows.values))
        arr = self._build(0, decoded)
        if len(arr) != nrows:
            raise CorruptFileError(f"decoded {len(arr)} rows, {nrows} expected", path=self.path)
        return arr

    def _build(self, i: int, group: list[tuple[LeafPath, list[NodeLevels], pa.Array]]) -> pa.Array:
        leaf, nodes, values = group[0]
        f = leaf.fields[i]
        nl = nodes[i]
        if i == len(leaf.fields) - 1:
            if len(values) != nl.count:
                raise CorruptFileError(f"{len(values)} values for {nl.count} slots", path=self.path)
            return ab.with_validity(values, nl.valid)
        if leaf.kinds[i] == LIST:
            child = self._build(i + 1, group)
            assert nl.offsets is not None  # repdef.unravel gives every LIST node offsets
            try:
                return ab.list_array(f.type, nl.offsets, child, nl.valid)
            except CorruptFileError as exc:
                raise CorruptFileError(str(exc), path=self.path) from None
        t = f.type
        if pa.types.is_fixed_size_list(t):
            child = self._build(i + 1, group)
            return ab.fixed_size_list_array(t, child, nl.count, nl.valid)
        kids = []
        for k in range(t.num_fields):
            sub = [g for g in group if g[0].child_index[i + 1] == k]
            if not sub:
                raise CorruptFileError(f"struct child {k} of {f.name} has no column", path=self.path)
            kids.append(self._build(i + 1, sub))
        return ab.struct_array(t, kids, nl.count, nl.valid)


def _arrow_schema(metadata: Any) -> pa.Schema:
    for attr in ("arrow_schema",):
        s = getattr(metadata, attr, None)
        if isinstance(s, pa.Schema):
            return s
    s = getattr(metadata, "schema", None)
    if isinstance(s, pa.Schema):
        return s
    if s is not None and hasattr(s, "to_arrow"):
        return s.to_arrow()
    raise NotSupportedError("file metadata carries no Arrow schema")


def make_field_decoders(reader: RangeReader, metadata: Any, field_names: list[str]) -> list[StructuralFieldDecoder]:
    """One decoder per top-level field name, for a 2.1/2.2 file.

    ``metadata`` is duck-typed (``lancejit.file.container.FileMetadata``): ``columns``,
    ``arrow_schema`` (or ``schema``), ``num_rows``, ``path``, optional ``cache``, ``file_size``,
    ``version``.
    """
    schema = _arrow_schema(metadata)
    path = str(getattr(metadata, "path", getattr(reader, "path", "")))
    columns = metadata.columns
    first_col: dict[str, int] = {}
    col = 0
    for f in schema:
        first_col.setdefault(f.name, col)
        col += count_columns(f)
    if col != len(columns):
        raise CorruptFileError(f"schema needs {col} columns, file has {len(columns)}", path=path)
    num_rows = int(metadata.num_rows)
    out = []
    for name in field_names:
        idx = schema.get_field_index(name)
        if idx < 0:
            raise NotSupportedError(f"no top-level field {name!r}")
        f = schema.field(idx)
        leaves = []
        for lp in leaf_paths(f, first_col[name]):
            ctx = ColumnContext(
                reader=reader,
                path=path,
                column_index=lp.column,
                canon=canonical_levels(lp.kinds),
                value_type=lp.leaf.type,
                cache=getattr(metadata, "cache", None),
                file_size=int(getattr(metadata, "file_size", 0) or 0),
                version=str(getattr(metadata, "version", "2.1")),
                field_metadata=dict(lp.leaf.metadata or {}),
            )
            leaves.append(LeafColumn(ctx, columns[lp.column], lp))
        out.append(StructuralFieldDecoder(output_field(f), leaves, num_rows, path))
    return out


def output_field(f: pa.Field) -> pa.Field:
    """The Arrow field a read returns for schema field ``f`` (identical to the reference's)."""
    return f
