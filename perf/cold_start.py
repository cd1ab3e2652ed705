"""First use and cold processes (issue 25, issue 29 item 1), side by side with the reference.

Run:  .venv/bin/python perf/cold_start.py [--samples 5] [--skip-first-use]

Builds a fresh virtualenv with lancejit installed from this checkout (``pip install --target``
its site-packages, not editable; its dependencies come from the running interpreter's
site-packages through a ``.pth`` file), so the kernel cache starts empty, then prints:

(a) the first-use workload (``tests/cold_workload.py``: datasets the reference wrote in 0.1 /
    2.0 / 2.1 / 2.2 with many fragments, every kind of filter, every write and table operation)
    in a fresh process with the empty cache: per step wall time, time spent compiling in the
    process, compilations in the process and calls served interpreted (kernels missing from the
    cache run interpreted while the background process compiles them);
(b) the same workload in a fresh process after ``lancejit warmup``: compilations and the
    slowest step;
(c) every kernel's compile time (its declared specializations, from the warmup's progress lines:
    two worker processes on two cores);
(d) fresh processes, local disk and the S3 emulator (moto), one library after the other for each
    sample: import + open, + 100-row take, + full scan, + filtered scan; medians and ratios
    (lancejit / reference);
(e) the warmup's wall time.

Writes ``perf/out/cold_start.json`` too.  Timings depend on the machine's load: the ratios of
(d) alternate the two libraries sample by sample.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import shutil
import site
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(REPO, "tests"))

FIRST_USE = r"""
import json, sys, time
t0 = time.perf_counter()
sys.path.insert(0, sys.argv[1])
import cold_workload as w
import lancejit
from lancejit.encoding.kernels import jit, tier0, background


def compiled():
    n, secs = 0, 0.0
    for k in jit.kernels():
        if k.materialized:
            for sig, cres in k._disp.overloads.items():
                if k._disp.stats.cache_misses.get(sig):
                    n += 1
                    secs += (cres.metadata or {}).get("timers", {}).get("compiler_lock", 0.0)
    return n, secs


rows = []
for name, fn in w.steps(sys.argv[2], json.loads(sys.argv[3])):
    c0, s0 = compiled()
    i0 = tier0.stats["calls"]
    t = time.perf_counter()
    fn()
    wall = time.perf_counter() - t
    c1, s1 = compiled()
    rows.append({"step": name, "wall_s": wall, "compile_s": s1 - s0, "compilations": c1 - c0,
                 "interpreted": tier0.stats["calls"] - i0})
total = time.perf_counter() - t0
p = background.process()
bg = None
if p is not None:
    p.stdin.close()
    t = time.perf_counter()
    p.wait()
    bg = time.perf_counter() - t
print(json.dumps({"rows": rows, "total_s": total, "background_left_s": bg,
                  "lancejit": lancejit.__file__}))
"""

FRESH = r"""
import json, os, sys, time
t0, c0 = time.perf_counter(), time.process_time()
who, uri, what = sys.argv[1], sys.argv[2], sys.argv[3]
opts = json.loads(sys.argv[4]) or None
if who == "lancejit":
    import lancejit as lib
    ds = lib.dataset(uri, storage_options=opts)
else:
    import lance as lib
    ds = lib.dataset(uri, storage_options=opts)
n = 0
if what == "take":
    n = ds.take(list(range(0, 100 * 997, 997))).num_rows
elif what == "scan":
    n = ds.to_table().num_rows
elif what == "filtered":
    n = ds.to_table(filter="x > 0.5 AND id < 700000").num_rows
elif what == "filter":
    n = ds.to_table().num_rows + ds.to_table(filter="x > 0.5 AND id < 700000").num_rows + ds.take([1, 2, 3]).num_rows
s, cpu = time.perf_counter() - t0, time.process_time() - c0
kernels = 0
jit = sys.modules.get("lancejit.encoding.kernels.jit")
if jit is not None:
    kernels = sum(len(k._disp.overloads) for k in jit.kernels() if k.materialized)
print(json.dumps({"s": s, "cpu": cpu, "n": n, "modules": len(sys.modules), "numba": "numba" in sys.modules,
                  "kernels": kernels, "threads": len(os.listdir("/proc/self/task"))}))
