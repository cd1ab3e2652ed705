"""Datasets with scalar indices built by pylance 14.0.2 (the reference) or by lancejit.

``indexed(builder, coverage)``: a copy of the table tests' "evolving" dataset (2.1 files: appends,
deletions, added and dropped columns, an update that moved rows) with a BTREE on ``a`` and
``f``, a BITMAP on ``s`` and ``b`` and a LABEL_LIST on ``l``, built by ``builder`` ("pylance" or
"lancejit"); with ``coverage="partial"`` 150 rows are appended after the indices are built and
some rows deleted (fragments the indices do not cover, and deletions in covered ones).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
from pathlib import Path

import pytest

os.environ.setdefault("LANCE_LOG", "error")
lance = pytest.importorskip("lance")

INDICES = [("a", "BTREE"), ("f", "BTREE"), ("s", "BITMAP"), ("b", "BITMAP"), ("l", "LABEL_LIST")]


def _load(name: str, path: Path):
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


TESTS = Path(__file__).resolve().parent.parent
table_conftest = _load("tests_table_conftest", TESTS / "table" / "conftest.py")
filters = _load("table_filters", TESTS / "table" / "filters.py")


def build_indices(path: str, builder: str, indices=INDICES) -> None:
    if builder == "pylance":
        ds = lance.dataset(path)
        for col, kind in indices:
            ds.create_scalar_index(col, kind)
    else:
        import lancejit

        ds = lancejit.dataset(path)
        for col, kind in indices:
            ds = ds.create_scalar_index(col, kind)


def extend(path: str) -> None:
    """Fragments no index covers and deletions in covered fragments."""
    import pyarrow as pa

    schema = lance.dataset(path).schema
    base = table_conftest._base_table(150, start=2000, seed=5)
    cols = {name: base[name] for name in ("a", "s", "f", "st", "l")}
    cols["b"] = pa.array([2 * i for i in range(2000, 2150)], pa.int64())
    cols["c"] = pa.array([f"x{i}!" for i in range(150)])
    cols["z"] = pa.nulls(150, pa.int32())
    t = pa.table({f.name: cols[f.name].cast(f.type) for f in schema}, schema=schema)
    lance.write_dataset(t, path, mode="append")
    lance.dataset(path).delete("a % 23 = 4 OR a = 2003")


_CACHE: dict[tuple, str] = {}


@pytest.fixture(scope="session")
def index_root(tmp_path_factory):
    return tmp_path_factory.mktemp("scalar_ds")


@pytest.fixture(scope="session")
def indexed(index_root):
    def make(builder: str, coverage: str) -> str:
        key = (builder, coverage)
        if key not in _CACHE:
            base = str(index_root / "evolving_base")
            if not os.path.exists(base):
                table_conftest.build_evolving(base, "2.1")
            path = str(index_root / f"{builder}_{coverage}")
            shutil.rmtree(path, ignore_errors=True)
            shutil.copytree(base, path)
            build_indices(path, builder)
            if coverage == "partial":
                extend(path)
            _CACHE[key] = path
        return _CACHE[key]

    return make
