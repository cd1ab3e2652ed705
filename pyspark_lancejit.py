"""pyspark's data source lookup imports top-level ``pyspark_*`` modules and registers their
``DefaultSource``: installing lancejit makes ``spark.read.format("lancejit")`` work without
calling :func:`lancejit.spark.register`."""

from lancejit.spark.source import DefaultSource  # noqa: F401
