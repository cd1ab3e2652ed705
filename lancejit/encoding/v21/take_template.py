"""Take indexes of a newly opened 2.1/2.2 file built straight from its page metadata.

A take from a file not opened before needs, per projected column, the segment table of
:class:`~lancejit.encoding.v21.take_index.ColumnTakeIndex`.  The general path builds field
decoders, page readers and chunk tables first (hundreds of Python calls per column).  This
module builds the same indexes without them, for the columns that qualify (one top-level leaf
without repetition whose pages are all mini-block pages with one value buffer and no dictionary,
or all full-zip pages of fixed-width plain values; see ``take_index``):

* what a take needs from a page layout (value kind and width, chunk word size, def-level width,
  FSST table) is derived once per distinct layout message and value type
  (:func:`page_take`): files of one writer share their decoded layouts
  (``lancejit.file.container`` decodes each distinct encoding once), so a new file only
  contributes its buffer positions and chunk words;
* :func:`chunk_ranges` lists the chunk-word buffers of every mini-block page of every column
  (read with ONE ``read_ranges`` call by the caller);
* :func:`build_indexes` parses all those words with a handful of vectorized NumPy calls into
  every column's segments at once.

Anything unusual (a check that fails, an empty page, a layout that does not qualify) returns
None: the caller then takes the general path, which reports the precise error.  Rows are
half-open ``[start, end)``; byte ranges are absolute half-open ``(start, end)`` file positions.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
import pyarrow as pa

from lancejit.encoding.kernels.take_meta import page_segments
from lancejit.encoding.v21.batch import plain_width_bits
from lancejit.encoding.v21.columns import leaf_paths
from lancejit.encoding.v21.miniblock import MAX_CHUNK_VALUES
from lancejit.encoding.v21.repdef import ALL_VALID_ITEM, NULLABLE_ITEM
from lancejit.encoding.v21.take_index import (
    BITPACKED,
    FIXED,
    FSST,
    ColumnTakeIndex,
    _fixed_type_ok,
    _fsst_tables,
    def_width,
    mini_kind,
)

#: The rep/def layers of a top-level item (all valid, or nullable).
_ITEM_LAYERS = ([ALL_VALID_ITEM], [NULLABLE_ITEM])


@dataclass(frozen=True, slots=True)
class PageTake:
    """What a take reads from pages of one layout (independent of buffer positions).

    ``wsize``: bytes per chunk metadata word (2 or 4) of a mini-block page, 0 for a full-zip
    page; ``fixed``: bytes per row of a full-zip page; ``defw``: bit width of the chunks' def
    levels (0: none stored); ``num_items``: values in a mini-block page (-1 for full-zip).
    """

    kind: str
    width: int
    fsst: bytes | None
    wsize: int
    fixed: int
    defw: int
    num_items: int


#: ``(id(layout message), id(value type)) -> (message, value type, PageTake or None)`` (both
#: objects are kept, so their ids are not reused while the entry lives; columns of one type
#: often share one layout message).
_PAGES: dict[tuple[int, int], tuple[Any, pa.DataType, PageTake | None]] = {}
_PAGES_MAX = 4096


def page_take(layout: Any, value_type: pa.DataType) -> PageTake | None:
    """The :class:`PageTake` of pages with the ``PageLayout`` message ``layout`` holding values
    of ``value_type`` (a top-level leaf), or None when the array take path cannot read them
    from metadata alone."""
    key = (id(layout), id(value_type))
    hit = _PAGES.get(key)
    if hit is not None and hit[0] is layout and hit[1] is value_type:
        return hit[2]
    got = _page_take(layout, value_type)
    if len(_PAGES) >= _PAGES_MAX:
        _PAGES.clear()
    _PAGES[key] = (layout, value_type, got)
    return got


def _page_take(layout: Any, value_type: pa.DataType) -> PageTake | None:
    if layout is None:
        return None
    which = layout.WhichOneof("layout")
    if which == "mini_block_layout":
        m = layout.mini_block_layout
        if (m.HasField("rep_compression") or m.HasField("dictionary") or int(m.repetition_index_depth)
                or int(m.num_buffers) != 1 or list(m.layers) not in _ITEM_LAYERS):
            return None
        defw = def_width(m, m.HasField("def_compression"))
        kind = mini_kind(m, False, value_type)
        if defw is None or kind is None:
            return None
        return PageTake(kind[0], kind[1], kind[2], 4 if m.has_large_chunk else 2, 0, defw, int(m.num_items))
    if which == "full_zip_layout":
        z = layout.full_zip_layout
        if int(z.bits_rep) or int(z.bits_def) or z.WhichOneof("details") != "bits_per_value":
            return None
        bits = int(z.bits_per_value)
        if bits <= 0 or bits % 8 or list(z.layers) not in _ITEM_LAYERS:
            return None
        if plain_width_bits(z.value_compression) != bits or not _fixed_type_ok(value_type, bits):
            return None
        return PageTake(FIXED, bits // 8, None, 0, bits // 8, 0, -1)
    return None


@dataclass(frozen=True, slots=True)
class LeafField:
    """A top-level field of a 2.1/2.2 schema stored as one leaf column: ``column`` (its index),
    ``field`` (kept: pyarrow makes new field objects on every lookup, so ``field.type`` is a
    stable key), ``list_size`` (items per row of a fixed-size list, else 0), ``large_offsets``
    (large string/binary)."""

    column: int
    field: pa.Field
    list_size: int
    large_offsets: bool


#: ``id(arrow schema) -> (schema, {field name: LeafField or None}, columns it needs)``.
_SCHEMAS: dict[int, tuple[pa.Schema, dict[str, LeafField | None], int]] = {}
_SCHEMAS_MAX = 64


def leaf_columns(schema: pa.Schema) -> tuple[dict[str, LeafField | None], int]:
    """``({top-level field name: its LeafField, or None when not one leaf column}, columns the
    schema needs)`` of a 2.1/2.2 file (computed once per schema object)."""
    hit = _SCHEMAS.get(id(schema))
    if hit is not None and hit[0] is schema:
        return hit[1], hit[2]
    out: dict[str, LeafField | None] = {}
    col = 0
    for f in schema:
        paths = leaf_paths(f, col)
        if f.name not in out:
            t = f.type
            out[f.name] = LeafField(col, f, t.list_size if pa.types.is_fixed_size_list(t) else 0,
                                    pa.types.is_large_string(t) or pa.types.is_large_binary(t)) if (
                len(paths) == 1 and len(paths[0].fields) == 1) else None
        col += len(paths)
    if len(_SCHEMAS) >= _SCHEMAS_MAX:
        _SCHEMAS.clear()
    _SCHEMAS[id(schema)] = (schema, out, col)
    return out, col


@dataclass(frozen=True, slots=True)
class ColumnsPlan:
    """The qualifying columns of a projection: ``columns`` (column indexes, output order),
    ``fields`` (their :class:`LeafField`), ``pages`` (their ``PageInfo``s), ``takes`` (one
    :class:`PageTake` per page of each)."""

    columns: tuple[int, ...]
    fields: tuple[LeafField, ...]
    pages: tuple[tuple[Any, ...], ...]
    takes: tuple[tuple[PageTake, ...], ...]


def plan_columns(metadata: Any, names: Sequence[str]) -> ColumnsPlan | None:
    """The :class:`ColumnsPlan` of top-level fields ``names`` of a 2.1/2.2 file (``metadata``:
    a ``FileMetadata``), or None unless every one qualifies."""
    cols_of, ncols = leaf_columns(metadata.arrow_schema)
    columns = metadata.columns
    if ncols != len(columns):
        return None
    leaves = []
    for name in names:
        leaf = cols_of.get(name)
        if leaf is None:
            return None
        leaves.append(leaf)
    # a lazily decoded file's columns are decoded together, without being kept (the take
    # table built from them is what the file keeps)
    many = getattr(columns, "peek_many", None)
    infos = many([leaf.column for leaf in leaves]) if many is not None else [columns[x.column] for x in leaves]
    out = []
    for leaf, info in zip(leaves, infos):
        t = leaf.field.type
        pages = info.pages
        if len(pages) == 1:  # (the usual small data file: no per-page loop)
            q = page_take(pages[0].encoding, t)
            if q is None:
                return None
            per: tuple = (q,)
        else:
            per = tuple(page_take(p.encoding, t) for p in pages)
            if not per:
                return None
            first = per[0]
            for q in per:
                if q is None or q.kind != first.kind or q.width != first.width or (
                        (q.wsize == 0) != (first.wsize == 0)):
                    return None
        out.append((leaf.column, leaf, pages, per))
    cols, fields, pages_of, takes = zip(*out) if out else ((), (), (), ())
    return ColumnsPlan(cols, fields, pages_of, takes)


def chunk_ranges(metadata: Any, plan: ColumnsPlan) -> list[tuple[int, int]] | None:
    """Absolute byte ranges of the chunk metadata words of every mini-block page of the plan's
    columns (column order, then page order), or None when a page lacks its buffers."""
    out = []
    for pages, per in zip(plan.pages, plan.takes):
        if per[0].wsize:
            for p in pages:
                off, size = p.buffer_offsets, p.buffer_sizes
                if len(off) < 2:
                    return None
                out.append((off[0], off[0] + size[0]))
    return out


def build_table(metadata: Any, plan: ColumnsPlan, bufs: Sequence[Any]) -> tuple | None:
    """The take table of the columns of ``plan`` given ``bufs``, the buffers of
    :func:`chunk_ranges` (one per range, in order), as the fields of
    :class:`~lancejit.file.take_plan.TakeTable`: ``(indexes, col_base, seg0, seg_key, seg_b0,
    seg_stride, seg_len, seg_szw, seg_count, seg_def)`` (each index's arrays are views of the
    table's); None when a check fails.  One kernel call (:func:`page_segments`) for all pages."""
    return build_tables([(metadata, plan, bufs)])[0]


def build_tables(files: Sequence[tuple[Any, ColumnsPlan, Sequence[Any]]]) -> list[tuple | None]:
    """:func:`build_table` of several files ``(metadata, plan, bufs)`` with ONE kernel call
    for all their pages (one result per file, in order); when some file's words fail a
    check, each file is built alone (its result None)."""
    rows: list[tuple] = []  # the kernel's page table (see page_segments)
    parts = []  # per file: (firsts, pfirst) relative to its own first segment / page
    spans = []  # per file: (first segment, first page)
    raw_pos = nseg = 0
    allbufs: list[Any] = []
    for metadata, plan, bufs in files:
        got = _page_rows(metadata, plan, bufs, raw_pos, rows)
        if got is None:
            if len(files) == 1:
                return [None]
            return [build_table(*f) for f in files]
        firsts, pfirst, nraw = got
        spans.append((nseg, len(rows) - pfirst[-1]))
        parts.append((firsts, pfirst))
        nseg += firsts[-1]
        raw_pos += nraw
        allbufs.extend(bufs)
    raw = np.frombuffer(b"".join(allbufs), dtype=np.uint8)
    out = np.empty((7, nseg), dtype=np.int64)
    if page_segments(raw, np.array(rows, dtype=np.int64), out):
        if len(files) == 1:
            return [None]
        return [build_table(*f) for f in files]
    if len(files) == 1:
        return [_indexes(files[0][0], files[0][1], rows, 0, parts[0][0], parts[0][1], out)]
    # each file's own copy of its segments (a cached table holds no other file's memory)
    return [_indexes(metadata, plan, rows, p0, firsts, pfirst, out[:, s0:s0 + firsts[-1]].copy())
            for (metadata, plan, _), (s0, p0), (firsts, pfirst) in zip(files, spans, parts)]


def _page_rows(metadata: Any, plan: ColumnsPlan, bufs: Sequence[Any], raw_pos: int,
               rows: list) -> tuple[list[int], list[int], int] | None:
    """Append the kernel page rows of one file (its chunk words at ``raw_pos`` of the raw
    buffer) to ``rows``: ``(first segment of every column and the total, first page of every
    column and the total, bytes of words)``, None when a check fails."""
    num_rows = int(metadata.num_rows)
    span = num_rows + 1
    firsts = [0]
    pfirst = [0]
    nseg = bi = raw = 0
    n0 = len(rows)
    for j, (pages, per) in enumerate(zip(plan.pages, plan.takes)):
        r0 = j * span
        maxcount = 1024 if per[0].kind == BITPACKED else MAX_CHUNK_VALUES
        for p, q in zip(pages, per):
            n = p.num_rows
            if n <= 0:
                return None
            if q.wsize:
                size = len(bufs[bi])
                bi += 1
                nw = size // q.wsize
                if nw <= 0 or nw * q.wsize != size or q.num_items != n:
                    return None
                rows.append((q.wsize, raw_pos + raw, nw, n, r0, p.buffer_offsets[1], p.buffer_sizes[1], q.defw, 0,
                             maxcount))
                raw += size
                nseg += nw
            else:
                if not p.buffer_sizes:
                    return None
                rows.append((0, 0, 1, n, r0, p.buffer_offsets[0], p.buffer_sizes[0], 0, q.fixed, 0))
                nseg += 1
            r0 += n
        if r0 != j * span + num_rows:
            return None
        firsts.append(nseg)
        pfirst.append(len(rows) - n0)
    if bi != len(bufs):
        return None
    return firsts, pfirst, raw


def _indexes(metadata: Any, plan: ColumnsPlan, rows: list, p0: int, firsts: list[int], pfirst: list[int],
             out: np.ndarray) -> tuple:
    """The :func:`build_table` result of one file from its segments ``out`` (``(7, n)``) and
    its page rows (``rows[p0:]``)."""
    num_rows = int(metadata.num_rows)
    span = num_rows + 1
    key, b0, stride, length, szw, count, defw = out
    path = metadata.path
    indexes = []
    for j, (c, f, per) in enumerate(zip(plan.columns, plan.fields, plan.takes)):
        q = per[0]
        lo, hi = firsts[j], firsts[j + 1]
        fsst = None
        if q.kind == FSST:
            pages = np.array([r[2] for r in rows[p0 + pfirst[j]:p0 + pfirst[j + 1]]], dtype=np.int64)
            fsst = _fsst_tables([(q.kind, q.width, q.fsst) for q in per], pages, path)
        indexes.append(ColumnTakeIndex(c, num_rows, key[lo:hi] - j * span if j else key[lo:hi], b0[lo:hi],
                                       stride[lo:hi], length[lo:hi], szw[lo:hi], count[lo:hi], q.kind, q.width,
                                       fsst, f.field.type, path, f.list_size, f.large_offsets, defw[lo:hi],
                                       q.defw > 0 if len(per) == 1 else any(x.defw for x in per), None, None))
    col_base = np.arange(len(indexes), dtype=np.int64) * span
    return (tuple(indexes), col_base, tuple(firsts[:-1]), key, b0, stride, length, szw, count, defw)


__all__ = ["ColumnsPlan", "PageTake", "build_table", "build_tables", "chunk_ranges", "leaf_columns", "page_take", "plan_columns"]
