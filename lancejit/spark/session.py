"""The ``lancejit`` data source in a Spark session: registration, and the JVM-side active
session of a Python thread."""

from __future__ import annotations

from typing import Any


def register(spark: Any) -> None:
    """Register the ``lancejit`` data source with ``spark`` (a ``SparkSession``); not needed when
    pyspark finds the installed ``pyspark_lancejit`` module itself."""
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


__all__ = ["activate", "register"]
