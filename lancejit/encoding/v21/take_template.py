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

from lancejit.encoding.v21.batch import plain_width_bits
from lancejit.encoding.v21.columns import leaf_paths
from lancejit.encoding.v21.miniblock import MAX_CHUNK_VALUES, MINIBLOCK_ALIGN
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


#: ``id(layout message) -> (message, value type, PageTake or None)`` (the message is kept, so
#: its id is not reused while the entry lives).
_PAGES: dict[int, tuple[Any, pa.DataType, PageTake | None]] = {}
_PAGES_MAX = 4096


def page_take(layout: Any, value_type: pa.DataType) -> PageTake | None:
    """The :class:`PageTake` of pages with the ``PageLayout`` message ``layout`` holding values
    of ``value_type`` (a top-level leaf), or None when the array take path cannot read them
    from metadata alone."""
    hit = _PAGES.get(id(layout))
    if hit is not None and hit[0] is layout and (hit[1] is value_type or hit[1] == value_type):
        return hit[2]
    got = _page_take(layout, value_type)
    if len(_PAGES) >= _PAGES_MAX:
        _PAGES.clear()
    _PAGES[id(layout)] = (layout, value_type, got)
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


#: ``id(arrow schema) -> (schema, {field name: its column index or -1}, columns it needs)``.
_SCHEMAS: dict[int, tuple[pa.Schema, dict[str, int], int]] = {}
_SCHEMAS_MAX = 64


def leaf_columns(schema: pa.Schema) -> tuple[dict[str, int], int]:
    """``({top-level field name: its column}, columns the schema needs)`` of a 2.1/2.2 file:
    the column of every field stored as one top-level leaf (-1 for other fields)."""
    hit = _SCHEMAS.get(id(schema))
    if hit is not None and hit[0] is schema:
        return hit[1], hit[2]
    out: dict[str, int] = {}
    col = 0
    for f in schema:
        paths = leaf_paths(f, col)
        if f.name not in out:
            out[f.name] = col if len(paths) == 1 and len(paths[0].fields) == 1 else -1
        col += len(paths)
    if len(_SCHEMAS) >= _SCHEMAS_MAX:
        _SCHEMAS.clear()
    _SCHEMAS[id(schema)] = (schema, out, col)
    return out, col


@dataclass(frozen=True, slots=True)
class ColumnsPlan:
    """The qualifying columns of a projection: ``columns`` (column indexes, output order),
    ``fields`` (their Arrow fields), ``takes`` (one :class:`PageTake` per page of each)."""

    columns: tuple[int, ...]
    fields: tuple[pa.Field, ...]
    takes: tuple[tuple[PageTake, ...], ...]


def plan_columns(metadata: Any, names: Sequence[str]) -> ColumnsPlan | None:
    """The :class:`ColumnsPlan` of top-level fields ``names`` of a 2.1/2.2 file (``metadata``:
    a ``FileMetadata``), or None unless every one qualifies."""
    schema = metadata.arrow_schema
    cols_of, ncols = leaf_columns(schema)
    columns = metadata.columns
    if ncols != len(columns):
        return None
    cols, fields, takes = [], [], []
    for name in names:
        c = cols_of.get(name, -1)
        if c < 0:
            return None
        f = schema.field(name)
        t = f.type
        pages = columns[c].pages
        per = tuple(page_take(p.encoding, t) for p in pages)
        if not per or None in per:
            return None
        first = per[0]
        for q in per:
            if q.kind != first.kind or q.width != first.width or (q.wsize == 0) != (first.wsize == 0):
                return None
        cols.append(c)
        fields.append(f)
        takes.append(per)
    return ColumnsPlan(tuple(cols), tuple(fields), tuple(takes))


def chunk_ranges(metadata: Any, plan: ColumnsPlan) -> list[tuple[int, int]] | None:
    """Absolute byte ranges of the chunk metadata words of every mini-block page of the plan's
    columns (column order, then page order), or None when a page lacks its buffers."""
    out = []
    columns = metadata.columns
    for c, per in zip(plan.columns, plan.takes):
        if per[0].wsize:
            for p in columns[c].pages:
                off, size = p.buffer_offsets, p.buffer_sizes
                if len(off) < 2:
                    return None
                out.append((off[0], off[0] + size[0]))
    return out


