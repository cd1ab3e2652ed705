"""Edge cases of levels and layouts: rows spanning many chunks, constant/empty lists,
low-cardinality list items (dictionary), all-empty and all-null nestings."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

import v21data as D
from v21support import check_file, write_lance

VERSIONS = ["2.1", "2.2"]


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("seed", [1, 2])
def test_long_lists_span_chunks(tmp_path, version, seed):
    rng = np.random.default_rng(seed)
    n = 60
    lens = rng.integers(0, 9000, size=n)
    lens[::7] = 0
    offsets = np.concatenate([[0], np.cumsum(lens)]).astype(np.int32)
    items = D.ints(rng, int(offsets[-1]), pa.int32(), nulls=0.1)
    mask = pa.array(D._mask(rng, n, 0.15))
    li = pa.ListArray.from_arrays(pa.array(offsets), items, mask=mask)
    ls = pa.ListArray.from_arrays(pa.array(offsets), D.strings(rng, int(offsets[-1]), card=7), mask=mask)
    t = pa.table({"li": li, "ls": ls, "k": pa.array(range(n))})
    path = write_lance(tmp_path / "long.lance", t, version, 256 * 1024)
    check_file(path, rng, n_takes=4)


@pytest.mark.parametrize("version", VERSIONS)
def test_degenerate_nestings(tmp_path, version):
    rng = np.random.default_rng(3)
    n = 3000
    t = pa.table(
        {
            "all_empty": pa.array([[]] * n, pa.list_(pa.int64())),
            "empty_or_null": pa.array([[] if i % 2 else None for i in range(n)], pa.list_(pa.string())),
            "const_items": pa.array([[5, 5, 5] if i % 3 else [5] for i in range(n)], pa.list_(pa.int32())),
            "struct_all_null_child": pa.array([{"a": None, "b": i} for i in range(n)], pa.struct([("a", pa.int32()), ("b", pa.int64())])),
            "struct_const": pa.array([{"a": 1, "s": "q"} if i % 11 else None for i in range(n)], pa.struct([("a", pa.int8()), ("s", pa.string())])),
            "list_lowcard": D.lists(rng, n, D.strings(rng, 5 * n, card=3)),
            "ll_empty": pa.array([[[], None, [1]] if i % 4 else [] for i in range(n)], pa.list_(pa.list_(pa.int16()))),
            "bool_const": pa.array([False] * n),
            "f16": D.floats(rng, n, pa.float16()),
            "nn_struct_list": pa.array(
                [{"l": [i, i + 1] if i % 5 else []} for i in range(n)], pa.struct([pa.field("l", pa.list_(pa.int32()), nullable=False)])
            ),
        }
    )
    path = write_lance(tmp_path / "deg.lance", t, version, 16 * 1024)
    check_file(path, rng, n_takes=3)


@pytest.mark.parametrize("version", VERSIONS)
def test_empty_file(tmp_path, version):
    t = pa.table({"a": pa.array([], pa.int32()), "l": pa.array([], pa.list_(pa.string())), "s": pa.array([], pa.struct([("x", pa.int8())]))})
    path = write_lance(tmp_path / "e.lance", t, version)
    check_file(path, np.random.default_rng(0))
