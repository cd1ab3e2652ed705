"""Mini-block writing kernels: a page's value chunks built and laid out in one call each.

* :func:`variable_chunks` cuts variable-width values into chunks (the reference's doubling
  search: a chunk doubles its value count while its offsets and bytes fit ``max_bytes``) and
  writes each chunk (``m + 1`` local offsets of ``width`` bytes, then the values' bytes, padded
  with ``0x48`` to a multiple of ``width``) back to back into ``body``;
* :func:`inline_bitpack_all` packs every 1024-value block of a page (its bit width as the first
  word, then the FastLanes-packed words) back to back;
* :func:`assemble_miniblock` lays out chunks of one buffer each, without rep/def levels, as a
  mini-block page: per chunk a header (u16 level count 0, the buffer size as u16 (2.1) or u32
  (2.2)), the buffer, each padded with ``0xFE`` to 8 bytes, and the chunk's metadata word.

Chunk ``i``'s bytes are ``body[sum(sizes[:i]) : sum(sizes[:i + 1])]`` (half-open).
"""

from __future__ import annotations

import numpy as np

from lancejit.encoding.kernels.bitpack import pack_blocks
from lancejit.encoding.kernels.jit import njit

PAD_VARIABLE = 0x48
FILL = 0xFE
#: :func:`assemble_miniblock` results for chunks a 2.1 page cannot hold.
TOO_BIG_BUFFER = -1
TOO_BIG_CHUNK = -2


@njit(cache=True, nogil=True, specs=("ro(i8[::1]), ro(u1[::1]), i8, i8, u1[::1], i8[::1], i8[::1]",))
def variable_chunks(offsets, data, width, max_bytes, body, sizes, counts):  # pragma: no cover - compiled
    """Chunks of the ``len(offsets) - 1`` values (``offsets`` into ``data``, at least one value)
    written to ``body``; ``sizes`` / ``counts`` receive each chunk's bytes and values.  Returns
    ``(chunks, bytes written)``.  ``body`` needs ``len(data) + 3 * len(offsets) * width`` bytes,
    ``sizes`` and ``counts`` ``len(offsets) - 1`` entries."""
    n_off = offsets.shape[0]
    last = n_off - 1
    start = 0
    pos = 0
    k = 0
    while True:
        num = 1
        new = 2
        end = start + 1
        while True:
            if start + new >= n_off:
                size = offsets[last] - offsets[start] + (n_off - start) * width
                end = last if size <= max_bytes else start + num
                break
            size = offsets[start + new] - offsets[start] + (new + 1) * width
            if size <= max_bytes:
                num = new
                new *= 2
            else:
                end = start + new
                break
        if end > last:
            end = last
        m = end - start
        hdr = (m + 1) * width
        base = offsets[start]
        chunk_start = pos
        for j in range(m + 1):
            v = offsets[start + j] - base + hdr
            for b in range(width):
                body[pos] = np.uint8((v >> (8 * b)) & 0xFF)
                pos += 1
        nb = offsets[end] - base
        body[pos:pos + nb] = data[base:base + nb]
        pos += nb
        while (pos - chunk_start) % width:
            body[pos] = PAD_VARIABLE
            pos += 1
        sizes[k] = pos - chunk_start
        counts[k] = m
        k += 1
        if end == last:
            break
        start = end
    return k, pos


@njit(cache=True, nogil=True, specs=(
    "ro(u1[::1]), ro(i8[::1]), u1[::1], i8[::1]",
    "ro(u2[::1]), ro(i8[::1]), u2[::1], i8[::1]",
    "ro(u4[::1]), ro(i8[::1]), u4[::1], i8[::1]",
    "ro(u8[::1]), ro(i8[::1]), u8[::1], i8[::1]",
))
def inline_bitpack_all(padded, widths, out, sizes):  # pragma: no cover - compiled
    """Every 1024-value block of ``padded`` (a multiple of 1024 values) as its bit width
    (``widths[i]``) in one word, then its values packed to that width; ``sizes[i]`` receives
    block ``i``'s words.  Returns the words written (``out`` needs ``len(widths) * (1 +
    1024 // T * max(widths))``)."""
    t = padded.itemsize * 8
    lanes = 1024 // t
    pos = 0
    for i in range(widths.shape[0]):
        w = widths[i]
        out[pos] = w
        nw = lanes * w
        if w:
            pack_blocks(padded[i * 1024:(i + 1) * 1024], w, 1, out[pos + 1:pos + 1 + nw])
        sizes[i] = nw + 1
        pos += nw + 1
    return pos


@njit(cache=True, nogil=True, specs=("ro(u1[::1]), ro(i8[::1]), ro(i8[::1]), b1, u1[::1], i8[::1]",))
def assemble_miniblock(body, sizes, counts, large, out, meta):  # pragma: no cover - compiled
    """The mini-block data buffer of chunks without levels (module docstring) into ``out``
    (``len(body) + 15 * len(sizes)`` bytes) and their metadata words into ``meta``.  Returns
    the bytes written, or :data:`TOO_BIG_BUFFER` / :data:`TOO_BIG_CHUNK` when a 2.1 page
    (``large`` False) cannot hold a chunk."""
    n = sizes.shape[0]
    pos = 0
    src = 0
    for i in range(n):
        start = pos
        sz = sizes[i]
        if not large and sz > 0xFFFF:
            return TOO_BIG_BUFFER
        out[pos] = 0
        out[pos + 1] = 0
        if large:
            for b in range(4):
                out[pos + 2 + b] = np.uint8((sz >> (8 * b)) & 0xFF)
            out[pos + 6] = FILL
            out[pos + 7] = FILL
        else:
            out[pos + 2] = np.uint8(sz & 0xFF)
            out[pos + 3] = np.uint8((sz >> 8) & 0xFF)
            for b in range(4, 8):
                out[pos + b] = FILL
        pos += 8
        out[pos:pos + sz] = body[src:src + sz]
        pos += sz
        src += sz
        while pos & 7:
            out[pos] = FILL
            pos += 1
        nbytes = pos - start
        if not large and nbytes > 32 * 1024:
            return TOO_BIG_CHUNK
        log = 0
        if i != n - 1:
            c = counts[i]
            while c > 1:
                c >>= 1
                log += 1
        meta[i] = ((nbytes // 8 - 1) << 4) | log
    return pos
