"""Missing, resized and damaged data files raise lancejit errors naming the dataset, the version
and the file (issue 5, acceptance 4), for small files (read whole by the open) and large ones."""

from __future__ import annotations

import glob
import os

import numpy as np
import pyarrow as pa
import pytest

import lancejit.table as lt
from lancejit.core.errors import CorruptFileError, LanceJitError, NotFoundError

lance = pytest.importorskip("lance")


def _make(path: str, rows: int) -> str:
    t = pa.table({"a": np.arange(rows, dtype=np.int64), "s": [f"v{i % 1000}" for i in range(rows)]})
    lance.write_dataset(t, path, max_rows_per_file=rows // 2, data_storage_version="2.1")
    return sorted(glob.glob(os.path.join(path, "data", "*.lance")))[0]


@pytest.mark.parametrize("rows", [400, 40_000])  # files below / above the 64 KiB open read
def test_missing_data_file(tmp_path, rows):
    victim = _make(str(tmp_path / "ds"), rows)
    os.remove(victim)
    with pytest.raises(NotFoundError) as info:
        lt.dataset(str(tmp_path / "ds")).to_table()
    msg = str(info.value)
    assert "version 1" in msg and os.path.basename(victim) in msg and "ds" in msg and "missing" in msg


@pytest.mark.parametrize("rows", [400, 40_000])
def test_resized_data_file(tmp_path, rows):
    victim = _make(str(tmp_path / "ds"), rows)
    with open(victim, "ab") as f:
        f.write(b"\0" * 8)
    with pytest.raises(CorruptFileError) as info:
        lt.dataset(str(tmp_path / "ds")).take([0, rows - 1])
    msg = str(info.value)
    assert "manifest records" in msg and "version 1" in msg and os.path.basename(victim) in msg


@pytest.mark.parametrize("rows", [400, 40_000])
def test_damaged_data_file_same_size(tmp_path, rows):
    victim = _make(str(tmp_path / "ds"), rows)
    size = os.path.getsize(victim)
    with open(victim, "r+b") as f:  # overwrite the footer: same size, bad magic
        f.seek(size - 4)
        f.write(b"XXXX")
    with pytest.raises(LanceJitError) as info:
        lt.dataset(str(tmp_path / "ds")).to_table()
    assert os.path.basename(victim) in str(info.value) and "version 1" in str(info.value)
