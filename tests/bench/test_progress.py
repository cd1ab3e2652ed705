"""The benchmarks' progress bars name the unit they count."""

from __future__ import annotations

import pytest
from bench_helpers import write_local_dataset

from lancejit.cli import main

pytest.importorskip("tqdm")


def test_progress_bars_name_what_they_count(tmp_path, capsys):
    """``bench store`` counts requests (``req``); ``bench dataset`` counts timed operations,
    takes and scans (``op``)."""
    code = main(["bench", "store", "memory://progress-unit", "--sizes", "4K", "--concurrency", "1",
                 "--requests", "3", "--object-size", "64K"])
    assert code == 0
    err = capsys.readouterr().err
    assert "req/s" in err and "op/s" not in err
    uri = str(tmp_path / "ds.lance")
    write_local_dataset(uri, "2.1", rows=200, rows_per_file=100, delete=False)
    code = main(["bench", "dataset", uri, "--sizes", "1,5", "--repeats", "2", "--scan-repeats", "1",
                 "--no-model"])
    assert code == 0
    err = capsys.readouterr().err
    assert "op/s" in err and "req/s" not in err
