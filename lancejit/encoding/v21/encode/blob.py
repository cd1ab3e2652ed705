"""Blob (v1) layout: each non-empty value is written out of line as its own buffer; the page
stores a ``{position u64, size u64}`` descriptor per value through an inner mini-block packed
struct (the Lance file format specification).  Empty values are ``(0, 0)``; null values have size 0 and
``position = (def << 16) | rep``.
"""

from __future__ import annotations

import numpy as np

from lancejit.pb import encodings_v2_1_pb2 as pb21

from . import values as V
from .data import PackedBlock, VarBlock
from .levels import ALL_VALID_ITEM, Levels
from .miniblock import encode_miniblock
from .page import EncodedPage


def encode_blob(block: VarBlock, levels: Levels, version: tuple[int, int]) -> EncodedPage:
    n = block.num_values
    lens = block.lengths().astype(np.int64)
    nulls = levels.value_nulls if levels.value_nulls is not None else np.zeros(n, dtype=bool)
    has_data = (~nulls) & (lens > 0)
    idx = np.flatnonzero(has_data)
    offs = block.offsets
    external = [block.data[int(offs[i]) : int(offs[i + 1])].tobytes() for i in idx]
    if levels.deff is not None:
        vis_def = levels.deff[levels.deff <= levels.max_visible_def].astype(np.uint64)
    else:
        vis_def = np.zeros(n, dtype=np.uint64)
    inner_levels = Levels(None, None, [ALL_VALID_ITEM], 0, 0, n, n, None)

    def finish(positions: list[int]) -> EncodedPage:
        pos = np.zeros(n, dtype=np.uint64)
        size = np.zeros(n, dtype=np.uint64)
        pos[idx] = np.asarray(positions, dtype=np.uint64)
        size[idx] = lens[idx].astype(np.uint64)
        pos[nulls] = vis_def[nulls] << np.uint64(16)
        rows = np.stack([pos, size], axis=1).astype("<u8").view(np.uint8).reshape(n, 16)
        inner = encode_miniblock(V.packed_chunks(PackedBlock(rows, [64, 64], n)), inner_levels, version)
        layout = pb21.PageLayout()
        layout.blob_layout.inner_layout.CopyFrom(inner.layout)
        layout.blob_layout.layers.extend(levels.layers)
        return EncodedPage(inner.buffers, layout, levels.num_rows)

    return EncodedPage([], None, levels.num_rows, external=external, finish=finish)
