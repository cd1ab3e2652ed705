"""Generate the old-release datasets of tests/data/legacy_datasets (run ONCE per release, in a
separate virtualenv holding that release's pylance):

    python3 -m venv /tmp/oldlance && /tmp/oldlance/bin/pip install pylance==0.10.18 "numpy<2"
    /tmp/oldlance/bin/python tests/data/legacy_datasets/generate.py tests/data/legacy_datasets

Writes ``v<version>/ds`` (versions: 1 create 3 fragments; 2 delete a few rows; 3 append;
4 delete most of fragment 0) and ``v<version>/expected.json`` (rows per version as that release
counts them, and the sum of column ``a``)."""

from __future__ import annotations

import json
import os
import shutil
import sys

import lance
import numpy as np
import pyarrow as pa


def table(start: int, n: int) -> pa.Table:
    a = np.arange(start, start + n, dtype=np.int64)
    return pa.table({
        "a": a,
        "s": pa.array([None if i % 11 == 5 else f"s{i}" for i in a], pa.string()),
        "f": pa.array(a.astype(np.float64) * 0.5),
    })


def main(out_dir: str) -> None:
    version = lance.__version__
    base = os.path.join(out_dir, "v" + version.replace(".", "_"))
    shutil.rmtree(base, ignore_errors=True)
    os.makedirs(base)
    path = os.path.join(base, "ds")
    lance.write_dataset(table(0, 250), path, max_rows_per_file=100)
    lance.dataset(path).delete("a % 13 = 4")
    lance.write_dataset(table(250, 60), path, mode="append", max_rows_per_file=100)
    lance.dataset(path).delete("a < 100 AND a % 10 != 0")
    expected = {}
    for v in lance.dataset(path).versions():
        ds = lance.dataset(path, version=v["version"])
        t = ds.to_table()
        expected[str(v["version"])] = {"rows": t.num_rows, "sum_a": int(np.sum(t["a"].to_numpy()))}
    with open(os.path.join(base, "expected.json"), "w") as f:
        json.dump({"pylance": version, "versions": expected}, f, indent=1)


if __name__ == "__main__":
    main(sys.argv[1])
