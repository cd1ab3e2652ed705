"""The multi-file take holds its local store's descriptors from the cold opens of new files to
the end of its read (lancejit.io.fd_cache): fewer requests per new file (ranges inside the
footer tail read at open are served from memory), equal rows to pylance, nothing kept after."""

from __future__ import annotations

import shutil

import lance
import numpy as np
import pyarrow as pa
import pytest

from lancejit.io.local import LocalStore
from lancejit.table import dataset


def _write(path: str, fragments: int, rows: int) -> str:
    n = fragments * rows
    table = pa.table({"id": np.arange(n, dtype=np.int64), "x": np.arange(n, dtype=np.float64) * 0.5,
                      "s": pa.array([f"v{i % 97}" for i in range(n)])})
    lance.write_dataset(table, path, max_rows_per_file=rows, data_storage_version="2.2")
    return path


@pytest.mark.parametrize("seed", [0, 1])
def test_cold_take_fewer_requests_equal_rows_nothing_kept(tmp_path, monkeypatch, seed):
    path = _write(str(tmp_path / "ds"), 6, 8000)
    rng = np.random.default_rng(seed)
    idx = np.sort(rng.choice(6 * 8000, 40, replace=False))
    want = lance.dataset(path).take(idx, columns=["id", "x", "s"])

    other = str(tmp_path / "copy")
    shutil.copytree(path, other)  # a second copy: no process-wide cache shared by the two takes

    def cold(hold: bool) -> tuple[pa.Table, int, LocalStore]:
        ds = dataset(path if hold else other)
        ds.take([0], columns=["id", "x", "s"])
        ds.io_stats()
        if not hold:
            monkeypatch.setattr(LocalStore, "hold_files", lambda self: None)
            monkeypatch.setattr(LocalStore, "release_files", lambda self: None)
        got = ds.take(idx, columns=["id", "x", "s"])
        monkeypatch.undo()
        return got, ds.io_stats().read_iops, ds._ctx.store

    got, with_hold, store = cold(True)
    assert got.equals(want)
    assert len(store._fds) == 0 and not store._fds.holding  # closed when the take's read ended
    got2, without, _ = cold(False)
    assert got2.equals(want)
    assert with_hold < without
