"""Issue 13 benchmark: scans at scale and filtered scans, lancejit vs the reference (pylance 14).

Run:  .venv/bin/python perf/scan.py [--repeat 5] [--version 2.1] [--quick] [--only NAME ...]

Every figure compares both libraries on the same files in one run: the two alternate, each
``--repeat`` times, and the ratio is lancejit's median / the reference's median (the machine is
shared, so only ratios from one run mean anything).  Data (seeded) is written once by the
reference and cached under ``perf/data/scan-<version>/``:

* ``frags2000``: 1M rows (``id`` int64, ``x`` float64 uniform in [-1, 1), ``s`` string
  ``'user-<n>'``) as 2,000 fragments of 500 rows: scan of ``id,x,s``; ``count_rows("x > 0.5")``;
* ``one``: the same 1M rows as one fragment: five filtered scans, ``id IN (<5,000 integers>)``;
* ``s3``: ``one`` uploaded to a moto S3 server (``perf/s3_counter.py``): a full scan of cold data
  in a warm process (a fresh dataset object per repeat), GET requests and bytes counted
  server-side (``S3_TIMELINE=1`` prints each library's requests: start, end, range, bytes);
* ``scale``: 200,000 rows as 10 / 100 / 1,000 / 10,000 fragments: full scan, time per row
  (one dataset object per library, reused: warm metadata; lancejit also keeps data files of at
  most 64 KiB in memory once opened) and the process's minor page faults during one more scan
  by each library (lancejit's scans reuse freed buffers: ``lancejit.table.read.heap``);
* ``cold``: the same datasets and ``frags2000``, opened anew for every scan (``dataset()`` +
  full scan: every data file opened again by both libraries); Python calls per fragment of one
  such scan.

Writes ``perf/out/scan.json`` (``--json``) and prints a Markdown table.
"""

from __future__ import annotations

import argparse
import json
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
SCALE_ROWS = 200_000
SCALE_FRAGMENTS = (10, 100, 1000, 10_000)
FILTERS = [
    "x > 0.5 AND id < 500000",
    "id IN (1,5,99,1000,77777)",
    "id % 1000 = 0",
    "x BETWEEN -0.1 AND 0.1 OR id = 5",
    "s LIKE 'user-1%'",
]


def make_table(rows: int, seed: int = 0) -> pa.Table:
    rng = np.random.default_rng(seed)
    ids = np.arange(rows, dtype=np.int64)
    s = pa.array([f"user-{i}" for i in ids.tolist()], pa.string())
    return pa.table({"id": ids, "x": rng.uniform(-1.0, 1.0, rows), "s": s})


def in_list_5000() -> str:
    vals = np.random.default_rng(5).choice(ROWS, 5000, replace=False)
    return "id IN (" + ",".join(str(int(v)) for v in sorted(vals)) + ")"


def ensure(path: str, rows: int, rows_per_file: int, version: str) -> str:
    import lance

    import pagecache

    marker = os.path.join(path, ".complete")
    if os.path.exists(marker):
        pagecache.warm(path)  # neither library pays the other's disk reads
        return path
    import shutil

    shutil.rmtree(path, ignore_errors=True)
    t0 = time.perf_counter()
    lance.write_dataset(make_table(rows), path, data_storage_version=version,
                        max_rows_per_file=rows_per_file, max_rows_per_group=min(rows_per_file, 1024))
    open(marker, "w").close()
    print(f"  wrote {path} ({rows:,} rows, files of {rows_per_file:,}) in {time.perf_counter() - t0:.1f} s",
          flush=True)
    pagecache.warm(path)
    return path


def alternate(ref_fn, ours_fn, repeat: int) -> dict:
    """Both functions ``repeat`` times, alternating; medians and their ratio."""
    r, o = [], []
    for _ in range(repeat):
        t0 = time.perf_counter()
        ref_fn()
        r.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        ours_fn()
        o.append(time.perf_counter() - t0)
    mr, mo = statistics.median(r), statistics.median(o)
    return {"reference_s": mr, "lancejit_s": mo, "ratio": mo / mr}


def _same(a: pa.Table, b: pa.Table, what: str) -> None:
    if not a.equals(b):
        raise SystemExit(f"results differ: {what}")


def bench_frags2000(root: str, version: str, repeat: int) -> list[dict]:
    import lance

    import lancejit.table as lt

    path = ensure(os.path.join(root, "frags2000"), ROWS, 500, version)
    ref, ours = lance.dataset(path), lt.dataset(path)
    cols = ["id", "x", "s"]
    _same(ours.to_table(columns=cols), ref.to_table(columns=cols), "frags2000 scan")
    assert ours.count_rows("x > 0.5") == ref.count_rows("x > 0.5")
    calls = python_calls(lambda: ours.to_table(columns=cols)) / 2000
    out = [dict(work=f"2,000 fragments x 500 rows: scan id,x,s ({calls:.0f} Python calls per fragment)",
                **alternate(lambda: ref.to_table(columns=cols), lambda: ours.to_table(columns=cols), repeat)),
           dict(work='2,000 fragments x 500 rows: count_rows("x > 0.5")',
                **alternate(lambda: ref.count_rows("x > 0.5"), lambda: ours.count_rows("x > 0.5"), repeat))]
    return out


