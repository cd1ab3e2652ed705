"""``LanceFileReader`` reads exactly what pylance 14 reads: whole files, ranges, takes in any
order with duplicates, scans in batches, projections; sync and async faces."""

from __future__ import annotations

import asyncio

import lance
import numpy as np
import pyarrow as pa
import pytest

from lancejit.core.errors import InvalidInputError, NotSupportedError, RowIndexError
from lancejit.file.cache import SearchCache
from lancejit.file.reader import AsyncLanceFileReader, LanceFileReader, decoder_factory

READ_KEYS = [(v, n) for n in ("flat", "nested", "bigmeta") for v in ("2.0", "2.1", "2.2")]


def _require_decoders(version: str) -> None:
    try:
        decoder_factory(version)
    except NotSupportedError as exc:  # the decoders of this version are not in this build yet
        pytest.skip(str(exc))


def _ref(path) -> "lance.file.LanceFileReader":
    return lance.file.LanceFileReader(str(path))


def _reader(samples, key) -> LanceFileReader:
    _require_decoders(key[0])
    return LanceFileReader(str(samples[key]), cache=SearchCache())


@pytest.mark.parametrize("key", READ_KEYS, ids=lambda k: f"{k[1]}-{k[0]}")
def test_read_all_matches_pylance(samples, key):
    reader = _reader(samples, key)
    expected = _ref(samples[key]).read_all().to_table()
    got = reader.read_all()
    assert got.schema.equals(expected.schema, check_metadata=True)
    assert got.equals(expected)


RANGE_KEYS = [k for k in READ_KEYS if k[1] != "bigmeta"] + [("2.2", "bigmeta")]


