"""Inline and out-of-line FastLanes bit-packing of 2.1/2.2 files (validation + kernel calls).

* Inline (``InlineBitpacking``): a chunk of up to 1024 values is one T-bit word holding the bit
  width W, then ``1024 * W / T`` packed words (the last chunk is zero-padded to 1024 values before
  packing, so every chunk is full size).  In a block buffer, chunks follow each other.
* Out-of-line (``OutOfLineBitpacking``): W is fixed for the buffer; whole 1024-value blocks of
  ``1024 * W / T`` words each, then a partial tail either packed as a padded full block or stored
  raw as T-bit values; the buffer length tells which.

T is the uncompressed width (8, 16, 32 or 64 bits).  Outputs are new arrays of dtype uintT.
"""

from __future__ import annotations

import numpy as np

from lancejit.core.bounds import word_bits
from lancejit.core.errors import CorruptFileError
from lancejit.encoding.kernels import readonly
from lancejit.encoding.kernels.bitpack import BLOCK_VALUES, pack_blocks, unpack_blocks

_DTYPES: dict[int, np.dtype] = {8: np.dtype(np.uint8), 16: np.dtype(np.uint16), 32: np.dtype(np.uint32), 64: np.dtype(np.uint64)}


def word_dtype(bits: int, *, path: str) -> np.dtype:
    """The unsigned dtype of T-bit words; CorruptFileError past 64 bits, NotSupportedError
    for other widths."""
    return _DTYPES[word_bits(bits, tuple(_DTYPES), "bit-packed words", path)]


def _words(buf: np.ndarray, dtype: np.dtype, start_byte: int, count: int) -> np.ndarray:
    """``count`` words of ``dtype`` starting at ``start_byte`` (copied if misaligned)."""
    raw = buf[start_byte : start_byte + count * dtype.itemsize]
    if raw.ctypes.data % dtype.itemsize:
        raw = raw.copy()
    return readonly(raw.view(dtype))


def unpack_inline(buf: np.ndarray, bits: int, num_values: int, *, path: str) -> np.ndarray:
    """Decode ``num_values`` values from one or more consecutive inline chunks in ``buf`` (uint8)."""
    dt = word_dtype(bits, path=path)
    t = dt.itemsize * 8
    lanes = BLOCK_VALUES // t
    nchunks = -(-num_values // BLOCK_VALUES)
    out = np.empty(nchunks * BLOCK_VALUES, dtype=dt)
    pos = 0
    for c in range(nchunks):
        if pos + dt.itemsize > len(buf):
            raise CorruptFileError(f"inline bit-packed chunk {c} truncated", path=path)
        width = int(_words(buf, dt, pos, 1)[0])
        if width > t:
            raise CorruptFileError(f"inline bit width {width} exceeds {t}", path=path)
        pos += dt.itemsize
        nwords = lanes * width
        if pos + nwords * dt.itemsize > len(buf):
            raise CorruptFileError(
                f"inline bit-packed chunk {c} needs {nwords * dt.itemsize} bytes, "
                f"{len(buf) - pos} present",
                path=path,
            )
        unpack_blocks(_words(buf, dt, pos, nwords), width, 1, out[c * BLOCK_VALUES :])
        pos += nwords * dt.itemsize
    return out[:num_values]


def unpack_out_of_line(
    buf: np.ndarray, bits: int, width: int, num_values: int, *, path: str
) -> np.ndarray:
    """Decode ``num_values`` out-of-line bit-packed values of width ``width`` from ``buf``."""
    dt = word_dtype(bits, path=path)
    t = dt.itemsize * 8
    if not 0 <= width <= t:
        raise CorruptFileError(f"out-of-line bit width {width} outside 0..{t}", path=path)
    wpb = (BLOCK_VALUES // t) * width
    whole, tail = divmod(num_values, BLOCK_VALUES)
    total_words = len(buf) // dt.itemsize
    raw_tail_words = whole * wpb + tail
    tail_raw = tail > 0 and total_words == raw_tail_words
    nblocks = whole + (1 if tail and not tail_raw else 0)
    need = raw_tail_words if tail_raw else nblocks * wpb
    if need > total_words:
        raise CorruptFileError(
            f"out-of-line bit-packed buffer of {len(buf)} bytes too short for {num_values} "
            f"values of width {width}",
            path=path,
        )
    out = np.empty(max(nblocks, whole + 1) * BLOCK_VALUES, dtype=dt)
    words = _words(buf, dt, 0, need)
    if nblocks:
        unpack_blocks(words, width, nblocks, out)
    if tail_raw:
        out[whole * BLOCK_VALUES : num_values] = words[whole * wpb : whole * wpb + tail]
    return out[:num_values]


# ---------------------------------------------------------------------------------------------
# encoding side (for the writer)


def bit_width(values: np.ndarray) -> int:
    """Bits needed for the OR of all values' unsigned bit patterns (0 for all-zero/empty)."""
    if len(values) == 0:
        return 0
    u = values.view(f"u{values.dtype.itemsize}")
    return int(np.bitwise_or.reduce(u)).bit_length()


def pack_inline(values: np.ndarray) -> bytes:
    """Inline bit-pack ``values`` (uint8/16/32/64 or same-size ints/floats): per 1024-value chunk
    one width word then the packed words; the last chunk is zero-padded to 1024 values."""
    dt = np.dtype(f"u{values.dtype.itemsize}")
    vals = np.ascontiguousarray(values).view(dt)
    t = dt.itemsize * 8
    out = bytearray()
    for start in range(0, len(vals), BLOCK_VALUES):
        part = vals[start : start + BLOCK_VALUES]
        block = np.zeros(BLOCK_VALUES, dt)
        block[: len(part)] = part
        w = bit_width(part)
        packed = np.empty((BLOCK_VALUES // t) * w, dt)
        pack_blocks(block, w, 1, packed)
        out += np.array([w], dt).tobytes()
        out += packed.tobytes()
    return bytes(out)


def pack_out_of_line(values: np.ndarray, width: int) -> bytes:
    """Out-of-line bit-pack ``values`` with a fixed ``width``: whole blocks, then the tail either
    packed as a zero-padded block or stored raw, whichever is smaller (raw on a tie)."""
    dt = np.dtype(f"u{values.dtype.itemsize}")
    vals = np.ascontiguousarray(values).view(dt)
    t = dt.itemsize * 8
    whole, tail = divmod(len(vals), BLOCK_VALUES)
    pad_tail = tail > 0 and width * (BLOCK_VALUES - tail) < (t - width) * tail
    nblocks = whole + (1 if pad_tail else 0)
    block = np.zeros(nblocks * BLOCK_VALUES, dt)
    block[: min(len(vals), len(block))] = vals[: len(block)]
    packed = np.empty(nblocks * (BLOCK_VALUES // t) * width, dt)
    pack_blocks(block, width, nblocks, packed)
    out = packed.tobytes()
    if tail and not pad_tail:
        out += vals[whole * BLOCK_VALUES :].tobytes()
    return out
