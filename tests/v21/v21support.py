"""Test support for 2.1/2.2 structural decoding: write with pylance, read through
``make_field_decoders`` over an in-memory counting RangeReader, compare with pylance.

Loaded by path (tests run with --import-mode=importlib): ``from v21support import ...`` works
because ``conftest.py`` in this folder puts the folder on ``sys.path``.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Sequence

import numpy as np
import pyarrow as pa

from lancejit.core.errors import CorruptFileError
from lancejit.encoding.v21 import make_field_decoders
from lancejit.file.container import open_file_metadata


class BytesReader:
    """A RangeReader over a bytes object that counts ``read_ranges`` calls and ranges."""

    def __init__(self, data: bytes, path: str = "mem.lance") -> None:
        self.data = data
        self._path = path
        self.calls = 0
        self.ranges: list[tuple[int, int]] = []

    @property
    def path(self) -> str:
        return self._path

    async def size(self) -> int:
        return len(self.data)

    async def read_ranges(self, ranges: Sequence[tuple[int, int]], *, priority: int = 0) -> list[memoryview]:
        self.calls += 1
        out = []
        for s, e in ranges:
            if s < 0 or e > len(self.data) or e < s:
                raise CorruptFileError(f"range [{s}, {e}) past end {len(self.data)}", path=self._path)
            self.ranges.append((s, e))
            out.append(memoryview(self.data)[s:e])
        return out

    async def read_tail(self, nbytes: int) -> tuple[int, memoryview]:
        n = min(nbytes, len(self.data))
        return len(self.data), memoryview(self.data)[len(self.data) - n :]

    def reset(self) -> None:
        self.calls = 0
        self.ranges = []


def write_lance(path: Path, table: pa.Table, version: str, max_page_bytes: int | None = None) -> Path:
    from lance.file import LanceFileWriter

    """Write ``table``; with ``max_page_bytes`` the writer flushes small pages (several per
    column: the table goes in as ~7 batches and the column buffer is ``max_page_bytes``)."""
    kw = {}
    if max_page_bytes:
        kw["max_page_bytes"] = max_page_bytes
        kw["data_cache_bytes"] = max_page_bytes
    with LanceFileWriter(str(path), table.schema, version=version, **kw) as w:
        if max_page_bytes and table.num_rows > 7:
            step = table.num_rows // 7 + 1
            for a in range(0, table.num_rows, step):
                # take() gives offset-0 arrays (pylance mis-handles sliced struct validity)
                w.write_batch(table.take(pa.array(np.arange(a, min(a + step, table.num_rows)))))
        else:
            w.write_batch(table)
    return path


class Opened:
    def __init__(self, path: Path) -> None:
        self.reader = BytesReader(Path(path).read_bytes(), str(path))
        self.meta = asyncio.run(open_file_metadata(self.reader))
        names = [f.name for f in self.meta.arrow_schema]
        self.decoders = make_field_decoders(self.reader, self.meta, names)

    def run(self, coro):
        return asyncio.run(coro)

    def read_all(self) -> pa.Table:
        n = self.meta.num_rows
        return self.read_range(0, n)

    def read_range(self, start: int, end: int) -> pa.Table:
        async def go():
            return await asyncio.gather(*(d.read_range(start, end) for d in self.decoders))

        arrs = asyncio.run(go())
        return pa.Table.from_arrays(arrs, schema=pa.schema([d.field for d in self.decoders]))

    def take(self, indices) -> pa.Table:
        idx = np.asarray(indices, dtype=np.int64)
        uniq, inverse = np.unique(idx, return_inverse=True)

        async def go():
            return await asyncio.gather(*(d.take(uniq) for d in self.decoders))

        arrs = asyncio.run(go())
        t = pa.Table.from_arrays(arrs, schema=pa.schema([d.field for d in self.decoders]))
        return t.take(pa.array(inverse.astype(np.int64)))


    def fresh_decoders(self) -> list:
        """New decoders (page metadata not loaded: no file cache in these tests)."""
        return make_field_decoders(self.reader, self.meta, [d.field.name for d in self.decoders])

    def take_steps(self, indices) -> tuple[pa.Table, int]:
        """Like :meth:`take` through every field's ``take_steps`` run in lockstep by
        ``run_plans`` (cold decoders); also returns the number of ``read_ranges`` calls."""
        from lancejit.encoding.v20.steps import run_plans

        idx = np.asarray(indices, dtype=np.int64)
        uniq, inverse = np.unique(idx, return_inverse=True)
        decs = self.fresh_decoders()
        self.reader.reset()
        arrs = asyncio.run(run_plans(self.reader, [d.take_steps(uniq) for d in decs]))
        t = pa.Table.from_arrays(arrs, schema=pa.schema([d.field for d in decs]))
        return t.take(pa.array(inverse.astype(np.int64))), self.reader.calls

    def range_steps(self, start: int, end: int) -> tuple[pa.Table, int]:
        """Rows ``[start, end)`` through ``range_steps`` (cold decoders) and the call count."""
        from lancejit.encoding.v20.steps import run_plans

        decs = self.fresh_decoders()
        self.reader.reset()
        arrs = asyncio.run(run_plans(self.reader, [d.range_steps(start, end) for d in decs]))
        return pa.Table.from_arrays(arrs, schema=pa.schema([d.field for d in decs])), self.reader.calls


#: Most steps a cold v21 read needs: page metadata, (variable full-zip) index entries, data,
#: (blob v1) blob values.
MAX_STEPS = 4


def reference(path: Path):
    from lance.file import LanceFileReader

    return LanceFileReader(str(path))


def tables_equal(a: pa.Table, b: pa.Table) -> None:
    """Assert equal (schema and values); NaN equals NaN."""
    assert a.schema.equals(b.schema, check_metadata=True), (a.schema, b.schema)
    assert a.num_rows == b.num_rows, (a.num_rows, b.num_rows)
    for name in a.column_names:
        x = a.column(name).combine_chunks() if a.num_rows else a.column(name)
        y = b.column(name).combine_chunks() if b.num_rows else b.column(name)
        if x.equals(y):
            continue
        assert _nan_equal(x, y), f"column {name} differs:\n{x.to_pylist()[:20]}\n{y.to_pylist()[:20]}"


def _nan_equal(x, y) -> bool:
    lx, ly = x.to_pylist(), y.to_pylist()
    return _eq(lx, ly)


def _eq(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return (a == b) or (a != a and b != b)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_eq(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_eq(a[k], b[k]) for k in a)
    return a == b


def check_file(path: Path, rng: np.random.Generator, n_takes: int = 2) -> Opened:
    """Compare read_all, a few read_ranges and takes with pylance."""
    ref = reference(path)
    op = Opened(path)
    n = op.meta.num_rows
    full = ref.read_all().to_table()
    tables_equal(op.read_all(), full)
    for _ in range(2):
        if n == 0:
            break
        a = int(rng.integers(0, n))
        b = int(rng.integers(a, n + 1))
        tables_equal(op.read_range(a, b), ref.read_range(a, b - a).to_table())
    for _ in range(n_takes):
        if n == 0:
            break
        k = int(rng.integers(1, min(n, 50) + 1))
        idx = rng.integers(0, n, size=k)  # unsorted, with duplicates (pylance takes sorted only)
        tables_equal(op.take(idx), full.take(pa.array(idx)))
        idx = np.sort(rng.choice(n, size=min(k, n), replace=False))
        tables_equal(op.take(idx), ref.take_rows(idx.tolist()).to_table())
    if n:
        # the step-generator interface: all fields' step k in one read_ranges call
        idx = rng.integers(0, n, size=int(rng.integers(1, 40)))
        got, calls = op.take_steps(idx)
        tables_equal(got, full.take(pa.array(idx)))
        assert calls <= MAX_STEPS, calls
        a = int(rng.integers(0, n))
        b = int(rng.integers(a, n + 1))
        got, calls = op.range_steps(a, b)
        tables_equal(got, full.slice(a, b - a))
        assert calls <= MAX_STEPS, calls
    check_public_reader(path, full, rng)
    return op


def check_public_reader(path: Path, full: pa.Table, rng: np.random.Generator) -> None:
    """The same comparisons through ``lancejit``'s own LanceFileReader (file layer + scheduler)."""
    try:
        from lancejit.file.reader import LanceFileReader
    except ImportError:  # pragma: no cover - file layer not there yet
        return
    r = LanceFileReader(str(path))
    n = full.num_rows
    tables_equal(r.read_all(), full)
    if n:
        a = int(rng.integers(0, n))
        b = int(rng.integers(a, n + 1))
        tables_equal(r.read_range(a, b - a), full.slice(a, b - a))
        idx = rng.integers(0, n, size=int(rng.integers(1, 40)))
        tables_equal(r.take_rows(idx), full.take(pa.array(idx)))
