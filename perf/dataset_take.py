"""Issue 5 benchmark: ``Dataset.take`` of 1,000 random offsets across fragments, lancejit vs
the reference (pylance 14), on the same dataset.

Run:  .venv/bin/python perf/dataset_take.py [--rows 200000] [--rows-per-file 20000] [--versions 2.1 2.2]

For each data storage version, pylance writes a dataset of ``--rows`` rows (int64, float64,
string) in fragments of ``--rows-per-file`` rows and deletes ~1% of them (deletion files).
Measured, with the dataset already open and a first take done (metadata cached):
  * local time of ``take(idx)`` (median of repeats) for both libraries, and the ratio;
  * ``read_iops`` / ``read_bytes`` of one take by each library's own counters
    (``io_stats_incremental()`` / ``Dataset.io_stats()``);
  * on a moto S3 server, GET requests counted server-side for a cold open + take and a warm take.

With ``--scan``, also a full scan (``to_table()``) of ``--scan-rows`` rows (``perf/suite.py``'s
table with its 64-dim vector, files of 250,000 rows), without and with ~1% deleted rows:
reference and lancejit alternate, ``--repeat`` times each; min and median wall times and the
ratio (compare ratios from one run: the machine is shared).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time

import numpy as np
import pyarrow as pa

sys.path.insert(0, os.path.dirname(__file__))

from s3_counter import CountingS3  # noqa: E402


def make_table(rows: int, seed: int = 0) -> pa.Table:
    rng = np.random.default_rng(seed)
    words = np.array([f"w{i:05d}-{'x' * (i % 13)}" for i in range(50_000)])
    return pa.table({
        "id": pa.array(np.arange(rows, dtype=np.int64)),
        "value": pa.array(rng.standard_normal(rows)),
        "name": pa.array(words[rng.integers(0, len(words), rows)]),
    })


def timed(fn, repeat: int) -> float:
    samples = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - t0)
    return statistics.median(samples)


def upload_dir(s3: CountingS3, local: str, prefix: str) -> str:
    import requests

    for dirpath, _, files in os.walk(local):
        for name in files:
            full = os.path.join(dirpath, name)
            rel = os.path.relpath(full, local).replace(os.sep, "/")
            with open(full, "rb") as f:
                requests.put(f"{s3.endpoint}/{s3.bucket}/{prefix}/{rel}", data=f.read())
    s3.log.reset()
    return f"s3://{s3.bucket}/{prefix}"


def bench(version: str, table: pa.Table, rows_per_file: int, tmp: str, s3: CountingS3,
          take_n: int, repeat: int) -> dict:
    import lance

    import lancejit.table as lt

    path = os.path.join(tmp, f"ds_{version}")
    lance.write_dataset(table, path, data_storage_version=version, max_rows_per_file=rows_per_file)
    lance.dataset(path).delete("id % 97 = 5")
    ref = lance.dataset(path)
    ours = lt.dataset(path)
    n = ref.count_rows()
    idx = np.random.default_rng(1).choice(n, take_n, replace=False)
    assert ours.take(idx).equals(ref.take(idx))  # also warms both
    out: dict = {"version": version, "rows": n, "fragments": len(ours.get_fragments())}
    t_ref = timed(lambda: ref.take(idx), repeat)
    t_lj = timed(lambda: ours.take(idx), repeat)
    out["take_s"] = {"reference": t_ref, "lancejit": t_lj, "ratio": t_lj / t_ref}
    idx2 = np.random.default_rng(2).choice(n, take_n, replace=False)
    ref.io_stats_incremental()
    ref.take(idx2)
    r = ref.io_stats_incremental()
    ours.io_stats()
    ours.take(idx2)
    o = ours.io_stats()
    out["io_stats_warm_take"] = {"reference": {"read_iops": r.read_iops, "read_bytes": r.read_bytes},
                                 "lancejit": {"read_iops": o.read_iops, "read_bytes": o.read_bytes}}
    uri = upload_dir(s3, path, f"ds_{version}")
    counts = {}
    for who in ("reference", "lancejit"):
        s3.log.reset()
        if who == "reference":
            d = lance.dataset(uri, storage_options=s3.reference_options)
        else:
            d = lt.dataset(uri, storage_options=s3.lancejit_options)
        d.take(idx)
        counts[f"{who}_cold"] = s3.log.snapshot()
        s3.log.reset()
        d.take(idx2)
        counts[f"{who}_warm"] = s3.log.snapshot()
    out["s3_requests"] = counts
    return out


def bench_scan(version: str, rows: int, tmp: str, repeat: int) -> list[dict]:
    import lance

    import lancejit.table as lt
    from suite import make_table as suite_table

    out = []
    path = os.path.join(tmp, f"scan_{version}")
    lance.write_dataset(suite_table(rows), path, data_storage_version=version, max_rows_per_file=250_000)
    for deleted in (False, True):
        if deleted:
            lance.dataset(path).delete("id % 97 = 5")
        ref, ours = lance.dataset(path), lt.dataset(path)
        assert ours.to_table().equals(ref.to_table())  # also warms both
        r, o = [], []
        for _ in range(repeat):
            t0 = time.perf_counter()
            ref.to_table()
            r.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            ours.to_table()
            o.append(time.perf_counter() - t0)
        out.append({"version": version, "rows": rows, "deleted": deleted,
                    "reference_min": min(r), "lancejit_min": min(o), "ratio_min": min(o) / min(r),
                    "ratio_median": statistics.median(o) / statistics.median(r)})
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=200_000)
    ap.add_argument("--rows-per-file", type=int, default=20_000)
    ap.add_argument("--versions", nargs="+", default=["2.1", "2.2"])
    ap.add_argument("--take", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=11)
    ap.add_argument("--json", default=None)
    ap.add_argument("--scan", action="store_true", help="also time a full scan (see above)")
    ap.add_argument("--scan-rows", type=int, default=1_000_000)
    args = ap.parse_args()
    table = make_table(args.rows)
    results = []
    with tempfile.TemporaryDirectory() as tmp, CountingS3() as s3:
        for v in args.versions:
            res = bench(v, table, args.rows_per_file, tmp, s3, args.take, args.repeat)
            results.append(res)
            t = res["take_s"]
            print(f"== data storage version {v}: {res['rows']:,} rows in {res['fragments']} fragments")
            print(f"  take {args.take}: reference {t['reference'] * 1e3:8.2f} ms  lancejit "
                  f"{t['lancejit'] * 1e3:8.2f} ms  ratio {t['ratio']:.2f}")
            io = res["io_stats_warm_take"]
            print(f"  io_stats (warm take): reference {io['reference']['read_iops']} iops / "
                  f"{io['reference']['read_bytes']:,} B; lancejit {io['lancejit']['read_iops']} iops / "
                  f"{io['lancejit']['read_bytes']:,} B")
            c = res["s3_requests"]
            for who in ("reference", "lancejit"):
                print(f"  S3 {who:9s} open+take: {c[who + '_cold']['get']} GETs / {c[who + '_cold']['bytes']:,} B;"
                      f"  warm take: {c[who + '_warm']['get']} GETs / {c[who + '_warm']['bytes']:,} B")
        if args.scan:
            for v in args.versions:
                for res in bench_scan(v, args.scan_rows, tmp, args.repeat):
                    results.append({"scan": res})
                    print(f"== scan {v} {res['rows']:,} rows{' with deletions' if res['deleted'] else ''}: "
                          f"reference {res['reference_min'] * 1e3:8.1f} ms  lancejit {res['lancejit_min'] * 1e3:8.1f} ms"
                          f"  ratio (min) {res['ratio_min']:.2f}  ratio (median) {res['ratio_median']:.2f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)


if __name__ == "__main__":
    main()
