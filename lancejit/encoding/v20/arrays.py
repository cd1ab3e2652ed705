"""Decoders for one 2.0 page: one class per ``lance.encodings.ArrayEncoding`` variant.

Every decoder offers ``decode(ranges)``: a step generator (see :mod:`.steps`) that reads the
half-open row ranges ``[start, end)`` (page-local rows, sorted, non-overlapping) and returns one
:mod:`.blocks` block holding those rows back to back.  Byte positions are absolute file offsets.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import pyarrow as pa

from lancejit.core.arrow_compute import take as arrow_take
from lancejit.core.bounds import claim_items
from lancejit.core.errors import CorruptFileError, NotSupportedError
from lancejit.encoding.v20 import blocks as B
from lancejit.encoding.v20.compression import FsstTable, decompress_buffer
from lancejit.encoding.kernels import readonly
from lancejit.encoding.kernels.v20_offsets import decode_end_offsets
from lancejit.encoding.v20.rowranges import EMPTY, bits_from_ranges, read_gathered, total
from lancejit.encoding.v20.steps import Steps, gather

#: Row ranges: a ``(k, 2)`` int64 array of half-open ``[start, end)`` rows (see ``rowranges``).
Ranges = np.ndarray

_PAGE, _COLUMN, _FILE = 0, 1, 2


class PageContext:
    """Where the buffers of one page are: page buffers and column buffers as (position, size)."""

    __slots__ = ("path", "page_buffers", "column_buffers", "cache", "cache_key")

    def __init__(self, path: str, page_buffers: Sequence[tuple[int, int]], column_buffers: Sequence[tuple[int, int]],
                 cache=None, cache_key=None) -> None:
        self.path = path
        self.page_buffers = list(page_buffers)
        self.column_buffers = list(column_buffers)
        #: the file's ``FileCache`` (``get``/``put``) for decoded page state, and this page's key
        self.cache = cache
        self.cache_key = cache_key

    def buffer(self, buf) -> tuple[int, int]:
        """(position, size) of an ``encodings.Buffer`` reference."""
        table = self.page_buffers if buf.buffer_type == _PAGE else self.column_buffers if buf.buffer_type == _COLUMN else None
        if table is None:
            raise NotSupportedError("2.0 file-level buffer references are not supported")
        if buf.buffer_index >= len(table):
            raise CorruptFileError(f"buffer index {buf.buffer_index} outside the page's {len(table)} buffers", path=self.path)
        return table[buf.buffer_index]

    def corrupt(self, msg: str) -> CorruptFileError:
        return CorruptFileError(msg, path=self.path)


total_rows = total


def concat_views(bufs: Sequence[memoryview]) -> np.ndarray:
    """The buffers back to back as one uint8 array."""
    if len(bufs) == 1:
        return np.frombuffer(bufs[0], dtype=np.uint8)
    if not bufs:
        return np.zeros(0, dtype=np.uint8)
    return np.frombuffer(b"".join(bufs), dtype=np.uint8)


def as_u64(block: B.Block, ctx: PageContext) -> np.ndarray:
    """Values of a (possibly no-null ``Nullable``) fixed-width integer block as uint64."""
    if isinstance(block, B.Nullable):
        block = block.inner
    if not isinstance(block, B.Fixed) or block.bits not in (8, 16, 32, 64):
        raise ctx.corrupt("offsets/indices are not 8/16/32/64-bit integers")
    dt = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}[block.bits]
    return block.data[: block.n * block.bits // 8].view(dt).astype(np.uint64, copy=False)


# --------------------------------------------------------------------------------------------
class ArrayDecoder:
    """Base class: ``decode(ranges)`` -> step generator returning a block."""

    def decode(self, ranges: Ranges) -> Steps:  # pragma: no cover - interface
        raise NotImplementedError


class FlatDecoder(ArrayDecoder):
    """``Flat``: fixed-width little-endian values (``bits_per_value`` a multiple of 8) or an
    LSB-first bitmap (1 bit), optionally whole-buffer compressed."""

    def __init__(self, enc, ctx: PageContext) -> None:
        self.ctx = ctx
        self.bits = int(enc.bits_per_value)
        self.pos, self.size = ctx.buffer(enc.buffer)
        self.scheme = enc.compression.scheme if enc.HasField("compression") else ""
        if self.scheme in ("none",):
            self.scheme = ""
        if self.bits != 1 and (self.bits == 0 or self.bits % 8):
            if not self.scheme:  # values the buffer cannot hold one of are corrupt, not unsupported
                claim_items(1, self.bits, self.size, "a 2.0 flat value", ctx.path)
            raise NotSupportedError(f"2.0 flat encoding with {self.bits} bits per value")

    def decode(self, ranges: Ranges) -> Steps:
        n = total_rows(ranges)
        s, e = ranges[:, 0], ranges[:, 1]
        if self.bits == 1:
            bs, be = s // 8, (e + 7) // 8
        else:
            w = self.bits // 8
            bs, be = s * w, e * w
        if self.scheme:
            (buf,) = yield [(self.pos, self.pos + self.size)]
            raw = decompress_buffer(self.scheme, buf, path=self.ctx.path)
            if len(be) and int(be.max()) > len(raw):
                raise self.ctx.corrupt("row range past the end of a decompressed buffer")
            if len(bs) == 1:
                data = raw[int(bs[0]) : int(be[0])]
            else:
                data = np.concatenate([raw[a:b] for a, b in zip(bs.tolist(), be.tolist())]) if len(bs) else raw[:0]
        else:
            if len(be) and int(be.max()) > self.size:
                raise self.ctx.corrupt(f"row range needs {int(be.max())} bytes of a {self.size}-byte buffer")
            data = yield from read_gathered(bs + self.pos, be + self.pos)
        if self.bits == 1:
            lens = be - bs
            starts = np.cumsum(lens) - lens
            bits = bits_from_ranges(data, starts, s % 8, e - s)
            return B.Fixed(bits, 1, n)
        return B.Fixed(data, self.bits, n)


class NullableDecoder(ArrayDecoder):
    """``Nullable``: no nulls / some nulls (validity bitmap + values) / all nulls."""

    def __init__(self, enc, ctx: PageContext, typ: pa.DataType) -> None:
        kind = enc.WhichOneof("nullability")
        self.kind = kind
        if kind == "no_nulls":
            self.values = make_decoder(enc.no_nulls.values, ctx, typ)
        elif kind == "some_nulls":
            self.validity = make_decoder(enc.some_nulls.validity, ctx, pa.bool_())
            self.values = make_decoder(enc.some_nulls.values, ctx, typ)
        elif kind != "all_nulls":
            raise ctx.corrupt("nullable encoding without a nullability")
        self.ctx = ctx

    def decode(self, ranges: Ranges) -> Steps:
        if self.kind == "no_nulls":
            return (yield from self.values.decode(ranges))
        if self.kind == "all_nulls":
            return B.AllNull(total_rows(ranges))
        validity, values = yield from gather([self.validity.decode(ranges), self.values.decode(ranges)])
        if not isinstance(validity, B.Fixed) or validity.bits != 1:
            raise self.ctx.corrupt("validity is not a bitmap")
        return B.Nullable(validity.data, values)


def normalize_end_offsets(
    vals: np.ndarray, ranges: Ranges, adjustment: int, ctx: PageContext
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Decode 2.0 end offsets with a null adjustment (binary indices, list offsets).

    ``vals`` holds, for each row range ``[s, e)`` in order, the stored values of rows
    ``s-1 .. e-1`` (rows ``0 .. e-1`` when ``s == 0``: the start before row 0 is 0).
    A stored value ``v >= adjustment`` marks a null row whose end is ``v - adjustment``.
    Returns ``(lengths, validity, firsts, lasts)``: per-row lengths (int64), validity (bool) and
    the ``[first, last)`` span of every range in the page's value space.
    """
    k = len(ranges)
    rows = np.ascontiguousarray(ranges[:, 1] - ranges[:, 0])
    implicit = bool(k and ranges[0, 0] == 0)
    n = int(rows.sum())
    if len(vals) != n + k - int(implicit):
        raise ctx.corrupt("offsets read do not match the rows requested")
    lengths = np.empty(n, dtype=np.int64)
    validity = np.empty(n, dtype=np.bool_)
    firsts = np.empty(k, dtype=np.int64)
    lasts = np.empty(k, dtype=np.int64)
    if adjustment < 0 or adjustment >= 1 << 64:
        raise ctx.corrupt("null adjustment out of range")
    bad = decode_end_offsets(
        readonly(vals, np.uint64), readonly(rows, np.int64), k, implicit, np.uint64(adjustment),
        lengths, validity, firsts, lasts,
    )
    if bad >= 0:
        raise ctx.corrupt("end offsets decrease")
    if k and (firsts.min() < 0 or lasts.min() < 0):
        raise ctx.corrupt("end offsets past 2^63")
    return lengths, validity, firsts, lasts


