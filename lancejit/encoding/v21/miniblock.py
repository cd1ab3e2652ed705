"""Mini-block pages (2.1/2.2): chunk metadata words, chunk headers, dictionary, repetition index.

Page buffers: ``[0]`` chunk metadata (one u16 word per chunk in 2.1, u32 with
``has_large_chunk``), ``[1]`` chunk data, ``[2]`` dictionary (if any), last: repetition index (if
``repetition_index_depth > 0``).  A word is ``((chunk_bytes / 8 - 1) << 4) | log2(values)``;
the last chunk's value count is ``num_items`` minus the others.

Chunk layout: ``u16 num_levels``, ``u16 rep_size`` (if rep), ``u16 def_size`` (if def), one
buffer size per value buffer (u16, or u32 with large chunks), pad to 8, then rep, def and each
value buffer, each padded to 8.

Per page the metadata (chunk table, decoded dictionary, repetition index) is loaded once and
kept on the page object (and in the file's metadata cache); reads then fetch only the whole
chunks that hold the requested rows, in one ``read_ranges`` call.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
import pyarrow as pa

from lancejit.core.errors import CorruptFileError, LanceJitError
from lancejit.encoding.pages import PageInfo
from lancejit.encoding.v21 import compression as cmp
from lancejit.encoding.v21.context import ColumnContext
from lancejit.encoding.v21.leaf import take_dictionary, values_to_arrow
from lancejit.encoding.v21.levels import LeafRows, concat_rows, count_visible, extract_row_ranges
from lancejit.encoding.v21.repdef import translate_def

MINIBLOCK_ALIGN = 8


@dataclass(frozen=True, slots=True)
class ChunkTable:
    """Chunk geometry and row mapping of one mini-block page (arrays indexed by chunk).

    ``offsets``/``sizes``: byte position inside buffer 1 and length; ``counts``: values;
    ``row_lo``/``row_hi``: rows touched (half-open); ``first_row``: first row starting in the
    chunk; ``preamble``: chunk starts by continuing the previous chunk's last row.
    """

    offsets: np.ndarray
    sizes: np.ndarray
    counts: np.ndarray
    row_lo: np.ndarray
    row_hi: np.ndarray
    first_row: np.ndarray
    preamble: np.ndarray
    dictionary: pa.Array | None

    @property
    def num_chunks(self) -> int:
        return int(self.sizes.size)

    def nbytes(self) -> int:
        n = sum(a.nbytes for a in (self.offsets, self.sizes, self.counts, self.row_lo, self.row_hi, self.first_row, self.preamble))
        if self.dictionary is not None:
            n += self.dictionary.nbytes
        return n + 256


def _pad(n: int) -> int:
    return (-n) % MINIBLOCK_ALIGN


class MiniBlockPage:
    """Reads row ranges of one mini-block page."""

    def __init__(self, ctx: ColumnContext, page: PageInfo, layout: Any, page_index: int, def_table: np.ndarray) -> None:
        self.ctx = ctx
        self.page = page
        self.layout = layout
        self.page_index = page_index
        self.num_rows = page.num_rows
        self.def_table = def_table
        self.has_rep = layout.HasField("rep_compression")
        self.has_def = layout.HasField("def_compression")
        self.num_buffers = int(layout.num_buffers)
        self.large = bool(layout.has_large_chunk)
        self.has_dict = layout.HasField("dictionary")
        self.rep_depth = int(layout.repetition_index_depth)
        self._table: ChunkTable | None = None
        self._lock = asyncio.Lock()
        nbuf = len(page.buffer_offsets)
        need = 2 + (1 if self.has_dict else 0) + (1 if self.rep_depth > 0 else 0)
        if nbuf < need:
            raise CorruptFileError(f"mini-block page has {nbuf} buffers, {need} expected", path=ctx.path)
        if self.has_rep != (ctx.canon.max_rep > 0):
            raise CorruptFileError("mini-block repetition does not match the schema", path=ctx.path)

    # ------------------------------------------------------------------ metadata
    def _buf(self, i: int) -> tuple[int, int]:
        off, size = self.page.buffer_offsets[i], self.page.buffer_sizes[i]
        return off, off + size

    async def table(self) -> ChunkTable:
        """The page's chunk table, dictionary and repetition index (loaded once)."""
        if self._table is not None:
            return self._table
        async with self._lock:
            if self._table is not None:
                return self._table
            key = ("v21-miniblock", self.ctx.column_index, self.page_index)
            cached = self.ctx.cache_get(key)
            if cached is None:
                ranges = [self._buf(0)]
                if self.has_dict:
                    ranges.append(self._buf(2))
                if self.rep_depth > 0:
                    ranges.append(self._buf(len(self.page.buffer_offsets) - 1))
                bufs = await self.ctx.read(ranges, priority=self.page.priority)
                nbytes = sum(len(b) for b in bufs)
                cached = await self.ctx.decode(nbytes, self._parse_meta, bufs)
                self.ctx.cache_put(key, cached, cached.nbytes())
            self._table = cached
            return cached

    def _parse_meta(self, bufs: list[memoryview]) -> ChunkTable:
        path = self.ctx.path
        words_buf = bufs[0]
        wsize = 4 if self.large else 2
        if len(words_buf) % wsize:
            raise CorruptFileError(f"chunk metadata of {len(words_buf)} bytes is not a multiple of {wsize}", path=path)
        words = np.frombuffer(words_buf, dtype="<u4" if self.large else "<u2").astype(np.int64)
        nchunks = words.size
        num_items = int(self.layout.num_items)
        sizes = ((words >> 4) + 1) * MINIBLOCK_ALIGN
        logs = words & 0xF
        counts = np.left_shift(np.int64(1), logs)
        if nchunks:
            prev = int(counts[:-1].sum())
            last = num_items - prev
            if last < 0 or (nchunks > 1 and last == 0 and num_items > 0 and False):
                raise CorruptFileError(f"chunk value counts exceed num_items {num_items}", path=path)
            counts[-1] = last
        elif num_items:
            raise CorruptFileError("mini-block page without chunks", path=path)
        offsets = np.zeros(nchunks, dtype=np.int64)
        if nchunks:
            np.cumsum(sizes[:-1], out=offsets[1:])
        data_size = self.page.buffer_sizes[1]
        if nchunks and int(offsets[-1] + sizes[-1]) > data_size:
            raise CorruptFileError(
                f"chunks need {int(offsets[-1] + sizes[-1])} bytes, chunk buffer has {data_size}", path=path
            )
        dictionary = None
        bi = 1
        if self.has_dict:
            n_items = int(self.layout.num_dictionary_items)
            dv = cmp.decode_block(self.layout.dictionary, bufs[bi], n_items, path=path)
            dictionary = values_to_arrow(dv, _dict_value_type(self.ctx.value_type), path=path)
            bi += 1
        if self.rep_depth > 0:
            ri = bufs[bi]
            stride = self.rep_depth + 1
            if len(ri) != nchunks * stride * 8:
                raise CorruptFileError(
                    f"repetition index has {len(ri)} bytes for {nchunks} chunks of depth {self.rep_depth}", path=path
                )
            idx = np.frombuffer(ri, dtype="<u8").reshape(nchunks, stride)
            ends = idx[:, 0].astype(np.int64)
            partial = idx[:, 1].astype(np.int64)
            trailer = partial > 0
            preamble = np.zeros(nchunks, dtype=bool)
            if nchunks > 1:
                preamble[1:] = trailer[:-1]
            starts = ends + trailer.astype(np.int64) - preamble.astype(np.int64)
            if np.any(starts < 0):
                raise CorruptFileError("repetition index has negative row counts", path=path)
            first_row = np.zeros(nchunks, dtype=np.int64)
            if nchunks:
                np.cumsum(starts[:-1], out=first_row[1:])
            if nchunks and int(first_row[-1] + starts[-1]) != self.num_rows:
                raise CorruptFileError(
                    f"repetition index covers {int(first_row[-1] + starts[-1])} rows, page has {self.num_rows}",
                    path=path,
                )
            row_lo = first_row - preamble.astype(np.int64)
            row_hi = first_row + starts
        elif self.has_rep:
            # No index: every read decodes the whole page.
            first_row = np.zeros(nchunks, dtype=np.int64)
            preamble = np.zeros(nchunks, dtype=bool)
            row_lo = np.zeros(nchunks, dtype=np.int64)
            row_hi = np.full(nchunks, self.num_rows, dtype=np.int64)
        else:
            first_row = np.zeros(nchunks, dtype=np.int64)
            if nchunks:
                np.cumsum(counts[:-1], out=first_row[1:])
            if num_items != self.num_rows:
                raise CorruptFileError(f"page has {num_items} items for {self.num_rows} rows", path=path)
            preamble = np.zeros(nchunks, dtype=bool)
            row_lo = first_row
            row_hi = first_row + counts
        return ChunkTable(offsets, sizes, counts, row_lo, row_hi, first_row, preamble, dictionary)

    # ------------------------------------------------------------------ reads
    async def read(self, ranges: Sequence[tuple[int, int]]) -> LeafRows:
        """Rows in the half-open page-relative ``ranges`` (sorted, disjoint), concatenated."""
        t = await self.table()
        spans = []
        for a, b in ranges:
            if a < 0 or b > self.num_rows or b <= a:
                raise CorruptFileError(f"rows [{a}, {b}) outside page of {self.num_rows}", path=self.ctx.path)
            c0 = int(np.searchsorted(t.row_hi, a, side="right"))
            c1 = int(np.searchsorted(t.row_lo, b, side="left"))
            if c1 <= c0:
                raise CorruptFileError(f"no chunk holds rows [{a}, {b})", path=self.ctx.path)
            spans.append((c0, c1))
        # merge overlapping chunk spans into runs
        runs: list[list] = []  # [c0, c1, [range indices]]
        for k, (c0, c1) in enumerate(spans):
            if runs and c0 < runs[-1][1]:
                runs[-1][1] = max(runs[-1][1], c1)
                runs[-1][2].append(k)
            else:
                runs.append([c0, c1, [k]])
        chunk_ids = [c for c0, c1, _ in runs for c in range(c0, c1)]
        base = self.page.buffer_offsets[1]
        byte_ranges = [(base + int(t.offsets[c]), base + int(t.offsets[c] + t.sizes[c])) for c in chunk_ids]
        bufs = await self.ctx.read(byte_ranges, priority=self.page.priority + ranges[0][0])
        nbytes = sum(len(b) for b in bufs)
        return await self.ctx.decode(nbytes, self._decode_runs, t, runs, chunk_ids, bufs, ranges)

    def _decode_runs(self, t: ChunkTable, runs, chunk_ids, bufs, ranges) -> LeafRows:
        by_chunk = dict(zip(chunk_ids, bufs))
        out: list[LeafRows] = []
        for c0, c1, members in runs:
            decoded = concat_rows([self._decode_chunk(by_chunk[c], int(t.counts[c]), t) for c in range(c0, c1)], self.ctx.value_type)
            out.extend(
                extract_row_ranges(
                    decoded,
                    self.ctx.canon,
                    int(t.first_row[c0]),
                    bool(t.preamble[c0]),
                    [ranges[k] for k in members],
                    path=self.ctx.path,
                )
            )
        return concat_rows(out, self.ctx.value_type)

    def decode_chunk_bytes(self, buf: memoryview, count: int) -> LeafRows:
        """Decode one chunk (public for tests)."""
        t = self._table
        return self._decode_chunk(buf, count, t)

    def _decode_chunk(self, buf: memoryview, count: int, t: ChunkTable) -> LeafRows:
        path = self.ctx.path
        try:
            return self._decode_chunk_unchecked(buf, count, t)
        except LanceJitError:
            raise
        except (ValueError, IndexError, TypeError, OverflowError) as exc:
            raise CorruptFileError(f"bad mini-block chunk ({type(exc).__name__}: {exc})", path=path) from exc

    def _decode_chunk_unchecked(self, buf: memoryview, count: int, t: ChunkTable) -> LeafRows:
        path = self.ctx.path
        n = len(buf)
        szw = 4 if self.large else 2
        header = 2 + (2 if self.has_rep else 0) + (2 if self.has_def else 0) + szw * self.num_buffers
        if header > n:
            raise CorruptFileError(f"mini-block chunk of {n} bytes shorter than its header", path=path)
        hdr = np.frombuffer(buf, dtype="<u2", count=(2 + (2 if self.has_rep else 0) + (2 if self.has_def else 0)) // 2)
        num_levels = int(hdr[0])
        pos = 2
        rep_size = def_size = 0
        k = 1
        if self.has_rep:
            rep_size = int(hdr[k]); k += 1; pos += 2
        if self.has_def:
            def_size = int(hdr[k]); k += 1; pos += 2
        sizes = np.frombuffer(buf, dtype="<u4" if self.large else "<u2", count=self.num_buffers, offset=pos).astype(np.int64)
        pos += szw * self.num_buffers
        pos += _pad(pos)

        def take(size: int) -> memoryview:
            nonlocal pos
            if pos + size > n:
                raise CorruptFileError(f"mini-block buffer [{pos}, {pos + size}) past chunk end {n}", path=path)
            out = buf[pos : pos + size]
            pos += size
            pos += _pad(pos)
            return out

        rep = deff = None
        rep_bytes = take(rep_size) if self.has_rep else None
        def_bytes = take(def_size) if self.has_def else None
        value_bufs = [take(int(s)) for s in sizes]
        if self.has_rep or self.has_def:
            if self.has_rep:
                rep = np.asarray(cmp.decode_levels(self.layout.rep_compression, rep_bytes, num_levels, path=path), dtype=np.uint16)
            if self.has_def:
                deff = np.asarray(cmp.decode_levels(self.layout.def_compression, def_bytes, num_levels, path=path), dtype=np.uint16)
                deff = translate_def(deff, self.def_table, path=path)
        else:
            num_levels = count
        nvis = count_visible(rep, deff, self.ctx.canon, num_levels)
        if nvis != count:
            raise CorruptFileError(f"chunk levels show {nvis} values, chunk metadata says {count}", path=path)
        dv = cmp.decode_miniblock(self.layout.value_compression, value_bufs, count, path=path)
        if dv.num_values != count:
            raise CorruptFileError(f"chunk decoded {dv.num_values} values, expected {count}", path=path)
        if t.dictionary is not None:
            values = take_dictionary(t.dictionary, dv, path=path)
            if pa.types.is_dictionary(self.ctx.value_type):
                values = values.dictionary_encode().cast(self.ctx.value_type) if len(values) else pa.array([], type=self.ctx.value_type)
        else:
            values = values_to_arrow(dv, self.ctx.value_type, path=path)
        return LeafRows(rep, deff, values, num_levels)


def _dict_value_type(t: pa.DataType) -> pa.DataType:
    return t.value_type if pa.types.is_dictionary(t) else t