"""


def make_venv(root: str) -> str:
    """A virtualenv with lancejit installed (not editable) from this checkout; its python."""
    venv = os.path.join(root, "venv")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", venv], check=True)
    py = os.path.join(venv, "bin", "python")
    sp = subprocess.run([py, "-c", "import site; print(site.getsitepackages()[0])"], capture_output=True,
                        text=True, check=True).stdout.strip()
    with open(os.path.join(sp, "zz_shared_deps.pth"), "w") as f:
        f.write("\n".join(site.getsitepackages()) + "\n")
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps",
                    "--target", sp, REPO], check=True, env={**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"})
    return py


def clear_cache(py: str) -> None:
    pkg = subprocess.run([py, "-c", "import lancejit, os; print(os.path.dirname(lancejit.__file__))"],
                         capture_output=True, text=True, check=True).stdout.strip()
    for pattern in ("**/*.nbi", "**/*.nbc"):
        for f in glob.glob(os.path.join(pkg, pattern), recursive=True):
            os.remove(f)


#: PYTHONPATH of the measured processes (``--fresh-only``: this checkout; else none, the venv's install).
PYTHONPATH: str | None = None


def env_for(py: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "NUMBA_CACHE_DIR",
                                                            "LANCEJIT_BACKGROUND_COMPILE", "NUMBA_DISABLE_JIT")}
    if PYTHONPATH:
        env["PYTHONPATH"] = PYTHONPATH
    return env


def first_use(py: str, root: str, paths: dict) -> dict:
    res = subprocess.run([py, "-c", FIRST_USE, os.path.join(REPO, "tests"), root, json.dumps(paths)],
                         capture_output=True, text=True, env=env_for(py), timeout=3600)
    if res.returncode:
        raise SystemExit(res.stderr[-3000:])
    return json.loads(res.stdout.strip().splitlines()[-1])


def warmup(py: str) -> tuple[float, list[tuple[str, float]]]:
    t = time.perf_counter()
    res = subprocess.run([py, "-m", "lancejit.cli", "warmup"], capture_output=True, text=True, env=env_for(py),
                         timeout=3600)
    took = time.perf_counter() - t
    if res.returncode:
        raise SystemExit(res.stderr[-3000:])
    kernels = []
    for line in res.stdout.splitlines():
        if line.startswith("[") and "]" in line and ": " in line:
            name, rest = line.split("] ", 1)[1].rsplit(": ", 1)
            cpu = rest.split("(", 1)[1].split(" s CPU")[0] if " s CPU" in rest else "nan"
            kernels.append((name, float(rest.split(" s")[0]), float(cpu)))
    return took, sorted(kernels, key=lambda kv: -kv[1])


#: The fresh-process works of (d): key -> label.
WORKS = {"open": "import + open", "take": "+ 100-row take", "scan": "+ full scan",
         "filtered": "+ filtered scan (no full scan first)", "filter": "+ full scan + filtered scan + take(3)"}


def fresh_rows(py: str, targets: list[tuple[str, str, dict | None, object]], works: list[str],
               samples: int) -> list[dict]:
    """Fresh processes, alternating the two libraries sample by sample (the first sample of each
    warms the page cache and the server and is dropped): medians of the wall and CPU seconds
    measured inside the process (after the interpreter started), and what the last sample of
    each imported, loaded and started; ``targets``: (store, uri, storage options, request log)."""
    rows = []
    for where, uri, opts, log in targets:
        for what in works:
            got: dict = {"lancejit": [], "reference": []}
            last: dict = {}
            for i in range(samples + 1):
                for who in ("lancejit", "reference"):
                    if log is not None:
                        log.reset()
                    res = subprocess.run([py, "-c", FRESH, who, uri, what, json.dumps(opts)], capture_output=True,
                                         text=True, env=env_for(py), timeout=600)
                    if res.returncode:
                        raise SystemExit(res.stderr[-3000:])
                    one = json.loads(res.stdout.strip().splitlines()[-1])
                    if log is not None:
                        one["requests"] = log.snapshot()["total"]
                    if i:  # the first sample warms the page cache and the server
                        got[who].append(one)
                        last[who] = one
            med = {who: {k: statistics.median(o[k] for o in got[who]) for k in ("s", "cpu")} for who in got}
            a, b = med["lancejit"], med["reference"]
            rows.append({"where": where, "work": f"fresh process: {WORKS[what]}", "lancejit_ms": a["s"] * 1e3,
                         "reference_ms": b["s"] * 1e3, "ratio": a["s"] / b["s"],
                         "lancejit_cpu_ms": a["cpu"] * 1e3, "reference_cpu_ms": b["cpu"] * 1e3,
                         "cpu_ratio": a["cpu"] / b["cpu"],
                         "counts": {who: {k: v for k, v in last[who].items() if k not in ("s", "cpu", "n")}
                                    for who in last}})
    return rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--samples", type=int, default=5)
    ap.add_argument("--rows", type=int, default=1_000_000, help="rows of the fresh-process dataset")
    ap.add_argument("--skip-first-use", action="store_true", help="only (b) to (e)")
    ap.add_argument("--fresh-only", action="store_true",
                    help="only (d), with this checkout (byte-compiled first) and its kernel cache as they are "
                         "(no virtualenv)")
    ap.add_argument("--works", default=",".join(WORKS), help=f"works of (d), comma-separated: {', '.join(WORKS)}")
    ap.add_argument("--stores", default="local,s3", help="stores of (d): local, s3")
    args = ap.parse_args()
    global PYTHONPATH
    import lance
    import numpy as np
    import pyarrow as pa

    import cold_workload

    out: dict = {}
    root = tempfile.mkdtemp(prefix="lancejit-cold-")
    try:
        if args.fresh_only:
            py, PYTHONPATH = sys.executable, REPO
            # byte-compiled as lancejit warmup leaves an installation (PYTHONDONTWRITEBYTECODE
            # would otherwise make every measured process compile changed modules again)
            subprocess.run([sys.executable, "-m", "compileall", "-q", os.path.join(REPO, "lancejit")], check=True,
                           stdout=subprocess.DEVNULL)
        else:
            py = make_venv(root)
            paths = cold_workload.make_datasets(os.path.join(root, "data"))
            if not args.skip_first_use:
                clear_cache(py)
                out["first_use"] = first_use(py, os.path.join(root, "data"), paths)
            clear_cache(py)
            out["warmup_s"], out["kernels"] = warmup(py)
            out["after_warmup"] = first_use(py, os.path.join(root, "data"), paths)
        n = args.rows
        rng = np.random.default_rng(0)
        t = pa.table({"id": np.arange(n, dtype=np.int64), "x": rng.standard_normal(n),
                      "s": pa.array([f"user-{i % 5000:05d}" for i in range(n)])})
        local = os.path.join(root, "one")
        lance.write_dataset(t, local, data_storage_version="2.1")
        from dataset_take import upload_dir
        from s3_counter import CountingS3

        works, stores = args.works.split(","), args.stores.split(",")
        with CountingS3(separate_process=True) as s3:
            targets: list = [("local", local, None, None)] if "local" in stores else []
            if "s3" in stores:
                targets.append(("s3", upload_dir(s3, local, "one"), s3.lancejit_options, s3.log))
            out["fresh"] = fresh_rows(py, targets, works, args.samples)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    os.makedirs(os.path.join(HERE, "out"), exist_ok=True)
    with open(os.path.join(HERE, "out", "cold_start.json"), "w") as f:
        json.dump(out, f, indent=1)
    report(out)


def report(out: dict) -> None:
    for key, title in (("first_use", "(a) first use, empty cache (fresh venv, non-editable install)"),
                       ("after_warmup", "(b) the same after lancejit warmup")):
        fu = out.get(key)
        if not fu:
            continue
        rows = fu["rows"]
        print(f"\n{title}: total {fu['total_s']:.1f} s; compilations in the process "
              f"{sum(r['compilations'] for r in rows)}, compile time {sum(r['compile_s'] for r in rows):.1f} s, "
              f"slowest step {max(r['wall_s'] for r in rows):.2f} s"
              + (f"; background compile finished {fu['background_left_s']:.1f} s after the workload"
                 if fu.get("background_left_s") is not None else ""))
        print("| step | wall s | compile s | compilations | interpreted calls |\n|---|---:|---:|---:|---:|")
        for r in rows:
            print(f"| {r['step']} | {r['wall_s']:.2f} | {r['compile_s']:.2f} | {r['compilations']} | "
                  f"{r['interpreted']} |")
    if out.get("kernels"):
        print("\n(c) compile time of each kernel's declared specializations (warmup, 2 workers): wall and "
              "CPU seconds of its worker")
        print("| kernel | wall s | CPU s |\n|---|---:|---:|")
        for name, s, cpu in out["kernels"]:
            print(f"| {name} | {s:.2f} | {cpu:.2f} |")
    if out.get("fresh"):
        print("\n(d) fresh processes (medians; wall and CPU seconds inside the process; lancejit / reference)")
        print("| store | work | lancejit ms | reference ms | ratio | lancejit CPU ms | reference CPU ms | CPU ratio |"
              "\n|---|---|---:|---:|---:|---:|---:|---:|")
        for r in out["fresh"]:
            print(f"| {r['where']} | {r['work']} | {r['lancejit_ms']:.0f} | {r['reference_ms']:.0f} | "
                  f"{r['ratio']:.2f} | {r['lancejit_cpu_ms']:.0f} | {r['reference_cpu_ms']:.0f} | {r['cpu_ratio']:.2f} |")
        print("\n(d) counts (last sample): modules in sys.modules, Numba imported, kernel specializations "
              "loaded, threads alive at the end, requests served (S3)")
        print("| store | work | lancejit modules | reference modules | Numba | kernels | lancejit threads | "
              "reference threads | lancejit requests | reference requests |\n|---|---|---:|---:|---|---:|---:|---:|---:|---:|")
        for r in out["fresh"]:
            a, b = r["counts"]["lancejit"], r["counts"]["reference"]
            print(f"| {r['where']} | {r['work']} | {a['modules']} | {b['modules']} | {'yes' if a['numba'] else 'no'} | "
                  f"{a['kernels']} | {a['threads']} | {b['threads']} | {a.get('requests', '-')} | "
                  f"{b.get('requests', '-')} |")
    if "warmup_s" in out:
        print(f"\n(e) lancejit warmup: {out['warmup_s']:.1f} s")


if __name__ == "__main__":
    main()
