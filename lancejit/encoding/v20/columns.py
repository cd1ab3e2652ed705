"""Field-level readers of a 2.0 file: one node per Lance field, each owning one column.

Every node offers ``read(ranges)``: a step generator over half-open row ranges ``[start, end)``
of its own row space (sorted, non-overlapping) returning one Arrow array of those rows back to
back.  Struct nodes run their children in lockstep; list nodes read offsets first, then the
item ranges of their child.  ``nbytes`` is the encoded size of the node's columns (bytes).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from lancejit.core.errors import CorruptFileError, NotSupportedError
from lancejit.encoding import arrow_build as AB
from lancejit.encoding.pages import ColumnInfo, PageInfo
from lancejit.encoding.v20 import blocks as B
from lancejit.encoding.v20.arrays import (
    ArrayDecoder,
    PageContext,
    as_u64,
    make_decoder,
    normalize_end_offsets,
)
from lancejit.encoding.v20.rowranges import EMPTY, merge_touching, split_by_pages, to_pairs, total
from lancejit.encoding.v20.steps import Steps, gather, read_once

#: Row ranges: ``(k, 2)`` int64 arrays of half-open ``[start, end)`` rows (see ``rowranges``).
Ranges = np.ndarray


class Node:
    """Base class of field readers."""

    typ: pa.DataType
    num_rows: int
    nbytes: int

    def read(self, ranges: Ranges) -> Steps:  # pragma: no cover - interface
        raise NotImplementedError


def _column_bytes(col: ColumnInfo) -> int:
    return sum(sum(p.buffer_sizes) for p in col.pages) + sum(col.buffer_sizes)


class PagedColumn:
    """The pages of one column with their row bounds and lazily built page decoders."""

    def __init__(self, col: ColumnInfo, path: str, cache=None) -> None:
        self.col = col
        self.path = path
        self.cache = cache
        self.pages: list[PageInfo] = [p for p in col.pages if p.num_rows > 0]
        starts = [0]
        for p in self.pages:
            if p.num_rows < 0:
                raise CorruptFileError("negative page length", path=path)
            starts.append(starts[-1] + p.num_rows)
        self.starts = np.asarray(starts, dtype=np.int64)
        self.num_rows = starts[-1]
        self._column_buffers = list(zip(col.buffer_offsets, col.buffer_sizes))

    def context(self, i: int) -> PageContext:
        p = self.pages[i]
        if len(p.buffer_offsets) != len(p.buffer_sizes):
            raise CorruptFileError("page buffer offsets and sizes differ in number", path=self.path)
        return PageContext(self.path, list(zip(p.buffer_offsets, p.buffer_sizes)), self._column_buffers,
                           self.cache, (self.col.index, i))

    def check(self, ranges: Ranges) -> None:
        if len(ranges) and (ranges[0, 0] < 0 or ranges[-1, 1] > self.num_rows):
            raise CorruptFileError(
                f"rows [{ranges[0, 0]}, {ranges[-1, 1]}) requested from a column of {self.num_rows} rows",
                path=self.path,
            )


class PrimitiveNode(Node):
    """A field stored in one column of ``ArrayEncoding`` pages (primitives, strings, FSLs,
    dictionaries, packed structs)."""

    def __init__(self, col: ColumnInfo, typ: pa.DataType, path: str, cache=None) -> None:
        self.paged = PagedColumn(col, path, cache)
        self.typ = typ
        self.num_rows = self.paged.num_rows
        self.nbytes = _column_bytes(col)
        self._decoders: dict[int, ArrayDecoder] = {}

    def decoder(self, i: int) -> ArrayDecoder:
        dec = self._decoders.get(i)
        if dec is None:
            p = self.paged.pages[i]
            dec = make_decoder(p.encoding, self.paged.context(i), self.typ)
            self._decoders[i] = dec
        return dec

    def read(self, ranges: Ranges) -> Steps:
        self.paged.check(ranges)
        parts = split_by_pages(ranges, self.paged.starts)
        block_list = yield from gather([self.decoder(p).decode(local) for p, local in parts])
        arrays = []
        for (_, local), blk in zip(parts, block_list):
            want = total(local)
            if blk.n != want:
                raise CorruptFileError(f"page decoded {blk.n} rows, expected {want}", path=self.paged.path)
            arrays.append(B.to_arrow(blk, self.typ, path=self.paged.path))
        return B.concat(arrays, self.typ)


class StructNode(Node):
    """A (non-packed) struct: its own column of ``SimpleStruct`` pages (row count only) and one
    node per child.  2.0 structs carry no validity."""

    def __init__(self, col: ColumnInfo, typ: pa.DataType, children: list[Node], path: str) -> None:
        self.typ = typ
        self.children = children
        self.path = path
        self.num_rows = PagedColumn(col, path).num_rows
        for c in children:
            if c.num_rows != self.num_rows:
                raise CorruptFileError("struct children differ in row count", path=path)
        self.nbytes = _column_bytes(col) + sum(c.nbytes for c in children)

    def read(self, ranges: Ranges) -> Steps:
        n = total(ranges)
        if len(ranges) and ranges[-1, 1] > self.num_rows:
            raise CorruptFileError("struct rows out of range", path=self.path)
        arrays = yield from gather([c.read(ranges) for c in self.children])
        return AB.struct_array(self.typ, arrays, n)


class ListNode(Node):
    """A list: an offsets column (``List`` pages of end offsets relative to the page's first
    item, nulls stored + ``null_offset_adjustment``) and the item node.  The items of page k
    start after the ``num_items`` of pages 0..k-1."""

    def __init__(self, col: ColumnInfo, typ: pa.DataType, child: Node, path: str) -> None:
        self.paged = PagedColumn(col, path)
        self.typ = typ
        self.child = child
        self.path = path
        self.num_rows = self.paged.num_rows
        self.nbytes = _column_bytes(col) + child.nbytes
        self.large = pa.types.is_large_list(typ)
        item_base = [0]
        self._list_msgs = []
        for p in self.paged.pages:
            enc = p.encoding
            if enc.WhichOneof("array_encoding") != "list":
                raise CorruptFileError("list column page is not a list encoding", path=path)
            self._list_msgs.append(enc.list)
            item_base.append(item_base[-1] + int(enc.list.num_items))
        self.item_base = item_base
        if item_base[-1] != child.num_rows:
            raise CorruptFileError(
                f"list pages reference {item_base[-1]} items but the item column has {child.num_rows}", path=path
            )
        self._offset_decoders: dict[int, ArrayDecoder] = {}

    def _decoder(self, i: int) -> ArrayDecoder:
        dec = self._offset_decoders.get(i)
        if dec is None:
            dec = make_decoder(self._list_msgs[i].offsets, self.paged.context(i), pa.uint64())
            self._offset_decoders[i] = dec
        return dec

    def read(self, ranges: Ranges) -> Steps:
        self.paged.check(ranges)
        parts = split_by_pages(ranges, self.paged.starts)
        reqs = []
        for _, local in parts:
            r = local.copy()
            r[:, 0] = np.maximum(local[:, 0] - 1, 0)
            reqs.append(r)
        blocks = yield from gather([self._decoder(p).decode(r) for (p, _), r in zip(parts, reqs)])
        all_lengths = []
        all_valid = []
        item_ranges = []
        for (p, local), blk in zip(parts, blocks):
            msg = self._list_msgs[p]
            vals = as_u64(blk, self.paged.context(p))
            lengths, validity, firsts, lasts = normalize_end_offsets(
                vals, local, int(msg.null_offset_adjustment), self.paged.context(p)
            )
            if len(lasts) and int(lasts.max()) > int(msg.num_items):
                raise CorruptFileError("list offsets past the page's items", path=self.path)
            base = self.item_base[p]
            item_ranges.append(np.stack([firsts + base, lasts + base], axis=1))
            all_lengths.append(lengths)
            all_valid.append(validity)
        lengths = np.concatenate(all_lengths) if all_lengths else np.zeros(0, np.int64)
        validity = np.concatenate(all_valid) if all_valid else np.zeros(0, np.bool_)
        items_req = merge_touching(np.concatenate(item_ranges)) if item_ranges else EMPTY
        items = yield from self.child.read(items_req)
        n = len(lengths)
        offsets = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        if offsets[-1] != len(items):
            raise CorruptFileError("list offsets do not match the items read", path=self.path)
        if not self.large and offsets[-1] > np.iinfo(np.int32).max:
            raise NotSupportedError("list with more than 2^31 items in one read")
        return AB.list_array(self.typ, offsets, items, validity)


class BlobNode(Node):
    """A blob field: a column of (u64 position, u64 size) descriptions (packed struct) pointing
    at the values elsewhere in the file; (1, 0) marks null.  Returned as ``large_binary``."""

    _DESC = pa.struct([("position", pa.uint64()), ("size", pa.uint64())])

    def __init__(self, col: ColumnInfo, typ: pa.DataType, path: str) -> None:
        self.desc = PrimitiveNode(col, self._DESC, path)
        self.typ = typ
        self.path = path
        self.num_rows = self.desc.num_rows
        self.nbytes = self.desc.nbytes

    def read(self, ranges: Ranges) -> Steps:
        desc = yield from self.desc.read(ranges)
        pos = desc.field(0).to_numpy(zero_copy_only=False).astype(np.int64)
        size = desc.field(1).to_numpy(zero_copy_only=False).astype(np.int64)
        if len(pos) and (pos.min() < 0 or size.min() < 0):
            raise CorruptFileError("blob description out of range", path=self.path)
        valid = ~((pos == 1) & (size == 0))
        sel = valid & (size > 0)
        bufs = yield from read_once(to_pairs(pos[sel], pos[sel] + size[sel]))
        offsets = np.zeros(len(pos) + 1, dtype=np.int64)
        np.cumsum(np.where(valid, size, 0), out=offsets[1:])
        data = np.frombuffer(b"".join(bufs), np.uint8) if bufs else np.zeros(0, np.uint8)
        arr = B.to_arrow(B.Nullable(valid, B.Var(offsets, data)), pa.large_binary(), path=self.path)
        return arr if arr.type == self.typ else arr.cast(self.typ)
