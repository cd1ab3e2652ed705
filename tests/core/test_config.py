"""The configuration: knobs declared once, read from the environment once, overridable per call
(also across lancejit's sync bridge) and process-wide; the documented table is generated."""

from __future__ import annotations

import asyncio
import os
import pathlib
import subprocess
import sys

import pytest

import lancejit
from lancejit.core import config
from lancejit.core.errors import InvalidInputError

DOC = pathlib.Path(__file__).resolve().parents[2] / "docs" / "CONFIGURATION.md"


def test_every_knob_has_a_type_default_unit_doc_and_env_var():
    names = [k.name for k in config.KNOBS]
    assert len(names) == len(set(names))
    for k in config.KNOBS:
        assert k.type in (int, float, bool, str)
        assert isinstance(k.default, k.type)
        assert k.unit and k.doc
        assert k.env_var == "LANCEJIT_" + k.name.upper()
        assert getattr(config.settings(), k.name) == k.default or k.env_var in os.environ


def test_documented_table_is_the_generated_one():
    text = DOC.read_text()
    start = text.index("-->\n") + 4
    end = text.index("\n<!-- end of knobs -->")
    assert text[start:end] == config.knob_table()


def test_override_nests_and_restores():
    base = config.settings().scan_unit_rows
    with config.override(scan_unit_rows=100):
        assert config.settings().scan_unit_rows == 100
        with config.override(scan_unit_rows=7, take_batch=False):
            assert (config.settings().scan_unit_rows, config.settings().take_batch) == (7, False)
        assert config.settings().scan_unit_rows == 100
    assert config.settings().scan_unit_rows == base


def test_override_is_per_task():
    async def one(rows: int) -> int:
        with config.override(scan_unit_rows=rows):
            await asyncio.sleep(0.01)
            return config.settings().scan_unit_rows

    async def both() -> list[int]:
        return list(await asyncio.gather(one(3), one(5)))

    assert asyncio.run(both()) == [3, 5]


def test_override_rides_the_sync_bridge():
    """A sync call that runs on lancejit's I/O loop thread sees the caller's override."""
    from lancejit.io.sync import run_sync

    async def read() -> int:
        return config.settings().scan_units_in_flight

    with config.override(scan_units_in_flight=3):
        assert run_sync(read()) == 3
    assert run_sync(read()) == config.settings().scan_units_in_flight


def test_bad_values_are_refused():
    with pytest.raises(InvalidInputError, match="unknown config knobs"):
        with config.override(no_such_knob=1):
            pass
    with pytest.raises(InvalidInputError):
        config.configure(take_batch="yes")
    with pytest.raises(InvalidInputError):
        config.configure(scan_unit_rows=1.5)
    assert isinstance(InvalidInputError("x"), ValueError)


def test_configure_and_reset(knobs):
    knobs(take_batch_window_ms=2)
    assert config.settings().take_batch_window_ms == 2.0
    config.reset()
    assert config.settings().take_batch_window_ms == 0.0


def test_environment_is_read_at_import():
    env = dict(os.environ, LANCEJIT_SCAN_UNIT_ROWS="1234", LANCEJIT_TAKE_BATCH="off", LANCEJIT_TIER0="Always")
    out = subprocess.run(
        [sys.executable, "-c", "import lancejit; s = lancejit.config.settings(); "
                               "print(s.scan_unit_rows, s.take_batch, s.tier0)"],
        env=env, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["1234", "False", "always"]


def test_public_api_is_complete_and_lazy():
    """``dir(lancejit)`` lists the whole public API; each name resolves; importing the package
    imports none of the heavy modules."""
    assert set(lancejit.__all__) <= set(dir(lancejit))
    out = subprocess.run(
        [sys.executable, "-c", "import sys, lancejit; "
                               "print(sorted(m for m in ('numba', 'sqlglot', 'pyarrow', 'lancejit.table') "
                               "if m in sys.modules))"],
        capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
    for name in lancejit.__all__:
        assert getattr(lancejit, name) is not None
    with pytest.raises(AttributeError):
        lancejit.no_such_name  # noqa: B018
