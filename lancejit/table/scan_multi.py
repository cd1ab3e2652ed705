"""Reading the same columns of many consecutive scan units (small fragments) at once.

A *member* is a unit ``(fragment reader, lo, hi)``: a half-open physical row range of one
fragment.  :func:`read_members` reads top-level fields at the live rows of every member and
returns ONE Arrow array per field for all of them, in member order, through
:func:`lancejit.file.multi_decode.read_files` (one plan kernel, one data buffer, one decode
kernel per column for all the members' files): the Python work per member is a few dictionary
lookups, not a read and a decode per column.  Members whose fields are spread over several data
files, or files / columns the multi-file decoder does not take, make it return None (callers
read unit by unit then).
"""

from __future__ import annotations

import weakref
from typing import Any, Sequence

import numpy as np
import pyarrow as pa

from .context import DatasetContext
from .fields import TopField
from lancejit.file.multi_decode import file_scan, read_scans

from .fragment import FragmentReader

Member = tuple[FragmentReader, int, int]

#: Per fragment reader (kept with the version index) and column set: ``(FileScan, handle)``
#: of the data file holding all the columns, or None when they do not qualify.
_SCANS: "weakref.WeakKeyDictionary[FragmentReader, dict]" = weakref.WeakKeyDictionary()


async def _file_scan(frag: FragmentReader, tops: Sequence[TopField]) -> Any:
    per = _SCANS.get(frag)
    if per is None:
        per = _SCANS[frag] = {}
    key = tuple(t.name for t in tops)
    if key in per:
        return per[key]
    got = None
    layout, complete = frag._layout(tops)
    if complete and len(layout) == 1:
        handle, store, path = await frag._handle(layout[0].data_file)
        names, unique = handle._columns(tops)
        if len(unique) == len(names):
            schema = frag.ctx.schema
            with frag.ctx.errors(path, store):
                scan = await file_scan(handle.reader, tuple(names))
            if scan is not None and all(sig[2] == schema.field(t.name).type for sig, t in zip(scan.sig, tops)):
                got = scan
    per[key] = got
    return got


async def read_members(
    ctx: DatasetContext, tops: Sequence[TopField], members: Sequence[Member],
    lives: Sequence[np.ndarray | None],
) -> list[pa.Array] | None:
    """Fields ``tops`` at the live rows of every member (``lives[i]``: member ``i``'s live
    physical offsets, None = all of ``[lo, hi)``), concatenated in member order; None when the
    members do not qualify (nothing was read then)."""
    if not tops or not members:
        return None
    scans = []
    for frag, lo, hi in members:
        scan = await _file_scan(frag, tops)
        if scan is None or hi > frag.physical_rows:
            return None
        scans.append(scan)
    with ctx.errors():
        return await read_scans(scans, [m[1] for m in members], [m[2] for m in members], lives)


__all__ = ["Member", "read_members"]
