"""``LanceDataSource``: the PySpark Python data source named ``lancejit``.

``spark.read.format("lancejit").load(uri)`` / ``df.write.format("lancejit").mode("append" |
"overwrite").save(uri)``; options in :mod:`lancejit.spark.options`.
"""

from __future__ import annotations

from pyspark.sql.datasource import DataSource, DataSourceReader, DataSourceWriter
from pyspark.sql.types import StructType

from .options import ReadOptions, WriteOptions

SOURCE_NAME = "lancejit"


class LanceDataSource(DataSource):
    """Reads and writes Lance datasets with lancejit (no JVM jar)."""

    @classmethod
    def name(cls) -> str:
        return SOURCE_NAME

    def schema(self) -> StructType:
        """The Spark schema of the requested version (``columns`` applied, in that order)."""
        from .reader import open_dataset
        from .types import arrow_to_spark_schema

        opts = ReadOptions.parse(self.options)
        ds = open_dataset(opts.uri, opts.version, opts.storage_options)
        schema = ds.schema
        if opts.columns is not None:
            missing = [c for c in opts.columns if c not in schema.names]
            if missing:
                from lancejit.core.errors import InvalidInputError

                raise InvalidInputError(f"dataset {opts.uri} has no column(s) {missing} "
                                        f"(columns: {schema.names})")
            import pyarrow as pa

            schema = pa.schema([schema.field(c) for c in opts.columns])
        return arrow_to_spark_schema(schema)

    def reader(self, schema: StructType) -> DataSourceReader:
        from .reader import make_reader

        return make_reader(ReadOptions.parse(self.options), schema)

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        from .writer import LanceWriter

        return LanceWriter(WriteOptions.parse(self.options), schema, overwrite)


#: The name pyspark's data source lookup lists (``pyspark_*`` modules exporting ``DefaultSource``).
DefaultSource = LanceDataSource

__all__ = ["DefaultSource", "LanceDataSource", "SOURCE_NAME"]
