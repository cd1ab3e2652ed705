"""Property test: random nested types and values written by pylance read back exactly."""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import pyarrow as pa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from v21support import check_file, write_lance

LEAVES = [pa.int32(), pa.int64(), pa.float64(), pa.string(), pa.bool_(), pa.list_(pa.float32(), 3), pa.large_binary(), pa.uint8()]


def types(depth: int = 3):
    leaf = st.sampled_from(LEAVES)
    if depth == 0:
        return leaf
    sub = types(depth - 1)
    return st.one_of(
        leaf,
        sub.map(pa.list_),
        sub.map(pa.large_list),
        sub.map(lambda t: pa.map_(pa.string(), t)),
        st.lists(sub, min_size=1, max_size=3).map(lambda ts: pa.struct([(f"f{i}", t) for i, t in enumerate(ts)])),
    )


def values(t: pa.DataType, rng: np.random.Generator, null_p: float):
    if rng.random() < null_p:
        return None
    if pa.types.is_map(t):
        return [(f"k{j}", values(t.item_type, rng, null_p)) for j in range(int(rng.integers(0, 3)))]
    if pa.types.is_struct(t):
        return {t.field(i).name: values(t.field(i).type, rng, null_p) for i in range(t.num_fields)}
    if pa.types.is_fixed_size_list(t):
        return [float(x) for x in rng.standard_normal(t.list_size).astype(np.float32)]
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return [values(t.value_type, rng, null_p) for _ in range(int(rng.integers(0, 4)))]
    if pa.types.is_string(t):
        return "".join(rng.choice(list("abcxyz"), size=int(rng.integers(0, 6))))
    if pa.types.is_large_binary(t):
        return bytes(rng.integers(0, 256, size=int(rng.integers(0, 6)), dtype=np.uint8))
    if pa.types.is_boolean(t):
        return bool(rng.random() < 0.5)
    if pa.types.is_floating(t):
        return float(rng.standard_normal())
    if t == pa.uint8():
        return int(rng.integers(0, 256))
    return int(rng.integers(-1000, 1000))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(types(), st.integers(0, 2**32 - 1), st.sampled_from(["2.1", "2.2"]), st.sampled_from([0.0, 0.2, 0.6]), st.integers(1, 400))
def test_random_nested_roundtrip(t, seed, version, null_p, n):
    if version == "2.1" and "map<" in str(t):
        version = "2.2"  # 2.1 cannot store maps
    rng = np.random.default_rng(seed)
    arr = pa.array([values(t, rng, null_p) for _ in range(n)], type=t)
    table = pa.table({"c": arr, "k": pa.array(np.arange(n))})
    with tempfile.TemporaryDirectory() as d:
        path = write_lance(Path(d) / "p.lance", table, version, 4096 if n > 100 else None)
        check_file(path, rng, n_takes=1)
