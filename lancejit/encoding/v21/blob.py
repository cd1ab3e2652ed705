"""Blob layout v1 (2.1/2.2): descriptors in the page, values elsewhere in the same file.

``BlobLayout.inner_layout`` (a mini-block page here) stores one ``{position u64, size u64}``
packed struct per row; ``BlobLayout.layers`` carry the real rep/def meaning, smuggled into the
descriptors: ``(0, 0)`` is an empty value, ``size == 0`` with ``position != 0`` is a null whose
levels are ``position = (def << 16) | rep``; otherwise the value is the file bytes
``[position, position + size)`` (half-open).

Reading a row range reads the descriptors (one request for their chunks), then every value in
one more ``read_ranges`` call (the scheduler coalesces neighbours).

Blob v2 (``lance.blob.v2``) data files store a descriptor struct
``{kind, position, size, blob_id, blob_uri}`` as an ordinary packed struct column, which the
structural decoder returns as is (as the reference's dataset scan does);
:func:`blob_v2_sidecar_name` names the sidecar file of ``kind == 1`` descriptors.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Sequence

import numpy as np
import pyarrow as pa

from lancejit.core.errors import CorruptFileError, NotSupportedError
from lancejit.encoding import arrow_build as ab
from lancejit.encoding.pages import PageInfo
from lancejit.encoding.v21.context import ColumnContext
from lancejit.encoding.v21.levels import LeafRows
from lancejit.encoding.v21.repdef import ITEM, canonical_levels, def_translation, translate_def

DESCRIPTOR_TYPE = pa.struct([("position", pa.uint64()), ("size", pa.uint64())])


class BlobPage:
    """Reads rows of a blob-v1 page (values fetched from their own file ranges)."""

    def __init__(self, ctx: ColumnContext, page: PageInfo, layout: Any, page_index: int) -> None:
        from lancejit.encoding.v21.field import make_page

        self.ctx = ctx
        self.page = page
        self.num_rows = page.num_rows
        if ctx.canon.max_rep > 0:
            raise NotSupportedError("blob columns inside lists are not supported")
        self.def_table = def_translation(tuple(layout.layers), ctx.canon, path=ctx.path)
        inner_ctx = replace(ctx, canon=canonical_levels((ITEM,)), value_type=DESCRIPTOR_TYPE)
        inner_page = PageInfo(page.buffer_offsets, page.buffer_sizes, page.num_rows, page.priority, layout.inner_layout)
        self.inner = make_page(inner_ctx, inner_page, page_index)

    async def read(self, ranges: Sequence[tuple[int, int]]) -> LeafRows:
        """Rows in the half-open page-relative ``ranges`` (sorted, disjoint), concatenated."""
        desc = await self.inner.read(ranges)
        arr = desc.values
        n = len(arr)
        pos = np.asarray(arr.field(0).to_numpy(zero_copy_only=False), dtype=np.uint64)
        size = np.asarray(arr.field(1).to_numpy(zero_copy_only=False), dtype=np.uint64)
        null = (size == 0) & (pos != 0)
        deff = None
        if null.any():
            page_def = np.zeros(n, dtype=np.uint16)
            page_def[null] = ((pos[null] >> np.uint64(16)) & np.uint64(0xFFFF)).astype(np.uint16)
            deff = translate_def(page_def, self.def_table, path=self.ctx.path)
        want = np.flatnonzero(~null & (size > 0))
        fsize = self.ctx.file_size
        starts = pos[want].astype(np.int64)
        lens = size[want].astype(np.int64)
        if want.size and (
            np.any(pos[want] > np.uint64(1 << 62))
            or np.any(size[want] > np.uint64(1 << 62))
            or (fsize and int((starts + lens).max()) > fsize)
        ):
            raise CorruptFileError("blob descriptor points outside the file", path=self.ctx.path)
        ranges_abs = [(int(s), int(s + ln)) for s, ln in zip(starts, lens)]
        bufs = await self.ctx.read(ranges_abs, priority=self.page.priority + ranges[0][0])
        lengths = np.zeros(n, dtype=np.int64)
        lengths[want] = lens
        offsets = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        data = np.empty(int(offsets[-1]), dtype=np.uint8)
        for k, b in zip(want, bufs):
            data[offsets[k] : offsets[k + 1]] = np.frombuffer(b, dtype=np.uint8)
        t = self.ctx.value_type
        if not (pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_string(t) or pa.types.is_large_string(t)):
            raise NotSupportedError(f"blob column of type {t}")
        values = ab.binary_array(t, offsets, data)
        return LeafRows(None, deff, values, n)


def blob_v2_sidecar_name(blob_id: int) -> str:
    """File name of a blob-v2 sidecar: ``blob_id`` as 32 bits, least significant first,
    then ``.blob`` (it lives in ``data/<data-file-stem>/``)."""
    if blob_id < 0 or blob_id >= 1 << 32:
        raise CorruptFileError(f"blob id {blob_id} out of range")
    return "".join("1" if (blob_id >> i) & 1 else "0" for i in range(32)) + ".blob"
