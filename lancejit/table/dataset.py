"""``Dataset``: the public face of a Lance dataset, with the reference's (``pylance``) API.

The async methods (``*_async``) are the implementation: reads come from
:class:`~.read.dataset_reader.DatasetReader`, changes from the operations of :mod:`.write`; the
synchronous methods are derived from them (:func:`lancejit.io.sync.bridged`: in the caller's
thread for local and memory stores, on lancejit's I/O loop for object stores).

As in the reference, a change made through a dataset object (``delete``, ``update``,
``merge_insert(...).execute``, ``add_columns``, ``drop_columns``, ``alter_columns``,
``restore``, ``insert``, ``optimize.compact_files``, config and metadata updates) moves that
object to the version it committed; the change methods return the reference's values
(``{"num_deleted_rows": n}``, ``{"num_rows_updated": n}``, merge-insert counts, compaction
metrics, or None).  Checking out a version (``checkout_version``) returns a new object.
"""

from __future__ import annotations

import inspect
import os
import random
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Sequence

import pyarrow as pa

from lancejit.core.errors import InvalidChangeError, InvalidInputError, NotSupportedError
from lancejit.io.sync import bridged, run_sync, store_hint

from .meta.versions import Tag
from .read.arrow_face import ArrowDatasetFace, filter_of
from .read.dataset_reader import DatasetReader, Scanner
from .read.version_index import index_now

if TYPE_CHECKING:
    import pyarrow.compute as pc

    from .write.maintenance import Tags

#: The reference's default ``retry_timeout`` of changes.
RETRY_TIMEOUT = timedelta(seconds=30)
_SCANNER_SIGNATURE = inspect.signature(DatasetReader.scanner)


def _change_error(exc: InvalidInputError) -> InvalidChangeError:
    """``exc`` as the ``OSError``-and-``ValueError`` the reference raises for a refused change."""
    out = InvalidChangeError(str(exc))
    out.__cause__ = exc
    return out


