"""Mini-block value compressors: split a page's values into chunks and compress each.

Each compressor returns :class:`MiniChunks`: per chunk a list of value buffers (bytes) and the
number of values, plus the ``CompressiveEncoding`` describing them.  Chunk sizing follows the
reference: flat picks the largest power of two with < 8186 bytes and <= 4096 values, inline
bit-packing uses 1024 values, RLE <= 4096, variable doubles while offsets+bytes <= 4 KiB.
"""

from __future__ import annotations

import numpy as np

from lancejit.encoding.kernels import enc_chunks, readonly
from lancejit.encoding.kernels.enc_rle import rle_encode_chunks

from . import general
from . import pbutil
from .data import FixedBlock, FslBlock, PackedBlock, VarBlock, uint_dtype
from .stats import bit_widths

MAX_MINIBLOCK_BYTES = 8 * 1024 - 6
MAX_MINIBLOCK_VALUES = 4096
VARIABLE_CHUNK_BYTES = 4 * 1024


class MiniChunks:
    """Value chunks of one page: ``buffers[i]`` are chunk i's buffers, ``counts[i]`` its values.

    Chunks of one buffer each may be given packed instead: ``packed = (body, sizes)``, chunk i's
    buffer being ``body[sum(sizes[:i]) : sum(sizes[:i + 1])]`` (uint8 body, int64 sizes); the
    list form is then built only when asked for (:attr:`buffers`)."""

    __slots__ = ("_buffers", "counts", "encoding", "packed")

    def __init__(self, buffers: list[list[bytes]] | None, counts: list[int], encoding: pbutil.CE,
                 packed: tuple[np.ndarray, np.ndarray] | None = None) -> None:
        self._buffers = buffers
        self.counts = counts
        self.encoding = encoding
        self.packed = packed

    @property
    def buffers(self) -> list[list[bytes]]:
        if self._buffers is None:
            assert self.packed is not None  # made in the packed form
            body, sizes = self.packed
            ends = np.cumsum(sizes).tolist()
            starts = [0] + ends[:-1]
            self._buffers = [[body[a:b].tobytes()] for a, b in zip(starts, ends)]
        return self._buffers

    @property
    def num_buffers(self) -> int:
        if self._buffers is None:
            return 1 if len(self.counts) else 0
        return len(self._buffers[0]) if self._buffers else 0

    def total_bytes(self) -> int:
        """Bytes of all the chunks' buffers."""
        if self._buffers is None:
            assert self.packed is not None  # made in the packed form
            return int(self.packed[1].sum())
        return sum(len(b) for chunk in self._buffers for b in chunk)


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
    if bits % 8 == 0 and n:  # whole bytes: the chunks are the values' bytes, cut every `per`
        k = bits // 8
        full, rest = divmod(n, per)
        counts = [per] * full + ([rest] if rest else [])
        sizes = np.array(counts, dtype=np.int64) * k
        return MiniChunks(None, counts, pbutil.flat(bits), (raw[: n * k], sizes))
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
    b: FixedBlock | FslBlock = block
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
    lanes = 1024 // bits
    widths = np.ascontiguousarray(widths[:nblocks], dtype=np.int64)
    out = np.empty(nblocks * (1 + lanes * int(widths.max(initial=0))), dtype=dt)
    sizes = np.empty(nblocks, dtype=np.int64)
    used = enc_chunks.inline_bitpack_all(readonly(padded), readonly(widths), out, sizes)
    counts = [1024] * (nblocks - 1) + [n - (nblocks - 1) * 1024] if nblocks else []
    return MiniChunks(None, counts, pbutil.inline_bitpacking(bits),
                      (out[:used].view(np.uint8), sizes * dt().itemsize))


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


def variable_chunks(block: VarBlock) -> MiniChunks:
    """Variable-width values: per chunk (n+1) offsets (positions inside the chunk) then bytes
    (:func:`lancejit.encoding.kernels.enc_chunks.variable_chunks`)."""
    offs = block.offsets
    width = offs.dtype.itemsize
    last = offs.shape[0] - 1
    if last <= 0:
        return MiniChunks([], [], pbutil.variable(width * 8))
    offsets = readonly(offs[: last + 1], np.int64)
    data = readonly(block.data, np.uint8)
    body = np.empty(int(offsets[-1] - offsets[0]) + 3 * (last + 1) * width + 16, dtype=np.uint8)
    sizes = np.empty(last, dtype=np.int64)
    counts = np.empty(last, dtype=np.int64)
    k, used = enc_chunks.variable_chunks(offsets, data, width, VARIABLE_CHUNK_BYTES, body, sizes, counts)
    return MiniChunks(None, counts[:k].tolist(), pbutil.variable(width * 8), (body[:used], sizes[:k].copy()))


MIN_BUFFER_SIZE_FOR_GENERAL = 4 * 1024


def wrap_general(chunks: MiniChunks, scheme: str, level: int | None) -> MiniChunks:
    """Compress buffer 0 of every chunk; kept only if the total shrinks (as the reference)."""
    if not chunks.counts:
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
