"""A take or scan of several columns reads through ONE scheduler batch per step (the reads of
all projected fields are coalesced), results equal the reference's, and the merged take never
costs more physical requests than the columns read one by one."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

import lancejit

COLS = ["id", "value", "name"]


def _table(n: int, seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    words = np.array([f"w{i:04d}-{'x' * (i % 11)}" for i in range(500)])
    return pa.table({
        "id": pa.array(np.arange(n, dtype=np.int64)),
        "value": pa.array(rng.standard_normal(n)),
        "name": pa.array(words[rng.integers(0, len(words), n)]),
    })


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    import lance.file as ref

    out = {}
    d = tmp_path_factory.mktemp("batching")
    for version in ("2.0", "2.1", "2.2"):
        for seed, n in ((1, 9_000), (2, 20_000)):
            p = d / f"t_{version}_{seed}.lance"
            with ref.LanceFileWriter(str(p), version=version, max_page_bytes=64 * 1024) as w:
                w.write_batch(_table(n, seed))
            out[(version, seed)] = (str(p), n)
    return out


def _count_batches(reader: lancejit.LanceFileReader) -> list:
    """Record every ``read_ranges`` call that reaches the reader's FileScheduler."""
    sched = reader.async_reader._scheduler
    calls: list = []
    original = sched.read_ranges

    async def counting(ranges, *, priority=0):
        calls.append(len(ranges))
        return await original(ranges, priority=priority)

    sched.read_ranges = counting
    return calls


@pytest.mark.parametrize("version", ["2.0", "2.1", "2.2"])
@pytest.mark.parametrize("seed", [1, 2])
def test_take_is_one_batch_per_step(files, version, seed):
    import lance.file as ref

    path, n = files[(version, seed)]
    rng = np.random.default_rng(seed + 10)
    idx = rng.choice(n, 300, replace=False)  # unsorted
    reader = lancejit.LanceFileReader(path)
    want = ref.LanceFileReader(path).take_rows(np.sort(idx)).to_table().select(COLS)
    reader.take_rows(idx, columns=COLS)  # warm: page metadata cached
    calls = _count_batches(reader)
    before = reader.io_stats().read_iops
    got = reader.take_rows(idx, columns=COLS)
    merged_requests = reader.io_stats().read_iops - before
    rank = np.argsort(np.argsort(idx))  # request position -> position in sorted order
    assert got.equals(want.take(pa.array(rank)))
    # 2.1/2.2: every column in one step; 2.0 strings need offsets, then bytes
    assert len(calls) == (1 if version != "2.0" else 2)
    separate = 0
    for col in COLS:
        b = reader.io_stats().read_iops
        reader.take_rows(idx, columns=[col])
        separate += reader.io_stats().read_iops - b
    assert merged_requests <= separate


@pytest.mark.parametrize("version", ["2.0", "2.1", "2.2"])
def test_scan_equals_reference_and_merges_columns(files, version):
    import lance.file as ref

    path, n = files[(version, 2)]
    reader = lancejit.LanceFileReader(path)
    calls = _count_batches(reader)
    got = reader.read_all(columns=COLS).to_table()
    assert got.equals(ref.LanceFileReader(path).read_all().to_table().select(COLS))
    assert 1 <= len(calls) <= (2 if version == "2.0" else 1) + 1  # metadata loads may add one
    batches = list(reader.to_batches(columns=COLS, batch_size=4096))
    assert pa.Table.from_batches(batches).equals(got)
