"""The read side of the ``lancejit`` Spark data source.

Planning (in a Spark Python worker beside the driver): the dataset version is resolved once to
a number so every task reads the same version; fragments are packed into partitions that fit
the cluster (:mod:`.partitions`: small fragments together up to a byte/row target, big ones
split into row ranges).  A task reads its partition's pieces as ONE lancejit scan
(``ScanSpec.fragment_ranges``: the partition's small fragments opened and decoded together,
bounded readahead) and yields Arrow record batches cast exactly to
``to_arrow_schema(schema, timezone="UTC")``.

What a task pickles is small (the URI, the version, the projection, the filter text): the
fragment list stays in the planning worker; each partition carries only its own ranges.
"""

from __future__ import annotations

import threading
from dataclasses import replace
from typing import Any, Iterator

import pyarrow as pa
from pyspark.sql.datasource import DataSourceReader, InputPartition
from pyspark.sql.types import StructType

from .filters import accept_pushed_filters, combine, to_sql
from .options import ReadOptions
from .surface import surfaced, surfaced_iter

_CACHE: dict[tuple, Any] = {}
_CACHE_LOCK = threading.Lock()
_MAX_CACHED = 16


def _cached(key: tuple, make: Any) -> Any:
    with _CACHE_LOCK:
        hit = _CACHE.get(key)
    if hit is not None:
        return hit
    value = make()
    with _CACHE_LOCK:
        if len(_CACHE) >= _MAX_CACHED:
            _CACHE.pop(next(iter(_CACHE)))
        _CACHE[key] = value
    return value


def open_dataset(uri: str, version: int | str | None, storage_options: dict[str, str] | None):
    """The dataset at ``version``; numbered versions are cached per worker process (Spark reuses
    Python workers, so the tasks of a query share manifests and opened files)."""
    from lancejit.table import dataset

    if not isinstance(version, int):
        return dataset(uri, version=version, storage_options=storage_options)
    key = ("ds", uri, version, tuple(sorted((storage_options or {}).items())))
    return _cached(key, lambda: dataset(uri, version=version, storage_options=storage_options))


class LancePartition(InputPartition):
    """Pieces of fragments read as one scan: ``ranges`` = ``(fragment id, lo, hi)``, physical
    rows half-open, in dataset order."""

    def __init__(self, index: int, ranges: tuple[tuple[int, int, int], ...]) -> None:
        super().__init__(index)
        self.ranges = ranges

    def __repr__(self) -> str:
        frags = len({r[0] for r in self.ranges})
        rows = sum(r[2] - r[1] for r in self.ranges)
        return f"LancePartition({self.value}: {frags} fragments, {rows} rows)"


def plan_read(opts: ReadOptions, ds: Any) -> Any:
    """The :class:`~.partitions.PartitionPlan` of a read of ``ds`` with ``opts``."""
    from lancejit.io.sync import run_sync
    from lancejit.table.read.version_index import dataset_index
    from lancejit.table.read.scan_plan import fragment_bytes

    from .partitions import estimate_bytes, plan_partitions

    ctx = ds.context
    index = run_sync(dataset_index(ctx), store=ctx.store)
    fbytes = estimate_bytes(fragment_bytes(ctx, index), index.physical_rows)
    return plan_partitions(
        index.fragment_ids, index.physical_rows, fbytes,
        max_partition_bytes=opts.max_partition_bytes, open_cost=opts.open_cost,
        min_partitions=opts.min_partitions, max_rows=opts.rows_per_partition,
    )


def to_partitions(plan: Any) -> list[LancePartition]:
    return [LancePartition(i, tuple((p.fragment_id, p.lo, p.hi) for p in part))
            for i, part in enumerate(plan.partitions)]


class LanceReader(DataSourceReader):
    """Reads one pinned version of a dataset (picklable: only plain values as state)."""

    def __init__(self, opts: ReadOptions, schema: StructType) -> None:
        from lancejit.core.errors import InvalidInputError

        ds = open_dataset(opts.uri, opts.version, opts.storage_options)
        self.opts = replace(opts, version=ds.version)
        self.columns = [f.name for f in schema.fields]
        self.pushed: list[str] = []
        self.spark_schema_json = schema.json()
        try:
            self._spec(ds)  # bad columns or a bad filter fail here, at planning
        except InvalidInputError as exc:
            raise InvalidInputError(f"{exc} (dataset {opts.uri} version {ds.version}, columns: "
                                    f"{ds.schema.names})") from None
        self._dataset_schema = ds.schema

    def __getstate__(self) -> dict:
        """What tasks receive: the options and, compiled here, the scan spec (a task then
        neither parses SQL nor resolves columns: no sqlglot parse, no pandas import)."""
        import pickle

        state = dict(self.__dict__)
        state.pop("_dataset_schema", None)
        o = self.opts
        ds = open_dataset(o.uri, o.version, o.storage_options)
        state["_spec_blob"] = (self._spec_key(ds), pickle.dumps(self._spec(ds)))
        return state

    # ------------------------------------------------------------------ planning
    @surfaced
    def partitions(self) -> list[LancePartition]:
        o = self.opts
        ds = open_dataset(o.uri, o.version, o.storage_options)
        parts = to_partitions(plan_read(o, ds))
        return parts or [LancePartition(0, ())]

    # ------------------------------------------------------------------ tasks
    def effective_filter(self) -> str | None:
        return combine(([self.opts.filter] if self.opts.filter else []) + list(self.pushed))

    def _spec_key(self, ds: Any) -> tuple:
        o = self.opts
        return ("spec", o.uri, ds.version, tuple(self.columns), self.effective_filter(), o.batch_size)

    def _spec(self, ds: Any) -> Any:
        """The scan spec of this read: the one compiled at planning when shipped with the task,
        else compiled here; cached per worker process."""
        key = self._spec_key(ds)
        blob = getattr(self, "_spec_blob", None)
        if blob is not None and blob[0] == key:
            import pickle

            return _cached(key, lambda: pickle.loads(blob[1]))
        flt, o = self.effective_filter(), self.opts
        return _cached(key, lambda: ds._spec(columns=self.columns, filter=flt, batch_size=o.batch_size))

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, LancePartition)  # one of partitions()
        return surfaced_iter(self._read(partition))

    def _read(self, partition: LancePartition) -> Iterator[pa.RecordBatch]:
        import json

        from lancejit.table.read.dataset_reader import Scanner

        from .types import cast_batch, spark_arrow_schema

        if not partition.ranges:
            return
        o = self.opts
        target = _cached(("target", self.spark_schema_json),
                         lambda: spark_arrow_schema(StructType.fromJson(json.loads(self.spark_schema_json))))
        ds = open_dataset(o.uri, o.version, o.storage_options)
        spec = replace(self._spec(ds), fragment_ranges=partition.ranges)
        for batch in Scanner(ds.context, spec).to_batches():
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


__all__ = ["LancePartition", "LancePushdownReader", "LanceReader", "make_reader", "open_dataset",
           "plan_read", "to_partitions"]
