"""Issue 12 benchmark: service-grade takes, lancejit vs the reference (pylance 14.0.2), on the
same files in one run.

Run:  .venv/bin/python perf/service.py [--quick] [--label after] [--only take,conc,frag2000,fresh,scale,io,s3,calls]

Datasets (written once by pylance, Lance 2.2, cached under ``perf/data/``; delete to rebuild):
  * ``one_1m``: 1,000,000 rows (id int64, x float64, s string, v fixed_size_list<float32,64>)
    in one fragment;
  * ``frag_2000``: the same rows as 2,000 fragments of 500 rows;
  * ``scale_{n}``: n fragments of 20 rows (same schema) for n in 10 / 100 / 1,000 / 10,000.

Measured (columns id,x,s; ratio = lancejit / reference; lower is better except throughput):
  * take p50 of 1 / 10 / 100 / 1,000 random rows (sync ``ds.take``, warm dataset objects);
  * throughput of 400 ``take_async`` of 10 rows with 32 in flight (one event loop) vs the
    reference's ``take`` on 32 threads (takes/s; ratio = lancejit / reference, higher is better);
  * on ``frag_2000``: take 1 / take 100 p50 and open + ``count_rows()`` (a new dataset object
    each time, nothing cached);
  * a fresh process (subprocess): import + ``dataset()`` + a 3-row take, timed inside the child
    from before the import (one untimed run first so the kernel cache is warm);
  * cost per take (1 and 100 rows) and open + count at 10 / 100 / 1,000 / 10,000 fragments
    (takes warm: one row of every fragment taken first by both, as in a long-running service;
    the 2,000-fragment takes are measured both before that warm-up and after);
  * requests and bytes per take (lancejit ``ds.io_stats()``, reference ``io_stats_incremental()``),
    and on a moto S3 server counted server-side (open + first take, then a second take);
  * Python calls per 1-row take (cProfile, all threads lancejit runs the take on), with the share
    of calls into and issued from ``lancejit/table/``; and per 100-row take on ``frag_2000`` with
    every file open, per touched fragment (the multi-file take's per-fragment control plane).

Timings alternate lancejit / reference sample by sample and report medians (the machine is
shared, absolute times are noisy; compare ratios of one run).  Results of both libraries are
checked equal before timing.  Prints a markdown table; writes ``perf/out/service[-label].json``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable

import numpy as np
import pyarrow as pa

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "data")
OUT = os.path.join(HERE, "out")
COLUMNS = ["id", "x", "s"]
TOTAL_ROWS = 1_000_000
SCALE_FRAGMENTS = (10, 100, 1_000, 10_000)
SCALE_ROWS_PER_FRAGMENT = 20


# ---------------------------------------------------------------------------- datasets
def make_table(rows: int, seed: int = 0) -> pa.Table:
    rng = np.random.default_rng(seed)
    vec = rng.standard_normal((rows, 64)).astype(np.float32)
    words = np.array([f"s{i:05d}-{'x' * (i % 17)}" for i in range(10_000)])
    return pa.table({
        "id": pa.array(np.arange(rows, dtype=np.int64)),
        "x": pa.array(rng.standard_normal(rows)),
        "s": pa.array(words[rng.integers(0, len(words), rows)]),
        "v": pa.FixedSizeListArray.from_arrays(pa.array(vec.reshape(-1)), 64),
    })


def ensure(name: str, rows: int, rows_per_file: int) -> str:
    """The dataset ``perf/data/<name>`` (written by pylance once; a marker file says it is complete)."""
    import lance

    sys.path.insert(0, HERE)
    import pagecache

    path = os.path.join(DATA, name)
    marker = os.path.join(DATA, f"{name}.done")
    if not os.path.exists(marker):
        if os.path.exists(path):
            import shutil

            shutil.rmtree(path)
        os.makedirs(DATA, exist_ok=True)
        t0 = time.perf_counter()
        lance.write_dataset(make_table(rows), path, data_storage_version="2.2",
                            max_rows_per_file=rows_per_file, max_rows_per_group=min(rows_per_file, 1024),
                            mode="create")
        open(marker, "w").close()
        print(f"# wrote {name}: {rows} rows, {rows_per_file} rows per file, {time.perf_counter() - t0:.1f} s",
              file=sys.stderr)
    pagecache.warm(path)  # neither library pays the other's disk reads
    return path


# ---------------------------------------------------------------------------- timing helpers
def alternate(fns: tuple[Callable[[Any], Any], Callable[[Any], Any]], args: list[Any]) -> tuple[float, float]:
    """Median seconds of ``fns[0](a)`` and ``fns[1](a)`` over ``args``, alternating per sample."""
    a, b = [], []
    for x in args:
        t0 = time.perf_counter()
        fns[0](x)
        t1 = time.perf_counter()
        fns[1](x)
        t2 = time.perf_counter()
        a.append(t1 - t0)
        b.append(t2 - t1)
    return statistics.median(a), statistics.median(b)


def open_both(path: str):
    import lance

    import lancejit.table as lt

    return lt.dataset(path), lance.dataset(path)


def check_equal(ours, ref, idx: np.ndarray) -> None:
    a = ours.take(idx, columns=COLUMNS)
    b = ref.take(idx, columns=COLUMNS)
    if not a.equals(b):
        raise SystemExit(f"results differ for a {len(idx)}-row take")


def take_p50(ours, ref, rows: int, n: int, reps: int, rng: np.random.Generator) -> dict:
    idxs = [rng.integers(0, rows, n) for _ in range(reps)]
    check_equal(ours, ref, idxs[0])
    for i in idxs[:3]:  # warm
        ours.take(i, columns=COLUMNS)
        ref.take(i, columns=COLUMNS)
    lj, rf = alternate((lambda i: ours.take(i, columns=COLUMNS), lambda i: ref.take(i, columns=COLUMNS)), idxs)
    return {"lancejit_ms": lj * 1e3, "reference_ms": rf * 1e3, "ratio": lj / rf}


def alone_p50(ours, idxs: list[np.ndarray]) -> float:
    """p50 ms of lancejit's takes run back to back, not alternated with the reference.

    Alternated samples include what the previous reference call leaves behind (its worker threads
    still running, CPU caches refilled with its data), which grows with the reference's work; this
    number shows lancejit's own cost per take."""
    out = []
    for i in idxs:
        t0 = time.perf_counter()
        ours.take(i, columns=COLUMNS)
        out.append(time.perf_counter() - t0)
    return statistics.median(out) * 1e3