class BinaryDecoder(ArrayDecoder):
    """``Binary``: u64 end offsets (no leading 0, null rows stored + ``null_adjustment``) and a
    bytes buffer.  Two steps: offsets, then the byte spans of the requested rows."""

    def __init__(self, enc, ctx: PageContext) -> None:
        self.ctx = ctx
        self.indices = make_decoder(enc.indices, ctx, pa.uint64())
        self.bytes = make_decoder(enc.bytes, ctx, pa.uint8())
        self.adjustment = int(enc.null_adjustment)

    def decode(self, ranges: Ranges) -> Steps:
        if len(ranges) == 0:
            return B.Var(np.zeros(1, np.int64), np.zeros(0, np.uint8))
        idx_ranges = ranges.copy()
        idx_ranges[:, 0] = np.maximum(ranges[:, 0] - 1, 0)
        idx_block = yield from self.indices.decode(idx_ranges)
        vals = as_u64(idx_block, self.ctx)
        lengths, validity, firsts, lasts = normalize_end_offsets(vals, ranges, self.adjustment, self.ctx)
        nonempty = lasts > firsts
        byte_ranges = np.stack([firsts[nonempty], lasts[nonempty]], axis=1)
        if len(byte_ranges):
            data_block = yield from self.bytes.decode(byte_ranges)
            if not isinstance(data_block, B.Fixed) or data_block.bits != 8:
                raise self.ctx.corrupt("binary bytes are not a byte buffer")
            data = data_block.data
        else:
            data = np.zeros(0, np.uint8)
        offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        if offsets[-1] != len(data):
            raise self.ctx.corrupt("binary offsets do not match the bytes read")
        var = B.Var(offsets, data)
        return var if validity.all() else B.Nullable(validity, var)


