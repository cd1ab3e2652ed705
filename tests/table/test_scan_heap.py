"""``table/heap.keep_scan_buffers``: glibc's mmap/trim thresholds set once per process at the
first scan (freed scan buffers reused instead of faulted in again), unless the process opted
out or set its own; each case in a child process (the setting is process-wide)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

CODE = """
import sys
from lancejit.table.read import heap
print(heap.keep_scan_buffers(), heap.keep_scan_buffers())
"""


def _run(env_extra: dict[str, str]) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_") and k != "LANCEJIT_MALLOC_TUNE"}
    env.update(env_extra)
    res = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True, env=env, timeout=60)
    assert res.returncode == 0, res.stderr
    return res.stdout.strip()


@pytest.mark.skipif(not sys.platform.startswith("linux") or not os.confstr("CS_GNU_LIBC_VERSION"),
                    reason="glibc only")
def test_set_once_unless_opted_out():
    assert _run({}) == "True False"
    assert _run({"LANCEJIT_MALLOC_TUNE": "0"}) == "False False"
    assert _run({"MALLOC_TRIM_THRESHOLD_": "131072"}) == "False False"
    assert _run({"MALLOC_MMAP_THRESHOLD_": "131072"}) == "False False"


def test_scan_results_unchanged_after_tuning(tmp_path):
    """A scan in a process where the thresholds were set reads what pylance reads."""
    lance = pytest.importorskip("lance")
    import numpy as np
    import pyarrow as pa

    path = str(tmp_path / "ds")
    t = pa.table({"id": np.arange(3000, dtype=np.int64), "s": pa.array([f"v{i}" for i in range(3000)])})
    lance.write_dataset(t, path, max_rows_per_file=700)
    code = (f"import lancejit.table as lt\nt = lt.dataset({path!r}).to_table()\n"
            "from lancejit.table.read import heap\nprint(heap._done, t.num_rows, t.column('id').to_pylist()[-1])")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert res.stdout.split() == ["True", "3000", "2999"]
    assert lance.dataset(path).to_table().equals(t)