# ---------------------------------------------------------------------------- sections
def section_take(path: str, quick: bool, rng) -> list[dict]:
    ours, ref = open_both(path)
    out = []
    for n, reps in ((1, 400), (10, 300), (100, 150), (1000, 40)):
        reps = max(10, reps // 4) if quick else reps
        r = take_p50(ours, ref, TOTAL_ROWS, n, reps, rng)
        out.append({"work": f"1 fragment: take {n} p50", **r})
    return out


def section_concurrency(path: str, quick: bool, rng) -> dict:
    ours, ref = open_both(path)
    n_takes, in_flight = (100 if quick else 400), 32
    batches = [rng.integers(0, TOTAL_ROWS, 10) for _ in range(n_takes)]

    async def run_ours() -> None:
        sem = asyncio.Semaphore(in_flight)

        async def one(i: np.ndarray) -> None:
            async with sem:
                await ours.take_async(i, columns=COLUMNS)

        await asyncio.gather(*(one(i) for i in batches))

    pool = ThreadPoolExecutor(in_flight)

    def run_ref() -> None:
        list(pool.map(lambda i: ref.take(i, columns=COLUMNS), batches))

    asyncio.run(run_ours())  # warm
    run_ref()
    lj, rf = [], []
    for _ in range(2 if quick else 3):
        t0 = time.perf_counter()
        asyncio.run(run_ours())
        t1 = time.perf_counter()
        run_ref()
        t2 = time.perf_counter()
        lj.append(n_takes / (t1 - t0))
        rf.append(n_takes / (t2 - t1))
    pool.shutdown()
    a, b = statistics.median(lj), statistics.median(rf)
    return {"work": f"{n_takes} take_async x 10 rows, {in_flight} in flight (takes/s)",
            "lancejit_tps": a, "reference_tps": b, "ratio": a / b}


def open_count(path: str, reps: int) -> dict:
    import lance

    import lancejit.table as lt

    want = lance.dataset(path).count_rows()
    got = lt.dataset(path).count_rows()
    if got != want:
        raise SystemExit(f"count_rows differs: {got} vs {want}")
    lj, rf = alternate((lambda _: lt.dataset(path).count_rows(), lambda _: lance.dataset(path).count_rows()),
                       list(range(reps)))
    return {"lancejit_ms": lj * 1e3, "reference_ms": rf * 1e3, "ratio": lj / rf}


def warm_all(ours, ref, rows: int, fragments: int) -> None:
    """One row of every fragment taken by both libraries: every data file's metadata cached."""
    first = np.arange(0, rows, rows // fragments)
    for part in np.array_split(first, max(1, len(first) // 1000)):
        ours.take(part, columns=COLUMNS)
        ref.take(part, columns=COLUMNS)


def section_frag2000(path: str, quick: bool, rng) -> list[dict]:
    ours, ref = open_both(path)
    out = []
    for n, reps in ((1, 200), (100, 60)):
        reps = max(10, reps // 4) if quick else reps
        out.append({"work": f"2,000 fragments: take {n} p50 (cold files)", **take_p50(ours, ref, TOTAL_ROWS, n, reps, rng)})
    warm_all(ours, ref, TOTAL_ROWS, 2000)
    for n, reps in ((1, 200), (100, 60)):
        reps = max(10, reps // 4) if quick else reps
        out.append({"work": f"2,000 fragments: take {n} p50 (warm)", **take_p50(ours, ref, TOTAL_ROWS, n, reps, rng)})
    out.append({"work": "2,000 fragments: open + count_rows", **open_count(path, 5 if quick else 15)})
    return out


FRESH = """
import time, sys
t0 = time.perf_counter()
if sys.argv[1] == "lancejit":
    import lancejit
    ds = lancejit.dataset(sys.argv[2])
else:
    import lance
    ds = lance.dataset(sys.argv[2])
t = ds.take([1, 500_000, 999_999], columns=["id", "x", "s"])
assert t.num_rows == 3
print(time.perf_counter() - t0)
"""


def section_fresh(path: str, quick: bool) -> dict:
    def run(who: str) -> float:
        res = subprocess.run([sys.executable, "-c", FRESH, who, path], capture_output=True, text=True, check=True)
        return float(res.stdout.strip().splitlines()[-1])

    run("lancejit")  # kernel cache warm, files in the page cache
    run("reference")
    lj, rf = [], []
    for _ in range(3 if quick else 7):
        lj.append(run("lancejit"))
        rf.append(run("reference"))
    a, b = statistics.median(lj), statistics.median(rf)
    return {"work": "fresh process: import + dataset() + 3-row take", "lancejit_ms": a * 1e3,
            "reference_ms": b * 1e3, "ratio": a / b}


def section_scale(quick: bool, rng) -> list[dict]:
    out = []
    for nfrag in SCALE_FRAGMENTS:
        rows = nfrag * SCALE_ROWS_PER_FRAGMENT
        path = ensure(f"scale_{nfrag}", rows, SCALE_ROWS_PER_FRAGMENT)
        ours, ref = open_both(path)
        warm_all(ours, ref, rows, nfrag)
        for n, reps in ((1, 200), (100, 60)):
            reps = max(10, reps // 4) if quick else reps
            row = {"work": f"{nfrag:,} fragments x 20 rows: take {n} p50 (warm)",
                   **take_p50(ours, ref, rows, n, reps, rng)}
            row["work"] += f" [lancejit alone: {alone_p50(ours, [rng.integers(0, rows, n) for _ in range(reps)]):.3f} ms]"
            out.append(row)
        out.append({"work": f"{nfrag:,} fragments x 20 rows: open + count_rows",
                    **open_count(path, 3 if quick else 7)})
    return out


def section_io(paths: dict[str, str], rng) -> list[dict]:
    out = []
    for name, path in paths.items():
        ours, ref = open_both(path)
        for n in (1, 100):
            idx = rng.integers(0, TOTAL_ROWS, n)
            ours.take(idx, columns=COLUMNS)  # the same take once first: metadata of the touched
            ref.take(idx, columns=COLUMNS)   # files cached, the per-take requests remain
            ours.io_stats()
            ref.io_stats_incremental()
            ours.take(idx, columns=COLUMNS)
            ref.take(idx, columns=COLUMNS)
            o, r = ours.io_stats(), ref.io_stats_incremental()
            out.append({"work": f"{name}: take {n} (warm) requests / bytes",
                        "lancejit_iops": o.read_iops, "lancejit_bytes": o.read_bytes,
                        "reference_iops": r.read_iops, "reference_bytes": r.read_bytes})
    return out


def section_s3(rng) -> list[dict]:
    """Requests counted server-side by a moto S3 server (perf/s3_counter.py): open + first take
    (cold) and a second take (warm) of 10 and 100 rows on the 100-fragment dataset."""
    import lance
    import requests

    import lancejit.table as lt

    sys.path.insert(0, HERE)
    from s3_counter import CountingS3

    path = ensure("scale_100", 100 * SCALE_ROWS_PER_FRAGMENT, SCALE_ROWS_PER_FRAGMENT)
    rows = 100 * SCALE_ROWS_PER_FRAGMENT
    out = []
    with CountingS3() as s3:
        for dirpath, _, files in os.walk(path):
            for name in files:
                full = os.path.join(dirpath, name)
                rel = os.path.relpath(full, path).replace(os.sep, "/")
                with open(full, "rb") as f:
                    requests.put(f"{s3.endpoint}/{s3.bucket}/ds/{rel}", data=f.read())
        uri = f"s3://{s3.bucket}/ds"
        for n in (10, 100):
            first, second = rng.integers(0, rows, n), rng.integers(0, rows, n)
            counts = {}
            for who in ("lancejit", "reference"):
                s3.log.reset()
                if who == "reference":
                    d = lance.dataset(uri, storage_options=s3.reference_options)
                else:
                    d = lt.dataset(uri, storage_options=s3.lancejit_options)
                d.take(first, columns=COLUMNS)
                counts[f"{who}_cold"] = s3.log.snapshot()
                s3.log.reset()
                d.take(second, columns=COLUMNS)
                counts[f"{who}_warm"] = s3.log.snapshot()
            for phase in ("cold", "warm"):
                a, b = counts[f"lancejit_{phase}"], counts[f"reference_{phase}"]
                out.append({"work": f"S3 (moto), 100 fragments: {'open + ' if phase == 'cold' else ''}take {n} "
                                    f"({phase}) requests / bytes",
                            "lancejit_iops": sum(a["requests"].values()), "lancejit_bytes": a["bytes"],
                            "reference_iops": sum(b["requests"].values()), "reference_bytes": b["bytes"]})
    return out


def profile_calls(path: str, rng, takes: int = 200) -> dict:
    """Python calls per 1-row sync take, counted on the caller's thread and lancejit's loop thread."""
    import pstats

    import lancejit.table as lt

    sys.path.insert(0, HERE)
    from take_calls import profile_sync

    ours = lt.dataset(path)
    idxs = [rng.integers(0, TOTAL_ROWS, 1) for _ in range(takes + 20)]
    here, loop = profile_sync(lambda i: ours.take(i, columns=COLUMNS), idxs)
    table_dir = os.sep + os.path.join("lancejit", "table") + os.sep
    total = into_table = from_table = 0
    for prof in (here, loop):
        for func, (_, nc, _, _, callers) in pstats.Stats(prof).stats.items():  # type: ignore[attr-defined]
            total += nc
            if table_dir in func[0]:
                into_table += nc
            for caller, cinfo in callers.items():
                if table_dir in caller[0]:
                    from_table += cinfo[1] if isinstance(cinfo, tuple) else cinfo
    # the on()/off() coroutines and run_sync of the profiler toggles are noise of a few calls
    return {"work": "python calls per 1-row take (sync, 2.2, id,x,s)", "calls_per_take": total / takes,
            "into_table_layer": into_table / takes, "issued_by_table_layer": from_table / takes}


def profile_calls_many(path: str, rng, takes: int = 20) -> dict:
    """Python calls per 100-row sync take on ``frag_2000`` with every data file already open
    (warm), and per touched fragment."""
    import lancejit.table as lt

    sys.path.insert(0, HERE)
    from take_calls import _count, profile_sync

    ours = lt.dataset(path)
    ours.take(np.arange(0, TOTAL_ROWS, 500), columns=COLUMNS)  # every file opened
    idxs = [rng.integers(0, TOTAL_ROWS, 100) for _ in range(takes + 20)]
    touched = float(np.mean([len(np.unique(i[:] // 500)) for i in idxs[20:]]))
    here, loop = profile_sync(lambda i: ours.take(i, columns=COLUMNS), idxs)
    total = _count(here, takes, None) + _count(loop, takes, None)
    return {"work": f"python calls per 100-row take, 2,000 fragments (warm; {touched:.0f} touched)",
            "calls_per_take": total, "per_fragment": total / touched}


def profile_calls_async(path: str, rng, takes: int = 200) -> dict:
    """Python calls per 1-row ``take_async`` on the caller's own event loop (the async core)."""
    import cProfile
    import pstats

    import lancejit.table as lt

    ours = lt.dataset(path)
    idxs = [rng.integers(0, TOTAL_ROWS, 1) for _ in range(takes)]
    prof = cProfile.Profile()

    async def go() -> None:
        for i in idxs[:20]:
            await ours.take_async(i, columns=COLUMNS)
        prof.enable()
        for i in idxs:
            await ours.take_async(i, columns=COLUMNS)
        prof.disable()

    asyncio.run(go())
    st = pstats.Stats(prof).stats  # type: ignore[attr-defined]
    total = sum(v[1] for v in st.values())
    return {"work": "python calls per 1-row take_async (own loop)", "calls_per_take": total / takes}


# ---------------------------------------------------------------------------- report
def fmt_row(r: dict) -> str:
    if "lancejit_tps" in r:
        return f"| {r['work']} | {r['lancejit_tps']:,.0f} | {r['reference_tps']:,.0f} | {r['ratio']:.2f} |"
    if "lancejit_iops" in r:
        return (f"| {r['work']} | {r['lancejit_iops']} req / {r['lancejit_bytes']:,} B | "
                f"{r['reference_iops']} req / {r['reference_bytes']:,} B | |")
    if "calls_per_take" in r:
        extra = ""
        if "into_table_layer" in r:
            extra = f" (table layer: {r['into_table_layer']:.0f} into, {r['issued_by_table_layer']:.0f} issued)"
        if "per_fragment" in r:
            extra = f" ({r['per_fragment']:.1f} per touched fragment)"
        return f"| {r['work']} | {r['calls_per_take']:.0f}{extra} | | |"
    return f"| {r['work']} | {r['lancejit_ms']:.3f} ms | {r['reference_ms']:.3f} ms | {r['ratio']:.2f} |"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="fewer repeats, no 10,000-fragment dataset")
    ap.add_argument("--label", default="", help="suffix of the json file (e.g. baseline, after)")
    ap.add_argument("--only", default="", help="comma-separated sections: take,conc,frag2000,fresh,scale,io,s3,calls")
    args = ap.parse_args()
    only = set(filter(None, args.only.split(",")))
    want = (lambda s: not only or s in only)
    global SCALE_FRAGMENTS
    if args.quick:
        SCALE_FRAGMENTS = SCALE_FRAGMENTS[:-1]
    rng = np.random.default_rng(12)
    one = ensure("one_1m", TOTAL_ROWS, TOTAL_ROWS)
    many = ensure("frag_2000", TOTAL_ROWS, 500) if want("frag2000") or want("io") else None
    rows: list[dict] = []
    if want("take"):
        rows += section_take(one, args.quick, rng)
    if want("conc"):
        rows.append(section_concurrency(one, args.quick, rng))
    if want("frag2000"):
        rows += section_frag2000(many, args.quick, rng)
    if want("fresh"):
        rows.append(section_fresh(one, args.quick))
    if want("scale"):
        rows += section_scale(args.quick, rng)
    if want("io"):
        rows += section_io({"1 fragment": one, "2,000 fragments": many}, rng)
    if want("s3"):
        rows += section_s3(rng)
    if want("calls"):
        rows.append(profile_calls(one, rng))
        rows.append(profile_calls_async(one, rng))
        rows.append(profile_calls_many(many or ensure("frag_2000", TOTAL_ROWS, 500), rng))
    print("| work | lancejit | reference | ratio |")
    print("|---|---|---|---|")
    for r in rows:
        print(fmt_row(r))
    os.makedirs(OUT, exist_ok=True)
    name = f"service-{args.label}.json" if args.label else "service.json"
    with open(os.path.join(OUT, name), "w") as f:
        json.dump({"quick": args.quick, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
