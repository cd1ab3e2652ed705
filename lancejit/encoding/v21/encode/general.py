"""General (opaque) buffer compression with the reference's framing.

LZ4: u32 little-endian uncompressed size followed by an LZ4 *block*.
ZSTD: u64 little-endian uncompressed size followed by a standard zstd frame.
"""

from __future__ import annotations

import struct

import lz4.block
import zstandard

from lancejit.core.errors import InvalidInputError

ZSTD_DEFAULT_LEVEL = 3


def parse_scheme(raw: str | None) -> str | None:
    """Normalise a ``lance-encoding:compression`` value; None / 'none' / 'fsst' mean no general."""
    if raw is None:
        return None
    v = raw.strip().lower()
    if v in ("none", "fsst", ""):
        return None
    if v not in ("lz4", "zstd"):
        raise InvalidInputError(f"unknown compression scheme {raw!r} (expected lz4, zstd, none)")
    return v


def compress(data: bytes, scheme: str, level: int | None = None) -> bytes:
    """Compress one buffer with its size prefix."""
    if scheme == "lz4":
        return lz4.block.compress(bytes(data), store_size=True)
    if scheme == "zstd":
        lvl = ZSTD_DEFAULT_LEVEL if not level else level
        return struct.pack("<Q", len(data)) + zstandard.ZstdCompressor(level=lvl).compress(bytes(data))
    raise InvalidInputError(f"unknown compression scheme {scheme!r}")
