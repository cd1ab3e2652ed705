"""Generate tests/data/legacy_datasets/indices_v0_20_0 (run ONCE, in a separate virtualenv
holding pylance 0.20.0, the last release before the current scalar index files):

    python3 -m venv /tmp/oldlance && /tmp/oldlance/bin/pip install "pylance==0.20.0" "numpy<2" "pyarrow<18"
    /tmp/oldlance/bin/python tests/data/legacy_datasets/generate_indices.py tests/data/legacy_datasets

Writes ``indices_v0_20_0/ds``: 600 rows in 3 fragments with a BTREE on ``a``, ``n`` and ``s``, a BITMAP
on ``cat`` and ``k`` and a LABEL_LIST on ``tags`` (its BTREE files are 0.1 files whose id column is
``row_ids``), then an appended fragment no index covers and deletions; ``expected.json`` holds
the values of ``a`` each filter selects in that release (sorted).  (String columns hold no NULL:
that release's 2.0 writer stored some NULL strings as empty strings the current readers return.)"""

import json
import os
import shutil
import sys

import lance
import numpy as np
import pyarrow as pa


def table(start, n):
    i = np.arange(start, start + n, dtype=np.int64)
    return pa.table({
        "a": i,
        "n": pa.array([None if k % 11 == 5 else int(k % 29) for k in i], pa.int32()),
        "s": pa.array([f"s{k % 37:02d}" for k in i], pa.string()),
        "cat": pa.array([f"c{k % 5}" for k in i], pa.string()),
        "k": pa.array([None if k % 13 == 7 else int(k % 6) for k in i], pa.int64()),
        "tags": pa.array([None if k % 17 == 3 else [f"t{k % 3}", f"t{k % 4}"] for k in i], pa.list_(pa.string())),
    })


def main(out):
    base = os.path.join(out, "indices_v" + lance.__version__.replace(".", "_"))
    shutil.rmtree(base, ignore_errors=True)
    os.makedirs(base)
    path = os.path.join(base, "ds")
    ds = lance.write_dataset(table(0, 600), path, max_rows_per_file=200)
    ds.create_scalar_index("a", "BTREE")
    ds.create_scalar_index("s", "BTREE")
    ds.create_scalar_index("n", "BTREE")
    ds.create_scalar_index("cat", "BITMAP")
    ds.create_scalar_index("k", "BITMAP")
    ds.create_scalar_index("tags", "LABEL_LIST")
    lance.write_dataset(table(600, 100), path, mode="append")
    lance.dataset(path).delete("a % 10 = 3")
    ds = lance.dataset(path)
    filters = ["a = 17", "a IN (3, 17, 250, 650)", "a >= 100 AND a <= 130", "s = 's05'", "n IS NULL",
               "n = 4", "n > 20 AND a < 400", "k = 2", "k IS NULL", "NOT (k = 3)", "s >= 's30'",
               "cat = 'c1'", "cat IN ('c0', 'c4') AND a < 300", "cat IS NULL", "array_has_any(tags, ['t1'])",
               "array_has_all(tags, ['t0', 't2'])", "NOT (cat = 'c2')", "a > 580 OR cat = 'c3'"]
    expected = {}
    for f in filters:
        t = ds.to_table(filter=f, columns=["a"])
        expected[f] = sorted(t["a"].to_pylist())
    with open(os.path.join(base, "expected.json"), "w") as fh:
        json.dump({"pylance": lance.__version__, "filters": expected}, fh, indent=1)


if __name__ == "__main__":
    main(sys.argv[1])
