"""Blob (v1) layout: each non-empty value is written out of line as its own buffer; the page
stores a ``{position u64, size u64}`` descriptor per value through an inner mini-block packed
struct (the Lance file format specification).  Empty values are ``(0, 0)``; null values have size 0 and
``position = (def << 16) | rep``.

A column's values are written out of line as they arrive (:func:`blob_values`) and its
descriptors become pages like any column's data (:func:`descriptor_page`): a page holds as many
rows as the reference puts in one (16 bytes of descriptor per row), whatever the values' size.
"""

from __future__ import annotations

import numpy as np

from lancejit.pb import encodings_v2_1_pb2 as pb21

from . import values as V
from .data import PackedBlock, VarBlock
from .levels import ALL_VALID_ITEM, Levels
from .miniblock import encode_miniblock
from .page import EncodedPage


def blob_values(block: VarBlock, nulls: np.ndarray | None) -> tuple[list[bytes], np.ndarray, np.ndarray]:
    """``(the values written out of line, their positions among the block's values, every
    value's size)``: non-empty, non-null values only; sizes are 0 for the others."""
    n = block.num_values
    lens = block.lengths().astype(np.int64)
    nulls = nulls if nulls is not None else np.zeros(n, dtype=bool)
    idx = np.flatnonzero((~nulls) & (lens > 0))
    offs = block.offsets
    external = [block.data[int(offs[i]) : int(offs[i + 1])].tobytes() for i in idx]
    sizes = np.zeros(n, dtype=np.uint64)
    sizes[idx] = lens[idx].astype(np.uint64)
    return external, idx, sizes


def descriptor_page(positions: np.ndarray, sizes: np.ndarray, levels: Levels, version: tuple[int, int]) -> EncodedPage:
    """The blob page of values already written out of line at ``positions`` (``sizes`` bytes;
    null values get their position from the def level)."""
    n = len(positions)
    pos = np.asarray(positions, dtype=np.uint64).copy()
    nulls = levels.value_nulls
    if nulls is not None and nulls.any():
        if levels.deff is not None:
            vis_def = levels.deff[levels.deff <= levels.max_visible_def].astype(np.uint64)
        else:
            vis_def = np.zeros(n, dtype=np.uint64)
        pos[nulls] = vis_def[nulls] << np.uint64(16)
    rows = np.stack([pos, np.asarray(sizes, dtype=np.uint64)], axis=1).astype("<u8").view(np.uint8).reshape(n, 16)
    inner_levels = Levels(None, None, [ALL_VALID_ITEM], 0, 0, n, n, None)
    inner = encode_miniblock(V.packed_chunks(PackedBlock(rows, [64, 64], n)), inner_levels, version)
    layout = pb21.PageLayout()
    layout.blob_layout.inner_layout.CopyFrom(inner.layout)
    layout.blob_layout.layers.extend(levels.layers)
    return EncodedPage(inner.buffers, layout, levels.num_rows)


def encode_blob(block: VarBlock, levels: Levels, version: tuple[int, int]) -> EncodedPage:
    """A blob page whose values the writer writes out of line just before it."""
    external, idx, sizes = blob_values(block, levels.value_nulls)
    n = block.num_values

    def finish(positions: list[int]) -> EncodedPage:
        pos = np.zeros(n, dtype=np.uint64)
        pos[idx] = np.asarray(positions, dtype=np.uint64)
        return descriptor_page(pos, sizes, levels, version)

    return EncodedPage([], None, levels.num_rows, external=external, finish=finish)
