"""Issue 8 benchmark: reading 1M rows through the ``lancejit`` PySpark data source vs Spark's
own Parquet reader, same data, same local SparkSession (``local[2]``).

Run:  .venv/bin/python perf/spark_read.py [--rows 1000000] [--rows-per-file 250000] [--repeats 3]

The data (int64 ``a``, float64 ``b``, string ``c``) is written once by pylance 14 (Lance
dataset, ``--rows-per-file`` rows per fragment) and by pyarrow (one Parquet file per fragment
of the same size).  Each query (``count(*)``, ``sum(a)``, ``sum(b)``, ``max(length(c))`` over
all rows) runs once to warm up (Python workers, Numba caches, JIT), then ``--repeats`` times;
the best and median wall times of each reader and their ratio are printed.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

QUERY = ["count(*) AS n", "sum(a) AS sa", "sum(b) AS sb", "max(length(c)) AS lc"]


def make_table(rows: int) -> pa.Table:
    rng = np.random.default_rng(8)
    a = np.arange(rows, dtype=np.int64)
    return pa.table({
        "a": a,
        "b": rng.normal(size=rows),
        "c": pa.array([f"row-{i % 5000}" for i in range(rows)], pa.string()),
    })


def timed(fn, repeats: int) -> tuple[list[float], object]:
    out = fn()  # warm-up
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return times, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--rows-per-file", type=int, default=250_000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--master", default="local[2]")
    args = ap.parse_args()

    os.environ.setdefault("LANCE_LOG", "error")
    os.environ["PYSPARK_PYTHON"] = sys.executable
    import lance
    from pyspark.sql import SparkSession

    import lancejit.spark

    table = make_table(args.rows)
    with tempfile.TemporaryDirectory() as tmp:
        lance_uri = os.path.join(tmp, "data.lance")
        lance.write_dataset(table, lance_uri, max_rows_per_file=args.rows_per_file)
        pq_dir = os.path.join(tmp, "data.parquet")
        os.makedirs(pq_dir)
        for i, start in enumerate(range(0, args.rows, args.rows_per_file)):
            pq.write_table(table.slice(start, args.rows_per_file), os.path.join(pq_dir, f"part-{i:05d}.parquet"))

        opts = "-XX:+UseSerialGC -XX:TieredStopAtLevel=1"
        spark = (SparkSession.builder.master(args.master).appName("lancejit-perf")
                 .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
                 .config("spark.sql.shuffle.partitions", "2")
                 .config("spark.driver.extraJavaOptions", opts).getOrCreate())
        spark.sparkContext.setLogLevel("ERROR")
        lancejit.spark.register(spark)
        try:
            def lance_q():
                return spark.read.format("lancejit").load(lance_uri).selectExpr(*QUERY).collect()[0]

            def parquet_q():
                return spark.read.parquet(pq_dir).selectExpr(*QUERY).collect()[0]

            lt, lres = timed(lance_q, args.repeats)
            pt, pres = timed(parquet_q, args.repeats)
            assert lres.n == pres.n == args.rows and lres.sa == pres.sa and lres.lc == pres.lc, (lres, pres)
            assert abs(lres.sb - pres.sb) < 1e-6 * max(1.0, abs(pres.sb))
            parts = spark.read.format("lancejit").load(lance_uri).rdd.getNumPartitions()
        finally:
            spark.stop()

    print(f"rows={args.rows} fragments/files={-(-args.rows // args.rows_per_file)} "
          f"lancejit partitions={parts} master={args.master} repeats={args.repeats}")
    print(f"lancejit data source: best {min(lt):.3f} s  median {statistics.median(lt):.3f} s")
    print(f"Spark Parquet:        best {min(pt):.3f} s  median {statistics.median(pt):.3f} s")
    print(f"ratio lancejit/parquet: best {min(lt) / min(pt):.2f}x  median "
          f"{statistics.median(lt) / statistics.median(pt):.2f}x")


if __name__ == "__main__":
    main()
