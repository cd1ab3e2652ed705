"""PySpark integration (``pip install lancejit[spark]``, pyspark >= 4.1): a Python data source
named ``lancejit`` and helpers for what pyspark's data source API cannot express.

    import lancejit.spark
    df = spark.read.format("lancejit").option("columns", "id,vec").load("s3://bucket/ds")
    df.write.format("lancejit").mode("append").save("s3://bucket/ds")
    lancejit.spark.write(df, uri, mode="errorifexists")       # every save mode
    lancejit.spark.explain(df)                                  # what lancejit reads
    lancejit.spark.compact_files(spark, uri)                    # compaction by Spark tasks
    lancejit.spark.merge_insert(df, uri, on="id")               # upsert, keys matched by Spark

Workers must be able to import lancejit (installed package) and run the same Python
(``PYSPARK_PYTHON``).  Nothing here imports pyspark until used.
"""

from __future__ import annotations

from typing import Any

from .session import activate, register

__all__ = ["LanceDataSource", "activate", "compact_files", "explain", "merge_insert", "register", "write"]


def write(df: Any, uri: str, mode: str = "errorifexists", **kwargs: Any) -> None:
    """Write ``df`` to ``uri`` with any Spark save mode: see :func:`lancejit.spark.save.write`."""
    from .save import write as _write

    _write(df, uri, mode, **kwargs)


def explain(df: Any) -> str:
    """What lancejit reads for each lancejit scan of ``df``: see :mod:`lancejit.spark.scan_report`."""
    from .scan_report import explain as _explain

    return _explain(df)


def compact_files(spark: Any, uri: str, **kwargs: Any) -> Any:
    """Compaction run by Spark tasks: see :func:`lancejit.spark.maintenance.compact_files`."""
    from .maintenance import compact_files as _compact

    return _compact(spark, uri, **kwargs)


def merge_insert(df: Any, uri: str, on: Any, **kwargs: Any) -> dict[str, int]:
    """Upsert ``df`` into ``uri``, keys matched by Spark: see :func:`lancejit.spark.maintenance.merge_insert`."""
    from .maintenance import merge_insert as _merge_insert

    return _merge_insert(df, uri, on, **kwargs)


def __getattr__(name: str) -> Any:
    if name in ("LanceDataSource", "DefaultSource"):
        from . import source

        return getattr(source, name)
    raise AttributeError(f"module 'lancejit.spark' has no attribute {name!r}")
