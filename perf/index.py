"""Filtered scans answered by scalar indices, lancejit vs the reference (pylance 14), same
datasets, one run.

Datasets (one per size, default 1M and 10M rows; Lance 2.2 on local disk, written once under
``--dir`` and reused): ``id`` (int64, a random permutation), ``cat`` (string, 50 values),
``x`` (float64, normal), ``payload`` (string); two fragments of ``rows / 2`` indexed by the
reference (BTREE on ``id``, BITMAP on ``cat``), then ``rows / 20`` rows appended that no index
covers (they are scanned).

Workloads (every call returns all four columns): point lookup ``id = K``; ``id IN`` 5 and 1,000
keys; narrow (``id BETWEEN a AND a + 100``) and wide (1% of the rows) ranges; bitmap
equality and IN; an indexed predicate AND an unindexed one (``cat IN (..) AND x > 1.5``,
``id BETWEEN .. AND x > 0.5``).  Each workload runs ``--samples`` distinct queries (keys drawn
at random); every query is run once by each library before timing (results checked equal;
caches warm), then timed alternating lancejit / reference query by query (``--repeat`` rounds).
Reported: median wall ms per query and the ratio lancejit / reference, then the median CPU ms
of the process (every thread: the reference's work spreads over its threads, lancejit's mostly
runs in the caller's) and their ratio.  On a shared machine the wall time includes waiting for
a core; the CPU time does not (compare within a run).

The appended fragment is scanned by both libraries, a cost linear in the rows; the point lookup
is also measured on a copy whose indices cover every fragment (hard links of the data plus the
reference's ``optimize_indices``), and the growth of lancejit's lookup time from the smallest to
the largest size is reported there.

Run:  .venv/bin/python perf/index.py [--sizes 1000000,10000000] [--samples 40] [--dir /tmp/lancejit_index]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np
import pyarrow as pa

CATS = [f"c{i:02d}" for i in range(50)]


def write(path: str, rows: int) -> None:
    import lance

    rng = np.random.default_rng(0)
    total = rows + rows // 20

    def part(lo: int, hi: int) -> pa.Table:
        n = hi - lo
        return pa.table({
            "id": pa.array(ids[lo:hi], pa.int64()),
            "cat": pa.array(np.array(CATS, dtype=object)[rng.integers(0, len(CATS), n)].tolist(), pa.string()),
            "x": pa.array(rng.standard_normal(n)),
            "payload": pa.array([f"row-{i}-{'p' * (i % 23)}" for i in range(lo, hi)]),
        })

    ids = rng.permutation(total).astype(np.int64)
    step = 1_000_000
    batches = (part(lo, min(lo + step, rows)) for lo in range(0, rows, step))
    schema = part(0, 1).schema
    lance.write_dataset(pa.RecordBatchReader.from_batches(schema, (b for t in batches for b in t.to_batches())),
                        path, schema=schema, data_storage_version="2.2", max_rows_per_file=rows // 2)
    ds = lance.dataset(path)
    ds.create_scalar_index("id", "BTREE")
    ds.create_scalar_index("cat", "BITMAP")
    lance.write_dataset(part(rows, total), path, mode="append", data_storage_version="2.2")


def workloads(rows: int, samples: int, rng: np.random.Generator) -> dict[str, list[str]]:
    total = rows + rows // 20
    keys = lambda n: rng.integers(0, total, n)  # noqa: E731
    wide = max(1000, rows // 100)
    return {
        "id = K": [f"id = {k}" for k in keys(samples)],
        "id IN (5 keys)": [f"id IN ({', '.join(map(str, keys(5)))})" for _ in range(samples)],
        "id IN (1,000 keys)": [f"id IN ({', '.join(map(str, keys(1000)))})" for _ in range(max(4, samples // 4))],
        "id BETWEEN a AND a + 100": [f"id BETWEEN {a} AND {a + 100}" for a in keys(samples)],
        f"id BETWEEN a AND a + {wide}": [f"id BETWEEN {a} AND {a + wide}" for a in keys(max(4, samples // 4))],
        "cat = 'cXX'": [f"cat = '{CATS[i]}'" for i in rng.integers(0, len(CATS), max(4, samples // 4))],
        "cat IN (3 values)": [f"cat IN ({', '.join(repr(CATS[i]) for i in rng.choice(len(CATS), 3, replace=False))})"
                              for _ in range(max(4, samples // 4))],
        "cat IN (..) AND x > 1.5": [f"cat IN ('{CATS[i]}', '{CATS[(i + 7) % 50]}') AND x > 1.5"
                                    for i in rng.integers(0, len(CATS), max(4, samples // 4))],
        "id BETWEEN .. AND x > 0.5": [f"id BETWEEN {a} AND {a + 2000} AND x > 0.5" for a in keys(samples)],
    }


def covered_copy(path: str) -> str:
    """A copy of the dataset (hard-linked files) whose indices cover every fragment."""
    import shutil
    import subprocess

    import lance

    out = path + "_covered"
    if not os.path.exists(out):
        tmp = out + ".tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        subprocess.run(["cp", "-al", path, tmp], check=True)
        lance.dataset(tmp).optimize.optimize_indices()
        os.rename(tmp, out)
    return out


def _sorted(t: pa.Table) -> pa.Table:
    return t.sort_by("id")


def measure(ours, ref, queries: list[str], repeat: int = 1) -> tuple[float, float, float, float]:
    """Median wall and CPU ms per query of each library: ``(ours, ref, ours cpu, ref cpu)``
    (CPU: the process's, every thread's; each query timed ``repeat`` times)."""
    for q in queries:  # warm both (and check equal answers)
        a, b = ours.to_table(filter=q), ref.to_table(filter=q)
        assert _sorted(a).equals(_sorted(b)), q
    ta, tb, ca, cb = [], [], [], []
    for _ in range(repeat):
        for q in queries:
            c0, t0 = time.process_time(), time.perf_counter()
            ours.to_table(filter=q)
            c1, t1 = time.process_time(), time.perf_counter()
            ref.to_table(filter=q)
            c2, t2 = time.process_time(), time.perf_counter()
            ta.append(t1 - t0)
            tb.append(t2 - t1)
            ca.append(c1 - c0)
            cb.append(c2 - c1)
    med = statistics.median
    return med(ta) * 1e3, med(tb) * 1e3, med(ca) * 1e3, med(cb) * 1e3


def row(rows: int, name: str, got: tuple[float, float, float, float]) -> None:
    a, b, ca, cb = got
    print(f"{rows:>10} {name:<32} {a:>12.3f} {b:>13.3f} {a / b:>6.2f} {ca:>9.2f} {cb:>9.2f} {ca / max(cb, 1e-9):>6.2f}",
          flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="1000000,10000000")
    ap.add_argument("--samples", type=int, default=40)
    ap.add_argument("--dir", default="/tmp/lancejit_index")
    ap.add_argument("--only", default=None, help="run only workloads whose name contains this")
    ap.add_argument("--repeat", type=int, default=1, help="time every query this many times")
    args = ap.parse_args()
    import lance

    import lancejit

    sizes = [int(s) for s in args.sizes.split(",")]
    lookups = {}
    print(f"{'rows':>10} {'workload':<32} {'lancejit ms':>12} {'reference ms':>13} {'ratio':>6}"
          f" {'cpu ms':>9} {'ref cpu':>9} {'ratio':>6}")
    for rows in sizes:
        path = os.path.join(args.dir, f"ds_{rows}")
        if not os.path.exists(path):
            write(path, rows)
        ours, ref = lancejit.dataset(path), lance.dataset(path)
        rng = np.random.default_rng(rows)
        for name, queries in workloads(rows, args.samples, rng).items():
            if args.only and args.only not in name:
                continue
            row(rows, name, measure(ours, ref, queries, args.repeat))
        if args.only and args.only not in "id = K (all covered)":
            continue
        cpath = covered_copy(path)
        queries = workloads(rows, args.samples, np.random.default_rng(rows + 1))["id = K"]
        got = measure(lancejit.dataset(cpath), lance.dataset(cpath), queries, args.repeat)
        lookups[rows] = got[0]
        row(rows, "id = K (all covered)", got)
    if len(lookups) > 1:
        lo, hi = min(lookups), max(lookups)
        print(f"lancejit's point lookup (all covered) from {lo:,} to {hi:,} rows: x{lookups[hi] / lookups[lo]:.2f}")


if __name__ == "__main__":
    main()
