"""FSST compression of a page's variable-width values (one symbol table per page).

Training follows the FSST paper / the reference: a ~16 KiB sample, rounds with sample
fractions 8, 38, 68, 98, 108, 128 (/128); each round compresses the sample with the current table,
counts symbol and symbol-pair frequencies, and keeps the 255 candidates of highest gain
(count x length, single bytes boosted 8x).  The best-gain table is used.  Unlike the reference
the sample is chosen with a fixed seed (reproducible files).

The exported symbol table is 2 312 bytes: a u64 header (``"FSST"`` magic in bits 32..63,
encoder switch bit 24, suffix limit bits 16..23, terminator bits 8..15, symbol count bits 0..7),
the symbols as u64, their lengths as bytes, zero padded.
"""

from __future__ import annotations

import struct

import numpy as np

from lancejit.encoding.kernels.enc_fsst import (LONG_SLOTS, build_long_table, build_lookup, compress_bulk,
                                                compress_count, gather_candidates, merge_candidates,
                                                padded_words)

from .data import VarBlock

def kernels_ready() -> bool:
    """Whether the FSST training and compression kernels run compiled now (or compile in the
    caller anyway); False while the background process compiles them in a fresh installation
    (:func:`lancejit.encoding.kernels.jit.ready`): pages FSST would only have been chosen for
    are then written without it (valid files, larger) rather than trained interpreted."""
    from lancejit.encoding.kernels import jit

    jit.numba()  # (the kernels need it anyway)
    return all(jit.ready(k) for k in (build_lookup, compress_bulk, compress_count, gather_candidates,
                                      merge_candidates))


SAMPLE_TARGET = 1 << 14
TABLE_SIZE = 8 + 256 * 8 + 256
MAGIC = 0x46535354 << 32
LEAST_INPUT_SIZE = 32 * 1024


class SymbolTable:
    """Symbols (values little-endian in u64, lengths 1..8) and their lookup structures."""

    def __init__(self, vals: np.ndarray, lens: np.ndarray, terminator: int) -> None:
        self.vals = np.ascontiguousarray(vals, dtype=np.uint64)
        self.lens = np.ascontiguousarray(lens, dtype=np.int64)
        self.terminator = terminator
        self.byte_code = np.full(256, -1, dtype=np.int64)
        self.short_code = np.full(65536, -1, dtype=np.int64)
        self.bucket_start = np.zeros(1025, dtype=np.int64)
        self.bucket_syms = np.zeros(max(len(self.vals), 1), dtype=np.int64)
        build_lookup(self.vals, self.lens, len(self.vals), self.byte_code, self.short_code,
                     self.bucket_start, self.bucket_syms)

    def lookups(self):
        return (self.vals, self.lens, self.byte_code, self.short_code, self.bucket_start,
                self.bucket_syms)

    def bulk_lookups(self):
        """The lookup structures :func:`compress_bulk` takes (built on first use)."""
        got = getattr(self, "_bulk", None)
        if got is None:
            lens_mask = np.zeros(1024, dtype=np.uint8)
            slot_val = np.zeros(LONG_SLOTS, dtype=np.uint64)
            slot_len = np.zeros(LONG_SLOTS, dtype=np.int64)
            slot_code = np.zeros(LONG_SLOTS, dtype=np.int64)
            build_long_table(self.vals, self.lens, len(self.vals), lens_mask, slot_val, slot_len, slot_code)
            got = self._bulk = (self.byte_code, self.short_code, lens_mask, slot_val, slot_len, slot_code)
        return got

    def export(self, switch: bool = True) -> bytes:
        n = len(self.vals)
        header = MAGIC | (int(switch) << 24) | ((self.terminator & 255) << 8) | (n & 255)
        out = bytearray(TABLE_SIZE)
        out[0:8] = struct.pack("<Q", header)
        out[8 : 8 + 8 * n] = self.vals.astype("<u8").tobytes()
        out[8 + 8 * n : 8 + 9 * n] = self.lens.astype(np.uint8).tobytes()
        return bytes(out)