class Dataset(ArrowDatasetFace, DatasetReader):
    """One checked-out version of a Lance dataset (the reference's ``LanceDataset``).

    Open with :func:`lancejit.dataset` (sync) or ``await Dataset.open_async(...)``.  Every
    ``x_async`` method has a synchronous twin ``x``.
    """

    def __init__(self, uri: Any, version: int | str | None = None, block_size: int | None = None,
                 index_cache_size: int | None = None, metadata_cache_size: int | None = None,
                 commit_lock: Any = None, storage_options: dict[str, str] | None = None,
                 serialized_manifest: bytes | None = None, default_scan_options: dict[str, Any] | None = None,
                 metadata_cache_size_bytes: int | None = None, index_cache_size_bytes: int | None = None,
                 read_params: dict[str, Any] | None = None, session: Any = None, namespace_client: Any = None,
                 table_id: Any = None, namespace_client_managed_versioning: bool = False,
                 base_store_params: Any = None) -> None:
        """``Dataset(uri, version=None, ...)`` opens a dataset (the arguments of :func:`dataset`);
        lancejit itself builds them from a checked-out version's context."""
        from .meta.context import DatasetContext

        if isinstance(uri, DatasetContext):
            ctx = uri
        else:
            if serialized_manifest is not None:
                raise NotSupportedError("opening from a serialized manifest is not supported by lancejit")
            opened = dataset(uri, version, storage_options=storage_options, default_scan_options=default_scan_options,
                             namespace_client=namespace_client, table_id=table_id,
                             base_store_params=base_store_params)
            ctx, default_scan_options = opened.context, opened._default_scan_options
        super().__init__(ctx)
        self._default_scan_options: dict[str, Any] | None = default_scan_options
        self._arm_arrow()

    def _adopt(self, new: DatasetReader) -> None:
        """Move this object to ``new``'s version (what a change committed)."""
        self._ctx = new.context
        self._take_specs = {}
        self._arm_arrow()

    async def _moved_to(self, new: DatasetReader | int) -> None:
        """Move to ``new`` (a dataset at the version committed, or that version's number)."""
        self._adopt(await self.checkout_version_async(new) if isinstance(new, int) else new)

    def _same_kind(self, ctx: Any) -> "Dataset":
        out = type(self)(ctx)
        out._default_scan_options = self._default_scan_options
        return out

    async def checkout_version_async(self, version: int | str | tuple) -> "Dataset":
        """This dataset at ``version`` (a number, a tag name or ``(branch, number)``), as a new object."""
        target: int | str
        if isinstance(version, tuple):
            branch, target = version
            if branch not in (None, "main"):
                raise NotSupportedError("branches are not supported by lancejit")
        else:
            target = version
        return self._same_kind((await DatasetReader.checkout_version_async(self, target)).context)

    def checkout_latest(self) -> None:
        """Move this object to the latest version."""
        self._adopt(run_sync(self.latest_async(), store=self.store))

    async def create_scalar_index_async(self, column: str, index_type: str, name: str | None = None, *,
                                        replace: bool = True, **kwargs: Any) -> "Dataset":
        """Build a scalar index (``BTREE``, ``BITMAP``, ``LABEL_LIST``) on ``column`` and commit
        it; this object moves to the new version and is returned (see
        :mod:`lancejit.table.write.scalar_index`)."""
        from .write.scalar_index import create_scalar_index_async

        self._adopt(await create_scalar_index_async(self.snapshot(), column, index_type, name, replace=replace,
                                                    **kwargs))
        return self

    create_scalar_index = bridged(create_scalar_index_async)

    async def drop_index_async(self, name: str) -> "Dataset":
        """Remove the index ``name`` (every segment); this object moves to the new version and is
        returned."""
        from .write.scalar_index import drop_index_async

        self._adopt(await drop_index_async(self.snapshot(), name))
        return self

    drop_index = bridged(drop_index_async)

    async def describe_indices_async(self) -> list[Any]:
        """The indices of this version, as the reference's ``describe_indices()`` shows them."""
        from .read.index_info import describe_indices_async

        return await describe_indices_async(self)

    describe_indices = bridged(describe_indices_async)

    async def list_indices_async(self) -> list[dict[str, Any]]:
        """One dict per index segment (``name``, ``type``, ``uuid``, ``fields``, ``version``,
        ``fragment_ids``, ``base_id``), as the reference's ``list_indices()``."""
        from .read.index_info import list_indices

        return list_indices(await self.describe_indices_async())

    list_indices = bridged(list_indices_async)

    def count_rows(self, filter: str | pc.Expression | None = None, **kwargs: Any) -> int:
        """Rows after deletions (matching ``filter`` if given)."""
        if filter is None and not kwargs:  # the manifest's counts: no I/O, no event loop
            index = index_now(self._ctx)
            if index is not None:
                return index.count_rows()
        if kwargs:
            return self.scanner(columns=[], filter=filter_of(filter), **kwargs).count_rows()
        return run_sync(self.count_rows_async(filter_of(filter)), store=self._ctx.store)

    def __len__(self) -> int:
        return self.count_rows()

    # ------------------------------------------------------------------ pickling, copies
    def __reduce__(self) -> Any:
        return (_reopen, (self.uri, self.version, self._ctx.storage_options, self._default_scan_options))

    def __copy__(self) -> "Dataset":
        return self._same_kind(self._ctx)

    def __deepcopy__(self, memo: Any) -> "Dataset":
        return self.__copy__()

    # ------------------------------------------------------------------ metadata
    @property
    def latest_version(self) -> int:
        """The dataset's latest version (one listing of the versions)."""
        from .commit import latest_version

        return run_sync(latest_version(self._ctx.store, self._ctx.root), store=self._ctx.store)

    @property
    def lance_schema(self) -> Any:
        """The schema as a Lance field tree (field ids, logical types)."""
        return self._ctx.lance_schema

    @property
    def max_field_id(self) -> int:
        return self._ctx.lance_schema.max_field_id()

    @property
    def metadata(self) -> dict[str, str]:
        """The table metadata (``update_metadata``)."""
        return dict(self._ctx.manifest.table_metadata)

    @property
    def schema_metadata(self) -> dict[str, str]:
        md = self.schema.metadata or {}
        return {k.decode(): v.decode() for k, v in md.items()}

    @property
    def partition_expression(self) -> Any:
        import pyarrow.compute as pc

        return pc.scalar(True)

    def config(self) -> dict[str, str]:
        """The table config (``update_config``)."""
        return dict(self._ctx.manifest.config)

    @property
    def stats(self) -> Any:
        """Statistics: ``dataset_stats()``, ``data_stats()``."""
        from .dataset_info import LanceStats

        return LanceStats(self)

    @property
    def has_index(self) -> bool:
        return bool(self.list_indices())

    def index_statistics(self, index_name: str) -> dict[str, Any]:
        raise NotSupportedError("index statistics are not supported by lancejit")

    async def read_transaction_async(self, version: int) -> Any:
        """The transaction (reference-shaped) that made ``version``; None when none was kept."""
        from .dataset_info import read_transaction_async
        from .operation import transaction_from_internal

        txn = await read_transaction_async(self._ctx, version)
        return None if txn is None else transaction_from_internal(txn)

    async def get_transactions_async(self, recent_transactions: int = 10) -> list[Any]:
        """The transactions of the latest ``recent_transactions`` versions, newest first."""
        from .dataset_info import get_transactions_async
        from .operation import transaction_from_internal

        return [None if t is None else transaction_from_internal(t)
                for t in await get_transactions_async(self._ctx, recent_transactions)]

    def io_stats_incremental(self) -> Any:
        """I/O since the previous call (see :meth:`io_stats`)."""
        return self.io_stats()

    def io_stats_snapshot(self) -> Any:
        return self._ctx.stats.snapshot() if hasattr(self._ctx.stats, "snapshot") else self.io_stats()

    # ------------------------------------------------------------------ fragments
    def get_fragments(self, filter: Any = None) -> list[Any]:
        """The fragments of this version as ``LanceFragment`` objects."""
        from .fragment import LanceFragment
        from .meta.fragment_meta import FragmentMetadata

        if filter is not None:
            raise InvalidInputError("get_fragments() does not support filter yet")
        return [LanceFragment(self, fragment=FragmentMetadata.from_pb(f)) for f in self._fragment_pbs()]

    def get_fragment(self, fragment_id: int) -> Any:
        """The fragment with id ``fragment_id`` (None when this version has none)."""
        from .fragment import LanceFragment
        from .meta.fragment_meta import FragmentMetadata

        for f in self._fragment_pbs():
            if f.id == fragment_id:
                return LanceFragment(self, fragment=FragmentMetadata.from_pb(f))
        return None

    def fragment_ids(self) -> list[int]:
        return [f.id for f in self._ctx.manifest.fragments]

    def _fragment_pbs(self) -> list[Any]:
        from .commit import load_manifest

        c = self._ctx
        cached = getattr(c, "_fragment_pbs", None)
        if cached is None:
            lm = run_sync(load_manifest(c.store, c.root, c.manifest.version), store=c.store)
            cached = list(lm.manifest.fragments)
        return cached

    # ------------------------------------------------------------------ reads (the reference's extras)
    def head(self, num_rows: int, **kwargs: Any) -> pa.Table:
        """The first ``num_rows`` rows (``scanner`` keyword arguments apply)."""
        if "filter" in kwargs:
            kwargs["filter"] = filter_of(kwargs["filter"])
        return self.scanner(limit=num_rows, **kwargs).to_table()

    def sample(self, num_rows: int, columns: Sequence[str] | None = None, randomize_order: bool = True,
               **kwargs: Any) -> pa.Table:
        """``num_rows`` rows picked at random (without replacement)."""
        indices = random.sample(range(self.count_rows()), num_rows)
        if not randomize_order:
            indices.sort()
        return self.take(indices, columns, **kwargs)

    def to_pandas(self, columns: Any = None, filter: Any = None, limit: int | None = None,
                  offset: int | None = None, nearest: Any = None, batch_size: int | None = None,
                  batch_readahead: int | None = None, fragment_readahead: int | None = None,
                  scan_in_order: bool | None = None, *, blob_mode: str | None = None, **kwargs: Any) -> Any:
        """The rows as a pandas DataFrame (index and dtypes restored from the stored pandas
        metadata); scanner keyword arguments select them, the others go to
        ``pyarrow.Table.to_pandas``."""
        import inspect

        names = set(inspect.signature(DatasetReader.scanner).parameters)
        scan = {k: kwargs.pop(k) for k in list(kwargs) if k in names}
        table = self.scanner(columns, filter_of(filter), limit, offset, nearest, batch_size, None, batch_readahead,
                             fragment_readahead, scan_in_order, **scan).to_table()
        return table.to_pandas(**kwargs)

    def scanner(self, *args: Any, **kwargs: Any) -> Any:
        bound = _SCANNER_SIGNATURE.bind(self, *args, **kwargs).arguments
        bound.pop("self")
        if bound.get("filter") is not None:
            bound["filter"] = filter_of(bound["filter"])
        nearest = bound.pop("nearest", None)
        if nearest is not None:  # a vector search (see lancejit.table.vector.search)
            from .vector.scanner import NearestScanner

            return NearestScanner(self, nearest, columns=bound.get("columns"), filter=bound.get("filter"),
                                  prefilter=bool(bound.get("prefilter")), limit=bound.get("limit"),
                                  offset=bound.get("offset"), with_row_id=bool(bound.get("with_row_id")),
                                  with_row_address=bool(bound.get("with_row_address")),
                                  batch_size=bound.get("batch_size"), fragment_ids=bound.get("fragment_ids"))
        return DatasetReader.scanner(self, **bound)

    scanner.__doc__ = DatasetReader.scanner.__doc__
    scanner.__signature__ = _SCANNER_SIGNATURE  # type: ignore[attr-defined]  # read by inspect; not in typeshed

    def join(self, *args: Any, **kwargs: Any) -> Any:
        raise NotSupportedError("Dataset.join is not supported; scan both and join the tables")

    def join_asof(self, *args: Any, **kwargs: Any) -> Any:
        raise NotSupportedError("Dataset.join_asof is not supported; scan both and join the tables")

    def sort_by(self, *args: Any, **kwargs: Any) -> Any:
        raise NotSupportedError("Dataset.sort_by is not supported; use scanner(order_by=...)")

    def filter(self, expression: Any) -> Any:
        raise NotSupportedError("Dataset.filter is not supported; pass filter= to the scan")

    def replace_schema(self, schema: Any) -> None:
        raise NotSupportedError("replace_schema is not supported; use alter_columns")

    def validate(self) -> None:
        """Check the version: unique fragment ids, data files present with the rows claimed."""
        ids = [f.id for f in self._ctx.manifest.fragments]
        if len(set(ids)) != len(ids):
            raise InvalidInputError(f"dataset {self.uri} version {self.version} has duplicate fragment ids")
        for frag in self.get_fragments():
            frag.validate()

    # ------------------------------------------------------------------ tags
    @property
    def tags(self) -> "Tags":
        """The tags: iterate for ``Tag(name, version, ...)`` sorted by name; ``create(name,
        version)``, ``update``, ``delete(name)``, ``list()``, ``list_ordered()`` (see
        :class:`.write.maintenance.Tags`)."""
        from .write.maintenance import Tags

        return Tags(self)

    def list_tags(self) -> dict[str, dict[str, Any]]:
        """Tags as the reference's ``ds.tags.list()`` shows them."""
        return {t.name: t.to_dict() for t in self.tags}

    def create_tag(self, name: str, version: int | None = None) -> Tag:
        return self.tags.create(name, version)

    def delete_tag(self, name: str) -> None:
        self.tags.delete(name)

    # ------------------------------------------------------------------ changes
    async def delete_async(self, predicate: str | pc.Expression, *, conflict_retries: int = 10,
                           retry_timeout: timedelta = RETRY_TIMEOUT) -> dict[str, int]:
        """Delete the rows matching ``predicate``; returns ``{"num_deleted_rows": n}``."""
        from .write.mutate import delete_async

        try:
            new, n = await delete_async(self.snapshot(), filter_of(predicate), max_retries=conflict_retries)
        except InvalidInputError as exc:
            raise _change_error(exc) from exc
        self._adopt(new)
        return {"num_deleted_rows": n}

    async def update_async(self, updates: Mapping[str, Any], where: str | pc.Expression | None = None,
                           conflict_retries: int = 10, retry_timeout: timedelta = RETRY_TIMEOUT,
                           data_storage_version: str | None = None, **kwargs: Any) -> dict[str, int]:
        """Set ``updates`` (column -> SQL expression or value) where ``where``; returns
        ``{"num_rows_updated": n}``."""
        from .write.mutate import update_async

        new, n = await update_async(self.snapshot(), updates, filter_of(where), max_retries=conflict_retries, **kwargs)
        self._adopt(new)
        return {"num_rows_updated": n}

    async def add_columns_async(self, transforms: Any, read_columns: Sequence[str] | None = None,
                                reader_schema: pa.Schema | None = None, batch_size: int | None = None) -> None:
        """Add columns (SQL expressions, a batch function, aligned data or null fields; see
        :mod:`.write.evolve`)."""
        from .write.evolve import add_columns_async

        try:
            new = await add_columns_async(self.snapshot(), transforms, read_columns, reader_schema=reader_schema)
        except InvalidInputError as exc:
            raise _change_error(exc) from exc
        self._adopt(new)

    async def drop_columns_async(self, columns: Sequence[str]) -> None:
        """Remove top-level columns (or struct fields)."""
        from .write.evolve import drop_columns_async

        self._adopt(await drop_columns_async(self.snapshot(), columns))

    async def alter_columns_async(self, *alterations: Mapping[str, Any]) -> None:
        """Rename / relax nullability: ``alter_columns({"path": "a", "name": "b"})``."""
        from .write.evolve import alter_columns_async

        try:
            new = await alter_columns_async(self.snapshot(), *alterations)
        except InvalidInputError as exc:
            raise _change_error(exc) from exc
        self._adopt(new)

    async def restore_async(self, version: int | str | None = None) -> None:
        """Make this version (or ``version``) the latest again, and move to it."""
        from .write.maintenance import restore_async

        self._adopt(await restore_async(self.snapshot(), version))

    async def cleanup_old_versions_async(self, older_than: timedelta | None = None,
                                         retain_versions: int | None = None, *, delete_unverified: bool = False,
                                         error_if_tagged_old_versions: bool = True,
                                         delete_rate_limit: int | None = None, versions: Sequence[int] | None = None,
                                         delete_concurrency: int | None = None) -> Any:
        """Remove versions older than ``older_than`` (default two weeks) and files only they use.
        (``delete_rate_limit`` / ``delete_concurrency`` are accepted; lancejit deletes in its
        own batches.)"""
        from .write.maintenance import cleanup_old_versions_async

        if retain_versions is not None or versions is not None:
            raise NotSupportedError("cleanup by retained count or version list is not supported by lancejit")
        return await cleanup_old_versions_async(self.snapshot(), older_than, delete_unverified=delete_unverified,
                                                error_if_tagged_old_versions=error_if_tagged_old_versions)

    async def merge_async(self, data_obj: Any, left_on: str, right_on: str | None = None, schema: Any = None) -> None:
        """Add the columns of ``data_obj`` (joined on ``left_on`` = ``right_on``; rows without a
        match get nulls), and move to the new version."""
        import pyarrow.compute as pc

        from .write.sources import source_table

        right = await source_table(data_obj, schema)
        right_on = right_on or left_on
        if right_on not in right.column_names:
            raise InvalidChangeError(f"the data has no column {right_on!r} to join on")
        left = await self.to_table_async(columns=[left_on])
        keys = right.column(right_on)
        if keys.type != left.column(left_on).type:
            keys = keys.cast(left.column(left_on).type)
        pos = pc.index_in(left.column(left_on), value_set=keys)
        await self.add_columns_async(right.drop_columns([right_on]).take(pos))

    def get_version(self) -> dict[str, Any]:
        """This version: ``{"version", "timestamp", "metadata"}`` (from the loaded manifest)."""
        from .meta.open import version_summary
        from .meta.versions import timestamp_to_datetime

        m = self._ctx.manifest
        return {"version": m.version, "timestamp": timestamp_to_datetime(m.timestamp_ns),
                "metadata": version_summary(m)}

    async def version_refs_async(self) -> list[dict[str, int]]:
        """``[{"version": n}]`` for every version (one listing, no manifest read)."""
        from .meta.versions import list_manifests

        c = self._ctx
        return [{"version": loc.version} for loc in await list_manifests(c.store, c.root, c.stats)]

    def slice(self, start: int, end: int, columns: Any = None) -> pa.Table:
        """Rows ``[start, end)`` by position (an offset/limit scan)."""
        if start < 0 or end < start:
            raise InvalidInputError(f"slice needs 0 <= start <= end, got [{start}, {end})")
        return self.to_table(columns=columns, offset=start, limit=end - start)

    @property
    def initial_storage_options(self) -> dict[str, str] | None:
        return self._ctx.storage_options

    def latest_storage_options(self) -> dict[str, str] | None:
        return self._ctx.storage_options

    def session(self) -> Any:
        raise NotSupportedError("sessions are not supported by lancejit (each dataset keeps its own caches)")

    async def insert_async(self, data: Any, *, mode: str = "append", **kwargs: Any) -> None:
        """Append (or overwrite with ``mode="overwrite"``) ``data``, and move to the new version."""
        kwargs.setdefault("storage_options", self._ctx.storage_options)
        new = await write_dataset_async(data, self.snapshot(), mode=mode, **kwargs)
        self._adopt(new)

    async def truncate_table_async(self) -> None:
        """Remove every row (the schema stays)."""
        from .commit import Delete, commit

        c = self._ctx
        ids = tuple(f.id for f in c.manifest.fragments)
        version = await commit(c.store, c.root, Delete((), ids, "true"), self.version)
        await self._moved_to(version)

    async def _update_config(self, **maps: Any) -> None:
        from .commit import UpdateConfig, commit

        c = self._ctx
        version = await commit(c.store, c.root, UpdateConfig(**maps), self.version)
        await self._moved_to(version)

    async def update_config_async(self, values: Mapping[str, str | None], *, replace: bool = False) -> dict[str, str]:
        """Change the table config (None deletes a key; ``replace`` replaces it all); returns it."""
        from .commit import UpdateMap

        await self._update_config(config_updates=UpdateMap(_strings(values, "config", True), replace))
        return self.config()

    async def delete_config_keys_async(self, keys: Iterable[str]) -> None:
        from .commit import UpdateMap

        await self._update_config(config_updates=UpdateMap({str(k): None for k in keys}))

    async def update_metadata_async(self, values: Mapping[str, str | None], *, replace: bool = False) -> dict[str, str]:
        """Change the table metadata (None deletes a key; ``replace`` replaces it all); returns it."""
        from .commit import UpdateMap

        await self._update_config(table_metadata_updates=UpdateMap(_strings(values, "metadata", True), replace))
        return self.metadata

    async def update_schema_metadata_async(self, values: Mapping[str, str | None], *,
                                           replace: bool = False) -> dict[str, str]:
        """Change the schema metadata; returns it."""
        from .commit import UpdateMap

        await self._update_config(schema_metadata_updates=UpdateMap(_strings(values, "metadata", True), replace))
        return self.schema_metadata

    async def update_field_metadata_async(self, field_updates: Mapping[str, Mapping[str, str | None]], *,
                                          replace: bool = False) -> None:
        """Change fields' metadata: ``{field path or id: {key: value or None}}``."""
        from .commit import UpdateMap

        ids = {}
        for key, values in field_updates.items():
            fid = key if isinstance(key, int) else self._field_id(key)
            ids[fid] = UpdateMap(_strings(values, "metadata", True), replace)
        await self._update_config(field_metadata_updates=ids)

    async def replace_schema_metadata_async(self, new_metadata: Mapping[str, str]) -> None:
        await self.update_schema_metadata_async(new_metadata, replace=True)

    async def replace_field_metadata_async(self, field_name: str, new_metadata: Mapping[str, str]) -> None:
        await self.update_field_metadata_async({field_name: new_metadata}, replace=True)

    def _field_id(self, path: str) -> int:
        from lancejit.core.schema import parse_field_path

        parts = parse_field_path(path)
        fields = self._ctx.lance_schema.fields
        found = None
        for p in parts:
            found = next((f for f in fields if f.name == p), None)
            if found is None:
                raise InvalidInputError(f"dataset {self.uri} has no field {path!r}")
            fields = found.children
        assert found is not None  # parse_field_path gives at least one name
        return found.id

    @property
    def optimize(self) -> Any:
        """Maintenance operations (``ds.optimize.compact_files(...)``), as in the reference."""
        from .write.compaction import DatasetOptimizer

        return DatasetOptimizer(self.snapshot(), self._moved_to)

    def merge_insert(self, on: str | Sequence[str]) -> Any:
        """An upsert builder keyed on column(s) ``on`` (``.when_matched_update_all()`` ...
        ``.execute(data)``), as in the reference; executing it moves this object to the new version."""
        from .write.merge_insert import MergeInsertBuilder

        return MergeInsertBuilder(self.snapshot(), on, self._moved_to)

    # ------------------------------------------------------------------ commits
    @staticmethod
    def commit(base_uri: Any, operation: Any, read_version: int | None = None, commit_lock: Any = None,
               storage_options: dict[str, str] | None = None, enable_v2_manifest_paths: bool | None = None,
               detached: bool = False, max_retries: int = 20, *, commit_message: str | None = None,
               enable_stable_row_ids: bool | None = None, **kwargs: Any) -> "Dataset":
        """Commit ``operation`` (a ``LanceOperation`` built on ``read_version``, or a
        ``Transaction``) to the dataset at ``base_uri`` (a URI, path or dataset); returns the new
        version.  This is how fragments written elsewhere (``write_fragments``) become visible."""
        from .commit_api import commit_async

        uri, storage_options = _uri_of(base_uri, storage_options)
        coro = commit_async(uri, operation, read_version, commit_lock=commit_lock, storage_options=storage_options,
                            enable_v2_manifest_paths=enable_v2_manifest_paths, detached=detached,
                            max_retries=max_retries, commit_message=commit_message,
                            enable_stable_row_ids=enable_stable_row_ids, **kwargs)
        uri, version = run_sync(coro, store=store_hint(uri))
        return run_sync(Dataset.open_async(uri, version, storage_options), store=store_hint(uri))

    @staticmethod
    def commit_batch(dest: Any, transactions: Sequence[Any], commit_lock: Any = None,
                     storage_options: dict[str, str] | None = None, enable_v2_manifest_paths: bool | None = None,
                     detached: bool = False, max_retries: int = 20, **kwargs: Any) -> dict[str, Any]:
        """Commit several transactions (appends) as one version: ``{"dataset", "merged"}``."""
        from .commit_api import commit_batch_async

        uri, storage_options = _uri_of(dest, storage_options)
        coro = commit_batch_async(uri, transactions, commit_lock=commit_lock, storage_options=storage_options,
                                  enable_v2_manifest_paths=enable_v2_manifest_paths, detached=detached,
                                  max_retries=max_retries)
        uri, version, merged = run_sync(coro, store=store_hint(uri))
        ds = run_sync(Dataset.open_async(uri, version, storage_options), store=store_hint(uri))
        return {"dataset": ds, "merged": merged}

    @staticmethod
    def drop(base_uri: Any, storage_options: dict[str, str] | None = None, ignore_not_found: bool | None = None) -> None:
        """Delete the dataset at ``base_uri`` and every file under it."""
        from .commit_api import drop_async

        uri, storage_options = _uri_of(base_uri, storage_options)
        run_sync(drop_async(uri, storage_options, bool(ignore_not_found)), store=store_hint(uri))

    # ------------------------------------------------------------------ vector search
    async def create_index_async(self, column: str, index_type: str, **kwargs: Any) -> "Dataset":
        """Build a vector index (``IVF_PQ``, ``IVF_FLAT``, ``IVF_SQ``) on ``column`` and commit it;
        this object moves to the new version and is returned (see
        :func:`lancejit.table.vector.build.create_index_async` for the options)."""
        from .vector.build import create_index_async

        self._adopt(await create_index_async(self.snapshot(), column, index_type, **kwargs))
        return self

    # ------------------------------------------------------------------ synchronous twins
    checkout_version = bridged(checkout_version_async)
    latest = bridged(DatasetReader.latest_async)
    versions = bridged(DatasetReader.versions_async)
    take = bridged(DatasetReader.take_async)
    take_rows = bridged(DatasetReader.take_rows_async)
    to_table = bridged(DatasetReader.to_table_async)
    read_transaction = bridged(read_transaction_async)
    get_transactions = bridged(get_transactions_async)
    delete = bridged(delete_async)
    update = bridged(update_async)
    add_columns = bridged(add_columns_async)
    drop_columns = bridged(drop_columns_async)
    alter_columns = bridged(alter_columns_async)
    restore = bridged(restore_async)
    cleanup_old_versions = bridged(cleanup_old_versions_async)
    merge = bridged(merge_async)
    version_refs = bridged(version_refs_async)
    insert = bridged(insert_async)
    truncate_table = bridged(truncate_table_async)
    update_config = bridged(update_config_async)
    delete_config_keys = bridged(delete_config_keys_async)
    update_metadata = bridged(update_metadata_async)
    update_schema_metadata = bridged(update_schema_metadata_async)
    update_field_metadata = bridged(update_field_metadata_async)
    replace_schema_metadata = bridged(replace_schema_metadata_async)
    replace_field_metadata = bridged(replace_field_metadata_async)
    create_index = bridged(create_index_async)

    def __repr__(self) -> str:
        return f"lancejit.Dataset({self.uri!r}, version={self.version})"


