"""``LanceDataSource``: the PySpark Python data source named ``lancejit``.

``spark.read.format("lancejit").load(uri)`` / ``df.write.format("lancejit").mode("append" |
"overwrite").save(uri)``; options in :mod:`lancejit.spark.options`.
"""

from __future__ import annotations

import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceReader, DataSourceWriter
from pyspark.sql.types import StructType

from .options import ReadOptions, WriteOptions
from .surface import surfaced

SOURCE_NAME = "lancejit"
#: Meta columns a read may project (``columns`` option): uint64 in lancejit, LongType in Spark.
META_COLUMNS = ("_rowid", "_rowaddr")


def read_arrow_schema(opts: ReadOptions, ds) -> pa.Schema:
    """The Arrow schema a read of ``ds`` with ``opts`` yields, meta columns as int64."""
    from lancejit.core.errors import InvalidInputError
    from lancejit.table.read.assemble import output_schema

    if opts.columns is None:
        schema = ds.schema
    else:
        try:
            schema = output_schema(ds.context, ds._spec(columns=list(opts.columns)))
        except InvalidInputError as exc:
            raise InvalidInputError(f"{exc} (dataset {opts.uri} version {ds.version})") from None
    fields = [f.with_type(pa.int64()) if f.name in META_COLUMNS else f for f in schema]
    return pa.schema(fields)


class LanceDataSource(DataSource):
    """Reads and writes Lance datasets with lancejit (no JVM jar)."""

    @classmethod
    def name(cls) -> str:
        return SOURCE_NAME

    @surfaced
    def schema(self) -> StructType:
        """The Spark schema of the requested version (``columns`` applied, in that order)."""
        from .reader import open_dataset
        from .types import arrow_to_spark_schema

        opts = ReadOptions.parse(self.options)
        ds = open_dataset(opts.uri, opts.version, opts.storage_options)
        return arrow_to_spark_schema(read_arrow_schema(opts, ds))

    @surfaced
    def reader(self, schema: StructType) -> DataSourceReader:
        from .reader import make_reader

        return make_reader(ReadOptions.parse(self.options), schema)

    @surfaced
    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        from .writer import LanceWriter

        return LanceWriter(WriteOptions.parse(self.options), schema, overwrite)


#: The name pyspark's data source lookup lists (``pyspark_*`` modules exporting ``DefaultSource``).
DefaultSource = LanceDataSource

__all__ = ["DefaultSource", "LanceDataSource", "META_COLUMNS", "SOURCE_NAME", "read_arrow_schema"]
