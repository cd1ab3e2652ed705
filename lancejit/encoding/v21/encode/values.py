"""Mini-block value compressors: split a page's values into chunks and compress each.

Each compressor returns :class:`MiniChunks`: per chunk a list of value buffers (bytes) and the
number of values, plus the ``CompressiveEncoding`` describing them.  Chunk sizing follows the
reference: flat picks the largest power of two with < 8186 bytes and <= 4096 values, inline
bit-packing uses 1024 values, RLE <= 4096, variable doubles while offsets+bytes <= 4 KiB.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from lancejit.encoding.kernels.bitpack import pack_blocks
from lancejit.encoding.kernels.enc_rle import rle_encode_chunks

from . import general
from . import pbutil
from .data import FixedBlock, FslBlock, PackedBlock, VarBlock, uint_dtype
from .stats import bit_widths

MAX_MINIBLOCK_BYTES = 8 * 1024 - 6
MAX_MINIBLOCK_VALUES = 4096
VARIABLE_CHUNK_BYTES = 4 * 1024
PAD_VARIABLE = 0x48


@dataclass
class MiniChunks:
    """Value chunks of one page: ``buffers[i]`` are chunk i's buffers, ``counts[i]`` its values."""

    buffers: list[list[bytes]]
    counts: list[int]
    encoding: pbutil.CE

    @property
    def num_buffers(self) -> int:
        return len(self.buffers[0]) if self.buffers else 0


def _log_vals_per_chunk(bytes_per_word: int, values_per_word: int) -> int:
    size, num = bytes_per_word, values_per_word
    while 2 * size < MAX_MINIBLOCK_BYTES and 2 * num <= MAX_MINIBLOCK_VALUES:
        size *= 2
        num *= 2
    return num


def _fixed_bytes(block: FixedBlock) -> np.ndarray:
    return block.data.view(np.uint8) if block.data.dtype != np.uint8 else block.data


def flat_chunks(block: FixedBlock) -> MiniChunks:
    """Uncompressed fixed-width values (bools: LSB-first bitmap)."""
    bits = block.bits_per_value
    if bits % 8 == 0:
        bpw, vpw = bits // 8, 1
    else:
        bpw, vpw = bits, 8
    per = _log_vals_per_chunk(bpw, vpw)
    raw = _fixed_bytes(block)
    n = block.num_values
    total_bytes = (n * bits + 7) // 8
    bufs, counts = [], []
    pos = 0
    while pos < n:
        m = min(per, n - pos)
        b0 = pos * bits // 8
        b1 = total_bytes if pos + m == n else (pos + m) * bits // 8
        bufs.append([raw[b0:b1].tobytes()])
        counts.append(m)
        pos += m
    return MiniChunks(bufs, counts, pbutil.flat(bits))


