"""perf/spark.py's floor: a Python data source that yields ready-made Arrow batches.

``spark.read.format("lancejit_floor")`` takes the lancejit data source's options and plans the
same partitions, but its tasks hand Spark batches already held in the worker (read once per
worker process, cast to Spark's types): what remains is pyspark's own cost of moving a Python
data source's rows into the JVM.  ``lancejit / floor`` is then lancejit's share of a query.
"""

from __future__ import annotations

from typing import Iterator

import pyarrow as pa

from lancejit.spark.options import ReadOptions
from lancejit.spark.reader import LancePartition, LanceReader
from lancejit.spark.source import LanceDataSource

_HELD: dict[tuple, dict[int, list[pa.RecordBatch]]] = {}


class FloorReader(LanceReader):
    def read(self, partition: LancePartition) -> Iterator[pa.RecordBatch]:
        key = (self.opts.uri, tuple(self.columns), self.effective_filter(), self.spark_schema_json)
        held = _HELD.get(key)
        if held is None:  # every partition of the read, once per worker process
            held = {p.value: list(LanceReader.read(self, p)) for p in self.partitions()}
            _HELD[key] = held
        return iter(held.get(partition.value, []))


class FloorSource(LanceDataSource):
    @classmethod
    def name(cls) -> str:
        return "lancejit_floor"

    def reader(self, schema):
        return FloorReader(ReadOptions.parse(self.options), schema)
