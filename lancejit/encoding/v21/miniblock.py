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

from lancejit.core.arrow_compute import take as arrow_take
from lancejit.core.cores import off_loop_if_idle
from lancejit.core.errors import CorruptFileError, LanceJitError
from lancejit.encoding.arrow_build import index_array
from lancejit.encoding.pages import PageInfo
from lancejit.encoding.v21 import compression as cmp
from lancejit.encoding.v21.context import ColumnContext, Steps
from lancejit.encoding.v21.page import LayoutPage
from lancejit.encoding.v21.leaf import dictionary_array, take_dictionary, values_to_arrow
from lancejit.encoding.v21.batch import batch_levels, concat_values, fast_values, parse_chunk_headers, picked_values
from lancejit.encoding.v21.levels import LeafRows, concat_rows, extract_runs, ranges_to_index
from lancejit.encoding.v21.repdef import max_visible_canonical, translate_def

MINIBLOCK_ALIGN = 8
#: Upper bound on values in one chunk (writers use <= 4096; the 4-bit log allows 32768).
MAX_CHUNK_VALUES = 1 << 16
#: Runs of at least this many bytes (without repetition) decode as parallel pieces.
PARALLEL_DECODE_BYTES = 4 * 1024 * 1024
#: Pieces a large run is decoded in.
DECODE_THREADS = 4


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


@dataclass(frozen=True, slots=True)
class ReadPlan:
    """What a read of row ranges needs from one mini-block page.

    ``runs``: ``(n, 2)`` half-open chunk index runs; ``run_of``: run of each requested range;
    ``ra``/``rb``: the page-relative row ranges; ``run_at``: byte position of each run's first
    chunk in the concatenated span buffers; ``byte_ranges``: absolute half-open file ranges,
    one per span of runs.
    """

    runs: np.ndarray
    run_of: np.ndarray
    ra: np.ndarray
    rb: np.ndarray
    run_at: np.ndarray
    byte_ranges: list


def _pad(n: int) -> int:
    return (-n) % MINIBLOCK_ALIGN