def _strings(values: Mapping[str, Any], what: str, allow_none: bool = False) -> dict[str, str | None]:
    if not isinstance(values, Mapping):
        raise InvalidInputError(f"{what} must be a dict of str to str, got {type(values).__name__}")
    out: dict[str, str | None] = {}
    for k, v in values.items():
        if not isinstance(k, str) or not (isinstance(v, str) or (allow_none and v is None)):
            raise InvalidInputError(f"{what} must be a dict of str to str, got {k!r}: {v!r}")
        out[k] = v
    return out


def _uri_of(target: Any, storage_options: dict[str, str] | None) -> tuple[str, dict[str, str] | None]:
    """A URI (and its storage options) from a URI, path or dataset object."""
    if isinstance(target, DatasetReader):
        return target.uri, storage_options if storage_options is not None else target.context.storage_options
    if isinstance(target, (str, os.PathLike)):
        return os.fspath(target), storage_options
    raise InvalidInputError(f"expected a URI, path or dataset, got {type(target).__name__}")


def _reopen(uri: str, version: int, storage_options: dict[str, str] | None,
            default_scan_options: dict[str, Any] | None) -> Dataset:
    ds = run_sync(Dataset.open_async(uri, version, storage_options), store=store_hint(uri))
    ds._default_scan_options = default_scan_options
    return ds


