"""``lancejit explain take``: the request count it plans is the one the store's counters then
measure (files and datasets, 2.0/2.1/2.2, local/S3/GCS, takes crossing pages, multi-column
takes), because the plan is observed from the reader's own batches (``lancejit.bench.observe``).

Tiny data files (at most 64 KiB) are held whole by the dataset's open: their takes plan and
measure 0 requests; larger ones plan and measure at least one."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pytest
from bench_helpers import dataset_on, file_on, option_args

from lancejit.bench.explain import explain_take, open_target, plan_take, run_take
from lancejit.cli import main
from lancejit.io import run_sync

KINDS = ["local", "s3", "gcs"]
#: (rows in the dataset, rows per data file, reference page size limit): "tiny" files are
#: held in memory (<= 64 KiB), "large" ones are ~80-100 KiB with (2.0) many pages per column.
SIZES = {"tiny": (600, 200, None), "large": (3000, 1500, 4096)}


def _takes(num_rows: int) -> list[list[int]]:
    return [[0], [3, 4, 5, 250, num_rows // 2 + 1, num_rows - 1], list(range(0, num_rows, 7)),
            list(range(num_rows // 6, num_rows // 2)), [num_rows - 1, 1, 1, num_rows // 2]]


def _check(plan, rows, expected=None, table=None):
    """Planned == measured (requests and bytes), and the rows are right."""
    assert plan.measured is not None
    assert plan.measured["requests"] == plan.num_requests, plan.render()
    assert plan.measured["bytes_read"] == plan.bytes_read
    if expected is not None:
        assert table.equals(expected.take(pa.array(rows)))


@pytest.mark.parametrize("size", sorted(SIZES))
@pytest.mark.parametrize("store_root", KINDS, indirect=True)
@pytest.mark.parametrize("version", ["2.0", "2.1", "2.2"])
def test_dataset_plan_matches_store_counters(store_root, tmp_path, version, size):
    num_rows, per_file, page_bytes = SIZES[size]
    uri, live = dataset_on(store_root, tmp_path, version, rows=num_rows, rows_per_file=per_file,
                           max_page_bytes=page_bytes)

    async def go():
        target = await open_target(uri, store_root.storage_options)
        assert target.kind == "dataset"
        out = []
        for rows in _takes(live.num_rows):
            cols = ["id", "name", "vec"] if len(rows) > 1 else None
            plan = await plan_take(target, rows, cols)
            table = await run_take(target, plan, rows, plan.columns)
            out.append((plan, rows, table))
        return out

    crossed = False
    for plan, rows, table in run_sync(go()):
        _check(plan, rows, live.select(plan.columns), table)
        assert {f.version for f in plan.files} == {version}
        assert len(plan.files) == len({f.fragment for f in plan.files})
        calls = [c for f in plan.files for c in f.calls]
        assert calls, "a take reads something (from the store or from memory)"
        assert {c.source for c in calls} <= {"metadata", "data", "recorded"}
        if size == "tiny":  # held whole by the open's tail read
            assert plan.num_requests == 0 and all(c.in_memory for c in calls)
        else:
            assert plan.num_requests >= 1 and not any(c.in_memory for c in calls)
            assert plan.measured["bytes_read"] > 0
        crossed |= any(len(p.pages) > 1 for f in plan.files for p in f.pages)
    if size == "large" and version == "2.0":
        assert crossed


@pytest.mark.parametrize("store_root", KINDS, indirect=True)
@pytest.mark.parametrize("version", ["2.0", "2.1", "2.2"])
def test_file_plan_crosses_pages(store_root, tmp_path, version):
    uri, table = file_on(store_root, tmp_path, version)
    opts = store_root.storage_options
    rows = np.array([2999, 0, 1, 1500, 1501, 700, 700], dtype=np.int64)
    for cols in (["value", "name"], None, ["vec"]):
        plan = explain_take(uri, rows, cols, storage_options=opts, run=True)
        assert plan.kind == "file" and plan.unique_rows == 6 and plan.rows == 7
        _check(plan, rows)
        assert plan.num_requests >= 1
        assert not any(c.in_memory for f in plan.files for c in f.calls)
    plan = explain_take(uri, rows, ["value", "name"], storage_options=opts)
    touched = {p.field: p for p in plan.files[0].pages}
    value = touched["value"]
    if version == "2.0":  # 500 rows per page: rows 0-1, 700, 1500-1501, 2999 -> pages 0, 1, 3, 5
        assert value.num_pages == 6 and value.pages == (0, 1, 3, 5)
    else:
        assert 1 <= len(value.pages) <= value.num_pages
    # a long contiguous take crossing every page, planned == measured too
    span = np.arange(100, 2900, dtype=np.int64)
    plan = explain_take(uri, span, ["id", "name"], storage_options=opts, run=True)
    _check(plan, span)
    if version == "2.0":
        assert all(len(p.pages) > 1 for p in plan.files[0].pages)


@pytest.mark.parametrize("store_root", ["local", "s3"], indirect=True)
def test_explain_cli(store_root, tmp_path, capsys):
    uri, live = dataset_on(store_root, tmp_path, "2.0")
    out = tmp_path / "plan.json"
    code = main(["explain", "take", uri, "--rows", "1,2,3,300-310", "--columns", "id,name", "--run",
                 "--json", str(out), *option_args(store_root)])
    assert code == 0
    text = capsys.readouterr().out
    assert "planned:" in text and "matches the plan" in text and "(metadata)" in text
    assert "held in memory" in text  # tiny data files: served by the open's tail read
    plan = json.loads(out.read_text())
    assert plan["kind"] == "take_plan" and plan["rows"] == 13
    assert plan["measured"]["requests"] == plan["predicted_requests"] == 0
    steps = [c for f in plan["files"] for c in f["calls"]]
    assert any(c["field"] == "name" and c["step"] == 2 and c["source"] == "data" for c in steps)


def test_explain_cli_large_files(tmp_path, capsys):
    root = type("R", (), {"kind": "local", "storage_options": {}})()
    uri, live = dataset_on(root, tmp_path, "2.1", rows=3000, rows_per_file=1500)
    code = main(["explain", "take", uri, "--rows", "1,2,3,1600-1610,2900", "--columns", "id,name,vec", "--run"])
    assert code == 0
    text = capsys.readouterr().out
    assert "matches the plan" in text and "held in memory" not in text
