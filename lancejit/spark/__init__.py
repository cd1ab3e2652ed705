"""PySpark integration (``pip install lancejit[spark]``, pyspark >= 4.1): a Python data source
named ``lancejit``.

    import lancejit.spark
    lancejit.spark.register(spark)
    df = spark.read.format("lancejit").option("version", 3).load("s3://bucket/ds")
    df.write.format("lancejit").mode("append").save("s3://bucket/ds")

Workers must be able to import lancejit (installed package) and run the same Python
(``PYSPARK_PYTHON``).  Nothing here imports pyspark until used.
"""

from __future__ import annotations

from typing import Any

__all__ = ["LanceDataSource", "activate", "register"]


def register(spark: Any) -> None:
    """Register the ``lancejit`` data source with ``spark`` (a ``SparkSession``)."""
    from .source import LanceDataSource

    spark.dataSource.register(LanceDataSource)


def activate(spark: Any) -> None:
    """Make ``spark`` the active session of the calling thread on the JVM side.

    Needed before using the data source from a Python thread other than the one that created
    the session: a data source registered with :func:`register` lives in the session, and a
    new thread's JVM side has no active session, so ``format("lancejit")`` is not found there.
    """
    jvm = spark.sparkContext._jvm
    jvm.org.apache.spark.sql.SparkSession.setActiveSession(spark._jsparkSession)


def __getattr__(name: str) -> Any:
    if name in ("LanceDataSource", "DefaultSource"):
        from . import source

        return getattr(source, name)
    raise AttributeError(f"module 'lancejit.spark' has no attribute {name!r}")