class DictionaryDecoder(ArrayDecoder):
    """``Dictionary``: per-page indices and items.

    For a plain (non-dictionary) Arrow type the indices are 1-based with 0 = null and the result
    is the looked-up values; for an Arrow dictionary type indices and items are returned as a
    ``DictionaryArray``.  The decoded items are kept after the first read of the page (in the
    file's cache when there is one, else on the decoder).
    """

    def __init__(self, enc, ctx: PageContext, typ: pa.DataType) -> None:
        self.ctx = ctx
        self.typ = typ
        self.is_arrow_dict = pa.types.is_dictionary(typ)
        index_type = typ.index_type if self.is_arrow_dict else pa.uint8()
        value_type = typ.value_type if self.is_arrow_dict else typ
        self.index_type = index_type
        self.value_type = value_type
        self.indices = make_decoder(enc.indices, ctx, index_type)
        self.items = make_decoder(enc.items, ctx, value_type)
        self.num_items = int(enc.num_dictionary_items)
        self._items: pa.Array | None = None

    def _cached(self) -> pa.Array | None:
        if self._items is not None:
            return self._items
        if self.ctx.cache is not None and self.ctx.cache_key is not None:
            return self.ctx.cache.get(("v20-dictionary", self.ctx.cache_key))
        return None

    def _keep(self, items: pa.Array) -> None:
        if self.ctx.cache is not None and self.ctx.cache_key is not None:
            self.ctx.cache.put(("v20-dictionary", self.ctx.cache_key), items, items.nbytes + 64)
        else:
            self._items = items

    def decode(self, ranges: Ranges) -> Steps:
        items = self._cached()
        if items is None:
            whole = np.array([[0, self.num_items]], np.int64) if self.num_items else EMPTY
            idx_block, items_block = yield from gather([self.indices.decode(ranges), self.items.decode(whole)])
            items = B.to_arrow(items_block, self.value_type, path=self.ctx.path)
            if len(items) != self.num_items:
                raise self.ctx.corrupt("dictionary decoded to the wrong number of items")
            self._keep(items)
        else:
            idx_block = yield from self.indices.decode(ranges)
        if self.is_arrow_dict:
            indices = B.to_arrow(idx_block, self.index_type, path=self.ctx.path)
            valid_idx = indices.drop_null().to_numpy(zero_copy_only=False)
            if len(valid_idx) and (valid_idx.min() < 0 or valid_idx.max() >= len(items)):
                raise self.ctx.corrupt("dictionary index out of range")
            return B.ArrowBlock(pa.DictionaryArray.from_arrays(indices, items))
        validity = None
        if isinstance(idx_block, B.Nullable):
            validity = idx_block.validity
        raw = as_u64(idx_block, self.ctx).astype(np.int64)
        if len(raw) and raw.max() > len(items):
            raise self.ctx.corrupt("dictionary index out of range")
        null = raw == 0
        if validity is not None:
            null |= ~validity
        take = np.where(null, 0, raw - 1)
        out = arrow_take(items, pa.array(take, mask=null)) if len(items) else pa.nulls(len(take), self.value_type)
        return B.ArrowBlock(out)


