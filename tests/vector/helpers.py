"""Running lancejit's vector search and comparing it with pylance's."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

import lancejit
from lancejit.io.sync import run_sync
from lancejit.table.vector.scanner import nearest_table


def ours(path: str, nearest: dict, **kw) -> pa.Table:
    return run_sync(nearest_table(lancejit.dataset(path), nearest, **kw))


def theirs(path: str, nearest: dict, **kw) -> pa.Table:
    import lance

    return lance.dataset(path).to_table(nearest=nearest, **kw)


def assert_same(a: pa.Table, b: pa.Table, *, rtol: float = 1e-4, atol: float = 1e-5) -> None:
    """Equal column names and values, ``_distance`` within tolerance."""
    assert a.column_names == b.column_names
    assert a.num_rows == b.num_rows
    for name in a.column_names:
        if name == "_distance":
            np.testing.assert_allclose(a[name].to_numpy(), b[name].to_numpy(), rtol=rtol, atol=atol)
        else:
            assert a[name].to_pylist() == b[name].to_pylist(), name


def overlap(a: pa.Table, b: pa.Table, key: str = "id") -> float:
    x, y = set(a[key].to_pylist()), set(b[key].to_pylist())
    return len(x & y) / max(1, len(x))
