"""The reproducible benchmark suite: lancejit against the reference (pylance) and Parquet.

Run:  .venv/bin/python perf/suite.py [--rows 1000000] [--versions 2.1 2.2] [--stores local]
                                     [--sizes 1,100,1000] [--repeats 5] [--out perf/out]

What it does (everything seeded, so two runs on the same machine measure the same work):

1. ``bench store`` on every store (``local``: a temp directory; ``s3``: a moto server started
   here, see ``perf/s3_counter.py``; moto reads whole objects per GET, so keep ``--s3-rows``
   small): latency percentiles, IOPS and throughput for 4 KiB / 64 KiB / 8 MiB reads at
   concurrency 1, 4, 16, 64.  Its figures fit the latency model used below.
2. For every data storage version, the reference writes a dataset of ``--rows`` rows (int64
   ``id``, float64 ``value``, string ``name``, 64-dim float32 ``vector``) in files of
   ``--rows-per-file`` rows; on S3 the files are uploaded to the moto bucket.
3. ``bench dataset --compare`` on it: random takes of each ``--sizes`` rows and a full scan by
   lancejit, the reference and a Parquet copy (written by pyarrow, ``--parquet-row-group-size``
   rows per row group), with latency percentiles,
   requests, bytes, read amplification, lancejit's planned requests and predicted latency.

Outputs in ``--out``: ``suite.json`` (every figure, plus versions, git commit, machine),
``suite.md`` (the tables, for notes and the README), ``store-<store>.png`` and
``dataset-<version>-<store>.png``.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np
import pyarrow as pa

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)


def make_table(rows: int, seed: int = 0, dim: int = 64) -> pa.Table:
    """``rows`` rows: int64 id, float64 value, string name (5-20 chars), ``dim``-dim float32 vector."""
    rng = np.random.default_rng(seed)
    words = np.array([f"name-{i:06d}-" + "x" * (i % 9) for i in range(100_000)])
    vec = pa.array(rng.standard_normal(rows * dim, dtype=np.float32))
    return pa.table({
        "id": pa.array(np.arange(rows, dtype=np.int64)),
        "value": pa.array(rng.standard_normal(rows)),
        "name": pa.array(words[rng.integers(0, len(words), rows)]),
        "vector": pa.FixedSizeListArray.from_arrays(vec, dim),
    })


def git_commit() -> str:
    try:
        return subprocess.run(["git", "-C", os.path.dirname(HERE), "rev-parse", "HEAD"], capture_output=True,
                              text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def environment() -> dict:
    import pyarrow

    env = {"python": platform.python_version(), "machine": platform.machine(), "cpus": os.cpu_count(),
           "platform": platform.platform(), "pyarrow": pyarrow.__version__, "git_commit": git_commit(),
           "date_utc": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")}
    try:
        import lance

        env["pylance"] = lance.__version__
    except ImportError:
        env["pylance"] = None
    return env


def upload_dir(local: str, uri: str, options: dict) -> None:
    from lancejit.io import join_path, open_store, run_sync

    store, base = open_store(uri, options)
    for dirpath, _, files in os.walk(local):
        for name in files:
            full = os.path.join(dirpath, name)
            rel = os.path.relpath(full, local).replace(os.sep, "/")
            with open(full, "rb") as f:
                run_sync(store.put(join_path(base, rel), f.read()))


def markdown(report: dict) -> str:
    """The suite's tables as Markdown: per version and store, take/scan figures per system."""
    from lancejit.bench.report import human_bytes

    lines = [f"# lancejit benchmark suite ({report['environment']['date_utc']})", "",
             f"commit `{report['environment']['git_commit'][:12]}`, pylance {report['environment']['pylance']}, "
             f"pyarrow {report['environment']['pyarrow']}, {report['environment']['cpus']} CPUs; "
             f"{report['rows']} rows (id int64, value float64, name string, vector 64 x float32), "
             f"{report['rows_per_file']} rows per file; Parquet copy written by pyarrow with "
             f"{report['parquet_row_group_size'] or 'default'} rows per row group.  Takes: "
             f"{report['repeats']} random draws per size (same rows for every system); requests and bytes by each "
             "library's own counters (Parquet: a counting file object over lancejit's store).", ""]
    for st in report["stores"]:
        lines.append(f"## store {st['store']}")
        lines.append("")
        lines.append("| size | concurrency | p50 ms | p99 ms | IOPS | MiB/s |")
        lines.append("|---:|---:|---:|---:|---:|---:|")
        for p in st["result"]["points"]:
            lines.append(f"| {human_bytes(p['size'])} | {p['concurrency']} | {p['p50'] * 1e3:.3f} | "
                         f"{p['p99'] * 1e3:.3f} | {p['iops']:,.0f} | {p['throughput_bytes_per_s'] / 2**20:,.1f} |")
        lines.append("")
    for ds in report["datasets"]:
        r = ds["result"]
        lines.append(f"## Lance {ds['version']} on {ds['store']}")
        lines.append("")
        lines.append("| op | rows | system | p50 ms | p99 ms | pred. I/O ms | requests | planned | bytes read "
                     "| returned | ampl. |")
        lines.append("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|")
        for s in r["results"]:
            pred = "" if s["predicted_s"] is None else f"{s['predicted_s'] * 1e3:.2f}"
            planned = "" if s["planned_requests"] is None else f"{s['planned_requests']:.1f}"
            amp = "" if s["amplification"] is None else f"{s['amplification']:.2f}"
            lines.append(f"| {s['op']} | {s['rows']} | {s['system']} | {s['p50'] * 1e3:.2f} | {s['p99'] * 1e3:.2f} | "
                         f"{pred} | {s['requests']:.1f} | {planned} | {human_bytes(s['bytes_read'])} | "
                         f"{human_bytes(s['bytes_returned'])} | {amp} |")
        if r["errors"]:
            lines.append("")
            lines.extend(f"- {k}: not run ({v})" for k, v in r["errors"].items())
        lines.append("")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--rows-per-file", type=int, default=250_000)
    ap.add_argument("--versions", nargs="+", default=["2.1", "2.2"])
    ap.add_argument("--stores", default="local", help="comma-separated: local, s3 (moto)")
    ap.add_argument("--s3-rows", type=int, default=50_000, help="rows of the S3 datasets (moto is slow)")
    ap.add_argument("--sizes", default="1,100,1000")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--store-requests", type=int, default=256)
    ap.add_argument("--parquet-row-group-size", type=int, default=65536,
                    help="rows per row group of the Parquet copy (0: pyarrow's default, 1Mi rows)")
    ap.add_argument("--out", default=os.path.join(HERE, "out"))
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)

    import lance

    from lancejit.bench.dataset_bench import bench_dataset
    from lancejit.bench.model import LatencyModel
    from lancejit.bench.report import parse_list, write_json
    from lancejit.bench.store_bench import bench_store

    os.makedirs(args.out, exist_ok=True)
    sizes = parse_list(args.sizes, int)
    stores = parse_list(args.stores, str)
    report = {"kind": "suite", "environment": environment(), "rows": args.rows, "rows_per_file": args.rows_per_file,
              "versions": args.versions, "sizes": sizes,
              "parquet_row_group_size": args.parquet_row_group_size or None, "repeats": args.repeats, "stores": [], "datasets": []}
    work = tempfile.mkdtemp(prefix="lancejit-suite-")
    s3 = None
    try:
        if "s3" in stores:
            from s3_counter import CountingS3

            s3 = CountingS3().__enter__()
        table = make_table(args.rows, args.seed)
        for store in stores:
            if store == "local":
                base, options, rows = os.path.join(work, "local"), None, args.rows
                os.makedirs(base, exist_ok=True)
            elif store == "s3":
                base, options, rows = f"s3://{s3.bucket}/suite", s3.lancejit_options, args.s3_rows
            else:
                raise SystemExit(f"unknown store {store!r}")
            t0 = time.perf_counter()
            sres = bench_store(base, options, show_progress=True, requests=args.store_requests, seed=args.seed,
                               object_size=(32 << 20) if store == "local" else (16 << 20))
            print(sres.table(), flush=True)
            sres.plot(os.path.join(args.out, f"store-{store}.png"))
            report["stores"].append({"store": store, "seconds": time.perf_counter() - t0, "result": sres.to_dict()})
            model = LatencyModel.from_store_result(sres)
            for version in args.versions:
                local = os.path.join(work, f"ds-{version}-{store}")
                lance.write_dataset(table.slice(0, rows), local, data_storage_version=version,
                                    max_rows_per_file=min(args.rows_per_file, rows))
                uri = local
                if store == "s3":
                    uri = f"{base}/ds-{version}"
                    upload_dir(local, uri, options)
                t0 = time.perf_counter()
                dres = bench_dataset(uri, options, sizes=sizes, repeats=args.repeats, compare=True, model=model,
                                     seed=args.seed, parquet_row_group_size=args.parquet_row_group_size or None)
                print(dres.table(), flush=True)
                dres.plot(os.path.join(args.out, f"dataset-{version}-{store}.png"))
                report["datasets"].append({"version": version, "store": store, "rows": rows,
                                           "seconds": time.perf_counter() - t0, "result": dres.to_dict()})
                shutil.rmtree(local, ignore_errors=True)
        write_json(report, os.path.join(args.out, "suite.json"))
        with open(os.path.join(args.out, "suite.md"), "w", encoding="utf-8") as f:
            f.write(markdown(report) + "\n")
        print(f"wrote {args.out}/suite.json, suite.md and plots", flush=True)
    finally:
        if s3 is not None:
            from lancejit.io import open_store, run_sync

            run_sync(open_store(f"s3://{s3.bucket}/suite", s3.lancejit_options)[0].aclose())
            s3.__exit__(None, None, None)
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
