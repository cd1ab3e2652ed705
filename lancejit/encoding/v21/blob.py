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
from typing import Any, Awaitable, Callable, Sequence

import numpy as np
import pyarrow as pa

from lancejit.core.errors import CorruptFileError, NotSupportedError
from lancejit.core.ranges import RangeReader
from lancejit.encoding import arrow_build as ab
from lancejit.encoding.pages import PageInfo
from lancejit.encoding.v21.context import ColumnContext, Steps
from lancejit.encoding.v21.levels import LeafRows
from lancejit.encoding.v21.repdef import ITEM, canonical_levels, def_translation, translate_def

DESCRIPTOR_TYPE = pa.struct([("position", pa.uint64()), ("size", pa.uint64())])


class BlobPage:
    """Reads rows of a blob-v1 page (values fetched from their own file ranges)."""

    def __init__(self, ctx: ColumnContext, page: PageInfo, layout: Any, page_index: int,
                 make_page: Callable[[ColumnContext, PageInfo, int], Any]) -> None:
        """``make_page`` builds the reader of the inner page holding the descriptors (the
        field's page factory: a blob layout wraps any other layout)."""
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
        ranges = [(int(a), int(b)) for a, b in np.asarray(ranges, dtype=np.int64).reshape(-1, 2).tolist()]
        desc = await self.inner.read(ranges)
        gen = self._value_steps(desc)
        return await self.ctx.drive(gen, priority=self.page.priority + ranges[0][0])

    def read_steps(self, ranges: Any) -> Steps:
        """Step generator: the descriptors' steps, then one step reading the blob values."""
        ranges = [(int(a), int(b)) for a, b in np.asarray(ranges, dtype=np.int64).reshape(-1, 2).tolist()]
        desc = yield from self.inner.read_steps(ranges)
        return (yield from self._value_steps(desc))

    def _value_steps(self, desc: LeafRows) -> Steps:
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
        bufs = yield from self.ctx.read_steps(ranges_abs)
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


#: Blob-v2 descriptor kinds (``kind`` child of the descriptor struct).
BLOB_V2_INLINE = 0  # bytes inside the data file at [position, position + size)
BLOB_V2_PACKED = 1  # bytes inside a shared sidecar ``.blob`` file
BLOB_V2_DEDICATED = 2  # a sidecar ``.blob`` file of its own
BLOB_V2_EXTERNAL = 3  # ``blob_uri`` names an external object

SidecarOpener = Callable[[str], Awaitable[RangeReader]]


async def read_blobs_v2(
    descriptors: pa.Array,
    data_reader: RangeReader,
    open_sidecar: SidecarOpener | None = None,
    open_external: SidecarOpener | None = None,
) -> pa.Array:
    """The bytes of blob-v2 values (a ``large_binary`` array, nulls where descriptors are null).

    ``descriptors``: the ``{kind, position, size, blob_id, blob_uri}`` struct read from a data
    file.  ``data_reader`` reads that data file (kind 0).  ``open_sidecar(name)`` returns a
    RangeReader for the sidecar file ``name`` (see :func:`blob_v2_sidecar_name`), which lives in
    ``data/<data-file-stem>/`` next to the data file: the caller (table layer) resolves the
    directory and reuses its scheduler; kinds 1 and 2.  ``open_external(uri)`` serves kind 3.
    All ranges of one file go in one ``read_ranges`` call.  Ranges are half-open.
    """
    if isinstance(descriptors, pa.ChunkedArray):
        descriptors = descriptors.combine_chunks()
    n = len(descriptors)
    path = getattr(data_reader, "path", "")
    names = [descriptors.type.field(i).name for i in range(descriptors.type.num_fields)]
    for need in ("kind", "position", "size"):
        if need not in names:
            raise CorruptFileError(f"blob-v2 descriptors lack {need!r}", path=path)

    def col(name: str) -> np.ndarray:
        return np.asarray(descriptors.field(names.index(name)).fill_null(0).to_numpy(zero_copy_only=False))

    kind = col("kind").astype(np.int64)
    pos = col("position").astype(np.uint64)
    size = col("size").astype(np.uint64)
    blob_id = col("blob_id").astype(np.int64) if "blob_id" in names else np.zeros(n, np.int64)
    uris = descriptors.field(names.index("blob_uri")).to_pylist() if "blob_uri" in names else [None] * n
    valid = np.ones(n, bool) if descriptors.null_count == 0 else ~np.asarray(descriptors.is_null().to_numpy(zero_copy_only=False))
    if np.any((pos > np.uint64(1 << 62)) | (size > np.uint64(1 << 40))):
        raise CorruptFileError("blob-v2 descriptor position/size out of range", path=path)
    groups: dict[tuple[int, str], list[int]] = {}
    for i in range(n):
        if not valid[i] or size[i] == 0:
            continue
        k = int(kind[i])
        if k == BLOB_V2_INLINE:
            key = (0, "")
        elif k in (BLOB_V2_PACKED, BLOB_V2_DEDICATED):
            key = (1, blob_v2_sidecar_name(int(blob_id[i])))
        elif k == BLOB_V2_EXTERNAL:
            key = (2, str(uris[i]))
        else:
            raise CorruptFileError(f"unknown blob-v2 kind {k}", path=path)
        groups.setdefault(key, []).append(i)
    chunks: dict[int, bytes] = {}
    for (where, name), rows in groups.items():
        if where == 0:
            reader = data_reader
        elif where == 1:
            if open_sidecar is None:
                raise NotSupportedError("blob-v2 sidecar values need an open_sidecar hook")
            reader = await open_sidecar(name)
        else:
            if open_external is None:
                raise NotSupportedError("external blob-v2 values need an open_external hook")
            reader = await open_external(name)
        bufs = await reader.read_ranges([(int(pos[i]), int(pos[i] + size[i])) for i in rows])
        for i, b in zip(rows, bufs):
            if len(b) != int(size[i]):
                raise CorruptFileError(f"blob {i}: short read", path=path)
            chunks[i] = bytes(b)
    lengths = np.asarray([len(chunks.get(i, b"")) for i in range(n)], dtype=np.int64)
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    data = np.frombuffer(b"".join(chunks.get(i, b"") for i in range(n)), dtype=np.uint8)
    return ab.binary_array(pa.large_binary(), offsets, data, None if valid.all() else valid)
