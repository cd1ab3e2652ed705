"""Float comparisons in filters follow the reference's order (total order; -0.0 folded
against constants), checked against pylance on NaN, -NaN, +-0.0, +-inf and NULL."""

from __future__ import annotations

import struct

import lance
import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings, strategies as st

from lancejit.table.filter.compile import compile_filter, evaluate_filter
from lancejit.table.filter.floats import total_keys

NEG_NAN = struct.unpack("<d", struct.pack("<Q", 0xFFF8000000000000))[0]

FILTERS = [
    "f <= -0.0", "f < 0.0", "f = 0.0", "f = -0.0", "f > 1e300", "f >= 0", "f < 1", "f != 0.0",
    "f = f", "f != f", "f = g", "f < g", "f > g", "f <= g", "f != g", "a < g", "a = g", "a < f",
    "a <= f * -1", "f * 1 = 0.0", "f * 1 <= -0.0", "f + 0.0 = g", "(0 * -3.5) < a",
    "(1.0 - 1.0) >= g", "f BETWEEN -1 AND 1", "f IN (0.0, 5.0)", "f IN (-0.0)",
    "f NOT IN (0.0)", "h > 2", "h < g", "NOT (f > 0)", "f > 0 OR g < 0", "f < -1e300",
]


@pytest.fixture(scope="module")
def floats(tmp_path_factory):
    t = pa.table({
        "a": pa.array([0, 0, 1, 2, 3, -1, 4], pa.int64()),
        "f": pa.array([0.0, -0.0, float("nan"), None, float("inf"), NEG_NAN, -float("inf")]),
        "g": pa.array([-0.0, 0.0, float("nan"), 1.0, None, 2.0, NEG_NAN]),
        "h": pa.array([1.5, 2.5, -3.0, None, 9.0, float("nan"), 0.0], pa.float32()),
    })
    uri = str(tmp_path_factory.mktemp("floats") / "f.lance")
    return lance.write_dataset(t, uri), t


@pytest.mark.parametrize("text", FILTERS)
def test_float_order_matches_reference(floats, text):
    ref, t = floats
    got = t.take(evaluate_filter(compile_filter(text, t.schema), t))
    assert got["a"].to_pylist() == ref.to_table(filter=text)["a"].to_pylist(), text


def _total_key_reference(x: float) -> int:
    bits = struct.unpack("<q", struct.pack("<d", x))[0]
    return bits ^ 0x7FFFFFFFFFFFFFFF if bits < 0 else bits


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(allow_nan=True, allow_infinity=True), min_size=1, max_size=50))
def test_total_keys_match_python(values):
    arr = np.array(values, dtype=np.float64)
    assert total_keys(arr).tolist() == [_total_key_reference(v) for v in arr.tolist()]
    folded = total_keys(arr, fold_zero=True)
    assert all(k == 0 for k, v in zip(folded.tolist(), arr.tolist()) if v == 0.0)
