"""Whole-buffer decompression used by 2.0 pages: general (zstd / lz4) ``Flat.compression`` and
the FSST string compression of ``Fsst`` pages.

Framing (reference ``GeneralBufferCompressor``): zstd buffers are ``u64 LE uncompressed length +
zstd frame`` (or a bare zstd frame); lz4 buffers are ``u32 LE uncompressed length + lz4 block``.
FSST symbol tables are ``u64 info`` (magic ``FSST`` in the high 32 bits, bit 24 = compression
switched on, low byte = number of symbols) + ``n`` u64 symbols + ``n`` u8 symbol lengths; when
the switch is off the data is stored uncompressed.
"""

from __future__ import annotations

import numpy as np

from lancejit.core.errors import CorruptFileError, NotSupportedError
from lancejit.encoding.kernels.fsst import fsst_decode, fsst_decoded_lengths
from lancejit.encoding.v21 import general

_FSST_MAGIC = 0x46535354

#: 2.0 scheme names -> 2.1 ``CompressionScheme`` values (the same framing).
_SCHEMES = {"zstd": general.SCHEME_ZSTD, "lz4": general.SCHEME_LZ4}


def decompress_buffer(scheme: str, data: bytes | memoryview, *, path: str | None = None) -> np.ndarray:
    """Decompress one ``Flat`` buffer compressed with ``scheme`` ("zstd", "lz4", "none"); the
    output is bounded by what the buffer's bytes can inflate to (see
    :mod:`lancejit.encoding.v21.general`)."""
    if scheme in ("", "none"):
        return np.frombuffer(bytes(data), dtype=np.uint8)
    if scheme not in _SCHEMES:
        raise NotSupportedError(f"compression scheme {scheme!r}")
    return general.decompress_buffer(_SCHEMES[scheme], data, path=path or "")


class FsstTable:
    """A parsed FSST symbol table."""

    __slots__ = ("enabled", "sym_bytes", "sym_lens", "n_symbols")

    def __init__(self, table: bytes, *, path: str | None = None) -> None:
        if len(table) < 8:
            raise CorruptFileError("FSST symbol table too short", path=path)
        info = int.from_bytes(table[:8], "little")
        if (info >> 32) != _FSST_MAGIC:
            raise CorruptFileError("FSST symbol table has a bad magic", path=path)
        self.enabled = bool(info & (1 << 24))
        n = info & 0xFF
        if len(table) < 8 + 9 * n:
            raise CorruptFileError("FSST symbol table truncated", path=path)
        syms = np.frombuffer(table, dtype=np.uint8, count=8 * n, offset=8).reshape(n, 8)
        lens = np.frombuffer(table, dtype=np.uint8, count=n, offset=8 + 8 * n)
        if n and (lens.max() > 8 or lens.min() < 1):
            raise CorruptFileError("FSST symbol length outside 1..8", path=path)
        self.sym_bytes = np.zeros((256, 8), dtype=np.uint8)
        self.sym_bytes[:n] = syms
        self.sym_lens = np.zeros(256, dtype=np.int64)
        self.sym_lens[:n] = lens
        self.n_symbols = n

    def decode(self, offsets: np.ndarray, data: np.ndarray, *, path: str | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Decode values ``data[offsets[i]:offsets[i+1]]``; returns (offsets, data) of the plain values."""
        if not self.enabled:
            return offsets, data
        n = len(offsets) - 1
        offs = np.ascontiguousarray(offsets, dtype=np.int64)
        codes = np.ascontiguousarray(data, dtype=np.uint8)
        if n > 0 and (offs[0] < 0 or offs[-1] > len(codes) or np.any(np.diff(offs) < 0)):
            raise CorruptFileError("FSST value offsets out of bounds", path=path)
        lengths = np.zeros(max(n, 0), dtype=np.int64)
        bad = fsst_decoded_lengths(codes, offs, n, self.sym_lens, self.n_symbols, lengths)
        if bad >= 0:
            raise CorruptFileError(f"FSST value {bad} uses an unknown code", path=path)
        out_offsets = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(lengths, out=out_offsets[1:])
        out = np.empty(int(out_offsets[-1]), dtype=np.uint8)
        fsst_decode(codes, offs, n, self.sym_bytes, self.sym_lens, out_offsets, out)
        return out_offsets, out
