"""Mini-block layout serialisation (the Lance file format specification).

Buffers: ``[0]`` chunk metadata words (u16 in 2.1, u32 in 2.2), ``[1]`` chunks, ``[2]`` the
dictionary when present, then the repetition index when there is repetition.
"""

from __future__ import annotations

import struct

import numpy as np

from lancejit.core.errors import InvalidInputError
from lancejit.encoding.kernels import enc_chunks, readonly
from lancejit.pb import encodings_v2_1_pb2 as pb21

from . import blocks
from .levels import Levels
from .page import EncodedPage
from .values import MiniChunks

FILL = 0xFE
_PADS = [bytes([FILL]) * k for k in range(8)]  # padding to the next multiple of 8, by length


def _level_bounds(levels: Levels, counts: list[int]) -> list[tuple[int, int]]:
    """Slot ranges ``[start, end)`` of each chunk's levels (invisible slots on a boundary go to
    the next chunk)."""
    n = len(counts)
    if levels.rep is None and levels.deff is None:
        return []
    if levels.rep is None:
        # no lists: every slot is a value
        starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    else:
        if levels.deff is not None:
            vis_pos = np.flatnonzero(levels.deff <= levels.max_visible_def)
        else:
            vis_pos = np.arange(levels.num_slots)
        cum = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
        starts = np.zeros(n, dtype=np.int64)
        if n > 1:
            starts[1:] = vis_pos[cum[1:]]
    ends = list(starts[1:]) + [levels.num_slots]
    return [(int(s), int(e)) for s, e in zip(starts, ends)]


def _rep_index(rep: np.ndarray, bounds: list[tuple[int, int]], max_rep: int) -> np.ndarray:
    out = np.zeros((len(bounds), 2), dtype=np.uint64)
    last = len(bounds) - 1
    for i, (s, e) in enumerate(bounds):
        r = rep[s:e]
        is_top = r == max_rep
        rows = int(is_top[1:].sum()) if len(r) else 0
        if i < last:
            nz = np.flatnonzero(is_top)
            leftovers = (len(r) - int(nz[-1])) if len(nz) else len(r)
        else:
            leftovers = 0
        if i != 0 and len(r) and r[0] == max_rep and out[i - 1, 1] != 0:
            out[i - 1, 0] += 1
            out[i - 1, 1] = 0
        if i == last:
            rows += 1
        out[i, 0] = rows
        out[i, 1] = leftovers
    return out


