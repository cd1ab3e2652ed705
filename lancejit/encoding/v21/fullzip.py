"""Full-zip pages (2.1/2.2): control words zipped with fixed or variable values.

Buffers: ``[0]`` zipped data, ``[1]`` repetition index (when there is repetition or the values are
variable width): ``rows + 1`` byte offsets into buffer 0, all of one width ``size / (rows + 1)``
(1, 2, 4 or 8 bytes).  Per level: a control word ``(rep << bits_def) | def`` of 0/1/2/4 bytes,
then for fixed width the value bytes if the level is visible, for variable width a u32/u64 length
and the bytes if ``def == 0``.

Reads: fixed width without repetition -> one byte range per row range (stride arithmetic);
otherwise one request for the repetition-index entries of every range, then one for the data.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import pyarrow as pa

from lancejit.core.arrow_compute import take as arrow_take
from lancejit.core.errors import CorruptFileError, LanceJitError
from lancejit.encoding.pages import PageInfo
from lancejit.encoding.v21 import compression as cmp
from lancejit.encoding.v21.context import ColumnContext, Steps
from lancejit.encoding.v21.page import LayoutPage
from lancejit.encoding.v21.leaf import values_to_arrow
from lancejit.encoding.v21.levels import LeafRows
from lancejit.encoding.v21.repdef import (
    ALL_VALID_LIST,
    EMPTYABLE_LIST,
    NULL_AND_EMPTY_LIST,
    NULLABLE_ITEM,
    NULLABLE_LIST,
    translate_def,
)
from lancejit.encoding.v21.repdef_kernels import UNZIP_OK, fullzip_unzip, gather_slices
from lancejit.encoding.v21.values import VariableWidth


def control_word_bytes(bits_rep: int, bits_def: int) -> int:
    """Bytes of one control word for the given bit widths (0, 1, 2 or 4)."""
    bits = bits_rep + bits_def
    if bits == 0:
        return 0
    if bits <= 8:
        return 1
    if bits <= 16:
        return 2
    if bits <= 32:
        return 4
    raise CorruptFileError(f"control word of {bits} bits")


def page_max_visible(layers: Sequence[int]) -> int:
    """Largest page def level that stores a value: the def levels of the item layers."""
    total = 0
    for layer in layers:
        if layer == NULLABLE_ITEM:
            total += 1
    return total


class FullZipPage(LayoutPage):
    """Reads row ranges of one full-zip page."""

    def __init__(self, ctx: ColumnContext, page: PageInfo, layout: Any, page_index: int, def_table: np.ndarray) -> None:
        super().__init__(ctx, page, layout, page_index, def_table)
        path = ctx.path
        self.bits_rep = int(layout.bits_rep)
        self.bits_def = int(layout.bits_def)
        if self.bits_rep > 16 or self.bits_def > 16:
            raise CorruptFileError("full-zip control word widths out of range", path=path)
        self.cw = control_word_bytes(self.bits_rep, self.bits_def)
        which = layout.WhichOneof("details")
        if which == "bits_per_value":
            bpv = int(layout.bits_per_value)
            if bpv % 8 or bpv <= 0:
                raise CorruptFileError(f"full-zip bits_per_value {bpv} is not whole bytes", path=path)
            self.fixed = bpv // 8
            self.len_bytes = 0
        elif which == "bits_per_offset":
            bpo = int(layout.bits_per_offset)
            if bpo not in (32, 64):
                raise CorruptFileError(f"full-zip bits_per_offset {bpo}", path=path)
            self.fixed = -1
            self.len_bytes = bpo // 8
        else:
            raise CorruptFileError("full-zip layout without value width", path=path)
        self.has_rep = ctx.canon.max_rep > 0
        if self.has_rep and self.bits_rep == 0 and self.num_rows > 1:
            # every level would be a row: fine only if no list ever has >1 item; keep generic path
            pass
        self.max_visible = page_max_visible(tuple(layout.layers))
        self.max_rep_page = sum(1 for l in layout.layers if l in (ALL_VALID_LIST, NULLABLE_LIST, EMPTYABLE_LIST, NULL_AND_EMPTY_LIST))
        self.use_index = self.has_rep or self.fixed < 0
        nbuf = len(page.buffer_offsets)
        if nbuf < (2 if self.use_index else 1):
            raise CorruptFileError(f"full-zip page has {nbuf} buffers", path=path)
        self.data_off = page.buffer_offsets[0]
        self.data_size = page.buffer_sizes[0]
        if self.use_index:
            isize = page.buffer_sizes[1]
            if isize % (self.num_rows + 1):
                raise CorruptFileError(f"repetition index of {isize} bytes for {self.num_rows} rows", path=path)
            self.index_width = isize // (self.num_rows + 1)
            if self.index_width not in (1, 2, 4, 8):
                raise CorruptFileError(f"repetition index entries of {self.index_width} bytes", path=path)
            self.index_off = page.buffer_offsets[1]
        elif self.fixed >= 0:
            stride = self.cw + self.fixed
            if stride * self.num_rows > self.data_size:
                raise CorruptFileError(
                    f"{self.num_rows} rows of {stride} bytes exceed the data buffer ({self.data_size})", path=path
                )

    def _check(self, ranges: Any) -> list[tuple[int, int]]:
        ranges = [(int(a), int(b)) for a, b in np.asarray(ranges, dtype=np.int64).reshape(-1, 2).tolist()]
        for a, b in ranges:
            if a < 0 or b > self.num_rows or b <= a:
                raise CorruptFileError(f"rows [{a}, {b}) outside page of {self.num_rows}", path=self.ctx.path)
        return ranges

    def read_steps(self, ranges: Any) -> Steps:
        """Step generator for rows in the half-open page-relative ``ranges`` (sorted,
        disjoint): fixed width without repetition reads one byte range per row range;
        otherwise one step for the repetition-index entries, then one for the data.
        Returns :class:`LeafRows`, decoded synchronously."""
        ranges = self._check(ranges)
        if not self.use_index:
            stride = self.cw + self.fixed
            byte_ranges = [(self.data_off + a * stride, self.data_off + b * stride) for a, b in ranges]
        else:
            # The index entries of each run's first row and of the row after it.  A whole page
            # needs none (the data buffer is the page); short runs read entries a..b as one
            # part, long runs two single entries.  All parts go in one request.
            w = self.index_width
            if len(ranges) == 1 and ranges[0] == (0, self.num_rows):
                byte_ranges = [(self.data_off, self.data_off + self.data_size)]
            else:
                entry_ranges: list[tuple[int, int]] = []
                shape: list[int] = []
                for a, b in ranges:
                    if b - a <= 64:
                        entry_ranges.append((self.index_off + a * w, self.index_off + (b + 1) * w))
                        shape.append(1)
                    else:
                        entry_ranges.append((self.index_off + a * w, self.index_off + (a + 1) * w))
                        entry_ranges.append((self.index_off + b * w, self.index_off + (b + 1) * w))
                        shape.append(2)
                entries = yield from self.ctx.read_steps(entry_ranges)
                dt = np.dtype(f"<u{w}")
                byte_ranges = []
                k = 0
                for parts in shape:
                    first = np.frombuffer(entries[k], dtype=dt)
                    last = np.frombuffer(entries[k + parts - 1], dtype=dt)
                    k += parts
                    s, e = int(first[0]), int(last[-1])
                    if s > e or e > self.data_size:
                        raise CorruptFileError(
                            f"repetition index entries [{s}, {e}) outside the data buffer ({self.data_size})",
                            path=self.ctx.path,
                        )
                    byte_ranges.append((self.data_off + s, self.data_off + e))
        bufs = yield from self.ctx.read_steps(byte_ranges)
        return self._decode_all(bufs, ranges)

    async def read(self, ranges: Any) -> LeafRows:
        """Rows in the half-open page-relative ``ranges`` (sorted, disjoint), concatenated."""
        ranges = self._check(ranges)
        return await self.ctx.drive(self.read_steps(ranges), priority=self.page.priority + ranges[0][0])

    def _decode_all(self, bufs, ranges) -> LeafRows:
        # Whole rows concatenated are still valid zipped data: decode every range in one pass.
        nrows = sum(b - a for a, b in ranges)
        buf = bufs[0] if len(bufs) == 1 else np.concatenate([np.frombuffer(b, dtype=np.uint8) for b in bufs])
        try:
            return self._decode_one(buf, nrows)
        except LanceJitError:
            raise
        except (ValueError, IndexError, TypeError, OverflowError) as exc:
            raise CorruptFileError(f"bad full-zip data ({type(exc).__name__}: {exc})", path=self.ctx.path) from exc

    def _decode_one(self, buf: memoryview | np.ndarray, nrows: int) -> LeafRows:
        path = self.ctx.path
        data = buf if isinstance(buf, np.ndarray) else np.frombuffer(buf, dtype=np.uint8)
        if not self.use_index:
            stride = self.cw + self.fixed
            if data.size != stride * nrows:
                raise CorruptFileError("full-zip fixed data has the wrong size", path=path)
            deff: np.ndarray | None = None
            if self.cw:
                m = data.reshape(nrows, stride)
                words = np.zeros(nrows, dtype=np.uint32)
                for b in range(self.cw):
                    words |= m[:, b].astype(np.uint32) << (8 * b)
                deff = (words & ((1 << self.bits_def) - 1)).astype(np.uint16)
                raw = np.ascontiguousarray(m[:, self.cw :]).reshape(-1)
                deff = translate_def(deff, self.def_table, path=path)
                if not deff.any():
                    deff = None
            else:
                raw = data
            dv = cmp.decode_fullzip_fixed(self.layout.value_compression, raw, nrows, path=path)
            values = values_to_arrow(dv, self.ctx.value_type, path=path)
            return LeafRows(None, deff, values, nrows)
        # general walk
        if self.cw:
            cap = data.size // self.cw + 1
        elif self.fixed > 0:
            cap = data.size // self.fixed + 1
        elif self.fixed < 0:
            cap = data.size // self.len_bytes + 1
        else:
            cap = nrows + 1
        if self.cw == 0:
            cap = max(cap, nrows)
        out_rep = np.empty(cap, dtype=np.uint16)
        out_def = np.empty(cap, dtype=np.uint16)
        out_start = np.empty(cap, dtype=np.int64)
        out_len = np.empty(cap, dtype=np.int64)
        if self.cw == 0 and self.fixed == 0:
            raise CorruptFileError("zero-width full-zip values", path=path)
        nl, nv, err = fullzip_unzip(
            data, self.cw, self.bits_def, self.fixed, self.len_bytes, self.max_visible, out_rep, out_def, out_start, out_len
        )
        if err != UNZIP_OK:
            raise CorruptFileError(f"full-zip data truncated or malformed (code {err})", path=path)
        rep = out_rep[:nl].copy() if self.has_rep else None
        deff = translate_def(out_def[:nl].copy(), self.def_table, path=path) if self.bits_def else None
        if rep is not None:
            # page rep numbering equals canonical (one level per list layer)
            rows_seen = int(np.count_nonzero(rep == self.ctx.canon.max_rep))
            if nl and rep[0] != self.ctx.canon.max_rep:
                raise CorruptFileError("full-zip row does not start with a new-row control word", path=path)
        else:
            rows_seen = nl
        if rows_seen != nrows:
            raise CorruptFileError(f"full-zip data holds {rows_seen} rows, {nrows} expected", path=path)
        starts = out_start[:nv]
        lens = out_len[:nv]
        total = int(lens.sum())
        payload = np.empty(total, dtype=np.uint8)
        if gather_slices(data, starts, lens, payload) < 0:
            raise CorruptFileError("full-zip values outside the page", path=path)
        if self.fixed >= 0:
            dv = cmp.decode_fullzip_fixed(self.layout.value_compression, payload, nv, path=path)
        else:
            # Only valid items (def == 0) carry a payload; visible null items are placeholders
            # that are not handed to the value decoder, and come back as nulls.
            vis_defs = out_def[:nl][out_def[:nl] <= self.max_visible]
            has_payload = vis_defs == 0
            nvalid = int(np.count_nonzero(has_payload))
            vlens = lens[has_payload] if nvalid != nv else lens
            offsets = np.zeros(nvalid + 1, dtype=np.int64)
            np.cumsum(vlens, out=offsets[1:])
            dv = cmp.decode_fullzip_variable(self.layout.value_compression, VariableWidth(offsets, payload, nvalid), path=path)
            if nvalid != nv:
                valid_vals = values_to_arrow(dv, self.ctx.value_type, path=path)
                pos = np.cumsum(has_payload) - 1
                idx = pa.array(np.where(has_payload, pos, 0), mask=~has_payload)
                values = arrow_take(valid_vals, idx)
                if deff is not None and not deff.any():
                    deff = None
                return LeafRows(rep, deff, values, nl)
        values = values_to_arrow(dv, self.ctx.value_type, path=path)
        if deff is not None and not deff.any():
            deff = None
        return LeafRows(rep, deff, values, nl)
