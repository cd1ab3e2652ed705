"""The filter table with scalar indices present: every filter gives pylance's rows (same order),
with indices built by either library, covering every fragment or not, with deletions; and the
same rows as lancejit's scan without indices."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute  # noqa: F401  (pa.compute)
import pytest

import lancejit
from lancejit.core.errors import InvalidInputError
from lancejit.core import config

import table_filters as filters  # (registered by conftest.py)

lance = pytest.importorskip("lance")

INDEX_FILTERS = [
    "a = 17",
    "a = 2010",
    "a IN (5, 17, 900, 1050, 2021)",
    "a BETWEEN 100 AND 140 AND f > 60",
    "a >= 995",
    "a < 3 OR a > 2140",
    "s = 's3'",
    "s IN ('s1', 's22', 'upd', 's2020')",
    "s != 'upd' AND a < 140",
    "NOT (s = 'upd') AND a BETWEEN 100 AND 135",
    "s IS NULL AND a > 500",
    "array_has_any(l, [3, 5])",
    "array_has_all(l, [4, 5])",
    "NOT array_has_any(l, [7]) AND a < 60",
    "array_contains(l, 10)",
    "array_has(l, 2001) OR a = 3",
    "b = 200",
    "b > 1500 OR s = 'upd'",
    "b IN (2, 4, 4002) AND f IS NOT NULL",
    "f IS NULL AND a < 100",
    "NOT (a > 50) AND s IS NOT NULL",
    "f = 10.5",
    "f >= 400 AND f < 401",
    "f > 1000",
    "a > 990 OR array_has_any(l, [1])",
    "s > 's8' AND a % 2 = 0",
    "(a < 10 OR b > 3990) AND NOT (s IS NULL)",
    "NOT (a IN (1, 2, 3) OR b < 100)",
]

FILTERS = filters.FILTERS + filters.EVOLVED_FILTERS + INDEX_FILTERS


def _equal(ours: pa.Table, ref: pa.Table, what: str) -> None:
    assert ours.schema.equals(ref.schema), f"{what}: schema"
    assert ours.equals(ref), f"{what}: rows differ ({ours.num_rows} vs {ref.num_rows})"


@pytest.mark.parametrize("coverage", ["all", "partial"])
@pytest.mark.parametrize("builder", ["pylance", "lancejit"])
def test_filters_match_reference(indexed, builder, coverage):
    path = indexed(builder, coverage)
    ref, ours = lance.dataset(path), lancejit.dataset(path)
    assert len(ref.describe_indices()) == 5
    used = 0
    for text in FILTERS:
        try:
            expected = ref.to_table(filter=text)
        except (OSError, ValueError):
            with pytest.raises(InvalidInputError):
                ours.to_table(filter=text)
            continue
        ours.io_stats()
        _equal(ours.to_table(filter=text), expected, text)
        assert ours.count_rows(text) == expected.num_rows, text
        used += ours.io_stats().index_searches > 0
        cols = ["a", "l"]
        _equal(ours.to_table(filter=text, columns=cols, with_row_id=True),
               ref.to_table(filter=text, columns=cols, with_row_id=True), text)
    assert used >= len(INDEX_FILTERS) - 2


@pytest.mark.parametrize("builder", ["pylance", "lancejit"])
def test_same_rows_without_indices(indexed, builder):
    path = indexed(builder, "partial")
    ds = lancejit.dataset(path)
    for text in INDEX_FILTERS:
        with_idx = ds.to_table(filter=text, with_row_address=True)
        n = ds.count_rows(text)
        with config.override(scalar_indices=False):
            plain = ds.to_table(filter=text, with_row_address=True)
            m = ds.count_rows(text)
        _equal(with_idx, plain, text)
        assert n == m == plain.num_rows, text


def test_limit_offset_batches_and_fragments(indexed):
    path = indexed("pylance", "partial")
    ref, ours = lance.dataset(path), lancejit.dataset(path)
    frags = [f.fragment_id for f in ref.get_fragments()]
    for text in ["a < 300 OR a > 2100", "s IN ('s1', 's22', 'upd', 's2020')", "b > 1500 OR s = 'upd'"]:
        for limit, offset in [(5, None), (10, 3), (None, 7), (1000, 0)]:
            _equal(ours.to_table(filter=text, limit=limit, offset=offset),
                   ref.to_table(filter=text, limit=limit, offset=offset), f"{text} {limit} {offset}")
        got = pa.Table.from_batches(list(ours.to_batches(filter=text, batch_size=7)))
        assert got.equals(ref.to_table(filter=text)), text
        sub = frags[1:3] + frags[-1:]
        want = ref.scanner(filter=text, fragments=[f for f in ref.get_fragments() if f.fragment_id in sub]).to_table()
        _equal(ours.to_table(filter=text, fragment_ids=sub), want, text)


def test_delete_and_update_where_use_the_index(indexed, tmp_path):
    import shutil

    src = indexed("lancejit", "partial")
    path = str(tmp_path / "mut")
    shutil.copytree(src, path)
    ds = lancejit.dataset(path)
    ds.io_stats()
    ds.delete("a IN (17, 18, 2021) OR s = 's40'")
    assert ds.io_stats().index_searches > 0
    ds.update({"f": "f + 1"}, where="b = 200")
    ref = lance.dataset(path)
    assert ref.count_rows("a = 17") == 0 and ds.count_rows("a = 17") == 0
    for text in INDEX_FILTERS:
        _equal(ds.to_table(filter=text), ref.to_table(filter=text), text)
        with config.override(scalar_indices=False):
            plain = ds.to_table(filter=text)
        _equal(ds.to_table(filter=text), plain, text)


@pytest.mark.parametrize("key", ["a", "s"])
def test_merge_insert_matches_keys_through_the_index(indexed, tmp_path, key):
    """Keys matched through the index (covered fragments) and by scanning the others: the same
    dataset as pylance's merge_insert of the same source."""
    import shutil

    src_path = indexed("pylance", "partial")
    ours_path, ref_path = str(tmp_path / "ours"), str(tmp_path / "ref")
    shutil.copytree(src_path, ours_path)
    shutil.copytree(src_path, ref_path)
    base = lance.dataset(ref_path).to_table(filter="a IN (5, 17, 900, 1050, 2021, 2140) OR s = 'upd'", limit=20)
    src = pa.concat_tables([base, base.slice(0, 1).set_column(0, "a", pa.array([99999], pa.int64()))
                            .set_column(1, "s", pa.array(["fresh"]))])
    src = src.set_column(src.schema.get_field_index("f"), "f", pa.array(np.full(src.num_rows, -1.5)))
    if key == "s":
        src = src.filter(pa.compute.not_equal(src["s"], "upd"))
    ds = lancejit.dataset(ours_path)
    ds.io_stats()
    got = ds.merge_insert(key).when_matched_update_all().when_not_matched_insert_all().execute(src)
    assert ds.io_stats().index_searches > 0
    want = lance.dataset(ref_path).merge_insert(key).when_matched_update_all().when_not_matched_insert_all() \
        .execute(src)
    assert {k: got[k] for k in ("num_inserted_rows", "num_updated_rows", "num_deleted_rows")} == \
        {k: want[k] for k in ("num_inserted_rows", "num_updated_rows", "num_deleted_rows")}
    ours, ref = lance.dataset(ours_path), lance.dataset(ref_path)
    assert ours.to_table().sort_by("a").equals(ref.to_table().sort_by("a"))
    for text in INDEX_FILTERS[:8] + ["f = -1.5"]:
        _equal(lancejit.dataset(ours_path).to_table(filter=text).sort_by("a"),
               ref.to_table(filter=text).sort_by("a"), text)