@pytest.mark.parametrize("key", RANGE_KEYS, ids=lambda k: f"{k[1]}-{k[0]}")
def test_read_range_matches_pylance(samples, key):
    reader = _reader(samples, key)
    ref = _ref(samples[key])
    n = reader.num_rows
    for start, count in [(0, 1), (0, n), (n - 1, 1), (n // 3, n // 3), (999, 2), (1000, 1000), (n, 0)]:
        got = reader.read_range(start, count)
        assert got.num_rows == count
        if count:
            assert got.equals(ref.read_range(start, count).to_table()), (start, count)


@pytest.mark.parametrize("key", READ_KEYS, ids=lambda k: f"{k[1]}-{k[0]}")
def test_take_rows_any_order_with_duplicates(samples, key):
    reader = _reader(samples, key)
    full = _ref(samples[key]).read_all().to_table()
    n = reader.num_rows
    rng = np.random.default_rng(11)
    for indices in [
        np.array([0]),
        np.array([n - 1, 0, n - 1, 0]),
        rng.integers(0, n, 50),
        np.sort(rng.choice(n, 200, replace=False)),
        np.arange(n)[::-1][:300],
        [5, 5, 5],
    ]:
        got = reader.take_rows(indices)
        assert got.equals(full.take(pa.array(np.asarray(indices, dtype=np.int64)))), indices


@pytest.mark.parametrize(
    "key,batch_sizes",
    [(("2.0", "flat"), (1000, 777, 5000)), (("2.2", "nested"), (1000, 777, 5000)), (("2.1", "bigmeta"), (777,))],
    ids=str,
)
def test_to_batches(samples, key, batch_sizes):
    reader = _reader(samples, key)
    full = _ref(samples[key]).read_all().to_table()
    for batch_size in batch_sizes:
        batches = list(reader.to_batches(batch_size=batch_size))
        assert all(b.num_rows <= batch_size for b in batches)
        assert [b.num_rows for b in batches[:-1]] == [batch_size] * (len(batches) - 1)
        table = pa.Table.from_batches(batches, schema=reader.schema)
        assert table.equals(full)


def test_to_batches_sub_range_and_early_stop(samples):
    reader = _reader(samples, ("2.2", "flat"))
    full = _ref(samples[("2.2", "flat")]).read_all().to_table()
    table = pa.Table.from_batches(list(reader.to_batches(batch_size=100, start=250, end=1234)))
    assert table.equals(full.slice(250, 1234 - 250))
    it = reader.to_batches(batch_size=10)
    first = next(it)
    it.close()  # abandoning a scan cancels its read-ahead
    assert first.num_rows == 10


def test_projection(samples):
    key = ("2.2", "nested")
    reader = _reader(samples, key)
    full = _ref(samples[key]).read_all().to_table()
    got = reader.read_all(columns=["vec", "id"])
    assert got.column_names == ["vec", "id"]
    assert got.column("vec").equals(full.column("vec"))
    taken = reader.take_rows([3, 1], columns=["l"])
    assert taken.column("l").equals(full.column("l").take([3, 1]))
    nested = reader.read_range(10, 5, columns=["st.z.w", "st.y"])
    assert nested.column_names == ["st.z.w", "st.y"]
    st = full.column("st").combine_chunks().slice(10, 5)
    assert nested.column("st.y").combine_chunks().equals(st.field("y"))
    assert nested.column("st.z.w").combine_chunks().equals(st.field("z").field("w"))
    with pytest.raises(InvalidInputError, match="no column 'nope'"):
        reader.read_all(columns=["nope"])


def test_bad_rows(samples):
    reader = _reader(samples, ("2.1", "flat"))
    n = reader.num_rows
    with pytest.raises(RowIndexError):
        reader.take_rows([0, n])
    with pytest.raises(RowIndexError):
        reader.take_rows([-1])
    with pytest.raises(IndexError):  # RowIndexError is an IndexError too
        reader.read_range(n - 1, 2)
    with pytest.raises(InvalidInputError):
        reader.take_rows(["a"])
    assert reader.take_rows([]).num_rows == 0
    assert reader.take_rows(np.array([], dtype=np.int64)).schema == reader.schema


async def test_async_reader_and_take_rows_async(samples):
    key = ("2.2", "flat")
    _require_decoders(key[0])
    full = _ref(samples[key]).read_all().to_table()
    areader = await AsyncLanceFileReader.open(str(samples[key]), cache=SearchCache())
    results = await asyncio.gather(areader.take_rows([7, 3]), areader.read_range(5, 3))
    assert results[0].equals(full.take([7, 3]))
    assert results[1].equals(full.slice(5, 3))
    batches = [b async for b in areader.to_batches(batch_size=1024)]
    assert pa.Table.from_batches(batches).equals(full)
    sync_reader = LanceFileReader(str(samples[key]), cache=SearchCache())
    assert (await sync_reader.take_rows_async([2, 2, 0])).equals(full.take([2, 2, 0]))


@pytest.mark.parametrize("version", ["2.1", "2.2"])
def test_takes_after_the_first_need_no_metadata_reads(samples, version):
    """Page metadata decoded by the first take (chunk words...) lives in the search cache: later
    takes, also by a new reader of the same file, read only the data chunks."""
    key = (version, "bigmeta")
    cache = SearchCache()
    _require_decoders(version)
    reader = LanceFileReader(str(samples[key]), cache=cache)
    rows = [5, 5000]
    s0 = reader.io_stats()
    reader.take_rows(rows)
    s1 = reader.io_stats()
    reader.take_rows(rows)
    s2 = reader.io_stats()
    first, second = (s1 - s0).read_iops, (s2 - s1).read_iops
    assert second < first
    other = LanceFileReader(str(samples[key]), cache=cache)
    t0 = other.io_stats()
    assert t0.read_iops == 1  # cached open
    other.take_rows(rows)
    assert (other.io_stats() - t0).read_iops == second


@pytest.mark.parametrize("key", [("2.0", "nested"), ("2.1", "flat"), ("2.2", "flat")], ids=str)
def test_small_scan_windows(samples, key):
    """Force ~4 KiB windows so reads cross many windows (read-ahead, slicing, stitching)."""
    reader = _reader(samples, key)
    reader.async_reader.scan_read_bytes = 4096
    full = _ref(samples[key]).read_all().to_table()
    got = reader.read_all()
    assert got.equals(full)
    assert max(c.num_chunks for c in got.columns) > 1
    assert reader.read_range(123, 1777).equals(full.slice(123, 1777))
    batches = list(reader.to_batches(batch_size=300))
    assert pa.Table.from_batches(batches).equals(full)
    assert {b.num_rows for b in batches[:-1]} == {300}


@pytest.mark.parametrize("name", ["flat", "many"])
def test_legacy_reads_match_the_reference_dataset(samples, name):
    """0.1 data files (written through a legacy dataset) read as pylance reads the dataset."""
    key = ("0.1", name)
    reader = _reader(samples, key)
    expected = lance.dataset(str(samples[key].parent.parent)).to_table()
    assert reader.version == "0.1"
    assert reader.read_all().equals(expected)
    order = [reader.num_rows - 1, 0, 7, 7]
    assert reader.take_rows(order).equals(expected.take(order))
    start = reader.num_rows // 3
    assert reader.read_range(start, 30).equals(expected.slice(start, 30))
    assert pa.Table.from_batches(list(reader.to_batches(batch_size=256))).equals(expected)
    summary = reader.metadata()
    assert summary.num_rows == expected.num_rows
    assert sum(p.num_rows for p in summary.columns[0].pages) == expected.num_rows




@pytest.mark.parametrize("key", [("2.0", "nested"), ("2.2", "nested")], ids=str)
def test_take_rows_property(samples, key):
    """Any index list (order, duplicates, any length) gives ``full.take(indices)``."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    reader = _reader(samples, key)
    full = _ref(samples[key]).read_all().to_table()
    n = reader.num_rows

    @settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(st.lists(st.integers(0, n - 1), min_size=0, max_size=300), st.sampled_from([None, ["l"], ["st", "id"]]))
    def check(indices, columns):
        got = reader.take_rows(indices, columns=columns)
        expected = full if columns is None else full.select(columns)
        assert got.equals(expected.take(pa.array(indices, type=pa.int64())))

    check()


async def test_from_reader_shares_scan_stats(samples):
    """A dataset scan opens files through its ScanScheduler: the reader reports those stats."""
    from lancejit.io import ScanScheduler, open_store

    key = ("2.2", "flat")
    _require_decoders(key[0])
    store, path = open_store(str(samples[key]))
    scan = ScanScheduler(store)
    reader = await AsyncLanceFileReader.from_reader(scan.open_file(path), cache=SearchCache())
    assert scan.stats.snapshot().read_iops == 1
    table = await reader.read_range(0, 10)
    assert table.equals(_ref(samples[key]).read_range(0, 10).to_table())
    assert reader.io_stats().read_iops == scan.stats.snapshot().read_iops > 1