def build_indexes(metadata: Any, plan: ColumnsPlan, bufs: Sequence[Any]) -> list[ColumnTakeIndex] | None:
    """The take index of every column of ``plan`` given ``bufs``, the buffers of
    :func:`chunk_ranges` (one per range, in order); None when a check fails."""
    columns = metadata.columns
    num_rows = int(metadata.num_rows)
    path = metadata.path
    # every mini-block page of every column, in the order of chunk_ranges
    page_nw, page_items, page_row0, page_data, page_dsize, page_ws, page_defw = [], [], [], [], [], [], []
    spans = []  # per column: (first page, pages) among the mini-block pages, or full-zip rows
    for c, per in zip(plan.columns, plan.takes):
        pages = columns[c].pages
        r0 = 0
        if per[0].wsize:
            spans.append((len(page_nw), len(pages)))
            for p, q in zip(pages, per):
                nrows = p.num_rows
                if q.num_items != nrows or nrows <= 0:
                    return None
                page_nw.append(len(bufs[len(page_nw)]) // q.wsize)
                page_items.append(nrows)
                page_row0.append(r0)
                page_data.append(p.buffer_offsets[1])
                page_dsize.append(p.buffer_sizes[1])
                page_ws.append(q.wsize)
                page_defw.append(q.defw)
                r0 += nrows
        else:
            rows = []
            for p, q in zip(pages, per):
                nrows = p.num_rows
                if nrows <= 0 or not p.buffer_sizes or q.fixed * nrows > p.buffer_sizes[0]:
                    return None
                rows.append((r0, p.buffer_offsets[0], q.fixed))
                r0 += nrows
            spans.append(rows)
        if r0 != num_rows:
            return None
    seg = _chunk_segments(bufs, page_nw, page_items, page_row0, page_data, page_dsize, page_ws, page_defw)
    if seg is None:
        return None
    row0, b0, length, szw, count, defw, page_first = seg
    out = []
    for j, (c, f, per) in enumerate(zip(plan.columns, plan.fields, plan.takes)):
        q = per[0]
        span = spans[j]
        if q.wsize:
            p0, npages = span
            lo, hi = int(page_first[p0]), int(page_first[p0 + npages])
            parts = (row0[lo:hi], b0[lo:hi], np.zeros(hi - lo, np.int64), length[lo:hi], szw[lo:hi],
                     count[lo:hi], defw[lo:hi])
            if q.kind == BITPACKED and hi > lo and int(parts[5].max()) > 1024:
                return None
            nseg = np.diff(page_first[p0:p0 + npages + 1])
        else:
            r = np.array(span, dtype=np.int64).reshape(-1, 3)
            ones = np.ones(r.shape[0], np.int64)
            parts = (r[:, 0].copy(), r[:, 1].copy(), r[:, 2].copy(), r[:, 2].copy(), 0 * ones, ones,
                     0 * ones)
            nseg = ones
            nxt = np.append(r[1:, 0], num_rows)
            ends = parts[1] + parts[2] * (nxt - parts[0])
            if metadata.file_size and int(ends.max()) > metadata.file_size:
                return None
        fsst = _fsst_tables([(q.kind, q.width, q.fsst) for q in per], nseg, path) if q.kind == FSST else None
        t = f.type
        out.append(ColumnTakeIndex(c, num_rows, *parts[:6], q.kind, q.width, fsst, t, path,
                                   t.list_size if pa.types.is_fixed_size_list(t) else 0,
                                   pa.types.is_large_string(t) or pa.types.is_large_binary(t), parts[6],
                                   bool(parts[6].any()), None, None))
    return out


def _chunk_segments(bufs, page_nw, page_items, page_row0, page_data, page_dsize, page_ws, page_defw):
    """The chunk segments of mini-block pages from their chunk metadata words ``bufs``:
    ``(row0, b0, length, szw, count, defw, page_first)`` (arrays indexed by chunk;
    ``page_first``: each page's first chunk, plus the total), or None when the words do not
    match the pages (wrong length, value counts or byte sizes)."""
    npages = len(page_nw)
    if not npages:
        z = np.zeros(0, np.int64)
        return z, z, z, z, z, z, np.zeros(1, np.int64)
    nw = np.array(page_nw, dtype=np.int64)
    ws = np.array(page_ws, dtype=np.int64)
    if int(nw.min()) <= 0:
        return None
    for b, n, w in zip(bufs, page_nw, page_ws):
        if len(b) != n * w:
            return None
    if int(ws.min()) == int(ws.max()):
        raw = bufs[0] if npages == 1 else b"".join(bufs)
        words = np.frombuffer(raw, dtype="<u2" if page_ws[0] == 2 else "<u4").astype(np.int64)
    else:
        words = np.concatenate([np.frombuffer(b, dtype="<u2" if w == 2 else "<u4").astype(np.int64)
                                for b, w in zip(bufs, page_ws)])
    page_first = np.zeros(npages + 1, dtype=np.int64)
    np.cumsum(nw, out=page_first[1:])
    first, last = page_first[:-1], page_first[1:] - 1
    sizes = ((words >> 4) + 1) * MINIBLOCK_ALIGN
    counts = np.left_shift(1, words & 0xF)
    # the last chunk of a page holds the page's remaining values
    cum = np.zeros(words.size + 1, dtype=np.int64)
    np.cumsum(counts, out=cum[1:])
    rest = np.array(page_items, dtype=np.int64) - (cum[last] - cum[first])
    if int(rest.min()) <= 0 or int(rest.max()) > MAX_CHUNK_VALUES:
        return None
    counts[last] = rest
    np.cumsum(counts, out=cum[1:])
    page_of = np.repeat(np.arange(npages), nw)
    row0 = cum[:-1] - (cum[first] - np.array(page_row0, dtype=np.int64))[page_of]
    bcum = np.zeros(words.size + 1, dtype=np.int64)
    np.cumsum(sizes, out=bcum[1:])
    if np.any(bcum[last + 1] - bcum[first] > np.array(page_dsize, dtype=np.int64)):
        return None
    b0 = bcum[:-1] - (bcum[first] - np.array(page_data, dtype=np.int64))[page_of]
    return (row0, b0, sizes, ws[page_of], counts, np.array(page_defw, dtype=np.int64)[page_of], page_first)


__all__ = ["ColumnsPlan", "PageTake", "build_indexes", "chunk_ranges", "leaf_columns", "page_take", "plan_columns"]
