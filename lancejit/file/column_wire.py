"""Column metadata of a 2.1/2.2 file decoded from its protobuf wire bytes with one kernel call.

Decoding a ``ColumnMetadata`` message with protobuf and turning it into a
:class:`~lancejit.encoding.pages.ColumnInfo` (:func:`lancejit.file.container._column_info`)
costs several microseconds of Python attribute access per column; a take from a newly opened
data file needs a few columns of every file it touches.  :func:`decode_columns` scans the
messages of several columns of one file with :func:`lancejit.encoding.kernels.pbwire.column_pages`
(buffer positions, rows, priority and where each page's encoding bytes are) and looks the
encodings up among those already decoded (files of one writer repeat a few: the container's
caches, keyed by the same bytes).

It only vouches for what it has checked: anything unusual (a malformed or unusual message,
an encoding not decoded before, a buffer past the end of the file, pages not holding the
file's rows) returns None and the caller decodes with protobuf, which reports the precise
error.  Used only once Numba is loaded (a fresh process's first small take does not load it).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from lancejit.encoding.pages import ColumnInfo, PageInfo


from lancejit.encoding.kernels import jit as _jit

#: Where a ``column_pages`` page row holds its buffer offsets and sizes (``pbwire.PAGE_FIELDS``,
#: ``PAGE_FIELDS + MAX_PAGE_BUFFERS``; checked by ``_parts``).
_FIELDS, _SIZES = 7, 11

#: ``(column_pages kernel, its page row width, page layouts by bytes, column encodings by bytes)``
#: once the first call imported them.
_PARTS: tuple | None = None


def kernels_loaded() -> bool:
    """True when this process has loaded Numba (a kernel call is then cheap)."""
    return getattr(_jit, "_NUMBA", None) is not None


def _parts() -> tuple:
    global _PARTS
    if _PARTS is None:
        from lancejit.encoding.kernels.pbwire import MAX_PAGE_BUFFERS, PAGE_FIELDS, PAGE_ROW, column_pages

        assert (_FIELDS, _SIZES) == (PAGE_FIELDS, PAGE_FIELDS + MAX_PAGE_BUFFERS)

        from .encodings import _COLUMN_ENCODINGS, _LAYOUTS, PAGE_LAYOUT_URL_V21

        _PARTS = (column_pages, PAGE_ROW, _LAYOUTS[PAGE_LAYOUT_URL_V21], _COLUMN_ENCODINGS)
    return _PARTS


def decode_columns(data: bytes, base: int, spans: Sequence[tuple[int, int]], indexes: Sequence[int],
                   version: str, file_size: int, num_rows: int) -> list[ColumnInfo] | None:
    """The :class:`ColumnInfo` of columns ``indexes`` (each ``< len(spans)``) of a 2.1/2.2 file
    whose column metadata section ``data`` starts at file position ``base``; ``spans[i]``:
    ``(absolute position, size)`` of column ``i``'s message.  None when Numba is not loaded or
    any column needs protobuf (see the module docstring); equal to protobuf's decode otherwise."""
    if version == "2.0" or not indexes or getattr(_jit, "_NUMBA", None) is None:
        return None
    column_pages, width, known, column_encodings = _PARTS or _parts()
    if not _jit.ready(column_pages):  # (not cached yet: protobuf meanwhile)
        return None
    n = len(indexes)
    rel = []
    total = 0
    for i in indexes:
        pos, size = spans[i]
        rel.append((pos - base, pos - base + size))
        total += size
    cols = np.empty((n, 4), dtype=np.int64)
    # a page message takes at least 4 bytes (tag, length, encoding tag, length)
    pages = np.empty((total // 4 + n, width), dtype=np.int64)
    got = column_pages(np.frombuffer(data, dtype=np.uint8), np.array(rel, dtype=np.int64), cols, pages, file_size,
                       num_rows)
    if got < 0:
        return None
    page_rows = pages[:got].tolist()
    out = []
    for (i, (first, npages, ca, cb)) in zip(indexes, cols.tolist()):
        encoding = None
        if ca >= 0:
            encoding = column_encodings.get(data[ca:cb])
            if encoding is None:
                return None
        infos = []
        for row in page_rows[first:first + npages]:
            _, nb, _, length, priority, ea, eb = row[:_FIELDS]
            msg = known.get(data[ea:eb])
            if msg is None:
                return None
            infos.append(PageInfo(tuple(row[_FIELDS:_FIELDS + nb]), tuple(row[_SIZES:_SIZES + nb]), length,
                                  priority, msg))
        out.append(ColumnInfo(i, tuple(infos), (), (), encoding))
    return out


__all__ = ["decode_columns", "kernels_loaded"]