def test_explain_scan_shows_the_index_plan(indexed):
    """``explain scan`` prints which index answers which predicate, the answered fragments and
    candidates, without reading a data page; with ``run`` both ways return the same rows."""
    import asyncio

    from lancejit.bench.explain_scan import plan_scan

    path = indexed("pylance", "partial")
    ds = lancejit.dataset(path)
    ds.io_stats()
    plan = asyncio.run(plan_scan(ds, "a IN (5, 17, 2021) OR s = 'upd'"))
    stats = ds.io_stats()
    assert plan.index is not None and plan.index.taken and plan.index.exact
    assert plan.index.uses == ["a IN (5, 17, 2021) @ a_idx (BTREE)", "s = 'upd' @ s_idx (BITMAP)"]
    covered = set(next(i for i in lance.dataset(path).list_indices() if i["name"] == "a_idx")["fragment_ids"])
    assert set(plan.index.fragments) == covered
    assert {f.fragment_id for f in plan.fragments} == {f.id for f in ds.get_fragments()} - covered
    assert plan.index.candidates == ds.count_rows("a IN (5, 17, 2021) OR s = 'upd'") - \
        ds.count_rows("(a IN (5, 17, 2021) OR s = 'upd') AND a >= 2000")
    assert stats.index_searches == 2
    assert "s = 'upd' @ s_idx (BITMAP)" in plan.render()
    measured = asyncio.run(plan_scan(ds, "b > 1500 OR s = 'upd'", run=True, repeats=1)).measured
    assert measured["pruned"]["rows"] == measured["not pruned"]["rows"]
    assert measured["pruned"]["index_searches"] > 0 == measured["not pruned"]["index_searches"]
