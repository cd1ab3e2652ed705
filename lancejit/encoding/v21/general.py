"""General (opaque) buffer compression of 2.1/2.2 files: LZ4 and Zstandard framing.

* LZ4: ``u32 LE uncompressed size`` followed by one LZ4 *block* (not an LZ4 frame).
* ZSTD: ``u64 LE uncompressed size`` followed by a zstd frame; a bare frame (starting with the
  zstd magic ``28 b5 2f fd`` whose descriptor's reserved bit is 0) is accepted too.

Every failure (truncation, bad stream, size mismatch) raises :class:`CorruptFileError`.
"""

from __future__ import annotations

import numpy as np

from lancejit.core.bounds import claim
from lancejit.core.errors import CorruptFileError, NotSupportedError

#: ``CompressionScheme`` enum values of ``lance.encodings21.BufferCompression``.
SCHEME_UNSPECIFIED = 0
SCHEME_LZ4 = 1
SCHEME_ZSTD = 2

_ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
# LZ4 cannot expand data by more than ~255x; anything claiming more is corrupt.
_LZ4_MAX_RATIO = 256
# Zstandard's densest block (RLE: 4 bytes for a 128 KiB block) expands 32,768x.
_ZSTD_MAX_RATIO = 1 << 16


def _lz4(buf: bytes, path: str) -> bytes:
    if len(buf) < 4:
        raise CorruptFileError(f"LZ4 buffer of {len(buf)} bytes has no size prefix", path=path)
    size = int.from_bytes(buf[:4], "little")
    if size > _LZ4_MAX_RATIO * len(buf) + 64:
        raise CorruptFileError(f"LZ4 size prefix {size} impossible for {len(buf)} bytes", path=path)
    if size == 0:
        return b""
    import lz4.block  # on the first LZ4 buffer: a fresh process reading none skips the import

    try:
        out = lz4.block.decompress(buf[4:], uncompressed_size=size)
    except Exception as exc:  # lz4 raises its own LZ4BlockError
        raise CorruptFileError(f"LZ4 block does not decompress: {exc}", path=path) from None
    if len(out) != size:
        raise CorruptFileError(f"LZ4 block gave {len(out)} bytes, expected {size}", path=path)
    return out


def _is_bare_zstd(buf: bytes) -> bool:
    """A buffer starting with the zstd magic whose frame descriptor has the reserved bit clear
    is a bare frame; otherwise the first 8 bytes are a size prefix that merely looks like it."""
    if buf[:4] != _ZSTD_MAGIC:
        return False
    return len(buf) < 8 or (buf[4] & 0x10) == 0


def _zstd_read(frames: bytes, limit: int, across: bool) -> bytes:
    """What ``frames`` decompress to, reading at most ``limit`` bytes of output."""
    import io

    import zstandard  # on the first ZSTD buffer: a fresh process reading none skips the import

    reader = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(frames), read_across_frames=across)
    out = bytearray()
    while len(out) < limit:
        piece = reader.read(min(limit - len(out), 1 << 20))
        if not piece:
            break
        out += piece
    return bytes(out)


def _zstd(buf: bytes, path: str) -> bytes:
    if len(buf) == 0:
        return b""
    import zstandard

    # the output a buffer of this size can make: reading stops there (a frame claiming more
    # is corrupt), so a small page never inflates past what its bytes could hold
    limit = _ZSTD_MAX_RATIO * len(buf) + 1024
    try:
        if _is_bare_zstd(buf):
            out = _zstd_read(buf, limit + 1, True)
            if len(out) > limit:
                raise CorruptFileError(f"ZSTD frames of {len(buf)} bytes inflate past {limit} bytes", path=path)
            return out
        if len(buf) < 8:
            raise CorruptFileError(f"ZSTD buffer of {len(buf)} bytes has no size prefix", path=path)
        size = claim(int.from_bytes(buf[:8], "little"), limit, "ZSTD size prefix", path)
        out = _zstd_read(buf[8:], size + 1, False)
    except zstandard.ZstdError as exc:
        raise CorruptFileError(f"ZSTD frame does not decompress: {exc}", path=path) from None
    if len(out) != size:
        raise CorruptFileError(f"ZSTD frame gave {len(out)} bytes, expected {size}", path=path)
    return out


def decompress_buffer(scheme: int, buf: memoryview | bytes | np.ndarray, *, path: str) -> np.ndarray:
    """Decompress one general-compressed buffer; returns a new writable uint8 array."""
    raw = bytes(buf)
    if scheme == SCHEME_LZ4:
        out = _lz4(raw, path)
    elif scheme == SCHEME_ZSTD:
        out = _zstd(raw, path)
    else:
        raise NotSupportedError(f"{path}: general compression scheme {scheme} is not supported")
    return np.frombuffer(bytearray(out), dtype=np.uint8)


def compress_buffer(scheme: int, data: bytes, level: int | None = None) -> bytes:
    """Compress ``data`` with Lance's framing (used by tests and, later, the writer)."""
    import lz4.block
    import zstandard

    if scheme == SCHEME_LZ4:
        return len(data).to_bytes(4, "little") + lz4.block.compress(data, store_size=False)
    if scheme == SCHEME_ZSTD:
        cctx = zstandard.ZstdCompressor(level=3 if level is None else level)
        return len(data).to_bytes(8, "little") + cctx.compress(data)
    raise NotSupportedError(f"general compression scheme {scheme} is not supported")