def bench_one(root: str, version: str, repeat: int) -> list[dict]:
    import lance

    import lancejit.table as lt

    path = ensure(os.path.join(root, "one"), ROWS, ROWS, version)
    ref, ours = lance.dataset(path), lt.dataset(path)
    out = []
    for text in FILTERS + [in_list_5000()]:
        _same(ours.to_table(filter=text), ref.to_table(filter=text), text[:60])
        label = text if len(text) < 80 else "id IN (<5,000 integers>)"
        out.append(dict(work=f"1M rows, one fragment: `{label}`",
                        **alternate(lambda text=text: ref.to_table(filter=text),
                                    lambda text=text: ours.to_table(filter=text), repeat)))
    return out


def bench_late_materialization(root: str, version: str) -> list[dict]:
    """Bytes read by lancejit for filtered scans with and without late materialization."""
    import lancejit.table as lt
    from lancejit.core import config

    path = os.path.join(root, "one")
    out = []
    for text in FILTERS:
        row = {"filter": text}
        for late in (True, False):
            ours = lt.dataset(path)  # cold: opening costs counted in both
            with config.override(late_materialization=late):
                ours.io_stats()
                ours.to_table(filter=text)
                st = ours.io_stats()
            row["late" if late else "early"] = {"read_iops": st.read_iops, "read_bytes": st.read_bytes}
        out.append(row)
    return out


def bench_s3(root: str, version: str, repeat: int) -> list[dict]:
    import lance

    import lancejit.table as lt
    from dataset_take import upload_dir
    from s3_counter import CountingS3

    path = os.path.join(root, "one")
    out = []
    with CountingS3() as s3:
        uri = upload_dir(s3, path, "one")
        counts = {}

        def ref_scan():
            lance.dataset(uri, storage_options=s3.reference_options).to_table()

        def ours_scan():
            lt.dataset(uri, storage_options=s3.lancejit_options).to_table()

        _same(lt.dataset(uri, storage_options=s3.lancejit_options).to_table(),
              lance.dataset(uri, storage_options=s3.reference_options).to_table(), "s3 scan")
        for who, fn in (("reference", ref_scan), ("lancejit", ours_scan)):
            s3.log.reset()
            t0 = time.perf_counter()
            fn()
            took = time.perf_counter() - t0
            counts[who] = s3.log.snapshot()
            if os.environ.get("S3_TIMELINE"):
                print(f"{who}: {took * 1e3:.1f} ms, requests as the server saw them (start, end ms):")
                print(s3.log.table(), flush=True)
        res = alternate(ref_scan, ours_scan, repeat)
        out.append(dict(work="S3 emulator, warm process, cold data: full scan (1M rows)", **res,
                        requests={w: {"get": c["get"], "bytes": c["bytes"]} for w, c in counts.items()}))
    return out


def python_calls(fn) -> int:
    """Python calls (cProfile ``total_calls``) of one ``fn()`` (machine-independent)."""
    import cProfile
    import pstats

    pr = cProfile.Profile()
    pr.enable()
    fn()
    pr.disable()
    return pstats.Stats(pr).total_calls


def minor_faults(fn) -> int:
    """Minor page faults of the whole process during one ``fn()`` (``getrusage``)."""
    import resource

    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    fn()
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before