def fsl_chunks(block: FslBlock) -> MiniChunks:
    """Fixed-size lists of fixed-width items: optional item-validity bitmap, then values."""
    dims = []
    b = block
    while isinstance(b, FslBlock):
        dims.append((b.dimension, b.validity))
        b = b.child
    child: FixedBlock = b
    cum = 1
    val_bytes = 0
    for d, v in dims:
        cum *= d
        if v is not None:
            val_bytes += (cum + 7) // 8
    cum_bits = child.bits_per_value * cum
    if cum_bits % 8 == 0:
        bpw, vpw = cum_bits // 8, 1
    else:
        bpw, vpw = cum_bits, 8
    per = _log_vals_per_chunk(val_bytes * vpw + bpw, vpw)
    raw = _fixed_bytes(child)
    n = block.num_values
    bufs, counts = [], []
    pos = 0
    while pos < n:
        m = min(per, n - pos)
        chunk = []
        c = 1
        for d, v in dims:
            c *= d
            if v is not None:
                bits_v = v[pos * c : (pos + m) * c]
                chunk.append(np.packbits(bits_v, bitorder="little").tobytes())
        nb0 = pos * cum * child.bits_per_value
        nb1 = (pos + m) * cum * child.bits_per_value
        chunk.append(raw[nb0 // 8 : (nb1 + 7) // 8].tobytes())
        bufs.append(chunk)
        counts.append(m)
        pos += m
    enc = pbutil.flat(child.bits_per_value)
    for d, v in reversed(dims):
        enc = pbutil.fsl(d, v is not None, enc)
    return MiniChunks(bufs, counts, enc)


def inline_bitpack_chunks(block: FixedBlock, widths: np.ndarray | None = None) -> MiniChunks:
    """FastLanes bit-packing, 1024 values per chunk, the width stored as the chunk's first word."""
    bits = block.bits_per_value
    dt = uint_dtype(bits)
    words = block.data[: block.num_values]
    if widths is None:
        widths = bit_widths(words)
    n = block.num_values
    nblocks = (n + 1023) // 1024
    padded = np.zeros(nblocks * 1024, dtype=dt)
    padded[:n] = words
    bufs, counts = [], []
    lanes = 1024 // bits
    for i in range(nblocks):
        w = int(widths[i])
        out = np.zeros(lanes * w + 1, dtype=dt)
        out[0] = w
        if w:
            pack_blocks(padded[i * 1024 : (i + 1) * 1024], w, 1, out[1:])
        bufs.append([out.tobytes()])
        counts.append(min(1024, n - i * 1024))
    return MiniChunks(bufs, counts, pbutil.inline_bitpacking(bits))


def rle_chunks(block: FixedBlock) -> MiniChunks:
    """Run-length encoding: per chunk a buffer of run values and a buffer of u8 run lengths."""
    bits = block.bits_per_value
    words = np.ascontiguousarray(block.data[: block.num_values])
    n = words.shape[0]
    out_v = np.empty(n, dtype=words.dtype)
    out_l = np.empty(n, dtype=np.uint8)
    cv = np.empty(n, dtype=np.int64)
    cr = np.empty(n, dtype=np.int64)
    nchunks = rle_encode_chunks(words, 4096, MAX_MINIBLOCK_BYTES, out_v, out_l, cv, cr)
    bufs, counts = [], []
    r0 = 0
    for i in range(nchunks):
        r1 = r0 + int(cr[i])
        bufs.append([out_v[r0:r1].tobytes(), out_l[r0:r1].tobytes()])
        counts.append(int(cv[i]))
        r0 = r1
    return MiniChunks(bufs, counts, pbutil.rle(bits))


def bss_chunks(block: FixedBlock) -> MiniChunks:
    """Byte-stream split: in a chunk of n values of k bytes, output byte j*n+i = byte j of value i."""
    bits = block.bits_per_value
    k = bits // 8
    per = 1024 if bits == 32 else 512 if bits == 64 else _log_vals_per_chunk(k, 1)
    raw = _fixed_bytes(block)[: block.num_values * k]
    n = block.num_values
    bufs, counts = [], []
    pos = 0
    while pos < n:
        m = min(per, n - pos)
        part = raw[pos * k : (pos + m) * k].reshape(m, k)
        bufs.append([np.ascontiguousarray(part.T).tobytes()])
        counts.append(m)
        pos += m
    return MiniChunks(bufs, counts, pbutil.bss(bits))


def _next_variable_chunk(offsets: np.ndarray, start: int, width: int) -> int:
    """End index (in offsets) of the chunk starting at ``start`` (the reference's doubling search)."""
    n_off = offsets.shape[0]
    num = 1
    new = 2
    while True:
        if start + new >= n_off:
            existing = int(offsets[-1] - offsets[start])
            size = existing + (n_off - start) * width
            if size <= VARIABLE_CHUNK_BYTES:
                return n_off - 1
            return start + num
        existing = int(offsets[start + new] - offsets[start])
        size = existing + (new + 1) * width
        if size <= VARIABLE_CHUNK_BYTES:
            num = new
            new *= 2
        else:
            break
    return start + new


def variable_chunks(block: VarBlock) -> MiniChunks:
    """Variable-width values: per chunk (n+1) offsets (positions inside the chunk) then bytes."""
    offs = block.offsets
    width = offs.dtype.itemsize
    data = block.data
    bufs, counts = [], []
    start = 0
    last = offs.shape[0] - 1
    if last == 0:
        return MiniChunks([], [], pbutil.variable(width * 8))
    while True:
        end = _next_variable_chunk(offs, start, width)
        if end > last:
            end = last
        m = end - start
        hdr = (m + 1) * width
        local = (offs[start : end + 1] - offs[start] + hdr).astype(offs.dtype)
        body = data[int(offs[start]) : int(offs[end])].tobytes()
        chunk = local.tobytes() + body
        pad = (-len(chunk)) % width
        chunk += bytes([PAD_VARIABLE]) * pad
        bufs.append([chunk])
        counts.append(m)
        if end == last:
            break
        start = end
    return MiniChunks(bufs, counts, pbutil.variable(width * 8))


MIN_BUFFER_SIZE_FOR_GENERAL = 4 * 1024


def wrap_general(chunks: MiniChunks, scheme: str, level: int | None) -> MiniChunks:
    """Compress buffer 0 of every chunk; kept only if the total shrinks (as the reference)."""
    if not chunks.buffers:
        return chunks
    total = sum(len(c[0]) for c in chunks.buffers)
    if total < MIN_BUFFER_SIZE_FOR_GENERAL:
        return chunks
    new = []
    ctotal = 0
    for c in chunks.buffers:
        z = general.compress(c[0], scheme, level)
        ctotal += len(z)
        new.append([z] + c[1:])
    if ctotal >= total:
        return chunks
    return MiniChunks(new, chunks.counts, pbutil.general(scheme, level, chunks.encoding))


def packed_chunks(block: PackedBlock) -> MiniChunks:
    """Packed struct (fixed-width children): row-major rows chunked like flat values."""
    k = block.rows.shape[1]
    per = _log_vals_per_chunk(k, 1)
    raw = block.rows.reshape(-1)
    n = block.num_values
    bufs, counts = [], []
    pos = 0
    while pos < n:
        m = min(per, n - pos)
        bufs.append([raw[pos * k : (pos + m) * k].tobytes()])
        counts.append(m)
        pos += m
    enc = pbutil.CE()
    enc.packed_struct.bits_per_value.extend(block.child_bits)
    enc.packed_struct.values.CopyFrom(pbutil.flat(block.bits_per_value))
    return MiniChunks(bufs, counts, enc)
