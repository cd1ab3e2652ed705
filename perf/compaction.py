"""Scan time before and after compaction of a 2,000-fragment dataset (1,000,000 rows written by
pylance 14 in fragments of 500 rows: int64, float64, string; Lance 2.2; local disk), with lancejit
and with the reference, plus the time each library takes to compact it.

Run:  .venv/bin/python perf/compaction.py [--rows 1000000] [--per-file 500] [--reps 5] [--dir /tmp/compaction]

Two copies of the dataset are written under ``--dir``; lancejit compacts one, pylance the other
(default options: target 1,048,576 rows per fragment).  Full scans (``to_table()``, all columns)
alternate lancejit / reference, ``--reps`` times each, medians reported; results are checked equal
first.  The machine is shared: compare the columns of one run, not absolute times across runs.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import time

import numpy as np
import pyarrow as pa


def write(path: str, rows: int, per_file: int) -> None:
    import lance

    rng = np.random.default_rng(0)
    table = pa.table({
        "id": np.arange(rows, dtype=np.int64),
        "value": rng.standard_normal(rows),
        "name": pa.array([f"name-{i}-{'x' * (i % 17)}" for i in range(rows)]),
    })
    lance.write_dataset(table, path, data_storage_version="2.2", max_rows_per_file=per_file)


def scan_medians(jit_uri: str, ref_uri: str, reps: int) -> tuple[float, float]:
    import lance

    import lancejit

    jit, ref = lancejit.dataset(jit_uri), lance.dataset(ref_uri)
    a, b = jit.to_table(), ref.to_table()
    assert a.equals(b), "lancejit and pylance scans differ"
    tj, tr = [], []
    for _ in range(reps):
        t0 = time.perf_counter()
        lancejit.dataset(jit_uri).to_table()
        tj.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        lance.dataset(ref_uri).to_table()
        tr.append(time.perf_counter() - t0)
    return statistics.median(tj) * 1e3, statistics.median(tr) * 1e3


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--per-file", type=int, default=500)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--dir", default="/tmp/compaction")
    args = ap.parse_args()
    import lance

    import lancejit

    jit_uri, ref_uri = os.path.join(args.dir, "jit.lance"), os.path.join(args.dir, "ref.lance")
    shutil.rmtree(args.dir, ignore_errors=True)
    os.makedirs(args.dir)
    write(jit_uri, args.rows, args.per_file)
    shutil.copytree(jit_uri, ref_uri)
    nfrag = len(lance.dataset(ref_uri).get_fragments())
    print(f"{args.rows:,} rows in {nfrag:,} fragments of {args.per_file} rows (written by pylance)")

    before = scan_medians(jit_uri, ref_uri, args.reps)

    t0 = time.perf_counter()
    jm = lancejit.dataset(jit_uri).optimize.compact_files()
    t_jit = time.perf_counter() - t0
    t0 = time.perf_counter()
    rm = lance.dataset(ref_uri).optimize.compact_files()
    t_ref = time.perf_counter() - t0
    print(f"compaction: lancejit {t_jit:.2f} s {jm}; pylance {t_ref:.2f} s {rm}")
    # each library reads the other's compacted dataset equal to its own
    assert lance.dataset(jit_uri).to_table().equals(lancejit.dataset(ref_uri).to_table())

    after = scan_medians(jit_uri, ref_uri, args.reps)
    print("\nfull scan (to_table, all columns), median ms")
    print("| dataset | fragments | lancejit | pylance | lancejit/pylance |")
    print("|---|---:|---:|---:|---:|")
    for name, frags, (j, r) in (("before compaction", nfrag, before),
                                ("after compaction", len(lance.dataset(ref_uri).get_fragments()), after)):
        print(f"| {name} | {frags:,} | {j:.0f} | {r:.0f} | {j / r:.2f} |")
    print(f"\nspeed-up from compaction: lancejit {before[0] / after[0]:.1f}x, pylance {before[1] / after[1]:.1f}x")


if __name__ == "__main__":
    main()
