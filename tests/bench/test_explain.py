"""``lancejit explain take``: the plan is made before reading, and the request count it plans is
the one the store's counters then measure (files and datasets, 2.0/2.1/2.2, local/S3/GCS)."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pytest
from bench_helpers import dataset_on, make_table, option_args

from lancejit.bench.explain import explain_take, open_target, plan_take, run_take
from lancejit.cli import main
from lancejit.io import run_sync

KINDS = ["local", "s3", "gcs"]
ROWS = [[0], [3, 4, 5, 250, 599], list(range(0, 600, 7)), list(range(100, 400))]


def _check(plan, rows, expected=None, table=None):
    assert plan.measured is not None
    assert plan.measured["requests"] == plan.num_requests
    assert plan.measured["bytes_read"] == plan.bytes_read
    assert plan.num_requests >= 1
    if expected is not None:
        assert table.equals(expected.take(pa.array(rows)))


@pytest.mark.parametrize("store_root", KINDS, indirect=True)
@pytest.mark.parametrize("version", ["2.0", "2.1", "2.2"])
def test_dataset_plan_matches_store_counters(store_root, tmp_path, version):
    uri, live = dataset_on(store_root, tmp_path, version)

    async def go():
        target = await open_target(uri, store_root.storage_options)
        assert target.kind == "dataset"
        out = []
        for rows in ROWS:
            rows = [r for r in rows if r < live.num_rows]
            plan = await plan_take(target, rows, ["id", "name", "vec"] if len(rows) > 1 else None)
            table = await run_take(target, plan, rows, plan.columns)
            out.append((plan, rows, table))
        return out

    for plan, rows, table in run_sync(go()):
        _check(plan, rows, live.select(plan.columns), table)
        assert {f.version for f in plan.files} == {version}
        sources = {c.source for f in plan.files for c in f.calls}
        assert sources <= ({"metadata", "data"} if version == "2.0" else {"recorded"})
        assert len(plan.files) == len({f.fragment for f in plan.files})


@pytest.mark.parametrize("version", ["2.0", "2.1"])
def test_file_plan_crosses_pages(tmp_path, version):
    import lance
    from lance.file import LanceFileWriter

    path = str(tmp_path / f"f{version}.lance")
    table = make_table(3000)
    with LanceFileWriter(path, version=version, max_page_bytes=4096) as w:
        w.write_batch(table)
    rows = np.array([2999, 0, 1, 1500, 1501, 700, 700], dtype=np.int64)
    plan = explain_take(path, rows, ["value", "name"], run=True)
    assert plan.kind == "file" and plan.unique_rows == 6 and plan.rows == 7
    _check(plan, rows)
    touched = {p.field: p for p in plan.files[0].pages}
    value = touched["value"]
    if version == "2.0":  # 500 rows per page: rows 0-1, 700, 1500-1501, 2999 -> pages 0, 1, 3, 5
        assert value.num_pages == 6 and value.pages == (0, 1, 3, 5)
    else:
        assert 1 <= len(value.pages) <= value.num_pages
    ref = lance.file.LanceFileReader(path).read_all().to_table()
    assert ref.num_rows == 3000


@pytest.mark.parametrize("store_root", ["local", "s3"], indirect=True)
def test_explain_cli(store_root, tmp_path, capsys):
    uri, live = dataset_on(store_root, tmp_path, "2.0")
    out = tmp_path / "plan.json"
    code = main(["explain", "take", uri, "--rows", "1,2,3,300-310", "--columns", "id,name", "--run",
                 "--json", str(out), *option_args(store_root)])
    assert code == 0
    text = capsys.readouterr().out
    assert "planned:" in text and "matches the plan" in text and "(metadata)" in text
    plan = json.loads(out.read_text())
    assert plan["kind"] == "take_plan" and plan["rows"] == 13
    assert plan["measured"]["requests"] == plan["predicted_requests"]
    steps = [c for f in plan["files"] for c in f["calls"]]
    assert any(c["field"] == "name" and c["step"] == 2 and c["source"] == "data" for c in steps)
