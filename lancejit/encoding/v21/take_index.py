"""Array take path of 2.1/2.2 columns: per-column segment tables, built once and cached.

A :class:`ColumnTakeIndex` lists, for one leaf column, every *segment* a take can read: each
chunk of its mini-block pages (first row, absolute byte range, value count) and each full-zip
page of fixed-width rows (first row, byte position of row 0, row stride).  It is built when the
column is first taken from (the chunk tables come from :meth:`MiniBlockPage.table`, i.e. the
page metadata read once) and kept in the file's search cache, so a take plans every column
with one kernel (:func:`lancejit.encoding.kernels.take.plan_take`) and decodes each column with
one kernel straight into its output (:func:`take_column`), in request order.

Columns qualify when they hold one leaf without repetition (a nullable item's def levels, when
stored, out-of-line bit-packed) and every page is a mini-block page with one value buffer and no dictionary (values
flat fixed width, inline bit-packed, plain variable or FSST over plain variable, one FSST table
per column) or a full-zip page of fixed-width plain values.  Other columns return ``None`` and
keep the general decoders.  Rows are half-open ``[start, end)``.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from lancejit.core.arrow_compute import take as arrow_take
from lancejit.core.errors import CorruptFileError
from lancejit.encoding.arrow_build import index_array
from lancejit.encoding.kernels import take as kt
from lancejit.encoding.v21.batch import plain_variable_width, plain_width_bits
from lancejit.encoding.v21.fullzip import FullZipPage
from lancejit.encoding.v21.miniblock import MiniBlockPage
from lancejit.encoding.v21.repdef import NULLABLE_ITEM

#: Value kinds of the take path (DICT_*: dictionary indices stored fixed or bit-packed).
FIXED, BITPACKED, VARIABLE, FSST = "fixed", "bitpacked", "variable", "fsst"
DICT_FIXED, DICT_BITPACKED = "dict-fixed", "dict-bitpacked"

_WORDS = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}
_INT32_MAX = (1 << 31) - 1
_MAX = np.maximum.reduce


@dataclass(frozen=True, slots=True)
class ColumnTakeIndex:
    """Segments of one leaf column (arrays indexed by segment, in row order).

    ``row0``: first row; ``b0``: absolute byte position of the segment (chunk start, or the
    full-zip page's row 0); ``stride``: bytes per row for full-zip segments, 0 for chunks;
    ``length``: bytes read per item (the chunk, or one row); ``szw``: chunk buffer-size width
    (2 or 4; 0 = full-zip row); ``count``: values in the chunk (1 for full-zip).
    ``kind``/``width``: value kind and bytes per value (fixed), bits (bit-packed) or offset
    bytes (variable); ``fsst``: the column's symbol table; ``arrow_type``: output type.
    """

    column: int
    num_rows: int
    row0: np.ndarray
    b0: np.ndarray
    stride: np.ndarray
    length: np.ndarray
    szw: np.ndarray
    count: np.ndarray
    kind: str
    width: int
    fsst: Any
    arrow_type: pa.DataType
    path: str
    #: Items per row of a fixed-size-list output type (0: not a list).
    list_size: int = 0
    #: Output offsets are 64-bit (large string/binary).
    large_offsets: bool = False
    #: Per segment: bit width of the chunk's def levels (0 = none stored: every row valid).
    defw: np.ndarray | None = None
    #: Some chunk stores def levels (outputs carry a validity bitmap when nulls are taken).
    nullable: bool = False
    #: Dictionary kinds: every page's dictionary concatenated, and per segment the position of
    #: its page's dictionary in it.
    dictionary: pa.Array | None = None
    seg_dict: np.ndarray | None = None

    def nbytes(self) -> int:
        arrays = (self.row0, self.b0, self.stride, self.length, self.szw, self.count, self.defw, self.seg_dict)
        n = sum(int(a.nbytes) for a in arrays if a is not None) + 512
        if self.dictionary is not None:
            n += self.dictionary.nbytes
        return n


def _fixed_type_ok(t: pa.DataType, bits: int) -> bool:
    if pa.types.is_fixed_size_list(t):
        child = t.value_type
        return _primitive(child) and child.bit_width * t.list_size == bits
    return _primitive(t) and t.bit_width == bits


def _primitive(t: pa.DataType) -> bool:
    if pa.types.is_boolean(t) or pa.types.is_dictionary(t) or isinstance(t, pa.ExtensionType):
        return False
    return (pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_temporal(t)
            or pa.types.is_decimal(t))


def _binary_type(t: pa.DataType) -> bool:
    return (pa.types.is_string(t) or pa.types.is_binary(t) or pa.types.is_large_string(t)
            or pa.types.is_large_binary(t))


def _def_width(page: Any) -> int | None:
    """Bit width of a mini-block page's def levels (0: none stored), or None when the take
    path cannot read them (see :func:`def_width`)."""
    return def_width(page.layout, page.has_def)


def def_width(layout: Any, has_def: bool) -> int | None:
    """Bit width of the def levels of a mini-block page with ``layout`` (0: none stored), or
    None when the take path cannot read them: only a nullable top-level item (one layer) with
    out-of-line bit-packed 16-bit levels qualifies."""
    if not has_def:
        return 0
    if list(layout.layers) != [NULLABLE_ITEM]:
        return None
    enc = layout.def_compression
    if enc.WhichOneof("compression") != "out_of_line_bitpacking":
        return None
    ool = enc.out_of_line_bitpacking
    v = ool.values
    if int(ool.uncompressed_bits_per_value) != 16 or v.WhichOneof("compression") != "flat":
        return None
    if v.flat.HasField("data") and v.flat.data.scheme:
        return None
    width = int(v.flat.bits_per_value)
    return width if 1 <= width <= 16 else None


def _page_kind(page: Any, value_type: pa.DataType) -> tuple[str, int, Any] | None:
    """``(kind, width, fsst symbol table bytes)`` of a page the take path reads, else None."""
    if isinstance(page, FullZipPage):
        if page.has_rep or page.cw != 0 or page.fixed <= 0 or page.use_index:
            return None
        bits = plain_width_bits(page.layout.value_compression)
        if bits is None or bits != page.fixed * 8 or not _fixed_type_ok(value_type, bits):
            return None
        return FIXED, page.fixed, None
    if not isinstance(page, MiniBlockPage):
        return None
    if page.has_rep or page.rep_depth or page.num_buffers != 1 or _def_width(page) is None:
        return None
    return mini_kind(page.layout, page.has_dict, value_type)


def mini_kind(layout: Any, has_dict: bool, value_type: pa.DataType) -> tuple[str, int, Any] | None:
    """``(kind, width, fsst symbol table bytes)`` of the values of a mini-block page with
    ``layout`` (one value buffer, no repetition) that the take path reads, else None."""
    enc = layout.value_compression
    bits = plain_width_bits(enc)
    if has_dict:
        if pa.types.is_dictionary(value_type) or isinstance(value_type, pa.ExtensionType):
            return None
        if bits is not None and bits in _WORDS and enc.WhichOneof("compression") == "flat":
            return DICT_FIXED, bits, None
        if enc.WhichOneof("compression") == "inline_bitpacking":
            ib = enc.inline_bitpacking
            ubits = int(ib.uncompressed_bits_per_value)
            if not (ib.HasField("values") and ib.values.scheme) and ubits in _WORDS:
                return DICT_BITPACKED, ubits, None
        return None
    if bits is not None:
        if bits % 8 or not _fixed_type_ok(value_type, bits):
            return None
        return FIXED, bits // 8, None
    kind = enc.WhichOneof("compression")
    if kind == "inline_bitpacking":
        ib = enc.inline_bitpacking
        ubits = int(ib.uncompressed_bits_per_value)
        if (ib.HasField("values") and ib.values.scheme) or ubits not in _WORDS:
            return None
        if not _fixed_type_ok(value_type, ubits) or pa.types.is_fixed_size_list(value_type):
            return None
        return BITPACKED, ubits, None
    if not _binary_type(value_type):
        return None
    width = plain_variable_width(enc)
    if width is not None:
        return VARIABLE, width, None
    if kind == "fsst":
        width = plain_variable_width(enc.fsst.values)
        if width is not None:
            return FSST, width, bytes(enc.fsst.symbol_table)
    return None


async def build_column_index(decoder: Any) -> ColumnTakeIndex | None:
    """The take index of a 2.1/2.2 field decoder's column (cached in the file's search cache),
    or None when the field does not qualify (see the module docstring)."""
    leaves = getattr(decoder, "leaves", None)
    if not leaves or len(leaves) != 1:
        return None
    lc = leaves[0]
    if lc.row_scale != 1 or len(lc.leaf.fields) != 1 or lc.ctx.canon.max_rep > 0:
        return None
    if lc.ctx.value_type != decoder.field.type:
        return None
    ctx = lc.ctx
    key = ("v21-take-index", ctx.column_index)
    cached = ctx.cache_get(key)
    if cached is not None:
        return cached
    found = [_page_kind(p, ctx.value_type) for p in lc.pages]
    kinds = [k for k in found if k is not None]
    if not found or len(kinds) != len(found):
        return None
    if len({(k[0], k[1]) for k in kinds}) != 1:
        return None  # pages of different value encodings
    kind, width, _ = kinds[0]
    mini = [p for p in lc.pages if isinstance(p, MiniBlockPage)]
    tables = await asyncio.gather(*(p.table() for p in mini)) if len(mini) > 1 else (
        [await mini[0].table()] if mini else [])
    by_page = dict(zip((id(p) for p in mini), tables))
    parts = []
    dicts: list[pa.Array] = []
    starts = lc.page_starts
    for i, page in enumerate(lc.pages):
        r0 = int(starts[i])
        if isinstance(page, FullZipPage):
            parts.append((np.array([r0]), np.array([page.data_off]), np.array([page.fixed]),
                          np.array([page.fixed]), np.zeros(1, np.int64), np.ones(1, np.int64),
                          np.zeros(1, np.int64)))
            continue
        t = by_page[id(page)]
        if kind in (BITPACKED, DICT_BITPACKED) and t.counts.size and int(t.counts.max()) > 1024:
            return None
        if kind in (DICT_FIXED, DICT_BITPACKED):
            if t.dictionary is None or len(t.dictionary) == 0:
                return None
            dicts.append(t.dictionary)
        n = t.counts.size
        base = int(page.page.buffer_offsets[1])
        if n and int(t.counts.min()) <= 0:
            return None
        parts.append((t.first_row + r0, t.offsets + base, np.zeros(n, np.int64), t.sizes,
                      np.full(n, 4 if page.large else 2, np.int64), t.counts,
                      np.full(n, _def_width(page), np.int64)))
    cols = [np.concatenate([p[i] for p in parts]).astype(np.int64) for i in range(7)]
    row0, b0, stride, length, szw, count, defw = cols
    path = ctx.path
    if row0.size == 0 or row0[0] != 0:
        return None
    nxt = np.append(row0[1:], lc.num_rows)
    ends = np.where(stride > 0, b0 + stride * (nxt - row0), b0 + length)
    if int(b0.min()) < 0 or (ctx.file_size and int(ends.max()) > ctx.file_size):
        raise CorruptFileError(f"column {ctx.column_index}: pages outside the file", path=path)
    fsst = None
    if kind == FSST:
        fsst = _fsst_tables(kinds, np.array([p[0].size for p in parts], dtype=np.int64), path)
    dictionary = seg_dict = None
    if dicts:
        dictionary = dicts[0] if len(dicts) == 1 else pa.concat_arrays(dicts)
        dict_base = np.cumsum([0] + [len(d) for d in dicts[:-1]]).astype(np.int64)
        seg_dict = np.repeat(dict_base, np.array([p[0].size for p in parts], dtype=np.int64))
    t = decoder.field.type
    index = ColumnTakeIndex(ctx.column_index, lc.num_rows, row0, b0, stride, length, szw, count, kind,
                            width, fsst, t, path, t.list_size if pa.types.is_fixed_size_list(t) else 0,
                            pa.types.is_large_string(t) or pa.types.is_large_binary(t), defw,
                            bool(defw.any()), dictionary, seg_dict)
    ctx.cache_put(key, index, index.nbytes())
    return index


@dataclass(frozen=True, slots=True)
class FsstTables:
    """The FSST symbol tables of a column's pages: ``words``/``lens`` ``(tables, 256)`` uint64
    (each code's symbol as a little-endian word, its length; 0 = escape or invalid),
    ``enabled`` per table, and ``seg_tab``: the table of each segment."""

    words: np.ndarray
    lens: np.ndarray
    enabled: np.ndarray
    seg_tab: np.ndarray


def _fsst_tables(kinds: list[tuple[str, int, Any]], segs_per_page: np.ndarray, path: str) -> FsstTables:
    from lancejit.encoding.v21.fsst import parse_symbol_table

    ids: dict[bytes, int] = {}
    words, lens, enabled = [], [], []
    page_tab = []
    for (_, _, raw) in kinds:
        tab = ids.get(raw)
        if tab is None:
            t = parse_symbol_table(raw, path=path)
            ln = t.sym_lens.astype(np.uint64)
            ln[min(t.n_symbols, 255):] = 0
            words.append(np.ascontiguousarray(t.sym_bytes).view("<u8").reshape(256))
            lens.append(ln)
            enabled.append(t.enabled)
            tab = ids[raw] = len(words) - 1
        page_tab.append(tab)
    seg_tab = np.repeat(np.asarray(page_tab, dtype=np.int64), segs_per_page)
    return FsstTables(np.stack(words).astype(np.uint64), np.stack(lens), np.asarray(enabled, dtype=np.bool_), seg_tab)


def take_column(index: ColumnTakeIndex, data: np.ndarray, item_pos: np.ndarray, item_in: np.ndarray,
                item_seg: np.ndarray, seg_szw: np.ndarray, seg_len: np.ndarray,
                seg_count: np.ndarray, seg_def: np.ndarray, seg0: int) -> pa.Array:
    """The rows of one column's items (request order) as an Arrow array.

    ``data``: the concatenated read ranges; ``item_*``: this column's slice of the plan;
    ``seg_*``: the combined segment table the plan indexes; ``seg0``: the column's first
    segment in it.
    """
    k = item_pos.size
    kind, w, t = index.kind, index.width, index.arrow_type
    validity = valid = None
    if index.nullable:
        validity, valid = _validity(index, data, item_pos, item_in, item_seg, seg_szw, seg_len, seg_count,
                                    seg_def)
    if kind == DICT_FIXED or kind == DICT_BITPACKED:
        return _take_dictionary(index, data, item_pos, item_in, item_seg, seg_szw, seg_len, seg_count, seg_def,
                                seg0, validity, valid)
    if kind == FIXED:
        out = np.empty(k * w, dtype=np.uint8)
        err = kt.take_fixed(data, item_pos, item_in, item_seg, seg_szw, seg_len, seg_def, w, out)
        if err:
            _fail(err, index)
        if index.list_size:
            child = pa.Array.from_buffers(t.value_type, k * index.list_size, [None, pa.py_buffer(out)])
            return pa.Array.from_buffers(t, k, [validity], children=[child])
        return pa.Array.from_buffers(t, k, [validity, pa.py_buffer(out)])
    if kind == BITPACKED:
        buf = np.empty(2049 + k, dtype=_WORDS[w])  # staging words, unpacked chunk, output
        tmpw, out = buf[:1025], buf[2049:]
        err = kt.take_bitpacked(data, item_pos, item_in, item_seg, seg_szw, seg_len, seg_count, seg_def, tmpw,
                                tmpw.view(np.uint8), buf[1025:2049], out)
        if err:
            _fail(err, index)
        return pa.Array.from_buffers(t, k, [validity, pa.py_buffer(out)])
    spans = np.empty(3 * k + 1, dtype=np.int64)  # starts, ends, then the k + 1 output offsets
    starts, ends, offsets = spans[:k], spans[k:2 * k], spans[2 * k:]
    nbytes = kt.take_spans(data, item_pos, item_in, item_seg, seg_szw, seg_len, seg_count, seg_def, w, starts,
                           ends)
    if nbytes < 0:
        _fail(-nbytes, index)
    if kind == VARIABLE:
        values = np.empty(nbytes, dtype=np.uint8)
        kt.copy_spans(data, starts, ends, offsets, values)
    else:
        tabs = index.fsst
        values = np.empty(8 * nbytes + 8, dtype=np.uint8)
        _, bad = kt.fsst_take(data, starts, ends, item_seg, seg0, tabs.seg_tab, tabs.words, tabs.lens,
                              tabs.enabled, offsets, values)
        if bad >= 0:
            raise CorruptFileError(f"FSST value {bad} uses an unknown code or ends in an escape", path=index.path)
    if not index.large_offsets:
        if offsets[-1] > _INT32_MAX:
            raise CorruptFileError("taken values exceed 2 GiB for a 32-bit-offset type", path=index.path)
        offsets = offsets.astype(np.int32)
    return pa.Array.from_buffers(t, k, [validity, pa.py_buffer(offsets), pa.py_buffer(values)])


def _validity(index: ColumnTakeIndex, data: np.ndarray, item_pos: np.ndarray, item_in: np.ndarray,
              item_seg: np.ndarray, seg_szw: np.ndarray, seg_len: np.ndarray, seg_count: np.ndarray,
              seg_def: np.ndarray) -> tuple[pa.Buffer, np.ndarray] | tuple[None, None]:
    """The items' validity bitmap and a uint8 per item (1 = valid), or (None, None) when all
    are valid."""
    k = item_pos.size
    words = np.empty(1024 + 1024, dtype=np.uint16)  # staging block, unpacked block
    valid = np.empty(k, dtype=np.uint8)
    nulls = kt.take_valid(data, item_pos, item_in, item_seg, seg_szw, seg_len, seg_count, seg_def,
                          words[:1024], words[:1024].view(np.uint8), words[1024:], valid)
    if nulls < 0:
        _fail(kt.TAKE_BAD_CHUNK, index)
    if nulls == 0:
        return None, None
    return pa.py_buffer(np.packbits(valid, bitorder="little")), valid


def _take_dictionary(index: ColumnTakeIndex, data: np.ndarray, item_pos: np.ndarray, item_in: np.ndarray,
                     item_seg: np.ndarray, seg_szw: np.ndarray, seg_len: np.ndarray, seg_count: np.ndarray,
                     seg_def: np.ndarray, seg0: int, validity: pa.Buffer | None,
                     valid: np.ndarray | None) -> pa.Array:
    """Dictionary pages: decode each item's index like values, then take from the dictionary."""
    assert index.dictionary is not None and index.seg_dict is not None  # set for dictionary kinds
    k = item_pos.size
    bits = index.width
    if index.kind == DICT_BITPACKED:
        dt = _WORDS[bits]
        buf = np.empty(2049 + k, dtype=dt)
        tmpw = buf[:1025]
        err = kt.take_bitpacked(data, item_pos, item_in, item_seg, seg_szw, seg_len, seg_count, seg_def, tmpw,
                                tmpw.view(np.uint8), buf[1025:2049], buf[2049:])
        raw = buf[2049:]
    else:
        out = np.empty(k * (bits // 8), dtype=np.uint8)
        err = kt.take_fixed(data, item_pos, item_in, item_seg, seg_szw, seg_len, seg_def, bits // 8, out)
        raw = out.view(_WORDS[bits])
    if err:
        _fail(err, index)
    idx = raw.astype(np.int64)
    idx += index.seg_dict[item_seg - seg0]
    if valid is not None:
        idx[valid == 0] = 0  # null rows store arbitrary indices
    dictionary = index.dictionary
    if k and int(_MAX(idx)) >= len(dictionary):
        raise CorruptFileError(f"column {index.column}: dictionary index out of range", path=index.path)
    taken = arrow_take(dictionary, index_array(idx))
    if validity is None:
        return taken
    return pa.Array.from_buffers(index.arrow_type, k, [validity, *taken.buffers()[1:]])


def _fail(err: int, index: ColumnTakeIndex) -> None:
    what = {kt.TAKE_BAD_CHUNK: "a chunk shorter than its values",
            kt.TAKE_BAD_OFFSETS: "value offsets out of order or out of bounds",
            kt.TAKE_BAD_WIDTH: "an invalid bit width"}.get(err, "a malformed chunk")
    raise CorruptFileError(f"column {index.column}: {what}", path=index.path)


__all__ = ["ColumnTakeIndex", "build_column_index", "take_column"]
