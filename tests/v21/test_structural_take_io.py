"""Issue 3 acceptance 2: with page metadata cached, a take reads only whole chunks it touches
(mini-block), one range per run (fixed full-zip), rep-index entries + values per run (variable
full-zip) -- counted on a counting RangeReader."""

from __future__ import annotations

import asyncio
import dataclasses

import numpy as np
import pyarrow as pa
import pytest

import v21data as D
from lancejit.encoding.v21 import make_field_decoders
from lancejit.encoding.v21.field import indices_to_ranges
from lancejit.file.cache import FileCache
from lancejit.file.container import open_file_metadata
from v21support import BytesReader, write_lance


def _chunk_rows(reader: BytesReader, page, large: bool) -> np.ndarray:
    """Start row of every chunk of a no-repetition mini-block page, parsed from buffer 0."""
    off, size = page.buffer_offsets[0], page.buffer_sizes[0]
    words = np.frombuffer(reader.data[off : off + size], dtype="<u4" if large else "<u2").astype(np.int64)
    counts = 1 << (words & 0xF)
    counts[-1] = page.encoding.mini_block_layout.num_items - counts[:-1].sum()
    return np.concatenate([[0], np.cumsum(counts)])


@pytest.mark.parametrize("version", ["2.1", "2.2"])
@pytest.mark.parametrize("seed", [1, 2])
def test_take_request_counts(tmp_path, version, seed):
    rng = np.random.default_rng(seed)
    n = 20000
    big = [bytes(rng.integers(0, 256, size=300, dtype=np.uint8)) for _ in range(n // 10)] * 10
    t = pa.table(
        {
            "i": D.ints(rng, n, pa.int64(), nulls=0),
            "s": D.strings(rng, n, nulls=0.1),
            "vec": D.vectors(rng, n, 64, nulls=0),
            "big": pa.array(big, pa.binary()),
        }
    )
    path = write_lance(tmp_path / "io.lance", t, version, 256 * 1024)
    reader = BytesReader(path.read_bytes())
    meta = dataclasses.replace(asyncio.run(open_file_metadata(reader)), cache=FileCache())
    names = [f.name for f in meta.arrow_schema]
    cols = {name: meta.columns[i] for i, name in enumerate(names)}
    idx = np.unique(rng.integers(0, n, size=60))
    runs = indices_to_ranges(idx)

    async def take(name):
        dec = make_field_decoders(reader, meta, [name])[0]
        return await dec.take(idx)

    for name in names:
        asyncio.run(take(name))  # warm the metadata cache
        reader.reset()
        got = asyncio.run(take(name))  # a fresh decoder: metadata comes from the file cache
        assert got.to_pylist() == t.column(name).take(pa.array(idx)).to_pylist()
        col = cols[name]
        starts = np.cumsum([0] + [p.num_rows for p in col.pages])
        pages_touched = {int(np.searchsorted(starts, i, side="right")) - 1 for i in idx}
        layout = col.pages[0].encoding.WhichOneof("layout")
        if layout == "mini_block_layout":
            touched = 0
            for p in pages_touched:
                page = col.pages[p]
                large = page.encoding.mini_block_layout.has_large_chunk
                bounds = _chunk_rows(reader, page, large)
                local = idx[(idx >= starts[p]) & (idx < starts[p + 1])] - starts[p]
                touched += len(set(np.searchsorted(bounds, local, side="right") - 1))
            assert 0 < len(reader.ranges) <= touched, (name, reader.ranges, touched)
            assert reader.calls <= touched
        elif layout == "full_zip_layout":
            fz = col.pages[0].encoding.full_zip_layout
            per_run = 1 if fz.WhichOneof("details") == "bits_per_value" else 2
            # a run may span two pages: count page-split runs
            pieces = sum(len({int(np.searchsorted(starts, r, side="right")) - 1 for r in range(a, b)}) for a, b in runs)
            assert len(reader.ranges) == per_run * pieces, (name, len(reader.ranges), pieces)
            assert reader.calls <= per_run * len(pages_touched)
        else:
            raise AssertionError(f"unexpected layout {layout} for {name}")


@pytest.mark.parametrize("version", ["2.1", "2.2"])
def test_take_iops_on_store_counters(tmp_path, version):
    """Through lancejit's LanceFileReader: after a warming take, a take of rows in distinct
    chunks costs at most (chunks touched) read IOPs per mini-block column and 2 per run of the
    variable full-zip column, as counted by the store's IOStats."""
    from lancejit.file.reader import LanceFileReader

    rng = np.random.default_rng(3)
    n = 20000
    big = [bytes(rng.integers(0, 256, size=300, dtype=np.uint8)) for _ in range(n)]
    t = pa.table({"i": D.ints(rng, n, pa.int64(), nulls=0), "big": pa.array(big, pa.binary())})
    path = write_lance(tmp_path / "iops.lance", t, version)
    r = LanceFileReader(str(path))
    warm = np.arange(0, n, 997)
    r.take_rows(warm, columns=["i"])
    r.take_rows(warm, columns=["big"])
    idx = np.sort(rng.choice(n, size=25, replace=False))
    for name, bound in [("i", len(idx)), ("big", 2 * len(idx))]:
        before = r.io_stats().read_iops
        got = r.take_rows(idx, columns=[name])
        assert got.column(name).to_pylist() == t.column(name).take(pa.array(idx)).to_pylist()
        used = r.io_stats().read_iops - before
        assert 0 < used <= bound, (name, used, bound)


@pytest.mark.parametrize("version", ["2.1", "2.2"])
def test_take_list_column_reads_few_chunks(tmp_path, version):
    """A take on a list column (mini-block with repetition index) reads, with metadata cached,
    at most one range per requested row and well under the whole page."""
    rng = np.random.default_rng(4)
    n = 20000
    t = pa.table({"l": D.lists(rng, n, D.ints(rng, 5 * n, pa.int64())), "ls": D.lists(rng, n, D.strings(rng, 5 * n))})
    path = write_lance(tmp_path / "l.lance", t, version)
    reader = BytesReader(path.read_bytes())
    meta = dataclasses.replace(asyncio.run(open_file_metadata(reader)), cache=FileCache())
    idx = np.unique(rng.integers(0, n, size=30))
    for i, name in enumerate(["l", "ls"]):
        page = meta.columns[i].pages[0]
        assert page.encoding.WhichOneof("layout") == "mini_block_layout"
        assert page.encoding.mini_block_layout.repetition_index_depth == 1
        dec = make_field_decoders(reader, meta, [name])[0]
        asyncio.run(dec.take(idx[:3]))  # loads chunk table + repetition index
        reader.reset()
        got = asyncio.run(dec.take(idx))
        assert got.to_pylist() == t.column(name).take(pa.array(idx)).to_pylist()
        assert reader.calls == 1 and len(reader.ranges) <= len(idx)
        # rows far apart (chunk runs more than the reader's 4 KiB block apart): well under the page
        sparse = np.linspace(0, n - 1, 6).astype(np.int64)
        reader.reset()
        got = asyncio.run(dec.take(sparse))
        assert got.to_pylist() == t.column(name).take(pa.array(sparse)).to_pylist()
        assert reader.calls == 1 and len(reader.ranges) <= len(sparse)
        assert sum(e - s for s, e in reader.ranges) < page.buffer_sizes[1] // 2


@pytest.mark.parametrize("version", ["2.1", "2.2"])
def test_take_steps_batch_all_fields(tmp_path, version):
    """``take_steps`` of every field run by ``run_plans``: one ``read_ranges`` call per step for
    all fields: cold = page metadata + variable full-zip entries, then every field's data;
    warm = mini-block chunks + full-zip entries, then the full-zip values."""
    from lancejit.encoding.v20.steps import run_plans

    rng = np.random.default_rng(5)
    n = 20000
    big = [bytes(rng.integers(0, 256, size=300, dtype=np.uint8)) for _ in range(n)]
    t = pa.table({"i": D.ints(rng, n, pa.int64()), "s": D.strings(rng, n), "big": pa.array(big, pa.binary()),
                  "l": D.lists(rng, n, D.ints(rng, 5 * n, pa.int32()))})
    path = write_lance(tmp_path / "steps.lance", t, version)
    reader = BytesReader(path.read_bytes())
    meta = asyncio.run(open_file_metadata(reader))
    decs = make_field_decoders(reader, meta, t.column_names)
    idx = np.unique(rng.integers(0, n, size=40))
    for expected_calls in (2, 2):  # cold, then warm (chunk tables kept on the pages)
        reader.reset()
        arrs = asyncio.run(run_plans(reader, [d.take_steps(idx) for d in decs]))
        assert reader.calls == expected_calls
        for name, arr in zip(t.column_names, arrs):
            assert arr.to_pylist() == t.column(name).take(pa.array(idx)).to_pylist(), name
    reader.reset()
    arrs = asyncio.run(run_plans(reader, [d.range_steps(100, 5000) for d in decs]))
    assert reader.calls == 2  # mini-block chunks + full-zip entries, then full-zip values
    for name, arr in zip(t.column_names, arrs):
        assert arr.to_pylist() == t.column(name).slice(100, 4900).to_pylist(), name
