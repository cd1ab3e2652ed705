"""The read core of a dataset: one checked-out version, its metadata, scans and takes, all async.

:class:`DatasetReader` is what operations (writes, maintenance, indices) are given and use; the
public :class:`lancejit.table.dataset.Dataset` adds the changes and the synchronous face derived
from these async methods (:func:`lancejit.io.sync.bridged`).
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any, AsyncGenerator, AsyncIterator, Iterable, Iterator, Mapping, Sequence, TypeVar

import pyarrow as pa

from lancejit.core.errors import LanceJitError
from lancejit.io.sync import bridged, iter_sync

from ..meta.context import DatasetContext, with_context
from ..meta.features import FLAG_STABLE_ROW_IDS
from ..meta.manifest import Manifest
from ..meta.naming import ManifestLocation
from ..meta.open import checkout_context, open_context, version_summary
from ..meta.versions import Tag, list_manifests, list_tags, read_manifest_at, timestamp_to_datetime
from . import scan as _scan
from . import take_batch as _take_batch
from .assemble import output_schema
from .fragment import FragmentInfo
from .arrow_face import ArrowScannerFace
from .scan_args import ScanArgs, resolve as resolve_scan
from .scan_post import ScanPost
from .spec import scan_spec
from .version_index import dataset_index

if TYPE_CHECKING:  # pyarrow.compute is imported by the first filter, not by opening a dataset
    import pyarrow.compute as pc

R = TypeVar("R", bound="DatasetReader")


class Scanner(ArrowScannerFace):
    """A configured scan; ``to_reader()`` gives a ``pyarrow.RecordBatchReader``.

    ``post`` (see :mod:`.scan_post`): work done on the read batches (filters over row ids,
    computed columns, ordering, strict batch sizes), None when the read is the result."""

    def __init__(self, ctx: DatasetContext, spec: _scan.ScanSpec, post: ScanPost | None = None) -> None:
        self._ctx = ctx
        self._spec = spec
        self._post = post

    @property
    def spec(self) -> _scan.ScanSpec:
        """What this scan reads (a value: ``Scanner(ctx, replace(spec, ...))`` derives another)."""
        return self._spec

    @property
    def schema(self) -> pa.Schema:
        """The schema of the scan's output (the reference's ``projected_schema``)."""
        return self._post.schema if self._post is not None else output_schema(self._ctx, self._spec)

    projected_schema = schema

    @property
    def dataset_schema(self) -> pa.Schema:
        return self._ctx.schema

    @property
    def store(self) -> Any:
        return self._ctx.store

    def _batches(self, ramp: bool = True) -> AsyncGenerator[pa.RecordBatch, None]:
        batches = _scan.scan(self._ctx, self._spec, ramp=ramp)
        if self._post is None:
            return batches
        from .scan_post import apply

        return apply(batches, self._post)

    async def batches_async(self, *, ramp: bool = True) -> AsyncIterator[pa.RecordBatch]:
        """The scan's record batches, in scan order.  ``ramp``: the first unit is read in growing
        pieces so that the first batch comes soon (False for consumers of the whole scan)."""
        async for b in self._batches(ramp):
            yield b

    def to_batches(self) -> Iterator[pa.RecordBatch]:
        """The scan's record batches, synchronously (bounded readahead)."""
        return iter_sync(self._batches(), store=self._ctx.store)

    def to_reader(self) -> pa.RecordBatchReader:
        return pa.RecordBatchReader.from_batches(self.schema, self.to_batches())

    def __arrow_c_stream__(self, requested_schema: Any = None) -> Any:
        """The scan as an Arrow C stream (PyCapsule interface)."""
        return self.to_reader().__arrow_c_stream__(requested_schema)

    async def to_table_async(self) -> pa.Table:
        """The whole scan as one table."""
        from .datafile import collector_paused

        ctx = self._ctx
        # A table scan of many fragments runs with the collector paused (the batched opens'
        # policy, extended over the whole scan: the result is held in full anyway): opening
        # creates long-lived objects per data file, and full collections between groups would
        # walk them all again.
        with collector_paused(ctx, len(ctx.manifest.fragments)):
            batches = [b async for b in self._batches(ramp=False)]
        return _table(batches, self.schema)

    async def count_rows_async(self) -> int:
        """Rows the scan returns."""
        if self._post is None and self._spec.limit is None and not self._spec.offset:
            if self._spec.filter is None and self._spec.fragment_ids is None:
                return (await dataset_index(self._ctx)).count_rows()
            if self._spec.fragment_ids is None:
                return await _scan.count_rows(self._ctx, self._spec.filter)
        n = 0
        async for b in self._batches():
            n += b.num_rows
        return n

    async def head_async(self, num_rows: int) -> pa.Table:
        """The first ``num_rows`` rows of the scan."""
        out, n = [], 0
        if num_rows > 0:
            async for b in self._batches():
                out.append(b.slice(0, num_rows - n))
                n += out[-1].num_rows
                if n >= num_rows:
                    break
        return _table(out, self.schema)

    async def take_async(self, indices: Any) -> pa.Table:
        """Rows of the scan's result at ``indices`` (positions in its output)."""
        return (await self.to_table_async()).take(indices)

    async def scan_batches_async(self) -> list[Any]:
        """The batches with their fragment (``TaggedRecordBatch``-like: ``record_batch``)."""
        from types import SimpleNamespace

        return [SimpleNamespace(record_batch=b, fragment=None) async for b in self._batches()]

    def to_pandas(self, **kwargs: Any) -> Any:
        """The scan as a pandas DataFrame (``pyarrow.Table.to_pandas`` keyword arguments)."""
        return self.to_table().to_pandas(**kwargs)

    def explain_plan(self, verbose: bool = False) -> str:
        """A text description of the scan (what is read, filtered, computed)."""
        s = self._spec
        lines = [f"LanceScan: uri={self._ctx.uri}, version={self._ctx.version}",
                 f"  columns={[t.name for t in s.tops]}, with_row_id={s.with_row_id}, "
                 f"with_row_address={s.with_row_address}",
                 f"  filter={s.filter.text if s.filter is not None else None}, limit={s.limit}, offset={s.offset}"]
        if s.fragment_ids is not None:
            lines.append(f"  fragments={list(s.fragment_ids)}")
        if self._post is not None:
            p = self._post
            lines.append(f"  then: filter={p.filter.text if p.filter is not None else None}, "
                         f"outputs={p.schema.names}, order_by={[o.column_name for o in p.order_by]}")
        return "\n".join(lines)

    def analyze_plan(self, count_rows: bool = False) -> str:
        """:meth:`explain_plan` after running the scan, with its row count."""
        rows = self.count_rows()
        return self.explain_plan() + f"\n  output_rows={rows}"

    to_table = bridged(to_table_async)
    count_rows = bridged(count_rows_async)
    head = bridged(head_async)
    take = bridged(take_async)
    scan_batches = bridged(scan_batches_async)