async def open_dataset_async(uri: str, version: int | str | None = None,
                             storage_options: dict[str, str] | None = None) -> Dataset:
    """The dataset at ``uri`` at ``version`` (None = latest, a number, or a tag name)."""
    return await Dataset.open_async(uri, version, storage_options)


def dataset(uri: Any = None, version: int | str | None = None, asof: Any = None, block_size: int | None = None,
            commit_lock: Any = None, index_cache_size: int | None = None,
            storage_options: dict[str, str] | None = None, default_scan_options: dict[str, Any] | None = None,
            metadata_cache_size_bytes: int | None = None, index_cache_size_bytes: int | None = None,
            read_params: dict[str, Any] | None = None, session: Any = None, namespace_client: Any = None,
            table_id: Any = None, base_store_params: Any = None) -> Dataset:
    """Open the Lance dataset at ``uri`` (local path, ``file://``, ``memory://``, ``s3://``,
    ``gs://``) at ``version`` (None = latest, a number, or a tag name) or, with ``asof`` (a
    datetime or ISO string), the latest version committed before that time.
    ``default_scan_options`` apply to every scan of the returned object.  The reference's cache
    sizes, ``block_size``, ``read_params`` and ``session`` are accepted (lancejit sizes its own
    caches); namespaces and base paths are not supported."""
    if namespace_client is not None or table_id is not None:
        raise NotSupportedError("namespaces are not supported by lancejit")
    if base_store_params:
        raise NotSupportedError("base_store_params are not supported by lancejit")
    if uri is None:
        raise InvalidInputError("Must specify either 'uri' or both 'namespace_client' and 'table_id'.")
    if isinstance(uri, DatasetReader):
        uri = uri.uri
    if default_scan_options is not None and not isinstance(default_scan_options, Mapping):
        raise InvalidInputError("default_scan_options must be a dict of scanner arguments")
    ds = run_sync(Dataset.open_async(uri, version, storage_options), store=store_hint(uri))
    if version is None and asof is not None:
        ds = _as_of(ds, asof)
    if default_scan_options:
        from .read.scan_args import ScanArgs

        ScanArgs.of(default_scan_options)  # unknown arguments fail here, not at the first scan
        ds._default_scan_options = dict(default_scan_options)
    return ds


