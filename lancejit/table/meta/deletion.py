"""Deletion files: which local row offsets of a fragment are deleted.

* ``.arrow``: an Arrow IPC file with one batch of one non-null ``uint32`` column ``row_id``
  (local offsets, any order).
* ``.bin``: a 32-bit Roaring bitmap in the portable serialization.

Both decode to a sorted, unique ``numpy.uint32`` array of deleted offsets.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc
from pyroaring import BitMap

from lancejit.core.bounds import claim
from lancejit.core.errors import CorruptFileError

from .manifest import ARROW_ARRAY, BITMAP, DeletionFile

_READ_OPTIONS = ipc.IpcReadOptions(use_threads=False)


def decode_arrow_deletions(data: bytes | memoryview, path: str, physical_rows: int | None = None) -> np.ndarray:
    """Deleted offsets (sorted unique uint32) from an Arrow IPC deletion file; with
    ``physical_rows``, more entries than the fragment's rows are refused before decoding."""
    try:
        # in the calling thread: pyarrow's pool would decompress a few hundred bytes per file
        reader = ipc.open_file(pa.py_buffer(bytes(data)), options=_READ_OPTIONS)
        if reader.num_record_batches != 1:
            raise CorruptFileError(
                f"deletion file has {reader.num_record_batches} batches, expected 1", path=path)
        batch = reader.get_batch(0)
        # the batch's length is a claim: its buffers must hold it before anything reads them
        batch.validate()
    except (pa.ArrowInvalid, pa.ArrowIOError, OSError) as exc:
        raise CorruptFileError(f"deletion file is not an Arrow IPC file: {exc}", path=path) from None
    if batch.num_columns != 1 or batch.schema.field(0).name != "row_id" or batch.schema.field(0).type != pa.uint32():
        raise CorruptFileError(
            f"deletion file schema is {batch.schema}, expected one uint32 column 'row_id'", path=path
        )
    col = batch.column(0)
    if col.null_count:
        raise CorruptFileError("deletion file contains nulls", path=path)
    if physical_rows is not None:
        claim(len(col), physical_rows, "deleted rows of the Arrow deletion file", path)
    # from the values buffer: Array.to_numpy() makes pyarrow import pandas
    buf = col.buffers()[1]
    if buf is None or len(col) == 0:
        return np.empty(0, dtype=np.uint32)
    values = np.frombuffer(buf, dtype=np.uint32)[col.offset:col.offset + len(col)]
    if len(values) > 1 and not bool((values[1:] > values[:-1]).all()):
        values = np.unique(values)
    return values


def decode_bitmap_deletions(data: bytes | memoryview, path: str, physical_rows: int | None = None) -> np.ndarray:
    """Deleted offsets (sorted unique uint32) from a portable Roaring bitmap; with
    ``physical_rows``, the bitmap's cardinality and largest offset are checked against the
    fragment before it is expanded (a few KiB of run containers can name 2**32 rows)."""
    try:
        bm = BitMap.deserialize(bytes(data))
    except (ValueError, OverflowError, MemoryError) as exc:
        raise CorruptFileError(f"deletion bitmap does not decode: {exc}", path=path) from None
    if physical_rows is not None and len(bm):
        claim(len(bm), physical_rows, "deleted rows of the deletion bitmap", path)
        if bm.max() >= physical_rows:
            raise CorruptFileError(
                f"deletion file deletes offset {bm.max()} of a fragment with {physical_rows} rows", path=path)
    return np.frombuffer(bm.to_array(), dtype=np.uint32).copy()


def decode_deletion_file(
    data: bytes | memoryview, deletion: DeletionFile, physical_rows: int, path: str
) -> np.ndarray:
    """Deleted offsets of one fragment; checks they lie in ``[0, physical_rows)``."""
    if deletion.file_type == ARROW_ARRAY:
        deleted = decode_arrow_deletions(data, path, physical_rows)
    elif deletion.file_type == BITMAP:
        deleted = decode_bitmap_deletions(data, path, physical_rows)
    else:
        raise CorruptFileError(f"unknown deletion file type {deletion.file_type}", path=path)
    if len(deleted) and int(deleted[-1]) >= physical_rows:
        raise CorruptFileError(
            f"deletion file deletes offset {int(deleted[-1])} of a fragment with {physical_rows} rows",
            path=path,
        )
    return deleted


def live_offsets(physical_rows: int, deleted: np.ndarray | None) -> np.ndarray:
    """Local offsets (int64, ascending) of the rows not deleted: ``[0, physical_rows)`` minus ``deleted``."""
    if deleted is None or len(deleted) == 0:
        return np.arange(physical_rows, dtype=np.int64)
    mask = np.ones(physical_rows, dtype=bool)
    mask[deleted.astype(np.int64)] = False
    return np.flatnonzero(mask).astype(np.int64, copy=False)


def physical_of_logical(logical: np.ndarray, deleted: np.ndarray | None) -> np.ndarray:
    """Physical offsets (int64) of the live rows at ``logical`` positions (0-based among the
    live rows, any order), given the sorted unique ``deleted`` offsets; the same as
    ``live_offsets(n, deleted)[logical]`` without building the live-offset array: before
    ``deleted[i]`` there are ``deleted[i] - i`` live rows, so a live row at logical ``l`` has
    ``k = #{i : deleted[i] - i <= l}`` deleted rows before it and sits at ``l + k``."""
    logical = np.asarray(logical, dtype=np.int64)
    if deleted is None or len(deleted) == 0:
        return logical.copy()
    shifted = deleted.astype(np.int64) - np.arange(len(deleted), dtype=np.int64)
    return logical + np.searchsorted(shifted, logical, side="right")
