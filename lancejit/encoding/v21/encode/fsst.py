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

from lancejit.encoding.kernels.enc_fsst import build_lookup, compress_bulk, compress_count

from .data import VarBlock

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

    def export(self, switch: bool = True) -> bytes:
        n = len(self.vals)
        header = MAGIC | (int(switch) << 24) | ((self.terminator & 255) << 8) | (n & 255)
        out = bytearray(TABLE_SIZE)
        out[0:8] = struct.pack("<Q", header)
        out[8 : 8 + 8 * n] = self.vals.astype("<u8").tobytes()
        out[8 + 8 * n : 8 + 9 * n] = self.lens.astype(np.uint8).tobytes()
        return bytes(out)


def _sample(data: np.ndarray, offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    if data.size <= SAMPLE_TARGET:
        return data, offsets.astype(np.int64)
    rng = np.random.default_rng(0x5EED)
    n = offsets.shape[0] - 1
    parts, offs, total = [], [0], 0
    while total < SAMPLE_TARGET:
        i = int(rng.integers(0, n))
        s, e = int(offsets[i]), int(offsets[i + 1])
        parts.append(data[s:e])
        total += e - s
        offs.append(total)
    return np.concatenate(parts), np.array(offs, dtype=np.int64)


def _concat(v1: int, l1: int, v2: int, l2: int) -> tuple[int, int]:
    ln = min(l1 + l2, 8)
    v = (v1 | (v2 << (8 * l1))) & ((1 << (8 * ln)) - 1)
    return v, ln


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
    count1[terminator] = 65535
    min_count = (5 * frac) // 128
    cand: dict[tuple[int, int], int] = {}

    def sym(code: int) -> tuple[int, int]:
        if code < 256:
            return code, 1
        return int(st.vals[code - 256]), int(st.lens[code - 256])

    ncodes = 256 + n_sym
    c1 = count1[:ncodes]
    for pos1 in np.flatnonzero(c1):
        cnt1 = int(c1[pos1])
        v1, l1 = sym(int(pos1))
        boosted = cnt1 * (8 if l1 == 1 else 1)
        if boosted >= min_count:
            cand[(v1, l1)] = cand.get((v1, l1), 0) + boosted * l1
        if (v1 & 0xFF) == terminator or frac >= 128 or l1 == 8:
            continue
        row = count2[pos1, :ncodes]
        for pos2 in np.flatnonzero(row >= max(min_count, 1)):
            v2, l2 = sym(int(pos2))
            if (v2 & 0xFF) == terminator:
                continue
            v3, l3 = _concat(v1, l1, v2, l2)
            cand[(v3, l3)] = cand.get((v3, l3), 0) + int(row[pos2]) * l3
    # highest gain first; ties: smaller value first
    items = sorted(cand.items(), key=lambda kv: (-kv[1], kv[0][0]))[:255]
    if not items:
        return SymbolTable(np.zeros(0, np.uint64), np.zeros(0, np.int64), terminator)
    # order: lengths 2..8 then 1 (as the reference's finalised tables)
    items.sort(key=lambda kv: (kv[0][1] == 1, kv[0][1]))
    vals = np.array([k[0] for k, _ in items], dtype=np.uint64)
    lens = np.array([k[1] for k, _ in items], dtype=np.int64)
    return SymbolTable(vals, lens, terminator)


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
    nbytes = compress_bulk(data, offs, *st.lookups(), out, out_offs)
    res = VarBlock(out_offs.astype(block.offsets.dtype), out[:nbytes].copy(), block.num_values)
    return res, st.export()
