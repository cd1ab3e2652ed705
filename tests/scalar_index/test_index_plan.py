"""How a scan reads what scalar indices answer: candidates read (by run plans, takes or ranges
then selected) or the fragments scanned, chosen by estimated cost; wide BTREE ranges scanned
without reading index pages when the page lookup shows they select too many rows; columns an
equality fixes made rather than read.  Every way gives pylance's rows."""

from __future__ import annotations

import functools

import numpy as np
import pyarrow as pa
import pytest

import lancejit
from lancejit.core import config

lance = pytest.importorskip("lance")

N = 20_000
#: Rows per BTREE page of the index lancejit builds here (many pages for a small dataset).
PAGE = 256


@pytest.fixture(scope="module")
def dataset(tmp_path_factory, request):
    """Two indexed fragments (BTREE on ``id`` with small pages, BITMAP on ``cat``), deletions in
    one of them, and an appended fragment no index covers."""
    from lancejit.table.indices.scalar import writers

    rng = np.random.default_rng(3)
    path = str(tmp_path_factory.mktemp("plan") / "ds")
    table = pa.table({
        "id": pa.array(rng.permutation(N), pa.int64()),
        "cat": pa.array([f"c{k % 10}" for k in rng.integers(0, 10, N)]),
        "x": pa.array(rng.normal(size=N)),
        "s": pa.array([f"row-{k}" for k in range(N)], pa.large_string()),
    })
    lance.write_dataset(table, path, max_rows_per_file=N // 2)
    mp = pytest.MonkeyPatch()
    mp.setattr(writers, "btree_files", functools.partial(writers.btree_files, batch_size=PAGE))
    try:
        ds = lancejit.dataset(path).create_scalar_index("id", "BTREE")
        ds.create_scalar_index("cat", "BITMAP")
    finally:
        mp.undo()
    more = pa.table({"id": pa.array(np.arange(N, N + 500), pa.int64()),
                     "cat": pa.array([f"c{k % 10}" for k in range(500)]),
                     "x": pa.array(np.linspace(-3, 3, 500)), "s": pa.array([f"new-{k}" for k in range(500)],
                                                                         pa.large_string())})
    lance.write_dataset(more, path, mode="append")
    lance.dataset(path).delete("id % 97 = 5 AND id < 10000")
    return path


FILTERS = ["id > 100", "id > 19000", "id BETWEEN 10 AND 19900", "id BETWEEN 1000 AND 4000", "id < 300 OR id > 19700", "id < 8000",
           "id >= 50 AND id < 19990", "cat = 'c3'", "cat IN ('c1', 'c2', 'c3', 'c4', 'c5', 'c6', 'c7')",
           "cat IN ('c1', 'c2') AND x > 0.5", "id = 777", "id IN (3, 999, 20100, 15000) AND cat != 'c1'"]


def _plan(ds, text: str):
    """``(the scan plan's indexed part, the indices' answer before the choice)``."""
    import asyncio

    from lancejit.table.read import scan
    from lancejit.table.read.index_plan import plan_indexed

    spec = ds._spec(filter=text)
    index, plan, _ = asyncio.run(scan._plan(ds.context, spec))
    answer = asyncio.run(plan_indexed(ds.context, index, spec.filter, np.arange(len(index), dtype=np.int64)))
    return plan.indexed, answer


@pytest.mark.parametrize("cost, unit", [(None, None), (0.0, None), (0.0, 1000), (1e9, None)])
def test_every_choice_gives_the_references_rows(dataset, cost, unit, monkeypatch):
    """Default costs, candidates always read (in units of the fragments or of 1,000 rows: run
    plans, takes, ranges then selected), fragments always scanned: pylance's rows."""
    from lancejit.table.read import index_scan

    if unit is not None:
        monkeypatch.setattr(index_scan, "UNIT_ROWS", unit)
    ref = lance.dataset(dataset)
    with config.override(**({} if cost is None else {"index_candidate_cost": cost})):
        ours = lancejit.dataset(dataset)
        for text in FILTERS:
            want = ref.to_table(filter=text)
            assert ours.to_table(filter=text).equals(want), text
            assert ours.to_table(filter=text, columns=["s", "id"], with_row_id=True).equals(
                ref.to_table(filter=text, columns=["s", "id"], with_row_id=True)), text
            assert ours.count_rows(text) == want.num_rows, text


def test_wide_ranges_are_scanned_without_reading_pages(dataset):
    ds = lancejit.dataset(dataset)
    ds.to_table(filter="id = 1")  # the index opened
    ds.io_stats()
    taken, answer = _plan(ds, "id > 100")
    assert taken is None  # scanned: the page lookup shows most rows selected
    assert answer.least is not None and answer.least > N // 2
    assert not answer.worth_taking() and answer.matches() is None and not len(answer.upos)
    assert ds.io_stats().index_parts_loaded == 0
    taken, answer = _plan(ds, "id > 19000")
    assert taken is not None and taken.least is None and taken.worth_taking()
    assert ds.io_stats().index_parts_loaded > 0


def test_explain_prints_the_estimates(dataset):
    import asyncio

    from lancejit.bench.explain_scan import plan_scan

    ds = lancejit.dataset(dataset)
    wide = asyncio.run(plan_scan(ds, "id > 100")).render()
    assert "pages not read" in wide and "reading them costs more" in wide
    narrow = asyncio.run(plan_scan(ds, "id > 19500")).render()
    assert "candidate rows, read (est. cost" in narrow


def test_equality_fixes_columns(dataset):
    ds = lancejit.dataset(dataset)
    got = _plan(ds, "cat = 'c3' AND id < 5000")[1]
    assert set(got.fixed) == {"cat"} and got.fixed["cat"].as_py() == "c3"
    assert set(_plan(ds, "id = 5")[1].fixed) == {"id"}
    assert _plan(ds, "id = 5 OR id = 6")[1].fixed == {}


@pytest.mark.parametrize("value", [pa.scalar(-3, pa.int8()), pa.scalar(2**64 - 1, pa.uint64()),
                                   pa.scalar(True), pa.scalar("é", pa.string()), pa.scalar("ab", pa.large_string()),
                                   pa.scalar(b"\x00z", pa.binary()), pa.scalar(b"", pa.large_binary())])
def test_constant_columns(value):
    from lancejit.table.read.index_scan import _constant

    for n in (0, 1, 5):
        got = _constant(value, n)
        got.validate(full=True)
        assert got.equals(pa.repeat(value, n))
    assert _constant(pa.scalar(1.5), 3) is None