class FslDecoder(ArrayDecoder):
    """``FixedSizeList``: ``dimension`` items per row, items decoded by the inner encoding."""

    def __init__(self, enc, ctx: PageContext, typ: pa.DataType) -> None:
        if not pa.types.is_fixed_size_list(typ):
            raise ctx.corrupt(f"fixed-size list encoding for Arrow type {typ}")
        self.dim = int(enc.dimension)
        if self.dim != typ.list_size:
            raise ctx.corrupt(f"fixed-size list dimension {self.dim} but the schema says {typ.list_size}")
        self.items = make_decoder(enc.items, ctx, typ.value_type)

    def decode(self, ranges: Ranges) -> Steps:
        d = self.dim
        child = yield from self.items.decode(ranges * d)
        return B.Fsl(child, d, total_rows(ranges))


def _child_width(typ: pa.DataType, ctx: PageContext) -> int:
    w = B.fixed_byte_width(typ)
    if w is None:
        raise NotSupportedError(f"packed struct child of type {typ}")
    return w


class PackedStructDecoder(ArrayDecoder):
    """``PackedStruct``: fixed-width children stored row-major in one buffer."""

    def __init__(self, enc, ctx: PageContext, typ: pa.DataType) -> None:
        if not pa.types.is_struct(typ):
            raise ctx.corrupt(f"packed struct encoding for Arrow type {typ}")
        self.ctx = ctx
        self.typ = typ
        self.widths = [_child_width(typ.field(i).type, ctx) for i in range(typ.num_fields)]
        self.row_bytes = sum(self.widths)
        self.pos, self.size = ctx.buffer(enc.buffer)

    def decode(self, ranges: Ranges) -> Steps:
        n = total_rows(ranges)
        rb = self.row_bytes
        if len(ranges) and int(ranges[:, 1].max()) * rb > self.size:
            raise self.ctx.corrupt("packed struct rows past the end of the buffer")
        data = (yield from read_gathered(ranges[:, 0] * rb + self.pos, ranges[:, 1] * rb + self.pos)) if len(ranges) else np.zeros(0, np.uint8)
        data = data.reshape(n, rb) if rb else np.zeros((n, 0), np.uint8)
        children = []
        col = 0
        for i, w in enumerate(self.widths):
            part = np.ascontiguousarray(data[:, col : col + w]).reshape(-1)
            col += w
            children.append(B.ArrowBlock(B.to_arrow(B.Fixed(part, 8 * w, n), self.typ.field(i).type, path=self.ctx.path)))
        return B.Struct(tuple(children), n)


class FsstDecoder(ArrayDecoder):
    """``Fsst``: an inner binary encoding whose bytes are FSST-compressed per value."""

    def __init__(self, enc, ctx: PageContext, typ: pa.DataType) -> None:
        self.ctx = ctx
        self.inner = make_decoder(enc.binary, ctx, typ)
        self.table = FsstTable(bytes(enc.symbol_table), path=ctx.path)

    def decode(self, ranges: Ranges) -> Steps:
        block = yield from self.inner.decode(ranges)
        validity = None
        if isinstance(block, B.Nullable):
            validity, block = block.validity, block.inner
        if not isinstance(block, B.Var):
            raise self.ctx.corrupt("FSST inner encoding is not binary")
        offsets, data = self.table.decode(block.offsets, block.data, path=self.ctx.path)
        var = B.Var(offsets, data)
        return var if validity is None else B.Nullable(validity, var)


def make_decoder(enc, ctx: PageContext, typ: pa.DataType) -> ArrayDecoder:
    """The decoder of one ``ArrayEncoding`` message for values of Arrow type ``typ``."""
    kind = enc.WhichOneof("array_encoding")
    if isinstance(typ, pa.ExtensionType):
        typ = typ.storage_type
    if kind == "flat":
        return FlatDecoder(enc.flat, ctx)
    if kind == "nullable":
        return NullableDecoder(enc.nullable, ctx, typ)
    if kind == "binary":
        return BinaryDecoder(enc.binary, ctx)
    if kind == "dictionary":
        return DictionaryDecoder(enc.dictionary, ctx, typ)
    if kind == "fixed_size_list":
        return FslDecoder(enc.fixed_size_list, ctx, typ)
    if kind == "packed_struct":
        return PackedStructDecoder(enc.packed_struct, ctx, typ)
    if kind == "fsst":
        return FsstDecoder(enc.fsst, ctx, typ)
    if kind is None:
        raise ctx.corrupt("page without an array encoding")
    raise NotSupportedError(f"2.0 array encoding {kind!r} is not supported")