def bench_scale(root: str, version: str, repeat: int) -> list[dict]:
    import lance

    import lancejit.table as lt

    out = []
    for n in SCALE_FRAGMENTS:
        path = ensure(os.path.join(root, f"scale{n}"), SCALE_ROWS, SCALE_ROWS // n, version)
        ref, ours = lance.dataset(path), lt.dataset(path)
        _same(ours.to_table(), ref.to_table(), f"scale {n}")
        res = alternate(ref.to_table, ours.to_table, repeat)
        res["lancejit_ns_per_row"] = res["lancejit_s"] / SCALE_ROWS * 1e9
        res["reference_ns_per_row"] = res["reference_s"] / SCALE_ROWS * 1e9
        res["python_calls_per_fragment"] = python_calls(ours.to_table) / n
        res["lancejit_minor_faults"] = minor_faults(ours.to_table)
        res["reference_minor_faults"] = minor_faults(ref.to_table)
        out.append(dict(work=f"{SCALE_ROWS:,} rows as {n:,} fragments: full scan", fragments=n, **res))
    return out


def bench_cold(root: str, version: str, repeat: int) -> list[dict]:
    """Open + full scan with a new dataset object each time (nothing cached by either library
    between scans, apart from lancejit's process-wide decoded-layout caches)."""
    import lance

    import lancejit.table as lt

    out = []
    paths = [(f"{n:,} fragments x {SCALE_ROWS // n:,} rows", os.path.join(root, f"scale{n}"), n)
             for n in SCALE_FRAGMENTS]
    paths.append(("2,000 fragments x 500 rows", os.path.join(root, "frags2000"), 2000))
    for label, path, n in paths:
        if not os.path.isdir(path):
            continue  # built by the scale / frags2000 sections
        _same(lt.dataset(path).to_table(), lance.dataset(path).to_table(), f"cold {label}")
        res = alternate(lambda path=path: lance.dataset(path).to_table(), lambda path=path: lt.dataset(path).to_table(),
                        max(3, repeat if n < 10_000 else repeat // 2))
        res["python_calls_per_fragment"] = python_calls(lambda path=path: lt.dataset(path).to_table()) / n
        out.append(dict(work=f"{label}: open + full scan (new dataset object each time)", fragments=n, **res))
    return out


def max_rss_streaming(root: str) -> dict:
    """Max RSS (MiB) of a child process streaming the 10,000-fragment dataset with to_batches."""
    import subprocess

    path = os.path.join(root, f"scale{SCALE_FRAGMENTS[-1]}")
    # VmHWM (peak RSS of this process image, KiB): ru_maxrss would include the parent's peak
    # from before exec.
    code = (
        "import sys, lancejit.table as lt\n"
        "def hwm():\n"
        "    return int(next(l for l in open('/proc/self/status') if l.startswith('VmHWM:')).split()[1])\n"
        "ds = lt.dataset(sys.argv[1]); base = hwm()\n"
        "n = sum(b.num_rows for b in ds.to_batches())\n"
        "print(n, base, hwm())\n"
    )
    res = subprocess.run([sys.executable, "-c", code, path], capture_output=True, text=True, check=True)
    n, base, peak = (int(v) for v in res.stdout.split())
    return {"rows": n, "rss_after_open_mib": base / 1024, "max_rss_mib": peak / 1024}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--version", default="2.1")
    ap.add_argument("--data", default=os.path.join(HERE, "data"))
    ap.add_argument("--json", default=os.path.join(HERE, "out", "scan.json"))
    ap.add_argument("--only", nargs="*", default=None,
                    help="subset of: frags2000 one late s3 scale cold rss")
    args = ap.parse_args()
    root = os.path.join(args.data, f"scan-{args.version}")
    os.makedirs(root, exist_ok=True)
    want = set(args.only or ["frags2000", "one", "late", "s3", "scale", "cold", "rss"])
    rows: list[dict] = []
    result: dict = {"version": args.version, "repeat": args.repeat}
    steps = [("frags2000", bench_frags2000), ("one", bench_one), ("s3", bench_s3), ("scale", bench_scale),
             ("cold", bench_cold)]
    for name, fn in steps:
        if name in want:
            got = fn(root, args.version, args.repeat)
            rows.extend(got)
            for r in got:
                print(f"  {r['work']}: ratio {r['ratio']:.2f} ({r['lancejit_s'] * 1e3:.1f} ms vs "
                      f"{r['reference_s'] * 1e3:.1f} ms)", flush=True)
    result["rows"] = rows
    if "late" in want:
        result["late_materialization"] = bench_late_materialization(root, args.version)
    if "rss" in want:
        result["streaming_rss"] = max_rss_streaming(root)
    print()
    print("| work | lancejit ms | reference ms | ratio |")
    print("|---|---|---|---|")
    for r in rows:
        extra = ""
        if "lancejit_ns_per_row" in r:
            extra = (f" ({r['lancejit_ns_per_row']:.0f} vs {r['reference_ns_per_row']:.0f} ns/row, "
                     f"{r['python_calls_per_fragment']:.0f} Python calls per fragment, minor page faults "
                     f"{r['lancejit_minor_faults']:,} vs {r['reference_minor_faults']:,})")
        elif "python_calls_per_fragment" in r:
            extra = f" ({r['python_calls_per_fragment']:.0f} Python calls per fragment)"
        if "requests" in r:
            q = r["requests"]
            extra = (f" (GETs/bytes: lancejit {q['lancejit']['get']} / {q['lancejit']['bytes']:,}, "
                     f"reference {q['reference']['get']} / {q['reference']['bytes']:,})")
        print(f"| {r['work']}{extra} | {r['lancejit_s'] * 1e3:.1f} | {r['reference_s'] * 1e3:.1f} | {r['ratio']:.2f} |")
    for r in result.get("late_materialization", []):
        print(f"late materialization `{r['filter']}`: bytes read with {r['late']['read_bytes']:,}"
              + (f", without {r['early']['read_bytes']:,}" if r.get("early") else ""))
    if "streaming_rss" in result:
        s = result["streaming_rss"]
        print(f"streaming to_batches over {SCALE_FRAGMENTS[-1]:,} fragments ({s['rows']:,} rows): "
              f"max RSS {s['max_rss_mib']:.0f} MiB (after open {s['rss_after_open_mib']:.0f} MiB)")
    if args.json:
        os.makedirs(os.path.dirname(args.json), exist_ok=True)
        with open(args.json, "w") as f:
            json.dump(result, f, indent=2)


if __name__ == "__main__":
    main()
