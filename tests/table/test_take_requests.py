"""Request counts of a dataset take (issue 5, acceptance 3): a warm 1,000-row take across 10
fragments makes no more read requests than the reference's, re-reads no manifest, file metadata
or deletion file, and ``Dataset.io_stats()`` counts only what happened since the previous call.
Counts come from the stores' own IOStats (``io_stats()``) and the reference's
``io_stats_incremental()``; no timings."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

import lancejit.table as lt

lance = pytest.importorskip("lance")

_s3 = pytest.param("s3", marks=pytest.mark.s3)


def _table(rows: int) -> pa.Table:
    rng = np.random.default_rng(0)
    words = np.array([f"w{i:05d}-{'x' * (i % 13)}" for i in range(5000)])
    return pa.table({
        "id": pa.array(np.arange(rows, dtype=np.int64)),
        "value": pa.array(rng.standard_normal(rows)),
        "name": pa.array(words[rng.integers(0, len(words), rows)]),
    })


def _location(kind: str, tmp_path, request, name: str) -> tuple[str, dict[str, str]]:
    if kind == "local":
        return str(tmp_path / name), {}
    root = request.getfixturevalue("s3_endpoint").new_root()
    return root.join(name), dict(root.storage_options)


@pytest.mark.parametrize("kind", ["local", _s3])
@pytest.mark.parametrize("version", ["2.0", "2.1", "2.2"])
def test_take_requests_at_most_reference(tmp_path, request, kind, version):
    uri, opts = _location(kind, tmp_path, request, f"take_{version.replace('.', '_')}")
    # 10 fragments of 6,000 rows (files well above the 64 KiB tail prefetch), ~1% deleted
    lance.write_dataset(_table(60_000), uri, data_storage_version=version, max_rows_per_file=6_000,
                        storage_options=opts or None)
    lance.dataset(uri, storage_options=opts or None).delete("id % 97 = 5")
    ref = lance.dataset(uri, storage_options=opts or None)
    ours = lt.dataset(uri, storage_options=opts or None)
    n = ref.count_rows()
    rng = np.random.default_rng(1)
    idx, idx2, idx3 = (rng.choice(n, 1000, replace=False) for _ in range(3))

    ref.io_stats_incremental()
    opened = ours.io_stats()
    assert opened.read_iops >= 1  # the manifest (counted since the dataset was opened)
    assert ours.io_stats().read_iops == 0  # incremental: nothing happened since the last call

    assert ours.take(idx).equals(ref.take(idx))  # cold: file metadata and deletion files
    cold_ref, cold = ref.io_stats_incremental(), ours.io_stats()
    assert cold.read_iops <= cold_ref.read_iops + 10  # + at most one tail read per fragment

    assert ours.take(idx2).equals(ref.take(idx2))
    warm_ref, warm = ref.io_stats_incremental(), ours.io_stats()
    assert warm.read_iops <= warm_ref.read_iops
    if version != "2.0":  # 2.0 takes read page offsets first, then values (local splits them)
        assert warm.read_iops <= 10  # one request per touched fragment
    assert warm.list_iops == 0

    # the same take again costs the same: nothing (metadata, deletions) is re-read
    ours.take(idx3)
    again = ours.io_stats()
    ours.take(idx3)
    assert ours.io_stats().read_iops == again.read_iops


def test_take_from_small_files_reads_them_once(tmp_path):
    """Files the 64 KiB open read holds entirely are served from memory afterwards."""
    uri = str(tmp_path / "small")
    lance.write_dataset(_table(2_000), uri, data_storage_version="2.1", max_rows_per_file=200)
    lance.dataset(uri).delete("id % 7 = 1")
    ref = lance.dataset(uri)
    ours = lt.dataset(uri)
    ours.io_stats()
    idx = np.random.default_rng(5).choice(ref.count_rows(), 300, replace=False)
    assert ours.take(idx).equals(ref.take(idx))
    cold = ours.io_stats()
    assert cold.read_iops == 2 * 10  # one tail read per data file, one read per deletion file
    assert ours.take(idx[::-1]).equals(ref.take(idx[::-1]))
    assert ours.io_stats().read_iops == 0
    assert ours.to_table().equals(ref.to_table())
    assert ours.io_stats().read_iops == 0