def _sample(data: np.ndarray, offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """About ``SAMPLE_TARGET`` bytes of whole values drawn at random (with replacement, fixed
    seed): ``(bytes, offsets)``; everything when the data is no bigger than that."""
    if data.size <= SAMPLE_TARGET:
        return data, offsets.astype(np.int64)
    rng = np.random.default_rng(0x5EED)
    offsets = offsets.astype(np.int64, copy=False)
    n = offsets.shape[0] - 1
    mean = max(data.size / n, 1.0)
    idx_parts: list[np.ndarray] = []
    total = 0
    while total < SAMPLE_TARGET:  # draw in batches until the target is reached
        k = int((SAMPLE_TARGET - total) / mean * 1.25) + 16
        idx = rng.integers(0, n, size=k)
        idx_parts.append(idx)
        total += int((offsets[idx + 1] - offsets[idx]).sum())
    idx = np.concatenate(idx_parts)
    lens = offsets[idx + 1] - offsets[idx]
    cum = np.cumsum(lens)
    m = int(np.searchsorted(cum, SAMPLE_TARGET)) + 1  # first prefix reaching the target
    idx, lens, cum = idx[:m], lens[:m], cum[:m]
    soffs = np.zeros(m + 1, dtype=np.int64)
    soffs[1:] = cum
    starts = offsets[idx]
    pos = np.arange(int(cum[-1]), dtype=np.int64) + np.repeat(starts - soffs[:-1], lens)
    return data[pos], soffs


def train(data: np.ndarray, offsets: np.ndarray) -> SymbolTable:
    """Build a symbol table from a sample of the values."""
    sample, soffs = _sample(data, offsets)
    histo = np.bincount(sample, minlength=256)
    terminator = int(np.argmin(histo))
    st = SymbolTable(np.zeros(0, np.uint64), np.zeros(0, np.int64), terminator)
    best, best_gain = st, None
    for frac in (8, 38, 68, 98, 108, 128):
        n_sym = len(st.vals)
        count1 = np.zeros(256 + 256, dtype=np.int64)
        count2 = np.zeros((256 + 256, 256 + 256), dtype=np.int64)
        gain = compress_count(sample, soffs, *st.lookups(), count1, count2, frac < 128)
        if best_gain is None or gain >= best_gain:
            best, best_gain = st, gain
        st = _make_table(st, count1, count2, frac, n_sym, terminator)
    return best


def _make_table(st: SymbolTable, count1, count2, frac: int, n_sym: int, terminator: int) -> SymbolTable:
    """The next round's table: the 255 candidates of highest gain (ties: smaller symbol value,
    then first found), ordered by length 2..8 then 1."""
    count1[terminator] = 65535
    min_count = (5 * frac) // 128
    ncodes = 256 + n_sym
    code_val = np.empty(ncodes, dtype=np.uint64)
    code_len = np.empty(ncodes, dtype=np.int64)
    code_val[:256] = np.arange(256, dtype=np.uint64)
    code_len[:256] = 1
    code_val[256:] = st.vals[:n_sym]
    code_len[256:] = st.lens[:n_sym]
    cap = ncodes * (ncodes + 1)
    cv = np.empty(cap, dtype=np.uint64)
    cl = np.empty(cap, dtype=np.int64)
    cg = np.empty(cap, dtype=np.int64)
    k = gather_candidates(count1, count2, code_val, code_len, ncodes, terminator, min_count,
                          frac < 128, cv, cl, cg)
    if k == 0:
        return SymbolTable(np.zeros(0, np.uint64), np.zeros(0, np.int64), terminator)
    uv = np.empty(k, dtype=np.uint64)
    ul = np.empty(k, dtype=np.int64)
    ug = np.empty(k, dtype=np.int64)
    m = merge_candidates(cv, cl, cg, k, uv, ul, ug)  # first-found order kept
    uv, ul, ug = uv[:m], ul[:m], ug[:m]
    if m > 255:  # only candidates reaching the 255th highest gain can be chosen
        keep = np.flatnonzero(ug >= np.partition(ug, m - 255)[m - 255])
    else:
        keep = np.arange(m)
    top = keep[np.lexsort((keep, uv[keep], -ug[keep]))[:255]]
    uv, ul = uv[top], ul[top]
    fin = np.lexsort((ul, ul == 1))  # stable: lengths 2..8, then 1
    return SymbolTable(uv[fin], ul[fin], terminator)


def fsst_compress(block: VarBlock) -> tuple[VarBlock, bytes]:
    """(compressed values with offsets of the same width, exported symbol table)."""
    data = np.ascontiguousarray(block.data)
    offs = block.offsets.astype(np.int64)
    if data.size < LEAST_INPUT_SIZE:
        st = SymbolTable(np.zeros(0, np.uint64), np.zeros(0, np.int64), 0)
        return block, st.export(switch=False)
    st = train(data, offs)
    out = np.empty(2 * data.size + 8, dtype=np.uint8)
    out_offs = np.empty(offs.shape[0], dtype=np.int64)
    nbytes = compress_bulk(padded_words(data), offs, *st.bulk_lookups(), out, out_offs)
    res = VarBlock(out_offs.astype(block.offsets.dtype), out[:nbytes], block.num_values)
    return res, st.export()
