"""Issue 23 item 6 benchmark: streaming ``to_batches`` (what a Spark partition, a training loop
and a DuckDB scan consume) against the reference (pylance 14) on the same rows.

Run:  .venv/bin/python perf/batches.py [--repeat 11]

1M rows (``id`` int64, ``x`` float64 uniform in [0, 1), ``label`` string, ``vec`` 16 float32) in
one fragment, written once by the reference under ``perf/data/batches/``.  Measured, the two
libraries alternating sample by sample: a full epoch of ``to_batches(columns=["vec", "label"])``,
the time to its first batch, a filtered epoch (``x > 0.5``), ``to_table`` of the same columns.
Each figure is the median wall time and the median process CPU time (the machine may be shared:
wall times then carry other processes' load, CPU times less so); ratios are lancejit / reference.
The batch sizes are checked: exactly ``batch_size`` rows but the last.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np
import pyarrow as pa

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
os.environ.setdefault("LANCE_LOG", "error")

ROWS = 1_000_000
DATA = os.path.join(HERE, "data", "batches", "d.lance")


def ensure_data() -> str:
    import lance

    if not os.path.exists(DATA):
        rng = np.random.default_rng(6)
        t = pa.table({"id": np.arange(ROWS, dtype=np.int64), "x": rng.uniform(0, 1, ROWS),
                      "label": pa.array([f"label-{i % 100}" for i in range(ROWS)]),
                      "vec": pa.FixedSizeListArray.from_arrays(
                          pa.array(rng.standard_normal(ROWS * 16, dtype=np.float32)), 16)})
        lance.write_dataset(t, DATA)
    return DATA


def sample(fn) -> tuple[float, float, float, list[int]]:
    """(wall s, CPU s, first batch s, batch sizes) of one run of ``fn`` (an iterator maker or a
    table maker)."""
    t0, c0 = time.perf_counter(), time.process_time()
    first, sizes = 0.0, []
    got = fn()
    if isinstance(got, pa.Table):
        sizes = [got.num_rows]
    else:
        for b in got:
            if not sizes:
                first = time.perf_counter() - t0
            sizes.append(b.num_rows)
    return time.perf_counter() - t0, time.process_time() - c0, first, sizes


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=11)
    args = ap.parse_args()
    import lance

    import lancejit
    from pagecache import warm

    uri = ensure_data()
    warm(uri)
    ref, jit = lance.dataset(uri), lancejit.dataset(uri)
    cols = ["vec", "label"]
    cases = {
        "to_batches epoch": lambda ds: (lambda: ds.to_batches(columns=cols)),
        "to_batches filtered": lambda ds: (lambda: ds.to_batches(columns=cols, filter="x > 0.5")),
        "to_table": lambda ds: (lambda: ds.to_table(columns=cols)),
    }
    res = {(c, lib): [] for c in cases for lib in ("reference", "lancejit")}
    for make in cases.values():  # warm-up
        for ds in (ref, jit):
            sample(make(ds))
    for _ in range(args.repeat):
        for c, make in cases.items():
            for lib, ds in (("reference", ref), ("lancejit", jit)):
                res[(c, lib)].append(sample(make(ds)))
    print("| measure | reference ms | lancejit ms | ratio (wall) | reference CPU ms | lancejit CPU ms | ratio (CPU) |")
    print("|---|---|---|---|---|---|---|")
    for c in cases:
        r, j = res[(c, "reference")], res[(c, "lancejit")]

        def med(xs, i):
            return statistics.median(x[i] for x in xs) * 1e3

        print(f"| {c} | {med(r, 0):.1f} | {med(j, 0):.1f} | {med(j, 0) / med(r, 0):.2f} | {med(r, 1):.1f} | "
              f"{med(j, 1):.1f} | {med(j, 1) / med(r, 1):.2f} |")
        if c == "to_batches epoch":
            print(f"| first batch | {med(r, 2):.1f} | {med(j, 2):.1f} | {med(j, 2) / med(r, 2):.2f} | | | |")
        if c != "to_table":
            sizes = j[-1][3]
            short = sum(1 for s in sizes[:-1] if s != sizes[0])
            print(f"| {c}: lancejit batches | {len(r[-1][3])} | {len(sizes)} ({short} short before the last) "
                  "| | | | |")


if __name__ == "__main__":
    main()