def _as_of(ds: Dataset, asof: Any) -> Dataset:
    if isinstance(asof, str):
        asof = datetime.fromisoformat(asof)
    elif hasattr(asof, "to_pydatetime"):
        asof = asof.to_pydatetime()
    if not isinstance(asof, datetime):
        raise InvalidInputError(f"asof must be a datetime or ISO string, got {type(asof).__name__}")
    if asof.tzinfo is not None:
        asof = asof.astimezone().replace(tzinfo=None)
    before = [v["version"] for v in ds.versions() if v["timestamp"] < asof]
    if not before:
        raise InvalidInputError(f"{asof} is earlier than the first version of this dataset")
    return ds.checkout_version(max(before))


async def write_dataset_async(data: Any, uri: Any, schema: pa.Schema | str | None = None, mode: str = "create",
                              **kwargs: Any) -> Dataset:
    """Write ``data`` to the dataset at ``uri``; returns the new version (see
    :func:`write_dataset`)."""
    from .write.dataset_write import write_data_async

    if isinstance(schema, str) and mode == "create" and schema in ("create", "append", "overwrite"):
        mode = schema  # lancejit's earlier positional mode
        schema = None
    if isinstance(uri, DatasetReader):
        kwargs.setdefault("read_version", uri.version)
    uri, opts = _uri_of(uri, kwargs.pop("storage_options", None))
    kwargs = _write_options(kwargs)
    uri, version = await write_data_async(data, uri, mode, schema=schema, storage_options=opts, **kwargs)
    return await Dataset.open_async(uri, version, opts)


