"""Old-style and hostile datasets made by editing manifests written by pylance 14.0.2."""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

os.environ.setdefault("LANCE_LOG", "error")
lance = pytest.importorskip("lance")


def _load(name: str, file: str):
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, Path(__file__).with_name(file))
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


medit = _load("tests_manifest_edit", "manifest_edit.py")
compare = _load("tests_legacy_compare", "compare.py")


def base_table(n: int, start: int = 0) -> pa.Table:
    a = np.arange(start, start + n, dtype=np.int64)
    return pa.table({
        "a": a,
        "s": pa.array([None if i % 11 == 5 else f"s{i}" for i in a], pa.string()),
        "f": pa.array(a.astype(np.float64) * 0.5),
    })


def build_history(path: str, version: str = "2.0", stable: bool = False) -> str:
    """v1: 700 rows in 3 fragments (300/300/100); v2: delete a few (Arrow deletion files);
    v3: append 200 rows; v4: delete most of fragment 0 (roaring bitmap deletion file)."""
    shutil.rmtree(path, ignore_errors=True)
    kw = dict(data_storage_version=version, max_rows_per_file=300)
    if stable:
        kw["enable_stable_row_ids"] = True
    lance.write_dataset(base_table(700), path, **kw)
    lance.dataset(path).delete("a % 13 = 4")
    lance.write_dataset(base_table(200, start=700), path, mode="append", data_storage_version=version,
                        max_rows_per_file=300)
    lance.dataset(path).delete("a < 300 AND a % 10 != 0")
    return path


@pytest.fixture(scope="session")
def history_src(tmp_path_factory):
    """Reference-written source datasets (copy before editing): {"2.0": path, "legacy": path, ...}."""
    base = tmp_path_factory.mktemp("legacy_src")
    out = {}
    for version in ("legacy", "2.0", "2.1"):
        out[version] = build_history(str(base / f"h_{version}"), version)
    out["stable"] = build_history(str(base / "h_stable"), "2.1", stable=True)
    return out


@pytest.fixture
def fresh_copy(history_src, tmp_path):
    """``fresh_copy(kind)`` -> a private copy of a source dataset to edit."""
    counter = iter(range(1000))

    def make(kind: str = "2.0") -> str:
        return medit.copy_dataset(history_src[kind], str(tmp_path / f"ds{next(counter)}_{kind}"))

    return make