def encode_miniblock(
    values: MiniChunks,
    levels: Levels,
    version: tuple[int, int],
    dictionary: tuple[bytes, pb21.CompressiveEncoding, int] | None = None,
) -> EncodedPage:
    """Serialise value chunks plus their sliced rep/def levels into a mini-block page."""
    large = version >= (2, 2)
    counts = values.counts
    if values.packed is not None and levels.rep is None and levels.deff is None:
        packed, meta_buf = _assemble_packed(values.packed, counts, large)
        return _page(values, levels, dictionary, packed, meta_buf, None, None, None, large)
    bounds = _level_bounds(levels, counts)
    rep_comp = def_comp = None
    rep_chunks: list[bytes] | None = None
    def_chunks: list[bytes] | None = None
    rep_index = None
    if levels.rep is not None:
        rep_comp = blocks.choose_fixed(levels.rep, 16, version, allow_rle=True)
        rep_chunks = rep_comp.compress_fixed_many(levels.rep, bounds)
        rep_index = _rep_index(levels.rep, bounds, levels.max_rep)
    if levels.deff is not None:
        def_comp = blocks.choose_fixed(levels.deff, 16, version, allow_rle=True)
        def_chunks = def_comp.compress_fixed_many(levels.deff, bounds)

    data = bytearray()
    meta = []
    size_code = "I" if large else "H"
    n_level_bufs = (rep_chunks is not None) + (def_chunks is not None)
    formats: dict[int, struct.Struct] = {}
    total_chunks = len(counts)
    for i in range(total_chunks):
        start = len(data)
        nlev = (bounds[i][1] - bounds[i][0]) if bounds else 0
        if nlev > 0xFFFF:
            raise InvalidInputError("too many rep/def levels in one mini-block chunk")
        bufs = values.buffers[i]
        sizes = [len(b) for b in bufs]
        level_sizes = [len(c[i]) for c in (rep_chunks, def_chunks) if c is not None]
        if max(level_sizes, default=0) > 0xFFFF or (not large and max(sizes, default=0) > 0xFFFF):
            raise InvalidInputError("a mini-block chunk buffer exceeds the 16-bit size field")
        fmt = formats.get(len(sizes))
        if fmt is None:
            fmt = formats[len(sizes)] = struct.Struct(f"<{1 + n_level_bufs}H{len(sizes)}{size_code}")
        data += fmt.pack(nlev, *level_sizes, *sizes)
        data += _PADS[(-len(data)) & 7]
        if rep_chunks is not None:
            data += rep_chunks[i]
            data += _PADS[(-len(data)) & 7]
        if def_chunks is not None:
            data += def_chunks[i]
            data += _PADS[(-len(data)) & 7]
        for b in bufs:
            data += b
            data += _PADS[(-len(data)) & 7]
        nbytes = len(data) - start
        if not large and nbytes > 32 * 1024:
            raise InvalidInputError("mini-block chunk larger than 32 KiB in a 2.1 file")
        log = 0 if i == total_chunks - 1 else int(counts[i]).bit_length() - 1
        meta.append(((nbytes // 8 - 1) << 4) | log)
    meta_buf = np.array(meta, dtype=np.uint32 if large else np.uint16).tobytes()
    return _page(values, levels, dictionary, bytes(data), meta_buf, rep_comp, def_comp, rep_index, large)


def _assemble_packed(packed: tuple[np.ndarray, np.ndarray], counts: list[int],
                     large: bool) -> tuple[memoryview, bytes]:
    """``(data buffer, metadata words)`` of packed one-buffer chunks (``packed``: see
    :class:`MiniChunks`, ``counts`` values each) without levels, in one kernel call
    (:func:`lancejit.encoding.kernels.enc_chunks.assemble_miniblock`)."""
    body, sizes = packed
    n = len(sizes)
    out = np.empty(len(body) + 16 * n, dtype=np.uint8)
    meta = np.empty(n, dtype=np.int64)
    got = enc_chunks.assemble_miniblock(readonly(body, np.uint8), readonly(sizes, np.int64),
                                        readonly(np.asarray(counts, dtype=np.int64)), large, out, meta)
    if got == enc_chunks.TOO_BIG_BUFFER:
        raise InvalidInputError("a mini-block chunk buffer exceeds the 16-bit size field")
    if got == enc_chunks.TOO_BIG_CHUNK:
        raise InvalidInputError("mini-block chunk larger than 32 KiB in a 2.1 file")
    return out[:got].data, meta.astype(np.uint32 if large else np.uint16).tobytes()


def _page(values: MiniChunks, levels: Levels, dictionary: tuple[bytes, pb21.CompressiveEncoding, int] | None,
          data: bytes | memoryview, meta_buf: bytes, rep_comp, def_comp, rep_index: np.ndarray | None,
          large: bool) -> EncodedPage:
    counts = values.counts
    layout = pb21.PageLayout()
    mb = layout.mini_block_layout
    if rep_comp is not None:
        mb.rep_compression.CopyFrom(rep_comp.encoding)
    if def_comp is not None:
        mb.def_compression.CopyFrom(def_comp.encoding)
    mb.value_compression.CopyFrom(values.encoding)
    buffers = [meta_buf, data]
    if dictionary is not None:
        dict_bytes, dict_enc, n_items = dictionary
        mb.dictionary.CopyFrom(dict_enc)
        mb.num_dictionary_items = n_items
        buffers.append(dict_bytes)
    mb.layers.extend(levels.layers)
    mb.num_buffers = values.num_buffers
    mb.num_items = int(sum(counts))
    if rep_index is not None:
        mb.repetition_index_depth = 1
        buffers.append(rep_index.tobytes())
    if large:
        mb.has_large_chunk = True
    return EncodedPage(buffers, layout, levels.num_rows)