def _table(batches: list[pa.RecordBatch], schema: pa.Schema) -> pa.Table:
    if not batches:
        return pa.Table.from_batches([], schema=schema)  # (empty_table imports pandas)
    if len(schema) == 0:
        n = sum(b.num_rows for b in batches)
        return pa.Table.from_batches([pa.RecordBatch.from_struct_array(pa.array([{}] * n, type=pa.struct([])))])
    return pa.Table.from_batches(batches, schema=schema)


def _uri(store: Any, path: str) -> str:
    return store.uri(path)


def _columns_key(columns: Any) -> Any:
    return None if columns is None else tuple(columns) if not isinstance(columns, str) else (columns,)


class DatasetReader:
    """One checked-out version of a Lance dataset: metadata, scans and takes (async)."""

    def __init__(self, ctx: DatasetContext) -> None:
        self._ctx = ctx
        #: Scan specs of takes by (columns, with_row_id, with_row_address) (see take_async).
        self._take_specs: dict[tuple, _scan.ScanSpec] = {}

    # ------------------------------------------------------------------ opening
    @classmethod
    async def open_async(cls: type[R], uri: str, version: int | str | None = None,
                         storage_options: dict[str, str] | None = None) -> R:
        """The dataset at ``uri`` (local path, ``file://``, ``memory://``, ``s3://``, ``gs://``) at
        ``version`` (None = latest, a number, or a tag name)."""
        return cls(await open_context(uri, version, storage_options))

    def snapshot(self) -> "DatasetReader":
        """A read core fixed at this object's current version (operations work on snapshots: a
        dataset object moves to the version its own changes commit)."""
        return DatasetReader(self._ctx)

    async def checkout_version_async(self: R, version: int | str) -> R:
        """This dataset at ``version`` (a number or a tag name)."""
        return type(self)(await checkout_context(self._ctx, version))

    async def latest_async(self: R) -> R:
        """This dataset at its latest version."""
        return type(self)(await checkout_context(self._ctx, None))

    # ------------------------------------------------------------------ metadata
    @property
    def uri(self) -> str:
        return self._ctx.uri

    @property
    def version(self) -> int:
        return self._ctx.version

    @property
    def manifest(self) -> Manifest:
        return self._ctx.manifest

    @property
    def schema(self) -> pa.Schema:
        return self._ctx.schema

    @property
    def data_storage_version(self) -> str:
        return self._ctx.manifest.data_storage_version

    @property
    def has_stable_row_ids(self) -> bool:
        return bool(self._ctx.manifest.reader_feature_flags & FLAG_STABLE_ROW_IDS)

    @property
    def store(self) -> Any:
        return self._ctx.store

    @property
    def context(self) -> DatasetContext:
        return self._ctx

    async def versions_async(self) -> list[dict[str, Any]]:
        """Every version: ``{"version", "timestamp" (naive local datetime), "metadata", "tag"}``."""
        c = self._ctx
        locs = await list_manifests(c.store, c.root, c.stats)

        async def one(loc: ManifestLocation) -> dict[str, Any]:
            try:
                m, _, _ = await read_manifest_at(c.store, loc.path, c.stats, loc.size)
            except LanceJitError as exc:
                raise with_context(exc, f"dataset {c.uri} version {loc.version} file {c.store.uri(loc.path)}") from exc
            return {
                "version": m.version,
                "timestamp": timestamp_to_datetime(m.timestamp_ns),
                "metadata": version_summary(m),
            }

        out = list(await asyncio.gather(*(one(loc) for loc in locs)))
        tags = await list_tags(c.store, c.root, c.stats)
        by_version: dict[int, list[str]] = {}
        for t in tags:
            by_version.setdefault(t.version, []).append(t.name)
        for v in out:
            names = by_version.get(v["version"], [])
            v["tag"] = names[0] if len(names) == 1 else (names or None)
        return out

    async def tags_async(self) -> list[Tag]:
        """The dataset's tags, sorted by name."""
        return await list_tags(self._ctx.store, self._ctx.root, self._ctx.stats)

    def get_fragments(self) -> list[FragmentInfo]:
        c = self._ctx
        return [
            FragmentInfo(
                f.id, f.physical_rows,
                f.num_deleted_rows, f.files,
                _uri(*c.deletion_file_location(f.id, f.deletion_file)) if f.deletion_file else None,
                f.row_ids is not None,
            )
            for f in c.manifest.fragments
        ]

    def io_stats(self) -> Any:
        """Requests and bytes this dataset made (``read_iops``, ``read_bytes``, ``list_iops``...)
        since the previous call, across all versions checked out from it (an
        :class:`lancejit.io.IOStatsSnapshot`; compare with the reference's
        ``io_stats_incremental()``)."""
        return self._ctx.stats.incremental()

    # ------------------------------------------------------------------ scans
    def _spec(self, columns: Sequence[str] | None = None, filter: str | pc.Expression | None = None,
              limit: int | None = None, offset: int | None = None, with_row_id: bool = False,
              with_row_address: bool = False, batch_size: int | None = None,
              fragment_ids: Sequence[int] | None = None, readahead: int | None = None,
              nested_as_struct: bool = False) -> _scan.ScanSpec:
        return scan_spec(self._ctx, columns, filter, limit, offset, with_row_id, with_row_address,
                         batch_size, fragment_ids, readahead, nested_as_struct)

    def scanner(self, columns: Sequence[str] | Mapping[str, str] | None = None,
                filter: str | pc.Expression | None = None, limit: int | None = None, offset: int | None = None,
                nearest: Any = None, batch_size: int | None = None, batch_size_bytes: int | None = None,
                batch_readahead: int | None = None, fragment_readahead: int | None = None,
                scan_in_order: bool | None = None, fragments: Iterable[Any] | None = None,
                index_segments: Any = None, full_text_query: Any = None, *, prefilter: bool | None = None,
                with_row_id: bool | None = None, with_row_address: bool | None = None,
                use_stats: bool | None = None, fast_search: bool | None = None, io_buffer_size: int | None = None,
                late_materialization: Any = None, blob_handling: str | None = None,
                use_scalar_index: bool | None = None, include_deleted_rows: bool | None = None,
                scan_stats_callback: Any = None, strict_batch_size: bool | None = None,
                order_by: Sequence[Any] | None = None, disable_scoring_autoprojection: bool | None = None,
                row_addr_allowlist: Any = None, row_addr_blocklist: Any = None,
                fragment_ids: Sequence[int] | None = None, readahead: int | None = None) -> Scanner:
        """A scan of this version, with the reference's arguments (see :mod:`.scan_args`):
        ``columns`` (names, dotted struct paths, ``_rowid``/``_rowaddr``, or ``{name: SQL
        expression}``), ``filter`` (SQL string or ``pyarrow.compute.Expression``; may name
        ``_rowid``/``_rowaddr``), then ``offset``/``limit`` in scan order; ``fragments``
        (fragment objects) or lancejit's ``fragment_ids`` restrict the scan to those fragments;
        ``order_by`` sorts the result; ``with_row_id``/``with_row_address`` append uint64
        ``_rowid``/``_rowaddr``."""
        args = ScanArgs.of(
            getattr(self, "_default_scan_options", None), columns=columns, filter=filter, limit=limit,
            offset=offset, nearest=nearest, batch_size=batch_size, batch_size_bytes=batch_size_bytes,
            batch_readahead=batch_readahead, fragment_readahead=fragment_readahead, scan_in_order=scan_in_order,
            fragments=fragments, index_segments=index_segments, full_text_query=full_text_query,
            prefilter=prefilter, with_row_id=with_row_id, with_row_address=with_row_address, use_stats=use_stats,
            fast_search=fast_search, io_buffer_size=io_buffer_size, late_materialization=late_materialization,
            blob_handling=blob_handling, use_scalar_index=use_scalar_index,
            include_deleted_rows=include_deleted_rows, scan_stats_callback=scan_stats_callback,
            strict_batch_size=strict_batch_size, order_by=order_by,
            disable_scoring_autoprojection=disable_scoring_autoprojection, row_addr_allowlist=row_addr_allowlist,
            row_addr_blocklist=row_addr_blocklist, fragment_ids=fragment_ids, readahead=readahead)
        spec, post = resolve_scan(self._ctx, args)
        return Scanner(self._ctx, spec, post)

    async def to_table_async(self, columns: Sequence[str] | Mapping[str, str] | None = None,
                             filter: str | pc.Expression | None = None, limit: int | None = None,
                             offset: int | None = None, nearest: Any = None, batch_size: int | None = None,
                             batch_size_bytes: int | None = None, batch_readahead: int | None = None,
                             fragment_readahead: int | None = None, scan_in_order: bool | None = None, *,
                             prefilter: bool | None = None, with_row_id: bool | None = None,
                             with_row_address: bool | None = None, use_stats: bool | None = None,
                             fast_search: bool | None = None, full_text_query: Any = None,
                             io_buffer_size: int | None = None, late_materialization: Any = None,
                             blob_handling: str | None = None, use_scalar_index: bool | None = None,
                             include_deleted_rows: bool | None = None, order_by: Sequence[Any] | None = None,
                             disable_scoring_autoprojection: bool | None = None,
                             fragments: Iterable[Any] | None = None,
                             fragment_ids: Sequence[int] | None = None) -> pa.Table:
        """The rows of :meth:`scanner` with these arguments, as one table."""
        return await self.scanner(
            columns, filter, limit, offset, nearest, batch_size, batch_size_bytes, batch_readahead,
            fragment_readahead, scan_in_order, fragments, None, full_text_query, prefilter=prefilter,
            with_row_id=with_row_id, with_row_address=with_row_address, use_stats=use_stats,
            fast_search=fast_search, io_buffer_size=io_buffer_size, late_materialization=late_materialization,
            blob_handling=blob_handling, use_scalar_index=use_scalar_index,
            include_deleted_rows=include_deleted_rows, order_by=order_by,
            disable_scoring_autoprojection=disable_scoring_autoprojection,
            fragment_ids=fragment_ids).to_table_async()

    def to_batches(self, columns: Sequence[str] | Mapping[str, str] | None = None,
                   filter: str | pc.Expression | None = None, limit: int | None = None, offset: int | None = None,
                   nearest: Any = None, batch_size: int | None = None, batch_size_bytes: int | None = None,
                   batch_readahead: int | None = None, fragment_readahead: int | None = None,
                   scan_in_order: bool | None = None, *, prefilter: bool | None = None,
                   with_row_id: bool | None = None, with_row_address: bool | None = None,
                   use_stats: bool | None = None, full_text_query: Any = None, io_buffer_size: int | None = None,
                   late_materialization: Any = None, blob_handling: str | None = None,
                   use_scalar_index: bool | None = None, strict_batch_size: bool | None = None,
                   order_by: Sequence[Any] | None = None, disable_scoring_autoprojection: bool | None = None,
                   fragments: Iterable[Any] | None = None, fragment_ids: Sequence[int] | None = None,
                   **kwargs: Any) -> Iterator[pa.RecordBatch]:
        """Like ``to_table``, as an iterator of record batches (bounded readahead); other
        keyword arguments go to :meth:`scanner`."""
        return self.scanner(
            columns, filter, limit, offset, nearest, batch_size, batch_size_bytes, batch_readahead,
            fragment_readahead, scan_in_order, fragments, None, full_text_query, prefilter=prefilter,
            with_row_id=with_row_id, with_row_address=with_row_address, use_stats=use_stats,
            io_buffer_size=io_buffer_size, late_materialization=late_materialization, blob_handling=blob_handling,
            use_scalar_index=use_scalar_index, strict_batch_size=strict_batch_size, order_by=order_by,
            disable_scoring_autoprojection=disable_scoring_autoprojection, fragment_ids=fragment_ids,
            **kwargs).to_batches()

    async def count_rows_async(self, filter: str | pc.Expression | None = None) -> int:
        """Rows after deletions (matching ``filter`` if given)."""
        if filter is None:  # from the version index: no data file read when the manifest has counts
            return (await dataset_index(self._ctx)).count_rows()
        return await self.scanner(columns=[], filter=filter).count_rows_async()

    # ------------------------------------------------------------------ takes
    async def take_async(self, indices: Any, columns: Sequence[str] | None = None,
                         with_row_id: bool = False, with_row_address: bool = False,
                         batch: bool | None = None) -> pa.Table:
        """Rows at logical offsets ``indices`` (after deletions), in request order.

        Concurrent calls with the same columns and options on this event loop are merged into one
        take (``batch``: None = the process default, see :mod:`lancejit.table.read.take_batch`)."""
        key = (_columns_key(columns), with_row_id, with_row_address)
        spec = self._take_spec(key, columns, with_row_id, with_row_address)
        return await _take_batch.take_offsets(self._ctx, indices, spec, key, batch)

    def _take_spec(self, key: tuple, columns: Any, with_row_id: bool, with_row_address: bool) -> _scan.ScanSpec:
        """The take's scan spec for ``key`` (columns, flags), built once per dataset object."""
        try:
            spec = self._take_specs.get(key)
        except TypeError:  # unhashable column entries: scan_spec says what is wrong
            spec = None
        if spec is None:
            spec = self._spec(columns, None, None, None, with_row_id, with_row_address, nested_as_struct=True)
            if len(self._take_specs) < 64:
                self._take_specs[key] = spec
        return spec

    async def take_rows_async(self, row_ids: Any, columns: Sequence[str] | None = None,
                              with_row_id: bool = False, with_row_address: bool = False,
                              batch: bool | None = None) -> pa.Table:
        """Rows by row id (stable ids when enabled, else row addresses), in request order;
        deleted rows are skipped.  Concurrent calls are merged like :meth:`take_async`'s."""

        def make_spec(force_row_id: bool) -> _scan.ScanSpec:
            return self._spec(columns, None, None, None, with_row_id or force_row_id, with_row_address,
                              nested_as_struct=True)

        key = (_columns_key(columns), with_row_id, with_row_address)
        return await _take_batch.take_rows(self._ctx, row_ids, make_spec, self.has_stable_row_ids, key, batch)


__all__ = ["DatasetReader", "Scanner"]
