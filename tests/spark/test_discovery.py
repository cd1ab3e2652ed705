"""``format("lancejit")`` without ``register()``: pyspark's lookup lists top-level ``pyspark_*``
modules with ``pkgutil.iter_modules`` and registers their ``DefaultSource``."""

from __future__ import annotations

import os
import pkgutil
import subprocess
import sys
import textwrap

import pyarrow as pa

import lance

SCRIPT = textwrap.dedent("""
    import os, sys
    from pyspark.sql import SparkSession
    spark = (SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
             .config("spark.driver.extraJavaOptions", "-XX:+UseSerialGC -XX:TieredStopAtLevel=1")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    df = spark.read.format("lancejit").load(sys.argv[1])
    print("ROWS", df.count(), df.columns)
    spark.stop()
""")


def test_lookup_lists_the_module():
    """What pyspark's lookup sees in this interpreter (an install ``./run`` makes, or a path
    entry: not setuptools' default editable finder, which ``iter_modules`` cannot list)."""
    assert "pyspark_lancejit" in {m.name for m in pkgutil.iter_modules()}


def test_fresh_session_finds_the_source(tmp_path):
    uri = str(tmp_path / "found.lance")
    lance.write_dataset(pa.table({"id": list(range(12)), "s": ["a"] * 12}), uri, max_rows_per_file=5)
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable)
    got = subprocess.run([sys.executable, "-c", SCRIPT, uri], capture_output=True, text=True, env=env,
                         timeout=600)
    assert got.returncode == 0, got.stderr[-3000:]
    assert "ROWS 12 ['id', 's']" in got.stdout
