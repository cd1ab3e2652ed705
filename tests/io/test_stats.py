"""IOStats counters, snapshots and percentiles."""

from __future__ import annotations

import threading

import pytest

from lancejit.io import IOStats, IOStatsSnapshot


def test_snapshot_and_incremental():
    stats = IOStats()
    stats.record_read(100, 0.001)
    stats.record_read(50, requests=2)
    stats.record_write(10, 0.002)
    stats.record_list()
    stats.record_meta(3)
    snap = stats.snapshot()
    assert isinstance(snap, IOStatsSnapshot)
    assert (snap.read_iops, snap.read_bytes, snap.write_iops, snap.written_bytes) == (3, 150, 1, 10)
    assert (snap.list_iops, snap.meta_iops, snap.num_requests) == (1, 3, 8)
    first = stats.incremental()
    assert first.read_iops == 3
    stats.record_read(7)
    second = stats.incremental()
    assert (second.read_iops, second.read_bytes, second.write_iops) == (1, 7, 0)
    assert stats.incremental().num_requests == 0
    with pytest.raises(Exception):
        snap.read_iops = 5  # frozen
    stats.reset()
    assert stats.snapshot() == IOStatsSnapshot()


def test_percentiles():
    stats = IOStats()
    assert stats.snapshot().latency_percentile(0.5) == 0.0
    for _ in range(90):
        stats.record_read(1, 0.0001)  # 100 us -> bucket upper bound 128 us
    for _ in range(10):
        stats.record_read(1, 0.05)  # 50 ms -> 65.536 ms
    snap = stats.snapshot()
    assert snap.latency_percentile(0.5) == pytest.approx(128e-6)
    assert snap.latency_percentile(0.9) == pytest.approx(128e-6)
    assert snap.latency_percentile(0.99) == pytest.approx(0.065536)
    assert snap.latency_percentile(1.0) == pytest.approx(0.065536)
    with pytest.raises(ValueError):
        snap.latency_percentile(1.5)


def test_thread_safe():
    stats = IOStats()

    def hammer():
        for _ in range(5_000):
            stats.record_read(2, 0.0)
            stats.record_write(1)

    threads = [threading.Thread(target=hammer) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    snap = stats.snapshot()
    assert (snap.read_iops, snap.read_bytes, snap.write_iops) == (40_000, 80_000, 40_000)
