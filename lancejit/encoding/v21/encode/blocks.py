"""Block compressors: whole buffers (rep/def levels of a chunk, dictionaries, all-null levels).

The compressor is chosen once per page from the statistics of the whole buffer (as the
reference's ``create_block_compressor``), then applied to each piece (e.g. each chunk's levels).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

import struct

from lancejit.encoding.kernels.bitpack import pack_blocks
from lancejit.encoding.kernels.enc_rle import rle_encode_chunks

from . import general
from . import pbutil
from .data import FixedBlock, VarBlock, uint_dtype
from .stats import bit_widths

MIN_BLOCK_SIZE_FOR_GENERAL = 32 * 1024


@dataclass
class BlockCompressor:
    """``kind``: 'flat' | 'inline' | 'ool' | 'general-flat' | 'variable' | 'general-variable'."""

    kind: str
    bits: int
    width: int = 0
    scheme: str | None = None
    level: int | None = None
    encoding: pbutil.CE | None = None

    def compress_fixed(self, words: np.ndarray) -> bytes:
        if self.kind == "rle":
            return rle_block(words)
        if self.kind == "flat":
            return words.tobytes()
        if self.kind == "general-flat":
            assert self.scheme is not None  # choose_fixed names the scheme of general kinds
            return general.compress(words.tobytes(), self.scheme, self.level)
        if self.kind == "inline":
            return _inline_pack(words, self.bits)
        if self.kind == "ool":
            return _ool_pack(words, self.bits, self.width)
        raise ValueError(self.kind)


    def compress_fixed_many(self, words: np.ndarray, bounds: list[tuple[int, int]]) -> list[bytes]:
        """``[compress_fixed(words[s:e]) for s, e in bounds]`` (ranges half-open, consecutive),
        with the out-of-line bit-packing of short pieces done in one kernel call."""
        if self.kind == "ool" and bounds and all(e - s < 1024 for s, e in bounds):
            return _ool_pack_short(words, bounds, self.bits, self.width)
        return [self.compress_fixed(words[s:e]) for s, e in bounds]


def _ool_pack_short(words: np.ndarray, bounds: list[tuple[int, int]], bits: int, width: int) -> list[bytes]:
    """:func:`_ool_pack` of each piece ``words[s:e]`` (each shorter than 1024 values): a piece
    is bit-packed into one zero-padded block when that is smaller than its raw words."""
    dt = uint_dtype(bits)
    wpb = (1024 * width + bits - 1) // bits
    starts = np.array([b[0] for b in bounds], dtype=np.int64)
    lens = np.array([b[1] - b[0] for b in bounds], dtype=np.int64)
    pack = (lens > 0) & (width * (1024 - lens) < max(bits - width, 0) * lens)
    out: list[bytes] = []
    packed_rows: dict[int, int] = {}
    sel = np.flatnonzero(pack)
    if sel.size:
        k = sel.size
        mat = np.zeros((k, 1024), dtype=dt)
        plens = lens[sel]
        row = np.repeat(np.arange(k), plens)
        first = np.concatenate([[0], np.cumsum(plens)[:-1]])
        col = np.arange(int(plens.sum())) - np.repeat(first, plens)
        src = np.repeat(starts[sel], plens) + col
        mat[row, col] = words[src]
        packed = np.zeros(k * wpb, dtype=dt)
        pack_blocks(mat.reshape(-1), width, k, packed)
        raw = packed.tobytes()
        nb = wpb * packed.itemsize
        packed_rows = {int(i): j * nb for j, i in enumerate(sel)}
        for i, (s, e) in enumerate(bounds):
            off = packed_rows.get(i)
            out.append(raw[off : off + nb] if off is not None else np.ascontiguousarray(words[s:e]).tobytes())
        return out
    return [np.ascontiguousarray(words[s:e]).tobytes() for s, e in bounds]


def _inline_pack(words: np.ndarray, bits: int) -> bytes:
    dt = uint_dtype(bits)
    n = words.shape[0]
    nblocks = max(1, (n + 1023) // 1024)
    padded = np.zeros(nblocks * 1024, dtype=dt)
    padded[:n] = words
    widths = bit_widths(padded[:n]) if n else np.zeros(1, np.int64)
    lanes = 1024 // bits
    parts = []
    for i in range(nblocks):
        w = int(widths[i]) if i < len(widths) else 0
        out = np.zeros(lanes * w + 1, dtype=dt)
        out[0] = w
        if w:
            pack_blocks(padded[i * 1024 : (i + 1) * 1024], w, 1, out[1:])
        parts.append(out.tobytes())
    return b"".join(parts)


def _ool_pack(words: np.ndarray, bits: int, width: int) -> bytes:
    dt = uint_dtype(bits)
    n = words.shape[0]
    wpb = (1024 * width + bits - 1) // bits
    whole = n // 1024
    rem = n - whole * 1024
    parts = []
    if whole:
        out = np.zeros(whole * wpb, dtype=dt)
        pack_blocks(np.ascontiguousarray(words[: whole * 1024]), width, whole, out)
        parts.append(out.tobytes())
    if rem:
        savings = max(bits - width, 0) * rem
        padding_cost = width * (1024 - rem)
        if padding_cost < savings:
            padded = np.zeros(1024, dtype=dt)
            padded[:rem] = words[whole * 1024 :]
            out = np.zeros(wpb, dtype=dt)
            pack_blocks(padded, width, 1, out)
            parts.append(out.tobytes())
        else:
            parts.append(np.ascontiguousarray(words[whole * 1024 :]).tobytes())
    return b"".join(parts)


def rle_block(words: np.ndarray) -> bytes:
    """Block RLE (2.2): u64 byte length of the values, run values, u8 run lengths (runs <= 255)."""
    words = np.ascontiguousarray(words)
    n = words.shape[0]
    out_v = np.empty(max(n, 1), dtype=words.dtype)
    out_l = np.empty(max(n, 1), dtype=np.uint8)
    cv = np.empty(max(n, 1), dtype=np.int64)
    cr = np.empty(max(n, 1), dtype=np.int64)
    nchunks = rle_encode_chunks(words, max(n, 1), 1 << 62, out_v, out_l, cv, cr) if n else 0
    nruns = int(cr[:nchunks].sum())
    vals = out_v[:nruns].tobytes()
    return struct.pack("<Q", len(vals)) + vals + out_l[:nruns].tobytes()


def _rle_block_size(words: np.ndarray) -> int:
    n = words.shape[0]
    if n == 0:
        return 8
    change = np.flatnonzero(words[1:] != words[:-1])
    starts = np.concatenate([[0], change + 1])
    lens = np.diff(np.concatenate([starts, [n]]))
    runs = int(((lens + 254) // 255).sum())
    return 8 + runs * (words.dtype.itemsize + 1)


def choose_fixed(words: np.ndarray, bits: int, version: tuple[int, int], scheme: str | None = None,
                 level: int | None = None, force_general: bool = False,
                 allow_rle: bool = False) -> BlockCompressor:
    """Pick the block compressor for a fixed-width buffer (``words``: unsigned, ``bits`` wide).

    ``allow_rle`` (2.2 rep/def levels): block RLE is used when it is smaller than bit-packing.
    """
    n = words.shape[0]
    data_size = n * bits // 8
    if bits in (8, 16, 32, 64) and n:
        widths = bit_widths(words)
        has_zero = bool((widths == 0).any())
        too_small = len(widths) == 1 and (1024 * int(widths[0]) + 7) // 8 >= data_size
        if allow_rle and version >= (2, 2):
            rle_size = _rle_block_size(words)
            bp_size = data_size if (has_zero or too_small) else (
                (1024 * int(widths.max()) * ((n + 1023) // 1024)) // 8)
            if rle_size < bp_size:
                return BlockCompressor("rle", bits, encoding=pbutil.rle(bits))
        if not has_zero and not too_small:
            if n <= 1024:
                return BlockCompressor("inline", bits, encoding=pbutil.inline_bitpacking(bits))
            w = int(widths.max())
            return BlockCompressor("ool", bits, width=w, encoding=pbutil.out_of_line_bitpacking(bits, w))
    if version >= (2, 2) and (scheme is not None or force_general or data_size > MIN_BLOCK_SIZE_FOR_GENERAL):
        sch = scheme or "lz4"
        return BlockCompressor("general-flat", bits, scheme=sch, level=level if scheme else None,
                               encoding=pbutil.general(sch, level if scheme else None, pbutil.flat(bits)))
    return BlockCompressor("flat", bits, encoding=pbutil.flat(bits))


def variable_block(block: VarBlock) -> bytes:
    """The Variable block format: header (width, bytes before data), offsets from 0, bytes."""
    width = block.offsets.dtype.itemsize
    n1 = block.offsets.shape[0]
    hdr_t = np.uint32 if width == 4 else np.uint64
    header = np.array([width * 8, 2 * width + width * n1], dtype=hdr_t).tobytes()
    return header + (block.offsets - block.offsets[0]).astype(block.offsets.dtype).tobytes() + block.data.tobytes()


def compress_dictionary(dict_block, version: tuple[int, int]) -> tuple[bytes, pbutil.CE]:
    """Block-compress a page dictionary (2.2 wraps it in general LZ4 when not bit-packed)."""
    if isinstance(dict_block, VarBlock):
        raw = variable_block(dict_block)
        enc = pbutil.variable(dict_block.offsets.dtype.itemsize * 8)
        if version >= (2, 2):
            return general.compress(raw, "lz4"), pbutil.general("lz4", None, enc)
        return raw, enc
    assert isinstance(dict_block, FixedBlock)
    bits = dict_block.bits_per_value
    if bits in (8, 16, 32, 64):
        words = dict_block.data[: dict_block.num_values]
        comp = choose_fixed(words, bits, version, force_general=True)
        assert comp.encoding is not None  # choose_fixed always names the encoding
        return comp.compress_fixed(words), comp.encoding
    raw = dict_block.raw_bytes()
    if version >= (2, 2):
        return general.compress(raw, "lz4"), pbutil.general("lz4", None, pbutil.flat(bits))
    return raw, pbutil.flat(bits)
