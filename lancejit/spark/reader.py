"""The read side of the ``lancejit`` Spark data source.

Planning (in a Spark Python worker): the dataset version is resolved once to a number so every
task reads the same version; one :class:`FragmentRange` partition per fragment, fragments with
more than ``rows_per_partition`` physical rows split into equal half-open row ranges.
Tasks read their range through lancejit's scan units and I/O scheduler and yield Arrow record
batches cast exactly to ``to_arrow_schema(schema, timezone="UTC")``.
"""

from __future__ import annotations

import threading
from typing import Any, Iterator, Sequence

import pyarrow as pa
from pyspark.sql.datasource import DataSourceReader, InputPartition
from pyspark.sql.types import StructType

from .filters import accept_pushed_filters, combine, to_sql
from .options import ReadOptions

_DATASETS: dict[tuple, Any] = {}
_DATASETS_LOCK = threading.Lock()
_MAX_CACHED = 16


def open_dataset(uri: str, version: int | str | None, storage_options: dict[str, str] | None):
    """The dataset at ``version``; numbered versions are cached per worker process (Spark reuses
    Python workers, so tasks of one query share manifests and file metadata)."""
    from lancejit.table import dataset

    key = (uri, version, tuple(sorted((storage_options or {}).items())))
    if isinstance(version, int):
        with _DATASETS_LOCK:
            hit = _DATASETS.get(key)
        if hit is not None:
            return hit
    ds = dataset(uri, version=version, storage_options=storage_options)
    if isinstance(version, int):
        with _DATASETS_LOCK:
            if len(_DATASETS) >= _MAX_CACHED:
                _DATASETS.pop(next(iter(_DATASETS)))
            _DATASETS[key] = ds
    return ds


class FragmentRange(InputPartition):
    """Physical rows ``[lo, hi)`` (half-open) of fragment ``fragment_id``."""

    def __init__(self, fragment_id: int, lo: int, hi: int) -> None:
        super().__init__((fragment_id, lo, hi))
        self.fragment_id = fragment_id
        self.lo = lo
        self.hi = hi

    def __repr__(self) -> str:
        return f"FragmentRange(fragment={self.fragment_id}, rows=[{self.lo}, {self.hi}))"


def plan_partitions(fragments: Sequence[Any], rows_per_partition: int) -> list[FragmentRange]:
    """One range per fragment, split into ``ceil(rows / rows_per_partition)`` near-equal ranges
    when larger (``fragments``: objects with ``id`` and ``physical_rows``)."""
    out: list[FragmentRange] = []
    for f in fragments:
        n = int(f.physical_rows)
        if n == 0:
            continue
        parts = max(1, -(-n // rows_per_partition))
        bounds = [n * i // parts for i in range(parts + 1)]
        for a, b in zip(bounds, bounds[1:]):
            if b > a:
                out.append(FragmentRange(int(f.id), a, b))
    return out


class LanceReader(DataSourceReader):
    """Reads one pinned version of a dataset (picklable: only plain values as state)."""

    def __init__(self, opts: ReadOptions, schema: StructType) -> None:
        ds = open_dataset(opts.uri, opts.version, opts.storage_options)
        self.uri = opts.uri
        self.version: int = ds.version
        self.storage_options = opts.storage_options
        self.columns = [f.name for f in schema.fields]
        self.filter = opts.filter
        self.batch_size = opts.batch_size
        self.rows_per_partition = opts.rows_per_partition
        self.pushdown = opts.pushdown
        self.pushed: list[str] = []
        self.spark_schema_json = schema.json()
        missing = [c for c in self.columns if c not in ds.schema.names]
        if missing:
            from lancejit.core.errors import InvalidInputError

            raise InvalidInputError(
                f"dataset {opts.uri} version {ds.version} has no column(s) {missing} "
                f"(columns: {ds.schema.names})")
        if self.filter is not None:  # fail at planning time on a bad predicate
            from lancejit.table.filter.compile import compile_filter

            compile_filter(self.filter, ds.schema)
        self._fragments = [(f.id, f.physical_rows) for f in ds.manifest.fragments]
        self._dataset_schema = ds.schema

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state.pop("_dataset_schema", None)
        return state

    # ------------------------------------------------------------------ planning
    def partitions(self) -> list[FragmentRange]:
        from types import SimpleNamespace

        frags = [SimpleNamespace(id=i, physical_rows=n) for i, n in self._fragments]
        parts = plan_partitions(frags, self.rows_per_partition)
        return parts or [FragmentRange(-1, 0, 0)]

    # ------------------------------------------------------------------ tasks
    def effective_filter(self) -> str | None:
        return combine(([self.filter] if self.filter else []) + list(self.pushed))

    def read(self, partition: FragmentRange) -> Iterator[pa.RecordBatch]:
        from .fragment_scan import iter_fragment_range
        from .types import cast_batch, spark_arrow_schema

        target = spark_arrow_schema(StructType.fromJson(__import__("json").loads(self.spark_schema_json)))
        if partition.fragment_id < 0:
            return
        ds = open_dataset(self.uri, self.version, self.storage_options)
        for batch in iter_fragment_range(
            ds, partition.fragment_id, partition.lo, partition.hi,
            columns=self.columns, filter=self.effective_filter(), batch_size=self.batch_size,
        ):
            yield cast_batch(batch, target)


class LancePushdownReader(LanceReader):
    """A :class:`LanceReader` that accepts the filters lancejit applies exactly.

    Used only when pushed filters are accepted (option ``pushdown``): pyspark refuses readers
    implementing ``pushFilters`` unless ``spark.sql.python.filterPushdown.enabled`` is true.
    """

    def pushFilters(self, filters: list) -> Iterator:
        """Accept the filters lancejit applies exactly (see :mod:`.filters`), return the rest."""
        schema = getattr(self, "_dataset_schema", None)
        for f in filters:
            sql = to_sql(f, schema) if schema is not None else None
            if sql is None:
                yield f
            else:
                self.pushed.append(sql)


def make_reader(opts: ReadOptions, schema: StructType) -> LanceReader:
    """The reader for ``opts``: with ``pushFilters`` only when pushed filters are accepted."""
    cls = LancePushdownReader if accept_pushed_filters(opts.pushdown) else LanceReader
    return cls(opts, schema)


__all__ = ["FragmentRange", "LancePushdownReader", "LanceReader", "make_reader", "open_dataset",
           "plan_partitions"]
