"""Datasets for the vector-search tests, written (and indexed) by pylance 14.0.2, the reference.

Small sizes: a few fragments of a few hundred rows, so every search crosses fragment and block
boundaries while the suite stays fast."""

from __future__ import annotations

import os
import sys

import numpy as np
import pyarrow as pa
import pytest

sys.path.insert(0, os.path.dirname(__file__))
os.environ.setdefault("LANCE_LOG", "error")

lance = pytest.importorskip("lance")


def vectors_table(n: int, dim: int, *, seed: int = 0, dtype=np.float32, start: int = 0,
                  null_every: int = 0) -> pa.Table:
    """``id`` (int64), ``cat`` (int64 % 5), ``vec`` (fixed-size list of ``dtype``)."""
    rng = np.random.default_rng(seed)
    if dtype == np.uint8:
        v = rng.integers(0, 256, (n, dim)).astype(np.uint8)
    else:
        v = rng.standard_normal((n, dim)).astype(dtype)
    vec = pa.FixedSizeListArray.from_arrays(pa.array(v.reshape(-1)), dim)
    if null_every:
        mask = pa.array([(i % null_every) == 3 for i in range(n)])
        vec = pa.FixedSizeListArray.from_arrays(pa.array(v.reshape(-1)), dim, mask=mask)
    ids = np.arange(start, start + n, dtype=np.int64)
    return pa.table({"id": ids, "cat": ids % 5, "vec": vec})


@pytest.fixture(scope="session")
def vec_root(tmp_path_factory):
    return tmp_path_factory.mktemp("vector")


def make_dataset(root, name: str, table: pa.Table, *, rows_per_file: int = 300, delete: str | None = None,
                 index: dict | None = None, append: pa.Table | None = None) -> str:
    """Write ``table`` with pylance (several fragments), optionally delete rows, build an index,
    then append rows the index does not cover; returns the path."""
    path = str(root / name)
    ds = lance.write_dataset(table, path, max_rows_per_file=rows_per_file)
    if index is not None:
        ds.create_index("vec", **index)
    if delete is not None:
        ds.delete(delete)
    if append is not None:
        lance.write_dataset(append, path, mode="append", max_rows_per_file=rows_per_file)
    return path
