"""Scans of physical row ranges of fragments (``ScanSpec.fragment_ranges``, what a Spark
partition reads): the live rows of each range, in the ranges' order, equal to pylance's rows
selected by row address; with deletions, filters, projections and many small fragments."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pyarrow as pa
import pytest

import lance

import lancejit
from lancejit.table.read.dataset_reader import Scanner


@pytest.fixture(scope="module")
def deleted(tmp_path_factory):
    uri = str(tmp_path_factory.mktemp("ranges") / "d.lance")
    rng = np.random.default_rng(3)
    n = 5000
    t = pa.table({"id": pa.array(np.arange(n), pa.int64()), "x": rng.uniform(0, 1, n),
                  "s": [None if i % 7 == 0 else f"s{i % 97}" for i in range(n)]})
    lance.write_dataset(t, uri, max_rows_per_file=700)
    lance.write_dataset(t.slice(0, 40), uri, mode="append", max_rows_per_file=10)
    lance.dataset(uri).delete("id % 5 = 1 OR (id >= 1500 AND id < 2000)")
    return uri


def _expected(uri, ranges, columns, flt):
    ref = lance.dataset(uri).to_table(columns=columns, filter=flt, with_row_address=True)
    addr = ref["_rowaddr"].to_numpy()
    frag, off = addr >> 32, addr & 0xFFFFFFFF
    parts = [ref.filter(pa.array((frag == f) & (off >= lo) & (off < hi))) for f, lo, hi in ranges]
    return pa.concat_tables(parts).drop_columns(["_rowaddr"])


def _scan(uri, ranges, columns, flt, batch_size=None):
    ds = lancejit.dataset(uri)
    spec = replace(ds._spec(columns=columns, filter=flt, batch_size=batch_size), fragment_ranges=tuple(ranges))
    scanner = Scanner(ds.context, spec)
    batches = list(scanner.to_batches())
    assert all(b.num_rows <= (batch_size or 8192) for b in batches)
    assert scanner.to_table().equals(pa.Table.from_batches(batches, schema=scanner.schema))
    return scanner.to_table()


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
@pytest.mark.parametrize("flt", [None, "x > 0.3 AND s IS NOT NULL", "id % 3 = 0"])
def test_ranges_equal_pylance(deleted, seed, flt):
    rng = np.random.default_rng(seed)
    frags = [(f.fragment_id, f.metadata.physical_rows) for f in lance.dataset(deleted).get_fragments()]
    picked = [frags[i] for i in sorted(rng.choice(len(frags), size=min(6, len(frags)), replace=False))]
    ranges = []
    for fid, n in picked:
        lo = int(rng.integers(0, n))
        hi = int(rng.integers(lo, n + 1)) if seed % 2 else n
        ranges.append((fid, lo, hi))
    if seed == 3:
        ranges.reverse()  # scan order is the ranges' order
    columns = ["s", "id"] if seed % 2 else None
    got = _scan(deleted, ranges, columns, flt, batch_size=257)
    want = _expected(deleted, ranges, columns, flt)
    assert got.to_pylist() == want.to_pylist()


def test_ranges_clip_and_skip(deleted):
    frags = lance.dataset(deleted).get_fragments()
    f0, n0 = frags[0].fragment_id, frags[0].metadata.physical_rows
    got = _scan(deleted, [(f0, 100, 10**9), (999_999, 0, 5), (f0, 50, 20)], ["id"], None)
    assert got.to_pylist() == _expected(deleted, [(f0, 100, n0)], ["id"], None).to_pylist()
