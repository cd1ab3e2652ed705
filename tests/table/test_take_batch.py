"""Cross-caller batching of ``take_async`` / ``take_rows_async`` (issue 12): concurrent callers
on one event loop are merged into one take and each gets exactly its rows, in its order (equal
to its own unbatched take and to pylance's); errors and cancellation stay with their caller;
different projections are not merged.  Counters, not timings."""

from __future__ import annotations

import asyncio

import numpy as np
import pyarrow as pa
import pytest

from lancejit.core.errors import InvalidInputError, RowIndexError
from lancejit.table import Dataset
from lancejit.core import config
from lancejit.table.read import take_batch

lance = pytest.importorskip("lance")


@pytest.fixture(params=["2.1", "2.2"])
def version(request, need_decoders):
    need_decoders(request.param)
    return request.param


def _eq(ours: pa.Table, ref: pa.Table, what: str = "") -> None:
    assert ours.schema.equals(ref.schema), f"{what}: schema\n{ours.schema}\n!=\n{ref.schema}"
    assert ours.equals(ref), f"{what}: tables differ"


async def _open(path: str) -> Dataset:
    """Open and build the version index (a first take waits for it; callers arriving while it
    is built resume on different loop iterations and are not all merged)."""
    ds = await Dataset.open_async(path)
    await ds.count_rows_async()
    return ds


def _delta(before: take_batch.BatchStats) -> take_batch.BatchStats:
    now = take_batch.stats()
    return take_batch.BatchStats(now.calls - before.calls, now.takes - before.takes,
                                 now.merged - before.merged, now.fallbacks - before.fallbacks)


def _requests(n_rows: int, seed: int, callers: int = 8) -> list[np.ndarray]:
    """Unsorted requests with duplicates inside and across callers, one empty, one single row."""
    rng = np.random.default_rng(seed)
    reqs = [rng.integers(0, n_rows, int(rng.integers(2, 40))) for _ in range(callers - 2)]
    reqs[0] = np.concatenate([reqs[0], reqs[0][:3]])  # duplicates within a caller
    reqs.append(np.array([], dtype=np.int64))
    reqs.append(reqs[1][:1].copy())  # a row another caller also takes
    return reqs


@pytest.mark.parametrize("seed", [0, 1, 2])
async def test_merged_offsets_each_caller_gets_its_rows(make_dataset, version, seed):
    path = make_dataset("evolving", version)  # several fragments, deletions
    ref = lance.dataset(path)
    ours = await _open(path)
    n = ref.count_rows()
    reqs = _requests(n, seed)
    for columns in (None, ["s", "a"], ["st"]):
        before = take_batch.stats()
        got = await asyncio.gather(*(ours.take_async(r, columns=columns) for r in reqs))
        d = _delta(before)
        assert (d.calls, d.takes, d.merged) == (len(reqs), 1, 1), d  # N callers -> 1 take
        for r, g in zip(reqs, got):
            alone = await ours.take_async(r, columns=columns, batch=False)
            _eq(g, alone, f"caller {r.tolist()} vs its own take")
            if len(r):
                _eq(g, ref.take(r, columns=columns), f"caller {r.tolist()} vs reference")


async def test_merged_with_row_id_and_address(make_dataset, version):
    path = make_dataset("evolving", version)
    ours = await _open(path)
    reqs = _requests(ours.count_rows(), 5, callers=4)
    got = await asyncio.gather(*(ours.take_async(r, columns=["a"], with_row_id=True, with_row_address=True)
                                 for r in reqs))
    for r, g in zip(reqs, got):
        _eq(g, await ours.take_async(r, columns=["a"], with_row_id=True, with_row_address=True, batch=False))


@pytest.mark.parametrize("kind", ["evolving", "stable"])
async def test_merged_take_rows(make_dataset, version, kind):
    path = make_dataset(kind, version)
    ref = lance.dataset(path)
    ours = await _open(path)
    ids = ref.to_table(columns=["a"], with_row_id=True)["_rowid"].to_numpy()
    all_ids = lance.dataset(path, version=1).to_table(columns=["a"], with_row_id=True)["_rowid"].to_numpy()
    deleted = np.setdiff1d(all_ids, ids)[:4]
    rng = np.random.default_rng(7)
    reqs = [rng.choice(ids, int(rng.integers(1, 30))) for _ in range(5)]
    reqs.append(np.concatenate([reqs[0][:2], deleted[:2], reqs[1][:3]]))  # deleted ids are skipped
    reqs.append(deleted[2:4].copy())  # nothing survives
    reqs.append(np.array([], dtype=np.uint64))
    for columns, with_row_id in ((["a", "st"], False), (["a"], True), (["_rowid", "s"], False)):
        before = take_batch.stats()
        got = await asyncio.gather(*(ours.take_rows_async(r, columns=columns, with_row_id=with_row_id)
                                     for r in reqs))
        d = _delta(before)
        assert (d.takes, d.merged) == (1, 1), d
        for r, g in zip(reqs, got):
            _eq(g, await ours.take_rows_async(r, columns=columns, with_row_id=with_row_id, batch=False))
            if not with_row_id and columns[0] != "_rowid" and len(r):
                _eq(g, ref._take_rows(r.tolist(), columns=columns), f"ids {r.tolist()} vs reference")