class MiniBlockPage(LayoutPage):
    """Reads row ranges of one mini-block page."""

    def __init__(self, ctx: ColumnContext, page: PageInfo, layout: Any, page_index: int, def_table: np.ndarray) -> None:
        super().__init__(ctx, page, layout, page_index, def_table)
        self.has_rep = layout.HasField("rep_compression")
        self.has_def = layout.HasField("def_compression")
        self.num_buffers = int(layout.num_buffers)
        self.large = bool(layout.has_large_chunk)
        self.has_dict = layout.HasField("dictionary")
        self.rep_depth = int(layout.repetition_index_depth)
        self._table: ChunkTable | None = None
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
        # no lock: concurrent loads on one loop share the cache's single load, and this page
        # may be read from several event loops (the I/O loop, callers' own threads)

        async def load() -> ChunkTable:
            ranges = self._meta_ranges()
            bufs = await self.ctx.read(ranges, priority=self.page.priority)
            nbytes = sum(len(b) for b in bufs)
            return await self.ctx.decode(nbytes, self._parse_meta, bufs)

        cached = await self.ctx.cached(self._key(), load, lambda v: v.nbytes())
        self._table = cached
        return cached

    def _key(self) -> tuple:
        return ("v21-miniblock", self.ctx.column_index, self.page_index)

    def _meta_ranges(self) -> list[tuple[int, int]]:
        ranges = [self._buf(0)]
        if self.has_dict:
            ranges.append(self._buf(2))
        if self.rep_depth > 0:
            ranges.append(self._buf(len(self.page.buffer_offsets) - 1))
        return ranges

    def table_steps(self) -> Steps:
        """Step generator returning the chunk table: no step when loaded or cached, else one
        step reading buffer 0 (and the dictionary and repetition index)."""
        if self._table is not None:
            return self._table
        t = self.ctx.cache_get(self._key())
        if t is None:
            bufs = yield from self.ctx.read_steps(self._meta_ranges())
            t = self._parse_meta(bufs)
            self.ctx.cache_put(self._key(), t, t.nbytes())
        self._table = t
        return t

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
            if last < 0 or last > MAX_CHUNK_VALUES:
                raise CorruptFileError(
                    f"last chunk would hold {last} values (num_items {num_items}, {nchunks} chunks)", path=path
                )
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
    def _plan(self, t: ChunkTable, ranges: Any) -> ReadPlan:
        """Chunk runs and byte spans for page-relative row ``ranges`` (half-open, sorted)."""
        r = np.asarray(ranges, dtype=np.int64).reshape(-1, 2)
        ra, rb = r[:, 0], r[:, 1]
        if ra.size and (ra.min() < 0 or rb.max() > self.num_rows or np.any(rb <= ra)):
            raise CorruptFileError(f"row ranges outside page of {self.num_rows}", path=self.ctx.path)
        if ra.size == 1:
            return self._plan_one(t, ra, rb)
        c0s = np.searchsorted(t.row_hi, ra, side="right")
        c1s = np.searchsorted(t.row_lo, rb, side="left")
        if np.any(c1s <= c0s):
            raise CorruptFileError("no chunk holds some requested rows", path=self.ctx.path)
        # merge overlapping or touching chunk spans into runs of consecutive chunks
        reach = np.maximum.accumulate(c1s)
        new_run = np.ones(ra.size, dtype=bool)
        new_run[1:] = c0s[1:] > reach[:-1]
        run_of = np.cumsum(new_run) - 1
        run_start_k = np.flatnonzero(new_run)
        run_end_k = np.concatenate([run_start_k[1:], [ra.size]]) - 1
        runs = np.stack([c0s[run_start_k], reach[run_end_k]], axis=1).astype(np.int64)
        # byte extent of each run inside buffer 1, then runs closer than the reader's block
        # size share one byte range (the gap is read and skipped, never decoded): the same
        # reads the scheduler would make, from fewer ranges
        run_b0 = t.offsets[runs[:, 0]]
        run_b1 = t.offsets[runs[:, 1] - 1] + t.sizes[runs[:, 1] - 1]
        new_span = np.ones(runs.shape[0], dtype=bool)
        new_span[1:] = run_b0[1:] - run_b1[:-1] > self.ctx.gap_bytes
        span_of = np.cumsum(new_span) - 1
        sp_first = np.flatnonzero(new_span)
        sp_last = np.concatenate([sp_first[1:], [runs.shape[0]]]) - 1
        sp_b0 = run_b0[sp_first]
        sp_b1 = run_b1[sp_last]
        sp_len = sp_b1 - sp_b0
        sp_base = np.zeros(sp_first.size, dtype=np.int64)
        np.cumsum(sp_len[:-1], out=sp_base[1:])
        # where each run's first chunk starts in the concatenated span buffers
        run_at = sp_base[span_of] + (run_b0 - sp_b0[span_of])
        base = self.page.buffer_offsets[1]
        byte_ranges = list(zip((base + sp_b0).tolist(), (base + sp_b1).tolist()))
        return ReadPlan(runs, run_of, ra, rb, run_at, byte_ranges)

    def _plan_one(self, t: ChunkTable, ra: np.ndarray, rb: np.ndarray) -> ReadPlan:
        """:meth:`_plan` for one (already checked) row range, with scalars: one run of chunks,
        one byte span (the same plan as the general path, built without array passes)."""
        a, b = int(ra[0]), int(rb[0])
        c0 = int(t.row_hi.searchsorted(a, side="right"))
        c1 = int(t.row_lo.searchsorted(b, side="left"))
        if c1 <= c0:
            raise CorruptFileError("no chunk holds some requested rows", path=self.ctx.path)
        b0 = int(t.offsets[c0])
        b1 = int(t.offsets[c1 - 1]) + int(t.sizes[c1 - 1])
        base = int(self.page.buffer_offsets[1])
        return ReadPlan(
            np.array([[c0, c1]], dtype=np.int64),
            np.zeros(1, dtype=np.int64),
            ra,
            rb,
            np.zeros(1, dtype=np.int64),
            [(base + b0, base + b1)],
        )

    def read_steps(self, ranges: Any) -> Steps:
        """Step generator for rows in the half-open page-relative ``ranges`` (sorted,
        disjoint): the chunk table (if not loaded), then the chunks' bytes; returns
        :class:`LeafRows`, decoded synchronously."""
        t = yield from self.table_steps()
        plan = self._plan(t, ranges)
        bufs = yield from self.ctx.read_steps(plan.byte_ranges)
        return self._decode_all(t, plan, bufs)

    async def read(self, ranges: Any) -> LeafRows:
        """Rows in the half-open page-relative ``ranges`` (sorted, disjoint; an ``(n, 2)`` array
        or pairs), concatenated."""
        t = await self.table()
        plan = self._plan(t, ranges)
        ra, rb, runs = plan.ra, plan.rb, plan.runs
        bufs = await self.ctx.read(plan.byte_ranges, priority=self.page.priority + int(ra[0]))
        nbytes = sum(len(b) for b in bufs)
        if ra.size == 1 and not self.has_rep and nbytes >= PARALLEL_DECODE_BYTES:
            return await self._decode_split(t, int(runs[0, 0]), int(runs[0, 1]), bufs[0], int(ra[0]), int(rb[0]))
        return await self.ctx.decode(nbytes, self._decode_all, t, plan, bufs)

    async def _decode_split(self, t: ChunkTable, c0: int, c1: int, buf: memoryview, a: int, b: int) -> LeafRows:
        """Decode one large run (no repetition) as a few pieces in parallel worker threads
        (the kernels release the GIL); pieces end at chunk boundaries."""
        parts = max(1, min(DECODE_THREADS, (c1 - c0) // 16))
        cuts = np.linspace(c0, c1, parts + 1).astype(np.int64)
        base = int(t.offsets[c0])
        jobs = []
        for p0, p1 in zip(cuts[:-1].tolist(), cuts[1:].tolist()):
            if p1 <= p0:
                continue
            lo = max(a, int(t.row_lo[p0]))
            hi = min(b, int(t.row_hi[p1 - 1]))
            if hi <= lo:
                continue
            sub = buf[int(t.offsets[p0]) - base : int(t.offsets[p1 - 1] + t.sizes[p1 - 1]) - base]
            plan = ReadPlan(
                np.asarray([[p0, p1]], dtype=np.int64),
                np.zeros(1, dtype=np.int64),
                np.asarray([lo], dtype=np.int64),
                np.asarray([hi], dtype=np.int64),
                np.zeros(1, dtype=np.int64),
                [],
            )
            jobs.append(off_loop_if_idle(self._decode_all, t, plan, [sub]))
        pieces = await asyncio.gather(*jobs)
        return concat_rows(list(pieces), self.ctx.value_type)

    def _decode_all(self, t: ChunkTable, plan: ReadPlan, bufs: Sequence[Any]) -> LeafRows:
        """Decode the planned runs from ``bufs`` (one buffer per span of ``plan``)."""
        path = self.ctx.path
        runs, run_of, ra, rb = plan.runs, plan.run_of, plan.ra, plan.rb
        try:
            if len(bufs) == 1:
                data = np.frombuffer(bufs[0], dtype=np.uint8)
            else:
                data = np.concatenate([np.frombuffer(b, dtype=np.uint8) for b in bufs])
            run_len = runs[:, 1] - runs[:, 0]
            ids = _index_of(runs[:, 0], runs[:, 1])
            first_chunk = runs[:, 0]
            starts = np.repeat(plan.run_at - t.offsets[first_chunk], run_len) + t.offsets[ids]
            if not self.has_rep:
                pick = self._pick(t, ids, runs, run_of, ra, rb)
                if pick is not None:
                    # few rows of many decoded: decode (FSST) or keep only the rows asked for
                    return self._decode_chunks(t, ids, data, starts, pick)[0]
            decoded, levels_per_chunk = self._decode_chunks(t, ids, data, starts)
        except LanceJitError:
            raise
        except (ValueError, IndexError, TypeError, OverflowError) as exc:
            raise CorruptFileError(f"bad mini-block chunk ({type(exc).__name__}: {exc})", path=path) from exc
        chunk_level_start = np.zeros(ids.size + 1, dtype=np.int64)
        np.cumsum(levels_per_chunk, out=chunk_level_start[1:])
        run_first_idx = np.zeros(len(runs) + 1, dtype=np.int64)
        np.cumsum(run_len, out=run_first_idx[1:])
        run_l0 = chunk_level_start[run_first_idx[:-1]]
        run_l1 = chunk_level_start[run_first_idx[1:]]
        return extract_runs(
            decoded,
            self.ctx.canon,
            run_l0,
            run_l1,
            t.first_row[first_chunk],
            t.preamble[first_chunk],
            run_of,
            ra,
            rb,
            path=path,
        )

    def _pick(self, t: ChunkTable, ids: np.ndarray, runs: np.ndarray, run_of: np.ndarray,
              ra: np.ndarray, rb: np.ndarray) -> np.ndarray | None:
        """For a page without repetition (one level and one value per row): the positions of
        the requested rows among the decoded chunks' values, in order, when they are fewer
        than half of them; else None (decode everything, then slice)."""
        if pa.types.is_dictionary(self.ctx.value_type):
            return None  # (re-encoded after decoding: keep the dictionary of whole chunks)
        counts = t.counts[ids]
        total = int(counts.sum())
        wanted = int((rb - ra).sum())
        if wanted * 2 >= total:
            return None
        level0 = np.zeros(ids.size + 1, dtype=np.int64)
        np.cumsum(counts, out=level0[1:])
        run_first_idx = np.zeros(len(runs) + 1, dtype=np.int64)
        np.cumsum(runs[:, 1] - runs[:, 0], out=run_first_idx[1:])
        run_l0 = level0[run_first_idx[:-1]]
        run_l1 = level0[run_first_idx[1:]]
        p0 = run_l0[run_of] + (ra - t.first_row[runs[:, 0]][run_of])
        p1 = p0 + (rb - ra)
        if np.any(p0 < run_l0[run_of]) or np.any(p1 > run_l1[run_of]):
            raise CorruptFileError("requested rows fall outside the decoded chunks", path=self.ctx.path)
        return _index_of(p0, p1)

    def _levels_per_chunk(self, enc, buf, where, nl) -> np.ndarray:
        out = []
        for k in range(nl.size):
            o, z = int(where[0][k]), int(where[1][k])
            out.append(cmp.decode_levels(enc, buf[o : o + z], int(nl[k]), path=self.ctx.path))
        return np.concatenate(out).astype(np.uint16, copy=False) if out else np.zeros(0, np.uint16)

    def _decode_chunks(
        self, t: ChunkTable, ids: np.ndarray, data: np.ndarray, starts: np.ndarray, pick: np.ndarray | None = None
    ) -> tuple[LeafRows, np.ndarray]:
        """Decode chunks ``ids`` whose bytes start at ``starts`` in ``data``; returns the
        concatenated rows and the number of levels of each chunk.

        ``pick`` (pages without repetition only): sorted positions among the chunks' levels
        to return instead of all of them (FSST values outside it are never decoded)."""
        path = self.ctx.path
        buf = data
        sizes = t.sizes[ids]
        counts = t.counts[ids]
        nchunks = ids.size
        hdr = parse_chunk_headers(
            data,
            starts,
            sizes,
            has_rep=self.has_rep,
            has_def=self.has_def,
            num_buffers=self.num_buffers,
            large=self.large,
            path=path,
        )
        rep = deff = None
        if self.has_rep or self.has_def:
            nl = hdr.num_levels
            if hdr.rep is not None:  # (has_rep)
                rep = batch_levels(self.layout.rep_compression, data, hdr.rep[0], hdr.rep[1], nl, path=path)
                if rep is None:
                    rep = self._levels_per_chunk(self.layout.rep_compression, buf, hdr.rep, nl)
            if hdr.def_ is not None:  # (has_def)
                deff = batch_levels(self.layout.def_compression, data, hdr.def_[0], hdr.def_[1], nl, path=path)
                if deff is None:
                    deff = self._levels_per_chunk(self.layout.def_compression, buf, hdr.def_, nl)
                deff = translate_def(deff, self.def_table, path=path)
            num_levels = int(nl.sum())
            for arr in (rep, deff):
                if arr is not None and arr.size != num_levels:
                    raise CorruptFileError(f"decoded {arr.size} levels, chunk headers say {num_levels}", path=path)
            if self.has_rep:
                vis = visible_per_chunk(deff, self.ctx.canon, nl)
                if not np.array_equal(vis, counts):
                    raise CorruptFileError("chunk levels disagree with the chunk value counts", path=path)
        else:
            num_levels = int(counts.sum())
        levels_per_chunk = hdr.num_levels if (self.has_rep or self.has_def) else counts
        if self.has_def and not self.has_rep and not np.array_equal(hdr.num_levels, counts):
            raise CorruptFileError("chunk level counts disagree with the value counts", path=path)
        total = int(counts.sum())
        if pick is not None and t.dictionary is None:
            picked = picked_values(self.layout.value_compression, data, hdr, counts, pick, path=path)
            if picked is not None:
                values = values_to_arrow(picked, self.ctx.value_type, path=path)
                deff = None if deff is None else deff[pick]
                return LeafRows(None, deff, values, int(pick.size)), np.asarray(levels_per_chunk, dtype=np.int64)
        dv = fast_values(self.layout.value_compression, data, hdr, counts, path=path)
        if dv is None:
            parts = []
            for k in range(nchunks):
                vb = [buf[int(o[k]) : int(o[k]) + int(z[k])] for o, z in hdr.bufs]
                part = cmp.decode_miniblock(self.layout.value_compression, vb, int(counts[k]), path=path)
                if part.num_values != int(counts[k]):
                    raise CorruptFileError(f"chunk decoded {part.num_values} values, expected {int(counts[k])}", path=path)
                parts.append(part)
            dv = concat_values(parts) if parts else None
        if dv is None or dv.num_values != total:
            raise CorruptFileError(f"chunks decoded {0 if dv is None else dv.num_values} values, expected {total}", path=path)
        if t.dictionary is not None:
            if pa.types.is_dictionary(self.ctx.value_type):
                values = dictionary_array(t.dictionary, dv, self.ctx.value_type, path=path)
            else:
                values = take_dictionary(t.dictionary, dv, path=path)
        else:
            values = values_to_arrow(dv, self.ctx.value_type, path=path)
        if pick is not None:
            if len(values) != num_levels:
                raise CorruptFileError(f"{len(values)} values for {num_levels} rows", path=path)
            values = arrow_take(values, index_array(pick))
            deff = None if deff is None else deff[pick]
            return LeafRows(None, deff, values, int(pick.size)), np.asarray(levels_per_chunk, dtype=np.int64)
        return LeafRows(rep, deff, values, num_levels), np.asarray(levels_per_chunk, dtype=np.int64)


def _index_of(p0: np.ndarray, p1: np.ndarray) -> np.ndarray:
    """:func:`ranges_to_index` with a scalar path for one non-empty range (one-row takes)."""
    if len(p0) == 1 and p1[0] > p0[0]:
        return np.arange(int(p0[0]), int(p1[0]), dtype=np.int64)
    return ranges_to_index(p0, p1)


def visible_per_chunk(deff: np.ndarray | None, canon, num_levels: np.ndarray) -> np.ndarray:
    """Stored values per chunk given the concatenated def levels and levels per chunk."""
    if deff is None:
        return num_levels.astype(np.int64)
    vis = (deff <= max_visible_canonical(canon)).astype(np.int64)
    bounds = np.zeros(num_levels.size + 1, dtype=np.int64)
    np.cumsum(num_levels, out=bounds[1:])
    cs = np.zeros(vis.size + 1, dtype=np.int64)
    np.cumsum(vis, out=cs[1:])
    return cs[bounds[1:]] - cs[bounds[:-1]]


def _dict_value_type(t: pa.DataType) -> pa.DataType:
    return t.value_type if pa.types.is_dictionary(t) else t
