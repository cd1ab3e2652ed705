"""``Dataset``: one version of a Lance dataset, read side.

The async methods (``*_async``, ``scan_batches``) are the implementation; the sync methods run
them on lancejit's I/O loop via :func:`lancejit.io.sync.run_sync`.
"""

from __future__ import annotations

import asyncio
import inspect
import os
from typing import TYPE_CHECKING, Any, AsyncIterator, Iterable, Iterator, Sequence

import numpy as np
import pyarrow as pa

from lancejit.core.errors import InvalidInputError, LanceJitError, NotFoundError
from lancejit.core.schema import LanceSchema
from lancejit.io import open_store
from lancejit.io.sync import iter_sync, run_sync

from . import scan as _scan
from . import take as _take
from . import take_batch as _take_batch
from .context import DatasetContext, SharedCaches, with_context
from .features import FLAG_STABLE_ROW_IDS, check_reader_flags
from .fields import TopField, top_level_fields
from .fragment import ROWADDR, ROWID, FragmentInfo
from .index import dataset_index, index_now
from .manifest import Manifest
from .versions import (
    ManifestLocation,
    Tag,
    latest_location,
    list_manifests,
    list_tags,
    read_manifest_at,
    read_tag,
    read_version,
    timestamp_to_datetime,
)

if TYPE_CHECKING:  # pyarrow.compute is imported by the first filter, not by opening a dataset
    import pyarrow.compute as pc


def compile_filter(*args: Any, **kwargs: Any) -> Any:
    """:func:`lancejit.table.filter.compile_filter`, imported on the first filter (sqlglot is not
    loaded by opening a dataset or taking rows)."""
    from .filter import compile_filter as compile_

    return compile_(*args, **kwargs)


async def _open_store(uri: str, storage_options: dict[str, str] | None) -> tuple[Any, str]:
    """The store holding the dataset and the dataset root's path in it (no trailing slash)."""
    res = open_store(uri, storage_options)
    if inspect.isawaitable(res):
        res = await res
    store, path = res
    return store, path.rstrip("/")


async def _load_manifest(
    store: Any, root: str, uri: str, version: int | str | None, stats: Any = None
) -> tuple[Manifest, str]:
    """Resolve ``version`` (None = latest, int, or tag name) and read its manifest."""
    if isinstance(version, str):
        tag = await read_tag(store, root, version, stats)
        version = tag.version
    if version is None:
        loc = await latest_location(store, root, stats)
        try:
            manifest, _, _ = await read_manifest_at(store, loc.path, stats, loc.size)
        except LanceJitError as exc:
            raise with_context(exc, f"dataset {uri} version {loc.version} file {store.uri(loc.path)}") from exc
        return manifest, loc.path
    if isinstance(version, bool) or not isinstance(version, int):
        raise InvalidInputError(f"version must be an int or a tag name, got {version!r}")
    try:
        manifest, loc = await read_version(store, root, version, stats)
    except NotFoundError as exc:
        raise NotFoundError(f"dataset {uri} has no version {version}") from exc
    except LanceJitError as exc:
        raise with_context(exc, f"dataset {uri} version {version}") from exc
    return manifest, loc.path


#: Schemas converted from manifests, by the bytes of the manifest's schema fields
#: (``Manifest.schema_key``): ``(LanceSchema, pyarrow.Schema, top-level fields)``.
_SCHEMAS: dict[bytes, tuple[LanceSchema, pa.Schema, tuple[TopField, ...]]] = {}
_SCHEMAS_MAX = 256


def _schemas(manifest: Manifest, path: str) -> tuple[LanceSchema, pa.Schema, tuple[TopField, ...]]:
    """The Lance and Arrow schemas and top-level fields of ``manifest`` (converted once per
    distinct schema bytes; all immutable)."""
    key = manifest.schema_key
    found = _SCHEMAS.get(key) if key is not None else None
    if found is None:
        lschema = LanceSchema.from_pb(manifest.fields, manifest.schema_metadata, path=path)
        found = (lschema, lschema.to_arrow(dataset=True, path=path), tuple(top_level_fields(manifest.fields, path)))
        if key is not None:
            if len(_SCHEMAS) >= _SCHEMAS_MAX:
                _SCHEMAS.clear()
            _SCHEMAS[key] = found
    return found


