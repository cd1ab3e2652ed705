"""The readers ``bench dataset`` compares: lancejit, the reference (pylance) and a Parquet copy.

Each :class:`System` opens once (metadata warm) and then times ``take(indices, columns)`` and
``scan(columns)``, returning an :class:`Op`: the table, wall seconds and the physical read
requests / bytes its own counters saw.  The reference is used only when ``import lance``
works (lancejit never depends on it); the Parquet copy is written by pyarrow from lancejit's
scan of the same data, into a temporary location on the same store (a temp directory for
local datasets), read through a file object over lancejit's store that counts requests, and
deleted by :meth:`ParquetSystem.close`.  Sizes are bytes, times seconds.
"""

from __future__ import annotations

import io
import os
import tempfile
import time
import uuid
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
import pyarrow as pa

from lancejit.io.sync import run_sync


@dataclass(frozen=True, slots=True)
class Op:
    """One timed operation: ``seconds`` wall time, ``requests``/``bytes_read`` physical reads."""

    table: pa.Table
    seconds: float
    requests: int
    bytes_read: int


class System:
    """A dataset reader under test (``name`` is how reports call it)."""

    name = ""

    def take(self, indices: np.ndarray, columns: Sequence[str] | None) -> Op:
        raise NotImplementedError

    def scan(self, columns: Sequence[str] | None) -> Op:
        raise NotImplementedError

    def close(self) -> None:
        pass


class LancejitSystem(System):
    """lancejit's :class:`~lancejit.table.dataset.Dataset` (requests from ``Dataset.io_stats``)."""

    name = "lancejit"

    def __init__(self, uri: str, storage_options: dict[str, Any] | None) -> None:
        from lancejit.table.dataset import dataset

        self.ds = dataset(uri, None, storage_options=storage_options)
        self.ds.io_stats()

    def _timed(self, fn) -> Op:
        self.ds.io_stats()
        t0 = time.perf_counter()
        table = fn()
        seconds = time.perf_counter() - t0
        s = self.ds.io_stats()
        return Op(table, seconds, s.read_iops, s.read_bytes)

    def take(self, indices, columns):
        return self._timed(lambda: self.ds.take(indices, columns))

    def scan(self, columns):
        return self._timed(lambda: self.ds.to_table(columns))


def reference_available() -> bool:
    """True when pylance (``import lance``) can be imported."""
    try:
        import lance  # noqa: F401
    except ImportError:
        return False
    return True


class ReferenceSystem(System):
    """The reference implementation, pylance (requests from ``io_stats_incremental()``)."""

    name = "reference"

    def __init__(self, uri: str, storage_options: dict[str, Any] | None) -> None:
        import importlib

        lance = importlib.import_module("lance")  # optional, test/bench only
        opts = {k: str(v) for k, v in (storage_options or {}).items()} or None
        self.ds = lance.dataset(uri, storage_options=opts)
        self.ds.io_stats_incremental()

    def _timed(self, fn) -> Op:
        self.ds.io_stats_incremental()
        t0 = time.perf_counter()
        table = fn()
        seconds = time.perf_counter() - t0
        s = self.ds.io_stats_incremental()
        return Op(table, seconds, int(s.read_iops), int(s.read_bytes))

    def take(self, indices, columns):
        return self._timed(lambda: self.ds.take(indices, columns=list(columns) if columns else None))

    def scan(self, columns):
        return self._timed(lambda: self.ds.to_table(columns=list(columns) if columns else None))


class StoreFile(io.RawIOBase):
    """A read-only, seekable file object over one object of a lancejit store; counts every
    read as one request (``requests``, ``bytes_read``)."""

    def __init__(self, store: Any, path: str, size: int) -> None:
        super().__init__()
        self.store, self.path, self.size = store, path, size
        self.pos = 0
        self.requests = 0
        self.bytes_read = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self.pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self.pos, io.SEEK_END: self.size}[whence]
        self.pos = max(0, base + offset)
        return self.pos

    def readinto(self, buf: Any) -> int:
        n = min(len(buf), self.size - self.pos)
        if n <= 0:
            return 0
        (data,) = run_sync(self.store.read_ranges(self.path, [(self.pos, self.pos + n)]))
        memoryview(buf)[:n] = data
        self.pos += n
        self.requests += 1
        self.bytes_read += n
        return n


class ParquetSystem(System):
    """A Parquet copy of ``table`` (written by pyarrow, ``row_group_size`` rows per row group,
    pyarrow's default when None), read with ``pyarrow.parquet`` through :class:`StoreFile`."""

    name = "parquet"

    def __init__(self, uri: str, storage_options: dict[str, Any] | None, table: pa.Table,
                 row_group_size: int | None = None) -> None:
        import pyarrow.parquet as pq

        from lancejit.io import open_store

        store, path = open_store(uri, storage_options)
        self._tmpdir = None
        if store.scheme == "file":
            self._tmpdir = tempfile.mkdtemp(prefix="lancejit-bench-")
            store, path = open_store(os.path.join(self._tmpdir, "copy.parquet"))
        else:
            path = f"{path.rstrip('/')}_lancejit_bench_{uuid.uuid4().hex[:8]}.parquet"
        sink = pa.BufferOutputStream()
        pq.write_table(table, sink, row_group_size=row_group_size)
        data = sink.getvalue()
        run_sync(store.put(path, memoryview(data)))
        self.store, self.path, self.size = store, path, data.size
        self.file = StoreFile(store, path, self.size)
        self.pf = pq.ParquetFile(self.file)
        md = self.pf.metadata
        self.rg_starts = np.concatenate([[0], np.cumsum([md.row_group(i).num_rows for i in range(md.num_row_groups)])])

    def _timed(self, fn) -> Op:
        r0, b0 = self.file.requests, self.file.bytes_read
        t0 = time.perf_counter()
        table = fn()
        seconds = time.perf_counter() - t0
        return Op(table, seconds, self.file.requests - r0, self.file.bytes_read - b0)

    def _take(self, indices: np.ndarray, columns) -> pa.Table:
        idx = np.asarray(indices, dtype=np.int64)
        rg = np.searchsorted(self.rg_starts, idx, side="right") - 1
        groups = sorted(set(rg.tolist()))
        table = self.pf.read_row_groups(groups, columns=list(columns) if columns else None)
        # position of each row inside the concatenation of the row groups read
        base = {g: int(sum(self.rg_starts[h + 1] - self.rg_starts[h] for h in groups[:i])) for i, g in enumerate(groups)}
        local = np.array([base[g] for g in rg.tolist()], dtype=np.int64) + (idx - self.rg_starts[rg])
        return table.take(pa.array(local))

    def take(self, indices, columns):
        return self._timed(lambda: self._take(indices, columns))

    def scan(self, columns):
        return self._timed(lambda: self.pf.read(columns=list(columns) if columns else None))

    def close(self) -> None:
        try:
            run_sync(self.store.delete(self.path))
        finally:
            if self._tmpdir:
                import shutil

                shutil.rmtree(self._tmpdir, ignore_errors=True)


__all__ = ["LancejitSystem", "Op", "ParquetSystem", "ReferenceSystem", "StoreFile", "System",
           "reference_available"]
