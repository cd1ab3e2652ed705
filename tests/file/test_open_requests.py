"""Opening a file costs exactly one read request when its metadata lies in the last 64 KiB and
exactly two otherwise, on local disk, S3 (moto) and GCS (fake-gcs-server) (issue 2, acceptance 2).
Counted by the store's own IOStats and by the reader's."""

from __future__ import annotations

import pytest

from lancejit.core.config import FOOTER_PREFETCH_BYTES
from lancejit.file.cache import SearchCache
from lancejit.file.reader import AsyncLanceFileReader
from lancejit.io import open_store

# (version, schema) -> read requests needed to open it
CASES = [
    (("2.0", "flat"), 1),
    (("2.1", "many"), 1),
    (("2.2", "flat"), 1),
    (("2.0", "bigmeta"), 2),
    (("2.1", "bigmeta"), 2),
    (("2.2", "bigmeta"), 2),
    (("0.1", "flat"), 1),  # legacy: metadata, schema and page table in the tail
    (("0.1", "many"), 2),  # legacy: the page table starts before the tail
]


async def _upload(store_root, samples, key) -> tuple[str, dict]:
    data = samples[key].read_bytes()
    if store_root.kind == "local":
        return str(samples[key]), {}
    uri = store_root.join(f"{key[1]}_{key[0]}.lance")
    store, path = open_store(uri, store_root.storage_options)
    await store.put(path, data)
    return uri, store_root.storage_options


@pytest.mark.parametrize("store_root", ["local", "s3", "gcs"], indirect=True)
async def test_open_costs_one_or_two_requests(store_root, samples):
    for key, expected in CASES:
        size = samples[key].stat().st_size
        assert size > FOOTER_PREFETCH_BYTES  # the tail never holds the whole file
        uri, options = await _upload(store_root, samples, key)
        store, _ = open_store(uri, options or None)
        before = store.stats.snapshot()
        reader = await AsyncLanceFileReader.open(uri, options or None, cache=SearchCache())
        delta = store.stats.snapshot() - before
        mine = reader.io_stats()
        assert (delta.read_iops, delta.num_requests) == (expected, expected), (key, delta)
        assert (mine.read_iops, mine.num_requests) == (expected, expected), (key, mine)
        if expected == 1:
            assert mine.read_bytes == FOOTER_PREFETCH_BYTES
        elif key[0] != "0.1":  # the second request reads exactly the metadata before the tail
            meta = reader.file_metadata
            assert mine.read_bytes == meta.metadata_nbytes
            assert meta.metadata_nbytes > FOOTER_PREFETCH_BYTES
        assert reader.num_rows == samples_rows(samples, key)


def samples_rows(samples, key) -> int:
    import lance

    if key[0] == "0.1":
        return lance.dataset(str(samples[key].parent.parent)).count_rows()
    return lance.file.LanceFileReader(str(samples[key])).num_rows()


@pytest.mark.parametrize("store_root", ["local", "s3"], indirect=True)
async def test_cached_open_costs_one_request(store_root, samples):
    """With the search cache warm, even a file with > 64 KiB of metadata opens in one request."""
    key = ("2.2", "bigmeta")
    uri, options = await _upload(store_root, samples, key)
    cache = SearchCache()
    first = await AsyncLanceFileReader.open(uri, options or None, cache=cache)
    assert first.io_stats().read_iops == 2
    second = await AsyncLanceFileReader.open(uri, options or None, cache=cache)
    assert second.io_stats().read_iops == 1
    assert second.io_stats().num_requests == 1
    assert second.file_metadata is first.file_metadata


def test_sync_reader_counts_one_request(samples):
    from lancejit.file.reader import LanceFileReader

    reader = LanceFileReader(str(samples[("2.1", "flat")]), cache=SearchCache())
    stats = reader.io_stats()
    assert (stats.read_iops, stats.num_requests) == (1, 1)
