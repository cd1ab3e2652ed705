"""``lancejit bench store`` on local disk, S3 (moto) and GCS (fake-gcs): table, JSON and PNG,
request counts checked against the store's counters, test object removed (no timing asserted)."""

from __future__ import annotations

import json

import pytest
from bench_helpers import is_png, option_args

from lancejit.cli import main
from lancejit.io import open_store, run_sync

KINDS = ["local", "s3", "gcs"]


@pytest.mark.parametrize("store_root", KINDS, indirect=True)
def test_bench_store_cli(store_root, tmp_path, capsys):
    out_json = tmp_path / "store.json"
    out_png = tmp_path / "store.png"
    code = main(["bench", "store", store_root.uri, "--sizes", "4K,64K,1M", "--concurrency", "1,4",
                 "--requests", "6", "--large-requests", "2", "--object-size", "512K", "--no-progress",
                 "--json", str(out_json), "--plot", str(out_png), *option_args(store_root)])
    assert code == 0
    text = capsys.readouterr().out
    assert "IOPS" in text and "p99" in text and "64.0 KiB" in text
    report = json.loads(out_json.read_text())
    assert report["kind"] == "store"
    assert report["object_size"] == 2 << 20  # raised to twice the largest request
    points = report["points"]
    assert [(p["size"], p["concurrency"]) for p in points] == [
        (4096, 1), (4096, 4), (65536, 1), (65536, 4), (1 << 20, 1), (1 << 20, 4)]
    for p in points:
        assert p["requests"] == (2 if p["size"] == 1 << 20 else 6)
        # one range per call, at most max_request_size: exactly one physical request each
        assert p["store_requests"] == p["requests"]
        assert 0 < p["p50"] <= p["p90"] <= p["p99"]
        assert p["iops"] > 0 and p["throughput_bytes_per_s"] > 0
    assert is_png(out_png)
    store, base = open_store(store_root.uri, store_root.storage_options)
    try:
        left = [o.path for o in run_sync(store.list(base))]
    except FileNotFoundError:
        left = []
    assert not [p for p in left if "_lancejit_bench_" in p]


def test_bench_store_memory_api():
    from lancejit.bench.model import LatencyModel
    from lancejit.bench.store_bench import StoreResult, bench_store

    result = bench_store("memory://bench-api", None, sizes=(4096, 65536), concurrency=(1, 2),
                         requests=4, large_requests=1, object_size=1 << 18)
    again = StoreResult.from_dict(json.loads(json.dumps(result.to_dict())))
    assert again.points == result.points
    model = LatencyModel.from_store_result(result)
    assert {lvl.concurrency for lvl in model.levels} == {1, 2}
    assert model.predict([[4096], [4096, 65536]]) > 0
