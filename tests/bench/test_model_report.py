"""The latency model's fit and prediction, and the report helpers (pure functions)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from lancejit.bench.model import LatencyModel, LevelFit
from lancejit.bench.report import format_table, parse_list, parse_size, require, write_json
from lancejit.bench.store_bench import StorePoint, StoreResult
from lancejit.bench.cli import parse_rows
from lancejit.core.errors import InvalidInputError, NotSupportedError


def _result(base: dict[int, float], bw: dict[int, float], sizes=(4096, 65536, 1 << 20)) -> StoreResult:
    pts = []
    for c in base:
        for s in sizes:
            lat = base[c] + s / bw[c]
            pts.append(StorePoint(s, c, 10, 10 * lat / c, lat, lat, lat, lat, 10))
    return StoreResult("memory://x", "memory", 4 << 20, 8, 4096, 8 << 20, pts)


def test_fit_recovers_linear_latency():
    model = LatencyModel.from_store_result(_result({1: 1e-3, 8: 3e-3}, {1: 1e8, 8: 5e7}))
    one, eight = model.levels
    assert one.concurrency == 1 and one.base == pytest.approx(1e-3) and one.bandwidth == pytest.approx(1e8)
    assert eight.base == pytest.approx(3e-3) and eight.bandwidth == pytest.approx(5e7)
    # a single request: its own latency at concurrency 1
    assert model.step_seconds([65536]) == pytest.approx(1e-3 + 65536 / 1e8)
    # 8 equal requests at concurrency 8: one latency of that level
    assert model.step_seconds([4096] * 8) == pytest.approx(3e-3 + 4096 / 5e7)
    # 16 requests with io_parallelism 8: two waves
    assert model.step_seconds([4096] * 16) == pytest.approx(2 * (3e-3 + 4096 / 5e7))
    # steps add up; empty steps cost nothing
    assert model.predict([[65536], [], [65536]]) == pytest.approx(2 * (1e-3 + 65536 / 1e8))
    assert LatencyModel.from_dict(json.loads(json.dumps(model.to_dict()))) == model


def test_level_choice_is_nearest_on_log_scale():
    model = LatencyModel((LevelFit(1, 1.0, 1.0), LevelFit(16, 2.0, 1.0), LevelFit(64, 3.0, 1.0)), 64)
    assert model.level(3).concurrency == 1
    assert model.level(5).concurrency == 16
    assert model.level(40).concurrency == 64


def test_model_load_from_store_json(tmp_path):
    path = tmp_path / "s.json"
    write_json(_result({1: 1e-3}, {1: 1e8}).to_dict(), str(path))
    model = LatencyModel.load(str(path))
    assert model.levels[0].base == pytest.approx(1e-3)
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    with pytest.raises(InvalidInputError):
        LatencyModel.load(str(bad))


def test_parse_helpers():
    assert parse_size("4K") == 4096 and parse_size("64KiB") == 65536 and parse_size("8M") == 8 << 20
    assert parse_size("100") == 100
    with pytest.raises(InvalidInputError):
        parse_size("4Q")
    assert parse_list("1, 10,100") == [1, 10, 100]
    assert parse_list("4K,1M", parse_size) == [4096, 1 << 20]
    with pytest.raises(InvalidInputError):
        parse_list("a,b")
    assert parse_rows("1,5,10-13").tolist() == [1, 5, 10, 11, 12]
    with pytest.raises(InvalidInputError):
        parse_rows("x")


def test_table_and_missing_extra():
    text = format_table(["a", "bb"], [[1, None], [100, "x"]], "title")
    assert text.splitlines() == ["title", "  a  bb", "---  --", "  1   -", "100   x"]
    with pytest.raises(NotSupportedError, match="bench"):
        require("lancejit_no_such_module")
    assert np.isfinite(parse_size("1.5K"))


def test_missing_plot_extra_fails_before_measuring(monkeypatch, capsys):
    import sys

    from lancejit.cli import main

    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib -> ImportError
    code = main(["bench", "store", "memory://no-plot", "--plot", "x.png", "--no-progress"])
    assert code == 1
    err = capsys.readouterr().err
    assert "matplotlib" in err and "bench" in err
