"""All-null and (2.2) constant page layouts (the Lance file format specification)."""

from __future__ import annotations

import numpy as np

from lancejit.pb import encodings_v2_1_pb2 as pb21

from . import blocks
from .levels import Levels
from .page import EncodedPage


def simple_all_null(num_rows: int) -> EncodedPage:
    """No rep/def beyond a nullable item: layers [NULLABLE_ITEM], no buffers."""
    layout = pb21.PageLayout()
    layout.all_null_layout.layers.append(pb21.REPDEF_NULLABLE_ITEM)
    return EncodedPage([], layout, num_rows)


def _levels_buffers(levels: Levels, version: tuple[int, int], an: pb21.AllNullLayout) -> list[bytes]:
    out = []
    for which, arr in (("rep", levels.rep), ("def", levels.deff)):
        if arr is None:
            out.append(b"")
            continue
        if version >= (2, 2):
            comp = blocks.BlockCompressor("rle", 16)
            out.append(comp.compress_fixed(arr))
            from . import pbutil

            getattr(an, f"{which}_compression").CopyFrom(pbutil.rle(16))
            setattr(an, f"num_{which}_values", int(arr.shape[0]))
        else:
            out.append(arr.astype("<u2").tobytes())
    return out


def complex_all_null(levels: Levels, version: tuple[int, int]) -> EncodedPage:
    """Lists / structs present but no values: rep and def buffers (2.2: block-RLE compressed)."""
    layout = pb21.PageLayout()
    an = layout.all_null_layout
    an.layers.extend(levels.layers)
    bufs = _levels_buffers(levels, version, an)
    return EncodedPage(bufs, layout, levels.num_rows)


def constant(levels: Levels, inline_value: bytes | None, scalar: bytes | None) -> EncodedPage:
    """2.2 constant page: one value repeated (optionally with nulls).

    Fixed-width values go inline (``inline_value``); others as an Arrow-buffers scalar in buffer 0.
    With nulls, raw u16 rep (empty) and def buffers follow.
    """
    layout = pb21.PageLayout()
    an = layout.all_null_layout
    an.layers.extend(levels.layers)
    bufs: list[bytes] = []
    if inline_value is not None:
        an.inline_value = inline_value
    else:
        bufs.append(scalar or b"")
    if levels.deff is not None or levels.rep is not None:
        bufs.append(b"" if levels.rep is None else levels.rep.astype("<u2").tobytes())
        bufs.append(b"" if levels.deff is None else levels.deff.astype("<u2").tobytes())
    return EncodedPage(bufs, layout, levels.num_rows)


def scalar_buffers(buffers: list[bytes]) -> bytes:
    """``u32 n, u32 size[n], buffer bytes...`` (the Arrow buffers of a one-row array)."""
    hdr = np.array([len(buffers)] + [len(b) for b in buffers], dtype="<u4").tobytes()
    return hdr + b"".join(buffers)