def _make_context(
    uri: str, store: Any, root: str, manifest: Manifest, manifest_path: str,
    caches: SharedCaches, storage_options: dict[str, str] | None,
) -> DatasetContext:
    check_reader_flags(manifest.reader_feature_flags, dataset=uri, version=manifest.version, path=store.uri(manifest_path))
    try:
        lschema, schema, tops = _schemas(manifest, store.uri(manifest_path))
    except LanceJitError as exc:
        raise with_context(exc, f"dataset {uri} version {manifest.version} file {store.uri(manifest_path)}") from exc
    return DatasetContext(uri, store, root, manifest, manifest_path, schema, list(tops), caches, storage_options,
                          lschema)


def _is_int(value: Any) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


def _check_count(name: str, value: Any, minimum: int) -> None:
    """``value`` (None allowed) must be an int >= ``minimum``; else InvalidInputError naming it."""
    if value is not None and (not _is_int(value) or value < minimum):
        raise InvalidInputError(f"{name} must be an int >= {minimum}, got {value!r}")


def _uri(store: Any, path: str) -> str:
    return store.uri(path)


def _nest(outputs: list[_scan.OutColumn]) -> list[_scan.OutColumn]:
    """Merge ``st.x``-style columns into one pruned struct column per top-level field, at the
    first one's position (the shape the reference's take returns)."""
    paths: dict[str, list[tuple[str, ...]]] = {}
    for o in outputs:
        if o.top is not None:
            paths.setdefault(o.top, []).append(o.path)
    out, seen = [], set()
    for o in outputs:
        if o.top is None or not any(paths[o.top]):
            out.append(o)
        elif o.top not in seen:
            seen.add(o.top)
            out.append(_scan.OutColumn(o.top, o.top, (), tuple(paths[o.top])))
    return out


def _resolve_column(schema: pa.Schema, name: str) -> tuple[str | None, tuple[str, ...]]:
    """``(top-level field, struct path)`` for ``name`` (``"a"`` or a dotted ``"st.x"``)."""
    if name in schema.names:
        return name, ()
    parts = name.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        top = ".".join(parts[:cut])
        if top not in schema.names:
            continue
        t = schema.field(top).type
        ok = True
        for part in parts[cut:]:
            if not pa.types.is_struct(t) or t.get_field_index(part) < 0:
                ok = False
                break
            t = t.field(part).type
        if ok:
            return top, tuple(parts[cut:])
    return None, ()


class Scanner:
    """A configured scan; ``to_reader()`` gives a ``pyarrow.RecordBatchReader``."""

    def __init__(self, ds: "Dataset", spec: _scan.ScanSpec) -> None:
        self._ds = ds
        self._spec = spec

    @property
    def schema(self) -> pa.Schema:
        return _scan.output_schema(self._ds._ctx, self._spec)

    async def batches_async(self) -> AsyncIterator[pa.RecordBatch]:
        async for b in _scan.scan(self._ds._ctx, self._spec):
            yield b

    def to_batches(self) -> Iterator[pa.RecordBatch]:
        return iter_sync(_scan.scan(self._ds._ctx, self._spec))

    def to_reader(self) -> pa.RecordBatchReader:
        return pa.RecordBatchReader.from_batches(self.schema, self.to_batches())

    async def to_table_async(self) -> pa.Table:
        from .datafile import collector_paused

        ctx = self._ds._ctx
        # A table scan of many fragments runs with the collector paused (the batched opens'
        # policy, extended over the whole scan: the result is held in full anyway): opening
        # creates ~16 long-lived objects per data file, and full collections between groups
        # would walk them all again (10,000 fragments cold: ~30% of the scan).
        with collector_paused(ctx, len(ctx.manifest.fragments)):
            batches = [b async for b in _scan.scan(ctx, self._spec)]
        return _table(batches, self.schema)

    def to_table(self) -> pa.Table:
        return run_sync(self.to_table_async())

    def count_rows(self) -> int:
        return self.to_table().num_rows


def _table(batches: list[pa.RecordBatch], schema: pa.Schema) -> pa.Table:
    if not batches:
        return pa.Table.from_batches([], schema=schema)  # (empty_table imports pandas)
    if len(schema) == 0:
        n = sum(b.num_rows for b in batches)
        return pa.Table.from_batches([pa.RecordBatch.from_struct_array(pa.array([{}] * n, type=pa.struct([])))])
    return pa.Table.from_batches(batches, schema=schema)


