"""Datasets written by pylance 14.0.2 (the reference) for the table-layer tests.

Each builder runs once per session and returns the dataset's local path.  Sizes are small;
``max_rows_per_file`` makes several fragments.
"""

from __future__ import annotations

import os
import shutil

import numpy as np
import pyarrow as pa
import pytest

os.environ.setdefault("LANCE_LOG", "error")

lance = pytest.importorskip("lance")


def _base_table(n: int, start: int = 0, seed: int = 0) -> pa.Table:
    rng = np.random.default_rng(seed)
    a = np.arange(start, start + n, dtype=np.int64)
    s = pa.array([None if i % 11 == 5 else f"s{i}" for i in a], pa.string())
    f = pa.array([None if i % 7 == 2 else float(i) * 0.5 for i in a], pa.float64())
    st = pa.StructArray.from_arrays(
        [pa.array(a.astype(np.int32)), pa.array([f"y{i % 13}" for i in a])], names=["x", "y"]
    )
    lst = pa.array([[int(i), int(i) + 1][: int(i) % 3] for i in a], pa.list_(pa.int32()))
    cat = pa.array(rng.choice(["red", "green", "blue"], size=n))
    return pa.table({"a": a, "s": s, "f": f, "st": st, "l": lst, "cat": cat})


def build_evolving(path: str, version: str, *, stable: bool = False, v2_paths: bool = True) -> str:
    """Versions: 1 create (3 fragments), 2 append, 3 small delete, 4 add_columns, 5 update,
    6 drop_columns, 7 delete more, 8 add an all-null column; tag 'created' -> 1, 'evolved' -> 4."""
    shutil.rmtree(path, ignore_errors=True)
    kw = dict(data_storage_version=version, max_rows_per_file=300)
    if stable:
        kw["enable_stable_row_ids"] = True
    if not v2_paths:
        kw["enable_v2_manifest_paths"] = False
    ds = lance.write_dataset(_base_table(800), path, **kw)
    ds = lance.write_dataset(_base_table(200, start=800, seed=1), path, mode="append",
                             data_storage_version=version, max_rows_per_file=300)
    ds.delete("a % 17 = 3")
    ds = lance.dataset(path)
    ds.add_columns({"b": "a * 2", "c": "concat(s, '!')"})
    ds = lance.dataset(path)
    ds.update({"s": "'upd'", "f": "f + 1000"}, where="a >= 100 AND a < 130")
    ds = lance.dataset(path)
    ds.drop_columns(["cat"])
    ds = lance.dataset(path)
    ds.delete("a >= 290 AND a < 320")
    ds = lance.dataset(path)
    if version not in ("legacy", "0.1"):  # the reference refuses all-null columns in legacy datasets
        ds.add_columns(pa.field("z", pa.int32()))  # schema only: no data file holds it (reads as nulls)
    ds = lance.dataset(path)
    ds.tags.create("created", 1)
    ds.tags.create("evolved", 4)
    return path


def build_big_delete(path: str, version: str) -> str:
    """Two fragments of 6000 rows; >5000 deletions in one (bitmap file), few in the other (arrow)."""
    shutil.rmtree(path, ignore_errors=True)
    n = 12000
    t = pa.table({"a": np.arange(n, dtype=np.int64), "v": np.arange(n, dtype=np.float32) * 0.25})
    lance.write_dataset(t, path, data_storage_version=version, max_rows_per_file=6000)
    ds = lance.dataset(path)
    ds.delete("a < 6000 AND a % 10 != 0")
    ds = lance.dataset(path)
    ds.delete("a = 7000 OR a = 11999")
    return path


def build_mixed(path: str) -> str:
    """A 2.1 dataset with appended fragments written as 2.0 and 2.2 files (reader flag 256)."""
    from lance.fragment import write_fragments

    shutil.rmtree(path, ignore_errors=True)
    lance.write_dataset(_base_table(300), path, data_storage_version="2.1", max_rows_per_file=200)
    read_version = 1
    for i, v in enumerate(["2.0", "2.2"]):
        frags = write_fragments(_base_table(150, start=300 + 150 * i, seed=i), path,
                                data_storage_version=v, max_rows_per_file=100)
        lance.LanceDataset.commit(path, lance.LanceOperation.Append(frags), read_version=read_version)
        read_version += 1
    lance.dataset(path).delete("a % 9 = 4")
    return path


@pytest.fixture(scope="session")
def table_root(tmp_path_factory):
    return tmp_path_factory.mktemp("table_ds")


_CACHE: dict[tuple, str] = {}


def _cached(key: tuple, build) -> str:
    if key not in _CACHE:
        _CACHE[key] = build()
    return _CACHE[key]


@pytest.fixture(scope="session")
def make_dataset(table_root):
    """``make_dataset(kind, version)``: kind in evolving, stable, v1names, bigdel, mixed."""

    def make(kind: str, version: str = "2.1") -> str:
        path = str(table_root / f"{kind}_{version}")
        if kind == "evolving":
            return _cached((kind, version), lambda: build_evolving(path, version))
        if kind == "stable":
            return _cached((kind, version), lambda: build_evolving(path, version, stable=True))
        if kind == "v1names":
            return _cached((kind, version), lambda: build_evolving(path, version, v2_paths=False))
        if kind == "mixed":
            return _cached((kind,), lambda: build_mixed(str(table_root / "mixed")))
        if kind == "bigdel":
            return _cached((kind, version), lambda: build_big_delete(path, version))
        raise ValueError(kind)

    return make


def decoders_ready(version: str) -> bool:
    """True when lancejit can decode data files of ``version``."""
    from lancejit.core.errors import NotSupportedError
    from lancejit.file.reader import decoder_factory

    try:
        decoder_factory(version)
    except NotSupportedError:
        return False
    return True


@pytest.fixture
def need_decoders():
    def check(version: str) -> None:
        if not decoders_ready(version):
            pytest.skip(f"lancejit decoders for {version} files are not available yet")

    return check
