"""Issue 3/4 benchmark: lancejit vs the reference (pylance) reading the same Lance files.

Run:  .venv/bin/python perf/file_read.py [--rows 1000000] [--versions 2.1 2.2] [--json out.json]

For each file version it writes, with pylance, a scalar file (int64, float64, string) and a
vector file (fixed_size_list<float32, 128>), then measures on local disk, in one run:
  * take of 1,000 random rows (3 columns) with metadata cached,
  * full scans of the scalar columns and of the vector column (a fresh reader each time),
and prints time ratios lancejit / reference (below 1.0 = lancejit faster).  The two libraries
run alternately (one sample each, in turn) so that load from other processes hits both alike;
the ratio uses medians, the minimum of each is printed too.  Request counts and bytes are
counted server-side on a moto S3 server for both libraries (machine-independent): opening,
the first take (page metadata not yet cached) and a second take (cached).  lancejit's local
take requests (its own counters) are printed as well.
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


def make_tables(rows: int, vec_rows: int, seed: int = 0) -> tuple[pa.Table, pa.Table]:
    rng = np.random.default_rng(seed)
    words = np.array([f"w{i:05d}-{'x' * (i % 13)}" for i in range(50_000)])
    scalar = pa.table({
        "id": pa.array(np.arange(rows, dtype=np.int64)),
        "value": pa.array(rng.standard_normal(rows)),
        "name": pa.array(words[rng.integers(0, len(words), rows)]),
    })
    vec = rng.standard_normal(vec_rows * 128).astype(np.float32)
    vector = pa.table({"vec": pa.FixedSizeListArray.from_arrays(pa.array(vec), 128)})
    return scalar, vector


def timed_pair(ref_fn, lj_fn, repeat: int) -> dict:
    """Alternate the two functions ``repeat`` times: wall-clock medians and minima, the median
    ratio, and process CPU time medians (all threads; JSON only: in some sandboxes the process
    CPU clock just follows wall time)."""
    ref_s, lj_s, ref_c, lj_c = [], [], [], []
    for _ in range(repeat):
        for fn, out, cpu in ((ref_fn, ref_s, ref_c), (lj_fn, lj_s, lj_c)):
            c0 = time.process_time()
            t0 = time.perf_counter()
            fn()
            out.append(time.perf_counter() - t0)
            cpu.append(time.process_time() - c0)
    r, j = statistics.median(ref_s), statistics.median(lj_s)
    rc, jc = statistics.median(ref_c), statistics.median(lj_c)
    return {"reference": r, "lancejit": j, "ratio": j / r,
            "reference_min": min(ref_s), "lancejit_min": min(lj_s),
            "reference_cpu": rc, "lancejit_cpu": jc, "cpu_ratio": jc / rc if rc else float("nan")}


def bench_version(version: str, scalar: pa.Table, vector: pa.Table, tmp: str, s3: CountingS3,
                  take_n: int, repeat: int) -> dict:
    import lance.file as ref

    import lancejit

    paths = {}
    for name, tbl in (("scalar", scalar), ("vector", vector)):
        p = os.path.join(tmp, f"{name}_{version}.lance")
        with ref.LanceFileWriter(p, version=version) as w:
            w.write_batch(tbl)
        paths[name] = p
    rng = np.random.default_rng(1)
    idx = np.sort(rng.choice(scalar.num_rows, take_n, replace=False))
    out: dict = {"version": version, "rows": scalar.num_rows, "vector_rows": vector.num_rows}

    # --- local timings -------------------------------------------------------------------
    r_ref = ref.LanceFileReader(paths["scalar"])
    r_lj = lancejit.LanceFileReader(paths["scalar"])
    cols = ["id", "value", "name"]
    assert r_lj.take_rows(idx, columns=cols).equals(r_ref.take_rows(idx).to_table().select(cols))
    out["take_1000_s"] = timed_pair(lambda: r_ref.take_rows(idx).to_table(),
                                    lambda: r_lj.take_rows(idx, columns=cols), repeat)
    before = r_lj.io_stats().read_iops
    r_lj.take_rows(idx, columns=cols)
    out["lancejit_local_take_requests"] = r_lj.io_stats().read_iops - before

    scan_repeat = max(3, repeat // 3)
    out["scan_scalar_s"] = timed_pair(lambda: ref.LanceFileReader(paths["scalar"]).read_all().to_table(),
                                      lambda: lancejit.LanceFileReader(paths["scalar"]).read_all(), scan_repeat)
    out["scan_vector_s"] = timed_pair(lambda: ref.LanceFileReader(paths["vector"]).read_all().to_table(),
                                      lambda: lancejit.LanceFileReader(paths["vector"]).read_all(), scan_repeat)

    # --- request counts on S3 (server-side) ----------------------------------------------
    uri = s3.upload(paths["scalar"], f"scalar_{version}.lance")
    counts: dict = {}
    s3.log.reset()
    r_ref = ref.LanceFileReader(uri, storage_options=s3.reference_options)
    counts["reference_open"] = s3.log.snapshot()
    s3.log.reset()
    r_ref.take_rows(idx).to_table()
    counts["reference_take"] = s3.log.snapshot()
    s3.log.reset()
    r_ref.take_rows(idx).to_table()
    counts["reference_take_warm"] = s3.log.snapshot()
    s3.log.reset()
    r_lj = lancejit.LanceFileReader(uri, storage_options=s3.lancejit_options)
    counts["lancejit_open"] = s3.log.snapshot()
    s3.log.reset()
    r_lj.take_rows(idx, columns=cols)
    counts["lancejit_take"] = s3.log.snapshot()
    s3.log.reset()
    r_lj.take_rows(idx, columns=cols)
    counts["lancejit_take_warm"] = s3.log.snapshot()
    out["s3_requests"] = counts
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--vector-rows", type=int, default=100_000)
    ap.add_argument("--versions", nargs="+", default=["2.1", "2.2"])
    ap.add_argument("--take", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=15)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    scalar, vector = make_tables(args.rows, args.vector_rows)
    results = []
    with tempfile.TemporaryDirectory() as tmp, CountingS3() as s3:
        for v in args.versions:
            res = bench_version(v, scalar, vector, tmp, s3, args.take, args.repeat)
            results.append(res)
            print(f"== file version {v}: {args.rows:,} scalar rows, {args.vector_rows:,} vectors")
            for k in ("take_1000_s", "scan_scalar_s", "scan_vector_s"):
                r = res[k]
                print(f"  {k:14s} reference {r['reference'] * 1e3:8.2f} ms (min {r['reference_min'] * 1e3:7.2f})"
                      f"  lancejit {r['lancejit'] * 1e3:8.2f} ms (min {r['lancejit_min'] * 1e3:7.2f})"
                      f"  ratio {r['ratio']:.2f}")
            print(f"  lancejit local take requests (metadata cached): {res['lancejit_local_take_requests']}")
            c = res["s3_requests"]
            for who in ("reference", "lancejit"):
                print(f"  S3 {who:9s} open: {c[who + '_open']['get']} GETs / {c[who + '_open']['bytes']:,} B;"
                      f"  take {args.take}: {c[who + '_take']['get']} GETs / {c[who + '_take']['bytes']:,} B;"
                      f"  again: {c[who + '_take_warm']['get']} GETs / {c[who + '_take_warm']['bytes']:,} B")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)


if __name__ == "__main__":
    main()