class Dataset:
    """One checked-out version of a Lance dataset (read side).

    Open with :func:`lancejit.table.dataset` (sync) or ``await Dataset.open_async(...)``.
    """

    def __init__(self, ctx: DatasetContext) -> None:
        self._ctx = ctx
        #: Scan specs of takes by (columns, with_row_id, with_row_address) (see take_async).
        self._take_specs: dict[tuple, _scan.ScanSpec] = {}

    # ------------------------------------------------------------------ opening
    @classmethod
    async def open_async(
        cls, uri: str, version: int | str | None = None, storage_options: dict[str, str] | None = None
    ) -> "Dataset":
        if not isinstance(uri, str):
            try:
                uri = os.fspath(uri)
            except TypeError:
                raise InvalidInputError(f"uri must be a str or path, got {type(uri).__name__}") from None
            if not isinstance(uri, str):
                raise InvalidInputError(f"uri must be a str or path, got {type(uri).__name__}")
        store, root = await _open_store(uri, storage_options)
        caches = SharedCaches()
        manifest, mpath = await _load_manifest(store, root, uri, version, caches.stats)
        return cls(_make_context(uri, store, root, manifest, mpath, caches, storage_options))

    async def checkout_version_async(self, version: int | str) -> "Dataset":
        c = self._ctx
        manifest, mpath = await _load_manifest(c.store, c.root, c.uri, version, c.stats)
        return Dataset(_make_context(c.uri, c.store, c.root, manifest, mpath, c.caches, c.storage_options))

    def checkout_version(self, version: int | str) -> "Dataset":
        """This dataset at ``version`` (a number or a tag name)."""
        return run_sync(self.checkout_version_async(version))

    async def latest_async(self) -> "Dataset":
        c = self._ctx
        manifest, mpath = await _load_manifest(c.store, c.root, c.uri, None, c.stats)
        return Dataset(_make_context(c.uri, c.store, c.root, manifest, mpath, c.caches, c.storage_options))

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

        out = list(await asyncio.gather(*(one(l) for l in locs)))
        tags = await list_tags(c.store, c.root, c.stats)
        by_version: dict[int, list[str]] = {}
        for t in tags:
            by_version.setdefault(t.version, []).append(t.name)
        for v in out:
            names = by_version.get(v["version"], [])
            v["tag"] = names[0] if len(names) == 1 else (names or None)
        return out

    def versions(self) -> list[dict[str, Any]]:
        """Every version: ``{"version", "timestamp" (naive local datetime), "metadata", "tag"}``."""
        return run_sync(self.versions_async())

    async def tags_async(self) -> list[Tag]:
        return await list_tags(self._ctx.store, self._ctx.root, self._ctx.stats)

    @property
    def tags(self) -> "Tags":
        """The tags: iterate for ``Tag(name, version, ...)`` sorted by name; ``create(name,
        version)``, ``update``, ``delete(name)``, ``list()`` (see :class:`.maintenance.Tags`)."""
        from .maintenance import Tags

        return Tags(self)

    def list_tags(self) -> dict[str, dict[str, Any]]:
        """Tags as the reference's ``ds.tags.list()`` shows them."""
        return {t.name: t.to_dict() for t in self.tags}

    def get_fragments(self) -> list[FragmentInfo]:
        return [
            FragmentInfo(
                f.id, f.physical_rows,
                f.num_deleted_rows, f.files,
                _uri(*self._ctx.deletion_file_location(f.id, f.deletion_file)) if f.deletion_file else None,
                f.row_ids is not None,
            )
            for f in self._ctx.manifest.fragments
        ]

    def io_stats(self) -> Any:
        """Requests and bytes this dataset made (``read_iops``, ``read_bytes``, ``list_iops``...)
        since the previous call, across all versions checked out from it (an
        :class:`lancejit.io.IOStatsSnapshot`; compare with the reference's
        ``io_stats_incremental()``)."""
        return self._ctx.stats.incremental()

    # ------------------------------------------------------------------ projection helpers
    def _spec(
        self,
        columns: Sequence[str] | None = None,
        filter: str | pc.Expression | None = None,
        limit: int | None = None,
        offset: int | None = None,
        with_row_id: bool = False,
        with_row_address: bool = False,
        batch_size: int | None = None,
        fragment_ids: Sequence[int] | None = None,
        readahead: int | None = None,
        nested_as_struct: bool = False,
    ) -> _scan.ScanSpec:
        c = self._ctx
        by_name = {t.name: t for t in c.top_fields}
        outputs: list[_scan.OutColumn] | None = None
        if columns is None:
            tops = list(c.top_fields)
        else:
            if isinstance(columns, str):
                columns = [columns]
            elif not isinstance(columns, (list, tuple)):
                raise InvalidInputError(f"columns must be a list of column names, got {type(columns).__name__}")
            needed: dict[str, TopField] = {}
            outputs = []
            for name in columns:
                if not isinstance(name, str):
                    raise InvalidInputError(f"column names must be strings, got {name!r}")
                if name == ROWID:
                    with_row_id = True
                    outputs.append(_scan.OutColumn(ROWID, None))
                    continue
                if name == ROWADDR:
                    with_row_address = True
                    outputs.append(_scan.OutColumn(ROWADDR, None))
                    continue
                top, path = _resolve_column(c.schema, name)
                if top is None:
                    raise InvalidInputError(f"dataset {c.uri} has no column {name!r} (columns: {list(by_name)})")
                needed.setdefault(top, by_name[top])
                outputs.append(_scan.OutColumn(name, top, path))
            tops = list(needed.values())
            if with_row_id and not any(o.name == ROWID for o in outputs):
                outputs.append(_scan.OutColumn(ROWID, None))
            if with_row_address and not any(o.name == ROWADDR for o in outputs):
                outputs.append(_scan.OutColumn(ROWADDR, None))
            if nested_as_struct:
                outputs = _nest(outputs)
        compiled = compile_filter(filter, c.schema) if filter is not None else None
        _check_count("limit", limit, 0)
        _check_count("offset", offset, 0)
        _check_count("batch_size", batch_size, 1)
        _check_count("readahead", readahead, 0)
        if fragment_ids is not None and (isinstance(fragment_ids, (str, bytes)) or not isinstance(fragment_ids, Iterable)
                                         or not all(_is_int(f) and f >= 0 for f in fragment_ids)):
            raise InvalidInputError(f"fragment_ids must be a list of non-negative ints, got {fragment_ids!r}")
        kwargs: dict[str, Any] = {}
        if batch_size is not None:
            kwargs["batch_size"] = int(batch_size)
        if readahead is not None:
            kwargs["readahead"] = max(1, int(readahead))
        return _scan.ScanSpec(
            tops=tuple(tops), filter=compiled, with_row_id=with_row_id,
            with_row_address=with_row_address, limit=limit, offset=offset or 0,
            fragment_ids=tuple(fragment_ids) if fragment_ids is not None else None,
            outputs=tuple(outputs) if outputs is not None else None, **kwargs,
        )

    # ------------------------------------------------------------------ reads
    def scanner(self, columns=None, filter=None, limit=None, offset=None, with_row_id=False,
                with_row_address=False, batch_size=None, fragment_ids=None, readahead=None) -> Scanner:
        """A scan of this version; see :meth:`to_table` for the arguments."""
        return Scanner(self, self._spec(columns, filter, limit, offset, with_row_id, with_row_address,
                                        batch_size, fragment_ids, readahead))

    async def to_table_async(self, columns=None, filter=None, limit=None, offset=None, with_row_id=False,
                             with_row_address=False, batch_size=None, fragment_ids=None) -> pa.Table:
        return await self.scanner(columns, filter, limit, offset, with_row_id, with_row_address,
                                  batch_size, fragment_ids).to_table_async()

    def to_table(self, columns=None, filter=None, limit=None, offset=None, with_row_id=False,
                 with_row_address=False, batch_size=None, fragment_ids=None) -> pa.Table:
        """Rows of this version: ``columns`` (top-level names, plus ``_rowid``/``_rowaddr``),
        ``filter`` (SQL string or ``pyarrow.compute.Expression``), then ``offset``/``limit`` in
        scan order; ``with_row_id``/``with_row_address`` append uint64 ``_rowid``/``_rowaddr``."""
        return run_sync(self.to_table_async(columns, filter, limit, offset, with_row_id,
                                            with_row_address, batch_size, fragment_ids), store=self._ctx.store)

    def to_batches(self, columns=None, filter=None, limit=None, offset=None, with_row_id=False,
                   with_row_address=False, batch_size=None, fragment_ids=None) -> Iterator[pa.RecordBatch]:
        """Like :meth:`to_table`, as an iterator of record batches (bounded readahead)."""
        return self.scanner(columns, filter, limit, offset, with_row_id, with_row_address,
                            batch_size, fragment_ids).to_batches()

    async def count_rows_async(self, filter: str | pc.Expression | None = None) -> int:
        if filter is None:  # from the version index: no data file read when the manifest has counts
            return (await dataset_index(self._ctx)).count_rows()
        compiled = compile_filter(filter, self._ctx.schema)
        return await _scan.count_rows(self._ctx, compiled)

    def count_rows(self, filter: str | pc.Expression | None = None) -> int:
        """Rows after deletions (matching ``filter`` if given)."""
        if filter is None:  # the manifest's counts: no I/O, no event loop
            index = index_now(self._ctx)
            if index is not None:
                return index.count_rows()
        return run_sync(self.count_rows_async(filter), store=self._ctx.store)

    async def take_async(self, indices: Any, columns: Sequence[str] | None = None,
                         with_row_id: bool = False, with_row_address: bool = False,
                         batch: bool | None = None) -> pa.Table:
        """Rows at logical offsets ``indices`` (after deletions), in request order.

        Concurrent calls with the same columns and options on this event loop are merged into one
        take (``batch``: None = the process default, see :mod:`lancejit.table.take_batch`)."""
        key = (None if columns is None else tuple(columns) if not isinstance(columns, str) else (columns,),
               with_row_id, with_row_address)
        spec = self._take_spec(key, columns, with_row_id, with_row_address)
        return await _take_batch.take_offsets(self._ctx, indices, spec, key, batch)

    def _take_spec(self, key: tuple, columns: Any, with_row_id: bool, with_row_address: bool) -> _scan.ScanSpec:
        """The take's scan spec for ``key`` (columns, flags), built once per dataset object."""
        try:
            spec = self._take_specs.get(key)
        except TypeError:  # unhashable column entries: _spec says what is wrong
            spec = None
        if spec is None:
            spec = self._spec(columns, None, None, None, with_row_id, with_row_address, nested_as_struct=True)
            if len(self._take_specs) < 64:
                self._take_specs[key] = spec
        return spec

    def take(self, indices: Any, columns: Sequence[str] | None = None,
             with_row_id: bool = False, with_row_address: bool = False) -> pa.Table:
        return run_sync(self.take_async(indices, columns, with_row_id, with_row_address), store=self._ctx.store)

    async def take_rows_async(self, row_ids: Any, columns: Sequence[str] | None = None,
                              with_row_id: bool = False, with_row_address: bool = False,
                              batch: bool | None = None) -> pa.Table:
        """Rows by row id (stable ids when enabled, else row addresses), in request order;
        deleted rows are skipped.  Concurrent calls are merged like :meth:`take_async`'s."""

        def make_spec(force_row_id: bool) -> _scan.ScanSpec:
            return self._spec(columns, None, None, None, with_row_id or force_row_id, with_row_address,
                              nested_as_struct=True)

        key = (None if columns is None else tuple(columns) if not isinstance(columns, str) else (columns,),
               with_row_id, with_row_address)
        return await _take_batch.take_rows(self._ctx, row_ids, make_spec, self.has_stable_row_ids, key, batch)

    def take_rows(self, row_ids: Any, columns: Sequence[str] | None = None,
                  with_row_id: bool = False, with_row_address: bool = False) -> pa.Table:
        return run_sync(self.take_rows_async(row_ids, columns, with_row_id, with_row_address), store=self._ctx.store)

    def __len__(self) -> int:
        return self.count_rows()

    # ------------------------------------------------------------------ writes (thin wrappers)
    async def delete_async(self, predicate: str | pc.Expression) -> "Dataset":
        from .mutate import delete_async

        return await delete_async(self, predicate)

    def delete(self, predicate: str | pc.Expression) -> "Dataset":
        """Delete the rows matching ``predicate``; returns the new version (see :mod:`.mutate`)."""
        return run_sync(self.delete_async(predicate))

    async def update_async(self, values: dict[str, Any], where: str | pc.Expression | None = None,
                           **kwargs: Any) -> "Dataset":
        from .mutate import update_async

        return await update_async(self, values, where, **kwargs)

    def update(self, values: dict[str, Any], where: str | pc.Expression | None = None, **kwargs: Any) -> "Dataset":
        """Set ``values`` (column -> SQL expression or value) where ``where``; returns the new version."""
        return run_sync(self.update_async(values, where, **kwargs))

    async def add_columns_async(self, transforms: Any, read_columns: Sequence[str] | None = None) -> "Dataset":
        from .evolve import add_columns_async

        return await add_columns_async(self, transforms, read_columns)

    def add_columns(self, transforms: Any, read_columns: Sequence[str] | None = None) -> "Dataset":
        """Add columns (SQL expressions, a batch function, aligned data or null fields; see :mod:`.evolve`)."""
        return run_sync(self.add_columns_async(transforms, read_columns))

    async def drop_columns_async(self, columns: Sequence[str]) -> "Dataset":
        from .evolve import drop_columns_async

        return await drop_columns_async(self, columns)

    def drop_columns(self, columns: Sequence[str]) -> "Dataset":
        return run_sync(self.drop_columns_async(columns))

    async def alter_columns_async(self, *alterations: dict[str, Any]) -> "Dataset":
        from .evolve import alter_columns_async

        return await alter_columns_async(self, *alterations)

    def alter_columns(self, *alterations: dict[str, Any]) -> "Dataset":
        """Rename / relax nullability: ``alter_columns({"path": "a", "name": "b"})``."""
        return run_sync(self.alter_columns_async(*alterations))

    async def restore_async(self, version: int | str | None = None) -> "Dataset":
        from .maintenance import restore_async

        return await restore_async(self, version)

    def restore(self, version: int | str | None = None) -> "Dataset":
        """Make ``version`` (default: this one) the latest version again; returns it."""
        return run_sync(self.restore_async(version))

    def create_tag(self, name: str, version: int | None = None) -> Tag:
        return self.tags.create(name, version)

    def delete_tag(self, name: str) -> None:
        self.tags.delete(name)

    async def cleanup_old_versions_async(self, older_than: Any = None, *, delete_unverified: bool = False,
                                         error_if_tagged_old_versions: bool = True) -> Any:
        from .maintenance import cleanup_old_versions_async

        return await cleanup_old_versions_async(self, older_than, delete_unverified=delete_unverified,
                                                error_if_tagged_old_versions=error_if_tagged_old_versions)

    def cleanup_old_versions(self, older_than: Any = None, *, delete_unverified: bool = False,
                             error_if_tagged_old_versions: bool = True) -> Any:
        """Remove versions older than ``older_than`` (a timedelta) and files only they use."""
        return run_sync(self.cleanup_old_versions_async(
            older_than, delete_unverified=delete_unverified,
            error_if_tagged_old_versions=error_if_tagged_old_versions))

    async def insert_async(self, data: Any, mode: str = "append", **kwargs: Any) -> "Dataset":
        from .write import write_dataset_async

        return await write_dataset_async(data, self.uri, mode, storage_options=self._ctx.storage_options, **kwargs)

    def insert(self, data: Any, mode: str = "append", **kwargs: Any) -> "Dataset":
        """Append (or overwrite with ``mode="overwrite"``) ``data``; returns the new version."""
        return run_sync(self.insert_async(data, mode, **kwargs))

    @property
    def optimize(self) -> Any:
        """Maintenance operations (``ds.optimize.compact_files(...)``), as in the reference."""
        from .compaction import DatasetOptimizer

        return DatasetOptimizer(self)

    def merge_insert(self, on: str | Sequence[str]) -> Any:
        """An upsert builder keyed on column(s) ``on`` (``.when_matched_update_all()`` ...
        ``.execute(data)``), as in the reference."""
        from .merge_insert import MergeInsertBuilder

        return MergeInsertBuilder(self, on)

    def __repr__(self) -> str:
        return f"lancejit.Dataset({self.uri!r}, version={self.version})"


