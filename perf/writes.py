"""Table writes and maintenance, lancejit vs the reference (pylance 14), side by side in one run.

Run:  .venv/bin/python perf/writes.py [--rows 1000000] [--layouts 4,10,1000] [--reps 3]
                                      [--only delete,update,...] [--s3] [--s3-reps 2] [--profile]

Data (seeded, written by the reference, cached under ``perf/data/writes/``): ``--rows`` rows of
``id`` int64 (0..n-1), ``x`` float64 (normal), ``s`` string, as 4 / 10 / 1,000 fragments
(``--layouts``), and, for the compaction case of the issue, 400,000 rows as 1,000 fragments of
400 rows with 20% of the rows deleted.  Each operation runs on fresh copies of the same dataset
(one per library and sample, copied and read into the page cache before timing; the dataset
object is opened untimed: a warm process, as a service would hold it):

* ``delete``: ``delete("id % 10 = 3")``;
* ``update``: ``update({"x": "x + 1"}, where="id < 100000")``;
* ``add_columns``: ``add_columns({"y": "x * 2"})``;
* ``merge_insert``: upsert of 50,000 keys (``id`` 0, 40, 80, ...: half match) on ``id``;
* ``compact``: ``optimize.compact_files()`` (the layouts' fragments merged into one);
* ``compact_400``: ``optimize.compact_files()`` of the 1,000 x 400-row fragments with deletions;
* ``write_20`` / ``write_21`` / ``write_22``: ``write_dataset`` of ``--rows`` rows, that file version.

Each sample alternates the libraries (order flipped every sample); one untimed warm-up sample per
operation comes first.  Ratios are lancejit's median / the reference's median, of wall time
and of CPU time (``time.process_time`` around the operation: every thread of the process).  On
a loaded shared machine a process's wall time also depends on how many runnable threads it has
(each gets its share of the cores): the CPU columns compare the work done.  After the run,
both libraries' results are read back with pylance and compared (rows equal, sorted by ``id``,
and for compaction the same fragment layout).  ``--s3``: the same operations on a moto S3 server
(``perf/s3_counter.py``, in its own process: its CPU is not counted) with wall and CPU time and the
requests and bytes counted server-side (``--profile`` prints each
library's requests by kind and by dataset area, and lancejit's Python calls per operation).  The
machine is shared: compare the columns of one run, not absolute times across runs.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import time
from typing import Any, Callable

import numpy as np
import pyarrow as pa

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
os.environ.setdefault("LANCE_LOG", "error")
os.environ.setdefault("RUST_LOG", "error")

DATA = os.path.join(HERE, "data", "writes")
WORK = os.path.join(HERE, "data", "writes-work")
MUTATIONS = ("delete", "update", "add_columns", "merge_insert", "compact")
WRITES = ("write_20", "write_21", "write_22")


def make_table(rows: int, seed: int = 0) -> pa.Table:
    rng = np.random.default_rng(seed)
    ids = np.arange(rows, dtype=np.int64)
    s = pa.array([f"str-{i % 1000}-{i}" for i in ids.tolist()], pa.string())
    return pa.table({"id": ids, "x": rng.standard_normal(rows), "s": s})


def upsert_source(rows: int) -> pa.Table:
    ids = np.arange(0, 2 * rows, 40, dtype=np.int64)[:50_000]
    return pa.table({"id": ids, "x": np.ones(len(ids)), "s": pa.array([f"new-{i}" for i in ids.tolist()])})


def ensure(name: str, build: Callable[[str], None]) -> str:
    path = os.path.join(DATA, name)
    if not os.path.exists(os.path.join(path, ".complete")):
        shutil.rmtree(path, ignore_errors=True)
        build(path)
        open(os.path.join(path, ".complete"), "w").close()
    return path


def layout_dataset(rows: int, fragments: int) -> str:
    import lance

    def build(path: str) -> None:
        lance.write_dataset(make_table(rows), path, max_rows_per_file=-(-rows // fragments))

    return ensure(f"rows{rows}-frags{fragments}", build)


def compaction_dataset() -> str:
    import lance

    def build(path: str) -> None:
        ds = lance.write_dataset(make_table(400_000, seed=1), path, max_rows_per_file=400)
        ds.delete("id % 5 = 0")

    return ensure("frags1000x400-deleted", build)


def op_of(name: str, rows: int) -> Callable[[Any], Any]:
    src = upsert_source(rows)
    return {
        "delete": lambda d: d.delete("id % 10 = 3"),
        "update": lambda d: d.update({"x": "x + 1"}, where="id < 100000"),
        "add_columns": lambda d: d.add_columns({"y": "x * 2"}),
        "merge_insert": lambda d: d.merge_insert("id").when_matched_update_all().when_not_matched_insert_all()
        .execute(src),
        "compact": lambda d: d.optimize.compact_files(),
        "compact_400": lambda d: d.optimize.compact_files(),
    }[name]


# ---------------------------------------------------------------------------- local disk
def _copy(base: str, dest: str) -> str:
    import pagecache

    shutil.rmtree(dest, ignore_errors=True)
    shutil.copytree(base, dest, ignore=shutil.ignore_patterns(".complete"))
    pagecache.warm(dest)
    return dest


def _libs() -> dict[str, Any]:
    import lance

    import lancejit

    return {"lancejit": lancejit, "reference": lance}


def alternate(reps: int, sample: Callable[[str, Any], tuple[float, float, str]]
              ) -> tuple[dict[str, list[tuple[float, float]]], dict[str, str]]:
    """``sample(who, library) -> (seconds, CPU seconds, result path)`` run ``reps`` times per
    library after one untimed warm-up, alternating the libraries (order flipped every sample);
    returns the (wall, CPU) times per library and the last results."""
    libs = _libs()
    times: dict[str, list[tuple[float, float]]] = {k: [] for k in libs}
    last: dict[str, str] = {}
    for i in range(reps + 1):
        for who in (list(libs) if i % 2 == 0 else list(libs)[::-1]):
            dt, cpu, last[who] = sample(who, libs[who])
            if i:
                times[who].append((dt, cpu))
    return times, last


def _timed(fn: Callable[[], Any]) -> tuple[float, float]:
    """Wall and CPU seconds (every thread of this process) of ``fn()``."""
    t0, c0 = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - t0, time.process_time() - c0


def time_op(base: str, op: Callable[[Any], Any], reps: int) -> tuple[dict, dict[str, str]]:
    """Times of ``op`` per library on fresh copies of ``base`` (opened untimed)."""

    def sample(who: str, lib: Any) -> tuple[float, float, str]:
        path = _copy(base, os.path.join(WORK, who))
        d = lib.dataset(path)
        return (*_timed(lambda: op(d)), path)

    return alternate(reps, sample)


def time_write(version: str, table: pa.Table, reps: int) -> tuple[dict, dict[str, str]]:
    """Times of ``write_dataset(table)`` per library in file version ``version``."""

    def sample(who: str, lib: Any) -> tuple[float, float, str]:
        path = os.path.join(WORK, f"{who}-write")
        shutil.rmtree(path, ignore_errors=True)
        return (*_timed(lambda: lib.write_dataset(table, path, data_storage_version=version)), path)

    return alternate(reps, sample)


def same_result(paths: dict[str, str], storage_options: dict | None = None) -> str:
    """'equal' when pylance reads the same rows (sorted by id) and fragment row counts from both."""
    import lance

    got = []
    for who in ("lancejit", "reference"):
        ds = lance.dataset(paths[who], storage_options=storage_options)
        t = ds.to_table()
        t = t.sort_by("id") if "id" in t.column_names else t
        got.append((t, [f.count_rows() for f in ds.get_fragments()]))
    (a, fa), (b, fb) = got
    if not a.equals(b):
        return "ROWS DIFFER"
    return "equal" if fa == fb else f"equal rows, fragments {fa[:6]} vs {fb[:6]}"


# ---------------------------------------------------------------------------- S3
def upload(s3: Any, base: str, key: str) -> str:
    import requests

    for root, _, files in os.walk(base):
        for f in files:
            if f == ".complete":
                continue
            p = os.path.join(root, f)
            with open(p, "rb") as fh:
                requests.put(f"{s3.endpoint}/{s3.bucket}/{key}/{os.path.relpath(p, base)}", data=fh.read())
    return f"s3://{s3.bucket}/{key}"


def s3_op(s3: Any, base: str, name: str, op: Callable[[Any], Any], reps: int,
          counter: list[int]) -> tuple[dict, dict[str, dict], dict[str, str]]:
    counts: dict[str, dict] = {}

    def sample(who: str, lib: Any) -> tuple[float, float, str]:
        counter[0] += 1
        uri = upload(s3, base, f"{who}-{name}-{counter[0]}")
        opts = s3.reference_options if who == "reference" else s3.lancejit_options
        d = lib.dataset(uri, storage_options=opts)
        s3.log.reset()
        dt, cpu = _timed(lambda: op(d))
        time.sleep(0.3)  # requests a library leaves in flight are counted too
        counts[who] = s3.log.snapshot()
        return dt, cpu, uri

    times, last = alternate(reps, sample)
    return times, counts, last


def python_calls(base: str, op: Callable[[Any], Any]) -> int:
    import cProfile
    import pstats

    import lancejit

    d = lancejit.dataset(_copy(base, os.path.join(WORK, "lancejit")))
    pr = cProfile.Profile()
    pr.enable()
    op(d)
    pr.disable()
    return int(pstats.Stats(pr).total_calls)


# ---------------------------------------------------------------------------- report
def med(xs: list[tuple[float, float]], k: int = 0) -> float:
    """Median wall (``k`` 0) or CPU (1) milliseconds."""
    return statistics.median(x[k] for x in xs) * 1e3


def row(label: str, times: dict, check: str, extra: str = "") -> str:
    j, r = med(times["lancejit"]), med(times["reference"])
    cj, cr = med(times["lancejit"], 1), med(times["reference"], 1)
    return f"| {label} | {r:.0f} | {j:.0f} | {j / r:.2f} | {cr:.0f} | {cj:.0f} | {cj / cr:.2f} | {check} |{extra}"


def fmt_counts(c: dict) -> str:
    req = c["requests"]
    parts = [f"{k} {v}" for k, v in sorted(req.items())]
    return f"{c['total']} ({', '.join(parts)})"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--layouts", default="4,10,1000", help="fragment counts of the --rows datasets")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--only", default="", help="comma-separated operations")
    ap.add_argument("--s3", action="store_true", help="also on the S3 emulator, requests counted")
    ap.add_argument("--s3-only", action="store_true")
    ap.add_argument("--s3-reps", type=int, default=2)
    ap.add_argument("--s3-layouts", default="4")
    ap.add_argument("--profile", action="store_true", help="requests by kind and area; Python calls")
    args = ap.parse_args()
    only = set(filter(None, args.only.split(",")))

    def wanted(name: str) -> bool:
        return not only or name in only

    os.makedirs(WORK, exist_ok=True)
    layouts = [int(x) for x in args.layouts.split(",") if x]
    load = open("/proc/loadavg").read().split()[0] if os.path.exists("/proc/loadavg") else "?"
    print(f"{args.rows:,} rows (id int64, x float64, s string), written by pylance; shared machine, load {load}")
    if not args.s3_only:
        print(f"\nLocal disk: median of {args.reps} alternated samples after a warm-up; wall and CPU (all threads "
              "of the process) ms")
        print("\n| operation | reference | lancejit | ratio | reference CPU | lancejit CPU | CPU ratio | results |")
        print("|---|---:|---:|---:|---:|---:|---:|---|")
        for frags in layouts:
            base = layout_dataset(args.rows, frags)
            for name in MUTATIONS:
                if not wanted(name):
                    continue
                times, last = time_op(base, op_of(name, args.rows), args.reps)
                extra = ""
                if args.profile:
                    extra = f" {python_calls(base, op_of(name, args.rows)):,} Python calls"
                print(row(f"{name}, {frags} fragments", times, same_result(last), extra), flush=True)
        if wanted("compact_400"):
            base = compaction_dataset()
            times, last = time_op(base, op_of("compact_400", args.rows), args.reps)
            print(row("compact_files, 1,000 x 400 rows, 20% deleted", times, same_result(last)), flush=True)
        table = make_table(args.rows) if any(wanted(w) for w in WRITES) else None
        for w in WRITES:
            if wanted(w):
                version = f"{w[-2]}.{w[-1]}"
                times, last = time_write(version, table, args.reps)
                print(row(f"write_dataset {args.rows:,} rows, file version {version}", times, same_result(last)),
                      flush=True)
    if args.s3 or args.s3_only:
        from s3_counter import CountingS3

        counter = [0]
        print(f"\nS3 emulator (moto, 127.0.0.1, its own process), median of {args.s3_reps}; requests counted "
              "server-side (last sample)")
        print("\n| operation | reference ms | lancejit ms | ratio | CPU ms ref / lancejit | CPU ratio | "
              "reference requests | lancejit requests | bytes written ref / lancejit | results |")
        print("|---|---:|---:|---:|---:|---:|---|---|---|---|")
        with CountingS3(separate_process=True) as s3:
            cases = [(f"{n}, {f} fragments", layout_dataset(args.rows, f), n)
                     for f in (int(x) for x in args.s3_layouts.split(",") if x) for n in MUTATIONS]
            cases.append(("compact_files, 1,000 x 400 rows, 20% deleted", compaction_dataset(), "compact_400"))
            for label, base, name in cases:
                if not wanted(name):
                    continue
                times, counts, last = s3_op(s3, base, name, op_of(name, args.rows), args.s3_reps, counter)
                j, r = med(times["lancejit"]), med(times["reference"])
                uj, ur = med(times["lancejit"], 1), med(times["reference"], 1)
                cj, cr = counts["lancejit"], counts["reference"]
                check = same_result(last, s3.reference_options)
                print(f"| {label} | {r:.0f} | {j:.0f} | {j / r:.2f} | {ur:.0f} / {uj:.0f} | {uj / ur:.2f} | "
                      f"{fmt_counts(cr)} | {fmt_counts(cj)} | {cr['bytes_in']:,} / {cj['bytes_in']:,} | {check} |",
                      flush=True)
                if args.profile:
                    for who, c in (("reference", cr), ("lancejit", cj)):
                        print(f"|   {who}: by kind {c['kinds']}, by area {c['areas']}, "
                              f"bytes read {c['bytes']:,} |")
    shutil.rmtree(WORK, ignore_errors=True)


if __name__ == "__main__":
    main()