async def test_bad_caller_gets_the_error_others_their_rows(make_dataset, version):
    ours = await _open(make_dataset("evolving", version))
    n = ours.count_rows()
    good = [np.array([3, 1, 2]), np.array([n - 1, 0])]
    res = await asyncio.gather(ours.take_async(good[0], columns=["a"]), ours.take_async([0, n], columns=["a"]),
                               ours.take_async([-1], columns=["a"]), ours.take_async(["x"], columns=["a"]),
                               ours.take_async(good[1], columns=["a"]), return_exceptions=True)
    assert isinstance(res[1], RowIndexError) and isinstance(res[2], RowIndexError)
    assert isinstance(res[3], InvalidInputError)
    _eq(res[0], await ours.take_async(good[0], columns=["a"], batch=False))
    _eq(res[4], await ours.take_async(good[1], columns=["a"], batch=False))


async def test_failed_merged_take_is_retried_per_caller(make_dataset, version):
    ours = await _open(make_dataset("evolving", version))
    ids = (await ours.take_async([0, 5, 9], columns=["a"], with_row_address=True))["_rowaddr"].to_numpy()
    bad = np.array([(99 << 32) | 1], dtype=np.uint64)  # no fragment 99: only known while taking
    before = take_batch.stats()
    res = await asyncio.gather(ours.take_rows_async(ids[:2], columns=["a"]), ours.take_rows_async(bad, columns=["a"]),
                               ours.take_rows_async(ids[1:], columns=["a"]), return_exceptions=True)
    d = _delta(before)
    assert d.fallbacks == 1 and d.takes == 4, d  # the merged take, then each caller alone
    assert isinstance(res[1], RowIndexError)
    _eq(res[0], await ours.take_rows_async(ids[:2], columns=["a"], batch=False))
    _eq(res[2], await ours.take_rows_async(ids[1:], columns=["a"], batch=False))


async def test_cancelled_caller_does_not_cancel_the_others(make_dataset, version):
    ours = await _open(make_dataset("evolving", version))
    reqs = _requests(ours.count_rows(), 11, callers=5)
    expected = [await ours.take_async(r, columns=["a", "s"], batch=False) for r in reqs]
    # the leader (first caller) or a follower, cancelled while the batch is open / while it runs
    for victim, cancel_after in ((2, 0), (2, 1), (0, 0), (0, 1)):
        tasks = [asyncio.ensure_future(ours.take_async(r, columns=["a", "s"])) for r in reqs]
        for _ in range(cancel_after + 1):
            await asyncio.sleep(0)
        tasks[victim].cancel()
        res = await asyncio.gather(*tasks, return_exceptions=True)
        assert isinstance(res[victim], asyncio.CancelledError)
        for i in range(len(reqs)):
            if i != victim:
                _eq(res[i], expected[i], f"caller {i} (cancelled {victim} after {cancel_after})")


async def test_different_projections_are_not_merged(make_dataset, version):
    ours = await _open(make_dataset("evolving", version))
    idx = np.array([7, 3, 7, 100])
    before = take_batch.stats()
    a, b, c = await asyncio.gather(ours.take_async(idx, columns=["a"]), ours.take_async(idx, columns=["s"]),
                                   ours.take_async(idx, columns=["a"], with_row_id=True))
    assert _delta(before).takes == 3
    _eq(a, await ours.take_async(idx, columns=["a"], batch=False))
    _eq(b, await ours.take_async(idx, columns=["s"], batch=False))
    _eq(c, await ours.take_async(idx, columns=["a"], with_row_id=True, batch=False))


async def test_disable_and_window(make_dataset, version):
    ours = await _open(make_dataset("evolving", version))
    reqs = [np.array([i, i + 10]) for i in range(6)]
    expected = [await ours.take_async(r, batch=False) for r in reqs]
    before = take_batch.stats()
    got = await asyncio.gather(*(ours.take_async(r, batch=False) for r in reqs))
    assert _delta(before).calls == 0
    with config.override(take_batch=False):
        got2 = await asyncio.gather(*(ours.take_async(r) for r in reqs))
        assert _delta(before).calls == 0

    async def late(r: np.ndarray, ticks: int) -> pa.Table:
        for _ in range(ticks):
            await asyncio.sleep(0)
        return await ours.take_async(r)

    with config.override(take_batch_window_ms=50):  # callers over several loop iterations share one take
        got3 = await asyncio.gather(*(late(r, i) for i, r in enumerate(reqs)))
        assert _delta(before).takes == 1
    with config.override(take_batch_max_callers=4):  # a full batch is closed; the next callers open another
        before = take_batch.stats()
        got4 = await asyncio.gather(*(ours.take_async(r) for r in reqs))
        assert _delta(before).takes == 2
    for e, g, g2, g3, g4 in zip(expected, got, got2, got3, got4):
        _eq(g4, e)
        _eq(g, e)
        _eq(g2, e)
        _eq(g3, e)


def test_sync_callers_and_separate_loops(make_dataset, version):
    """Each event loop batches its own callers (asyncio.run makes a new loop every time)."""
    from lancejit.table import dataset

    ours = dataset(make_dataset("evolving", version))
    ours.count_rows()
    reqs = [np.array([5, 1]), np.array([2])]

    async def both() -> list[pa.Table]:
        return list(await asyncio.gather(*(ours.take_async(r) for r in reqs)))

    for _ in range(2):
        before = take_batch.stats()
        got = asyncio.run(both())
        assert _delta(before).takes == 1
        for r, g in zip(reqs, got):
            _eq(g, ours.take(r))
