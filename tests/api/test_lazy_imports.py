"""Lazy imports (issue 12, fresh process): a 2.2 take of uncompressed columns loads neither the 2.0
decoders nor zstandard / lz4 nor ``numpy.ma``, and no take imports pandas (``pa.array`` would); a fresh process meeting a 2.0 file or LZ4 / ZSTD
buffers first imports them on demand and reads the same values as pylance.  Subprocesses; no
timings."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pytest

lance = pytest.importorskip("lance")

LAZY = ("pandas", "zstandard", "lz4", "lz4.block", "numpy.ma", "lancejit.encoding.v20.field",
        "lancejit.encoding.v20.columns", "lancejit.encoding.v20.blocks")

READ = """
import sys, json, lancejit
ds = lancejit.dataset(sys.argv[1])
cols = json.loads(sys.argv[2])
t = ds.take(json.loads(sys.argv[3]), columns=cols)
print(json.dumps({"rows": {c: t[c].to_pylist() for c in cols},
                  "loaded": [m for m in json.loads(sys.argv[4]) if m in sys.modules]}))
"""


def _read(path: str, cols: list[str], idx: list[int]) -> dict:
    res = subprocess.run([sys.executable, "-c", READ, path, json.dumps(cols), json.dumps(idx), json.dumps(LAZY)],
                         capture_output=True, text=True, env=dict(os.environ), timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    return json.loads(res.stdout.strip().splitlines()[-1])


def _table(seed: int, n: int, distinct: int = 0) -> pa.Table:
    """``distinct`` strings (0: every row its own, so the writer picks no dictionary)."""
    rng = np.random.default_rng(seed)
    words = np.array([f"w{i:05d}-{'y' * (i % 11)}" for i in range(distinct or n)])
    s = words[rng.integers(0, len(words), n)] if distinct else words[rng.permutation(n)]
    return pa.table({"id": np.arange(n, dtype=np.int64), "x": rng.standard_normal(n), "s": pa.array(s)})


def _expect(path: str, cols: list[str], idx: list[int]) -> dict:
    t = lance.dataset(path).take(idx, columns=cols)
    return {c: t[c].to_pylist() for c in cols}


@pytest.mark.parametrize("seed", [0, 1])
def test_fresh_22_take_imports_no_v20_no_codecs(tmp_path, seed):
    path = str(tmp_path / "ds")
    lance.write_dataset(_table(seed, 3000), path, data_storage_version="2.2", max_rows_per_file=1200)
    idx = [2999, 1, 1, 1500, 7]
    got = _read(path, ["id", "x", "s"], idx)
    assert got["rows"] == _expect(path, ["id", "x", "s"], idx)
    assert got["loaded"] == []


@pytest.mark.parametrize("seed", [0, 1])
def test_fresh_20_take_loads_v20_on_demand(tmp_path, seed):
    path = str(tmp_path / "ds")
    lance.write_dataset(_table(seed, 2500, distinct=300), path, data_storage_version="2.0", max_rows_per_file=1000)
    idx = [0, 2499, 999, 1000, 5]
    got = _read(path, ["id", "x", "s"], idx)
    assert got["rows"] == _expect(path, ["id", "x", "s"], idx)
    assert "lancejit.encoding.v20.field" in got["loaded"]


@pytest.mark.parametrize("version", ["2.1", "2.2"])
def test_fresh_compressed_take_loads_codecs_on_demand(tmp_path, version):
    t = _table(3, 3000, distinct=300)
    meta = {"x": {"lance-encoding:compression": "lz4"}, "s": {"lance-encoding:compression": "zstd"},
            "id": {"lance-encoding:compression": "zstd"}}
    t = t.cast(pa.schema([f.with_metadata(meta[f.name]) for f in t.schema]))
    path = str(tmp_path / "ds")
    lance.write_dataset(t, path, data_storage_version=version, max_rows_per_file=1500)
    idx = [1499, 1500, 0, 2999, 42, 42]
    got = _read(path, ["id", "x", "s"], idx)
    assert got["rows"] == _expect(path, ["id", "x", "s"], idx)
    if version == "2.2":
        assert "zstandard" in got["loaded"]


@pytest.mark.parametrize("version", ["2.1", "2.2"])
def test_fresh_dictionary_take_imports_no_pandas(tmp_path, version):
    path = str(tmp_path / "ds")
    lance.write_dataset(_table(4, 3000, distinct=50), path, data_storage_version=version, max_rows_per_file=1500)
    idx = [2999, 0, 1500, 1499, 3, 3]
    got = _read(path, ["s", "id"], idx)
    assert got["rows"] == _expect(path, ["s", "id"], idx)
    assert "pandas" not in got["loaded"] and "numpy.ma" not in got["loaded"]


FILTERED = """
import sys, json, lancejit
ds = lancejit.dataset(sys.argv[1])
got = {f: ds.to_table(columns=["id"], filter=f)["id"].to_pylist() for f in json.loads(sys.argv[2])}
print(json.dumps({"got": got, "pandas": "pandas" in sys.modules, "compute": "pyarrow.compute" in sys.modules,
                  "indices": sorted(m for m in sys.modules if m.startswith("lancejit.table.indices"))}))
"""


def test_first_filters_import_no_pandas(tmp_path):
    """A fresh process's first filtered scans (comparisons, AND/OR, BETWEEN, string equality and
    IN, integer and float IN, LIKE, IS NULL, an empty result) build their literals and sets
    without pyarrow's Python-object conversion and ``to_numpy``, which import pandas (issue 29;
    filters evaluated by Acero, e.g. arithmetic, still do), and, evaluated by lancejit's
    kernels, without ``pyarrow.compute`` (its import wraps every Arrow function); on a dataset
    without indices no index module is imported."""
    path = str(tmp_path / "ds")
    lance.write_dataset(_table(5, 3000, distinct=40), path, data_storage_version="2.2", max_rows_per_file=1000)
    filters = ["x > 0.5 AND id < 2000", "x BETWEEN -1 AND 1", "s = 'w00007-yyyyyyy'",
               "s IN ('w00001-y', 'w00002-yy')", "s LIKE 'w0001%'", "NOT (id < 5) AND x IS NOT NULL",
               "id IN (1, 2, 2999, NULL)", "x IN (0.5, 1.5)", "id > 10 AND x > 100.0"]
    res = subprocess.run([sys.executable, "-c", FILTERED, path, json.dumps(filters)], capture_output=True,
                         text=True, env=dict(os.environ), timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    got = json.loads(res.stdout.strip().splitlines()[-1])
    ref = lance.dataset(path)
    for f in filters:
        assert got["got"][f] == ref.to_table(columns=["id"], filter=f)["id"].to_pylist(), f
    assert got["pandas"] is False and got["compute"] is False and got["indices"] == []
