"""Issue 23 benchmark: Spark reads as pipelines run them, on the same rows three ways.

Run:  .venv/bin/python perf/spark.py [--repeat 3] [--only one f2000 f10000] [--no-cold]

For each dataset the same rows (``id`` int64, ``x`` float64 uniform in [0, 1), ``label``
string, ``vec`` 16 float32) are read, in one ``local[2]`` SparkSession, by

* **lancejit**: ``spark.read.format("lancejit")`` (the Lance dataset written by pylance 14);
* **parquet**: Spark's own Parquet reader on the same rows as Parquet files, one file per
  fragment (same file count, written by pyarrow);
* **naive**: ``spark.createDataFrame(lance.dataset(uri).to_table(...))`` (pylance reads, the
  driver ships the Arrow table to Spark), the same query on it;
* **floor**: ``perf/spark_floor.py``, a Python data source planning the same partitions as
  lancejit's and yielding the same batches already held in the worker: pyspark's own cost of
  moving a Python data source's rows into the JVM (``lancejit / floor``: lancejit's share).

Datasets: ``one`` (1M rows, one fragment), ``f2000`` (200,000 rows, 2,000 fragments),
``f10000`` (1M rows, 10,000 fragments).  Queries:

* ``full``: every column materialized (``count``, ``sum(id)``, ``sum(x)``, ``max(length(label))``,
  ``sum(vec[0])``);
* ``columns``: ``sum(id), sum(x)``: lancejit with ``option("columns", "id,x")`` (Spark does not
  push projections to Python data sources), Parquet and naive project themselves;
* ``filter``: ``filter("x > 0.5").select("id").count()``: lancejit with ``option("filter",
  "x > 0.5")`` and ``option("columns", "id")``;
* ``filter (plain)``: the same query on ``spark.read.format("lancejit").load(uri)`` with no
  option: every column reaches Spark, which filters (what a Spark user writes first).

The readers alternate sample by sample (``--repeat`` times after one warm-up each); the table
shows medians, lancejit / parquet and lancejit / naive, and the number of Spark tasks.  The
machine may be shared: only ratios from one run mean anything.

``cold``: the first lancejit query of a fresh SparkSession (new Python workers) against the
same query once warm, and in a fresh Python process standing in for a worker: import, unpickle
the reader, first batch (the imports it needs, from ``-X importtime``).

Data (seeded) is written once under ``perf/data/spark/``.  Writes ``perf/out/spark.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
os.environ.setdefault("LANCE_LOG", "error")

DATA = os.path.join(HERE, "data", "spark")
DATASETS = {"one": (1_000_000, 1), "f2000": (200_000, 2000), "f10000": (1_000_000, 10_000)}
FULL = ["count(*) AS n", "sum(id) AS sid", "sum(x) AS sx", "max(length(label)) AS ml", "sum(vec[0]) AS sv"]
JAVA_OPTIONS = "-XX:+UseSerialGC -XX:TieredStopAtLevel=1"


def make_table(rows: int, seed: int = 23) -> pa.Table:
    rng = np.random.default_rng(seed)
    ids = np.arange(rows, dtype=np.int64)
    labels = pa.array([f"label-{i % 1000}" for i in ids.tolist()], pa.string())
    vec = pa.FixedSizeListArray.from_arrays(pa.array(rng.standard_normal(rows * 16, dtype=np.float32)), 16)
    return pa.table({"id": ids, "x": rng.uniform(0.0, 1.0, rows), "label": labels, "vec": vec})


def ensure_data(name: str) -> tuple[str, str]:
    """``(lance uri, parquet dir)`` of dataset ``name``, written on first use."""
    import lance

    rows, frags = DATASETS[name]
    lance_uri = os.path.join(DATA, f"{name}.lance")
    pq_dir = os.path.join(DATA, f"{name}.parquet")
    per = rows // frags
    if not os.path.exists(os.path.join(pq_dir, "_DONE")):
        table = make_table(rows)
        os.makedirs(DATA, exist_ok=True)
        if not os.path.exists(lance_uri):
            lance.write_dataset(table, lance_uri, max_rows_per_file=per)
        os.makedirs(pq_dir, exist_ok=True)
        for i in range(frags):
            pq.write_table(table.slice(i * per, per), os.path.join(pq_dir, f"part-{i:05d}.parquet"))
        open(os.path.join(pq_dir, "_DONE"), "w").close()
    assert len(lance.dataset(lance_uri).get_fragments()) == frags
    return lance_uri, pq_dir


def session(app: str):
    from pyspark.sql import SparkSession

    spark = (SparkSession.builder.master("local[2]").appName(app)
             .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.shuffle.partitions", "2").config("spark.driver.memory", "4g")
             .config("spark.sql.session.timeZone", "UTC")
             .config("spark.driver.extraJavaOptions", JAVA_OPTIONS).getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def queries(spark, lance_uri: str, pq_dir: str) -> dict[str, dict[str, object]]:
    """Per query: a zero-argument function per reader returning the rows of the result."""
    import lance

    def lj(fmt: str = "lancejit", **opts):
        r = spark.read.format(fmt)
        for k, v in opts.items():
            r = r.option(k, v)
        return r.load(lance_uri)

    def fl(**opts):
        return lj("lancejit_floor", **opts)

    def pqt():
        return spark.read.parquet(pq_dir)

    def naive(**kw):
        return spark.createDataFrame(lance.dataset(lance_uri).to_table(**kw))

    return {
        "full": {
            "lancejit": lambda: lj().selectExpr(*FULL).collect(),
            "floor": lambda: fl().selectExpr(*FULL).collect(),
            "parquet": lambda: pqt().selectExpr(*FULL).collect(),
            "naive": lambda: naive().selectExpr(*FULL).collect(),
        },
        "columns": {
            "lancejit": lambda: lj(columns="id,x").selectExpr("sum(id)", "sum(x)").collect(),
            "floor": lambda: fl(columns="id,x").selectExpr("sum(id)", "sum(x)").collect(),
            "parquet": lambda: pqt().select("id", "x").selectExpr("sum(id)", "sum(x)").collect(),
            "naive": lambda: naive(columns=["id", "x"]).selectExpr("sum(id)", "sum(x)").collect(),
        },
        "filter": {
            "lancejit": lambda: lj(filter="x > 0.5", columns="id").count(),
            "floor": lambda: fl(filter="x > 0.5", columns="id").count(),
            "parquet": lambda: pqt().filter("x > 0.5").select("id").count(),
            "naive": lambda: naive(columns=["id"], filter="x > 0.5").count(),
        },
        "filter (plain)": {
            "lancejit": lambda: lj().filter("x > 0.5").select("id").count(),
            "floor": lambda: fl().filter("x > 0.5").select("id").count(),
            "parquet": lambda: pqt().filter("x > 0.5").select("id").count(),
            "naive": lambda: naive(columns=["id", "x"]).filter("x > 0.5").select("id").count(),
        },
    }


def _same(a, b) -> bool:
    if isinstance(a, int):
        return a == b
    ra, rb = a[0], b[0]
    return all(abs(x - y) <= 1e-6 * max(1.0, abs(y)) if isinstance(x, float) else x == y for x, y in zip(ra, rb))


def tasks_of(df) -> int:
    return df.rdd.getNumPartitions()


def run_dataset(spark, name: str, repeat: int) -> list[dict]:
    lance_uri, pq_dir = ensure_data(name)
    from pagecache import warm

    warm(lance_uri), warm(pq_dir)
    qs = queries(spark, lance_uri, pq_dir)
    parts = {
        "lancejit": tasks_of(spark.read.format("lancejit").load(lance_uri)),
        "parquet": tasks_of(spark.read.parquet(pq_dir)),
    }
    out = []
    for qname, fns in qs.items():
        times: dict[str, list[float]] = {k: [] for k in fns}
        results = {k: fn() for k, fn in fns.items()}  # warm-up, and the answers to compare
        for _ in range(2):  # every worker holds the floor's batches
            fns["floor"]()
        for k in fns:
            assert _same(results[k], results["parquet"]), (name, qname, k, results[k], results["parquet"])
        for _ in range(repeat):
            for k, fn in fns.items():
                t0 = time.perf_counter()
                fn()
                times[k].append(time.perf_counter() - t0)
        med = {k: statistics.median(v) for k, v in times.items()}
        row = {"dataset": name, "query": qname, **{f"{k}_s": round(v, 3) for k, v in med.items()},
               "vs_parquet": round(med["lancejit"] / med["parquet"], 2),
               "vs_naive": round(med["lancejit"] / med["naive"], 2),
               "vs_floor": round(med["lancejit"] / med["floor"], 2),
               "tasks_lancejit": parts["lancejit"], "tasks_parquet": parts["parquet"]}
        print(f"  {name:7s} {qname:15s} lancejit {med['lancejit']:7.3f}  parquet {med['parquet']:7.3f}  "
              f"naive {med['naive']:7.3f}  floor {med['floor']:7.3f}  ratio {row['vs_parquet']:.2f} / "
              f"{row['vs_naive']:.2f} / {row['vs_floor']:.2f}", flush=True)
        out.append(row)
    return out


WORKER_PROBE = r"""
import pickle, sys, time
import pyarrow, pyspark.sql.datasource  # a Spark Python worker has these before a task starts
t0 = time.perf_counter()
from lancejit.spark.reader import LancePartition  # what unpickling the task's function imports
reader, part = pickle.loads(sys.stdin.buffer.read())
t1 = time.perf_counter()
it = reader.read(part)
first = next(it)
t2 = time.perf_counter()
rows = first.num_rows + sum(b.num_rows for b in it)
t3 = time.perf_counter()
print(f"{(t1 - t0) * 1e3:.1f} {(t2 - t1) * 1e3:.1f} {(t3 - t2) * 1e3:.1f} {rows}")
"""


def cold(name: str) -> dict:
    """First query of a fresh session vs warm; a stand-in worker's cold path."""
    import pickle

    from pyspark.sql.types import StructType

    from lancejit.spark.options import ReadOptions
    from lancejit.spark.reader import make_reader
    from lancejit.spark.source import read_arrow_schema
    from lancejit.spark.reader import open_dataset
    from lancejit.spark.types import arrow_to_spark_schema

    lance_uri, pq_dir = ensure_data(name)
    out: dict = {"dataset": name}
    opts = ReadOptions.parse({"path": lance_uri, "columns": "id,x", "filter": "x > 0.5"})
    ds = open_dataset(lance_uri, None, None)
    schema: StructType = arrow_to_spark_schema(read_arrow_schema(opts, ds))
    reader = make_reader(opts, schema)
    part = reader.partitions()[0]
    payload = pickle.dumps((reader, part))
    env = dict(os.environ, PYTHONPATH=ROOT)
    samples = []
    for _ in range(3):
        got = subprocess.run([sys.executable, "-c", WORKER_PROBE], input=payload, capture_output=True, env=env,
                             check=True)
        samples.append([float(x) for x in got.stdout.split()[:3]])
    imp, first, rest = (statistics.median(s[i] for s in samples) for i in range(3))
    out.update(worker_import_ms=round(imp, 1), worker_first_batch_ms=round(first, 1),
               worker_rest_ms=round(rest, 1))
    got = subprocess.run([sys.executable, "-X", "importtime", "-c", WORKER_PROBE], input=payload,
                         capture_output=True, env=env, check=True)
    heavy: dict[str, float] = {}
    for line in got.stderr.decode().splitlines():
        parts = line.split("|")
        if len(parts) == 3 and parts[0].startswith("import time:") and parts[1].strip().isdigit():
            mod = parts[2].strip()
            if mod in ("numba", "sqlglot", "pandas", "llvmlite.binding", "aiohttp", "botocore", "fsspec"):
                heavy[mod] = round(int(parts[1]) / 1e3, 1)  # cumulative ms
    out["worker_heavy_imports_ms"] = heavy

    spark = session("lancejit-perf-cold")
    try:
        def q():
            return (spark.read.format("lancejit").option("columns", "id,x").option("filter", "x > 0.5")
                    .load(lance_uri).count())

        t0 = time.perf_counter()
        q()
        out["first_query_fresh_session_s"] = round(time.perf_counter() - t0, 3)
        warm_t = []
        for _ in range(3):
            t0 = time.perf_counter()
            q()
            warm_t.append(time.perf_counter() - t0)
        out["same_query_warm_s"] = round(statistics.median(warm_t), 3)
    finally:
        spark.stop()
    spark = session("lancejit-perf-cold-parquet")
    try:
        t0 = time.perf_counter()
        spark.read.parquet(pq_dir).filter("x > 0.5").select("id").count()
        out["parquet_first_query_fresh_session_s"] = round(time.perf_counter() - t0, 3)
    finally:
        spark.stop()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--only", nargs="*", default=list(DATASETS))
    ap.add_argument("--no-cold", action="store_true")
    ap.add_argument("--json", default=os.path.join(HERE, "out", "spark.json"))
    args = ap.parse_args()

    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    os.environ["PYTHONPATH"] = os.pathsep.join([ROOT, HERE, os.environ.get("PYTHONPATH", "")])
    import lancejit.spark

    for name in args.only:
        ensure_data(name)
    result: dict = {"rows": []}
    if not args.no_cold:
        result["cold"] = cold(args.only[0])
        print("cold:", result["cold"], flush=True)
    spark = session("lancejit-perf")
    lancejit.spark.register(spark)
    from spark_floor import FloorSource

    spark.dataSource.register(FloorSource)
    try:
        for name in args.only:
            result["rows"] += run_dataset(spark, name, args.repeat)
    finally:
        spark.stop()

    print()
    print("| dataset | query | lancejit s | parquet s | naive s | floor s | lancejit / parquet | lancejit / naive "
          "| lancejit / floor | tasks lancejit / parquet |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in result["rows"]:
        print(f"| {r['dataset']} | {r['query']} | {r['lancejit_s']:.3f} | {r['parquet_s']:.3f} | {r['naive_s']:.3f} "
              f"| {r['floor_s']:.3f} | {r['vs_parquet']:.2f} | {r['vs_naive']:.2f} | {r['vs_floor']:.2f} "
              f"| {r['tasks_lancejit']} / {r['tasks_parquet']} |")
    os.makedirs(os.path.dirname(args.json), exist_ok=True)
    with open(args.json, "w") as f:
        json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
