"""Small-take latency: p50 of warm 1-, 10- and 100-row ``Dataset.take`` calls, lancejit vs the
reference (pylance 14), on one dataset (int64, float64, string, 64-dim float32 vector; files
of 250,000 rows; Lance 2.2; local disk).

Run:  .venv/bin/python perf/take_latency.py [--rows 500000] [--dir /tmp/take_latency]
      .venv/bin/python perf/take_latency.py --profile [--take 1]   (cProfile of lancejit's loop thread)

The dataset is written once under ``--dir`` (reused afterwards).  Results of both libraries
are checked equal first.  Timings alternate lancejit / reference twice and keep the lower
median of each (the machine is shared: compare the two columns of one run).
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np
import pyarrow as pa


def write(path: str, rows: int) -> None:
    import lance

    rng = np.random.default_rng(0)
    vec = rng.standard_normal((rows, 64)).astype(np.float32)
    table = pa.table({
        "id": np.arange(rows, dtype=np.int64),
        "value": rng.standard_normal(rows),
        "name": pa.array([f"name-{i}-{'x' * (i % 17)}" for i in range(rows)]),
        "vec": pa.FixedSizeListArray.from_arrays(pa.array(vec.reshape(-1)), 64),
    })
    lance.write_dataset(table, path, data_storage_version="2.2", max_rows_per_file=250_000)


def p50_ms(ds, rows: int, n: int, reps: int, rng: np.random.Generator) -> float:
    idxs = [rng.integers(0, rows, n) for _ in range(reps)]
    ds.take(idxs[0])
    samples = []
    for i in idxs:
        t0 = time.perf_counter()
        ds.take(i)
        samples.append(time.perf_counter() - t0)
    return statistics.median(samples) * 1e3


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=500_000)
    ap.add_argument("--dir", default="/tmp/take_latency")
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--take", type=int, default=1, help="rows per take when profiling")
    args = ap.parse_args()
    path = os.path.join(args.dir, f"ds_{args.rows}")
    if not os.path.exists(path):
        write(path, args.rows)

    import lance

    import lancejit.table as lt

    ref, ours = lance.dataset(path), lt.dataset(path)
    rng = np.random.default_rng(1)
    if args.profile:
        import cProfile
        import pstats

        from lancejit.io.sync import run_sync

        idxs = [rng.integers(0, args.rows, args.take) for _ in range(2000)]
        for i in idxs[:20]:
            ours.take(i)
        prof = cProfile.Profile()

        async def on() -> None:  # the profiler must run on the loop thread
            prof.enable()

        async def off() -> None:
            prof.disable()

        run_sync(on())
        for i in idxs:
            ours.take(i)
        run_sync(off())
        pstats.Stats(prof).sort_stats("tottime").print_stats(40)
        return
    for n in (1, 10, 100):
        i = rng.integers(0, args.rows, n)
        assert ours.take(i).equals(ref.take(i)), f"results differ for a {n}-row take"
    for n, reps in ((1, 600), (10, 300), (100, 100)):
        a = min(p50_ms(ours, args.rows, n, reps, rng), p50_ms(ours, args.rows, n, reps, rng))
        b = min(p50_ms(ref, args.rows, n, reps, rng), p50_ms(ref, args.rows, n, reps, rng))
        print(f"take {n:4d} rows p50: lancejit {a:.3f} ms  reference {b:.3f} ms  ratio {a / b:.2f}")


if __name__ == "__main__":
    main()
