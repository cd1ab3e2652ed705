"""One local SparkSession for the whole Spark suite, and datasets written by pylance 14.

The session: ``local[2]``, UI off, small shuffle/parallelism settings, serial GC + C1-only JIT
for a faster start, Python workers running this interpreter, session time zone UTC.  Everything
here is skipped when pyspark or Java is missing.
"""

from __future__ import annotations

import os
import shutil
import sys

import pytest

os.environ.setdefault("LANCE_LOG", "error")

pyspark = pytest.importorskip("pyspark")
lance = pytest.importorskip("lance")

JAVA_OPTIONS = "-XX:+UseSerialGC -XX:TieredStopAtLevel=1"


def _have_java() -> bool:
    home = os.environ.get("JAVA_HOME")
    if home and os.path.exists(os.path.join(home, "bin", "java")):
        return True
    return shutil.which("java") is not None


@pytest.fixture(scope="session")
def spark():
    if not _have_java():
        pytest.skip("Java is not installed: the Spark tests need a JVM")
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    import lancejit.spark

    session = (
        SparkSession.builder.master("local[2]")
        .appName("lancejit-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.default.parallelism", "2")
        .config("spark.driver.memory", "768m")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.extraJavaOptions", JAVA_OPTIONS)
        .config("spark.executor.extraJavaOptions", JAVA_OPTIONS)
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    lancejit.spark.register(session)
    yield session
    session.stop()