#: Reference options accepted and not needed by lancejit (its writer sizes pages itself).
_IGNORED_WRITE_OPTIONS = ("max_rows_per_group", "data_cache_bytes", "session", "auto_cleanup_options",
                          "blob_pack_file_size_threshold", "external_blob_mode", "allow_external_blob_outside_bases")
_UNSUPPORTED_WRITE_OPTIONS = ("initial_bases", "target_bases", "target_all_bases", "base_store_params",
                              "namespace_client", "table_id")


def _write_options(kwargs: dict[str, Any]) -> dict[str, Any]:
    for k in _IGNORED_WRITE_OPTIONS:
        kwargs.pop(k, None)
    for k in _UNSUPPORTED_WRITE_OPTIONS:
        if kwargs.pop(k, None):
            raise NotSupportedError(f"write_dataset option {k} is not supported by lancejit")
    legacy = kwargs.pop("use_legacy_format", None)
    if legacy is not None and kwargs.get("data_storage_version") is None:
        kwargs["data_storage_version"] = "legacy" if legacy else "stable"
    return kwargs


def write_dataset(data_obj: Any, uri: Any = None, schema: pa.Schema | None = None, mode: str = "create", *,
                  max_rows_per_file: int = 1024 * 1024, max_rows_per_group: int = 1024,
                  max_bytes_per_file: int = 90 * 1024 * 1024 * 1024, data_cache_bytes: int | None = None,
                  max_page_bytes: int | None = None, commit_lock: Any = None, progress: Any = None,
                  storage_options: dict[str, str] | None = None, data_storage_version: str | None = None,
                  use_legacy_format: bool | None = None, enable_v2_manifest_paths: bool = True,
                  enable_stable_row_ids: bool = False, auto_cleanup_options: Any = None,
                  commit_message: str | None = None, transaction_properties: dict[str, str] | None = None,
                  **kwargs: Any) -> Dataset:
    """Write ``data_obj`` (a pyarrow Table / RecordBatch / RecordBatchReader, pandas or polars
    DataFrame, dict of columns, list of rows, a dataset or scanner, or an iterable of batches,
    cast to ``schema`` when given) to the dataset at ``uri`` (a URI, path or dataset object).
    ``mode``: "create" (fails if it exists), "append" or "overwrite".  Returns the new version."""
    if uri is None:
        raise InvalidInputError("Must specify either 'uri' or both 'namespace_client' and 'table_id'.")
    options = dict(
        max_rows_per_file=max_rows_per_file, max_rows_per_group=max_rows_per_group,
        max_bytes_per_file=max_bytes_per_file, data_cache_bytes=data_cache_bytes, max_page_bytes=max_page_bytes,
        commit_lock=commit_lock, progress=progress, storage_options=storage_options,
        data_storage_version=data_storage_version, use_legacy_format=use_legacy_format,
        enable_v2_manifest_paths=enable_v2_manifest_paths, enable_stable_row_ids=enable_stable_row_ids,
        auto_cleanup_options=auto_cleanup_options, commit_message=commit_message,
        transaction_properties=transaction_properties, **kwargs)
    target = uri.uri if isinstance(uri, DatasetReader) else uri
    return run_sync(write_dataset_async(data_obj, uri, schema, mode, **options), store=store_hint(target))


__all__ = ["Dataset", "Scanner", "dataset", "open_dataset_async", "write_dataset", "write_dataset_async"]