def version_summary(m: Manifest) -> dict[str, str]:
    """The reference's per-version summary (string values) computed from the manifest alone."""
    data_files = sum(len(f.files) for f in m.fragments)
    deletion_files = sum(1 for f in m.fragments if f.deletion_file is not None)
    deleted = sum(f.num_deleted_rows or 0 for f in m.fragments)
    physical = sum(f.physical_rows for f in m.fragments)
    size = sum(df.file_size_bytes or 0 for f in m.fragments for df in f.files)
    return {
        "total_data_file_rows": str(physical),
        "total_data_files": str(data_files),
        "total_deletion_file_rows": str(deleted),
        "total_deletion_files": str(deletion_files),
        "total_files_size": str(size),
        "total_fragments": str(len(m.fragments)),
        "total_rows": str(physical - deleted),
    }


async def open_dataset_async(uri: str, version: int | str | None = None,
                             storage_options: dict[str, str] | None = None) -> Dataset:
    return await Dataset.open_async(uri, version, storage_options)


def dataset(uri: str, version: int | str | None = None, storage_options: dict[str, str] | None = None) -> Dataset:
    """Open the Lance dataset at ``uri`` (local path, ``file://``, ``memory://``, ``s3://``,
    ``gs://``) at ``version`` (None = latest, a number, or a tag name)."""
    from lancejit.io.sync import store_hint

    return run_sync(Dataset.open_async(uri, version, storage_options), store=store_hint(uri))
