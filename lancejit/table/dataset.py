"""``Dataset``: the public face of one version of a Lance dataset.

The async methods (``*_async``) are the implementation: reads come from
:class:`~.read.dataset_reader.DatasetReader`, changes from the operations of :mod:`.write`; the
synchronous methods are derived from them (:func:`lancejit.io.sync.bridged`: in the caller's
thread for local and memory stores, on lancejit's I/O loop for object stores).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterator, Sequence

import pyarrow as pa

from lancejit.io.sync import bridged, run_sync

from .meta.versions import Tag
from .read.dataset_reader import DatasetReader, Scanner
from .read.version_index import index_now

if TYPE_CHECKING:
    import pyarrow.compute as pc

    from .write.maintenance import Tags


class Dataset(DatasetReader):
    """One checked-out version of a Lance dataset.

    Open with :func:`lancejit.table.dataset` (sync) or ``await Dataset.open_async(...)``.  Every
    ``x_async`` method has a synchronous twin ``x`` (:func:`lancejit.io.sync.bridged`).
    """

    checkout_version = bridged(DatasetReader.checkout_version_async)
    latest = bridged(DatasetReader.latest_async)
    versions = bridged(DatasetReader.versions_async)
    take = bridged(DatasetReader.take_async)
    take_rows = bridged(DatasetReader.take_rows_async)

    # ------------------------------------------------------------------ scans and vector search
    def scanner(self, columns: Sequence[str] | None = None, filter: str | pc.Expression | None = None,
                limit: int | None = None, offset: int | None = None, with_row_id: bool = False,
                with_row_address: bool = False, batch_size: int | None = None,
                fragment_ids: Sequence[int] | None = None, readahead: int | None = None, *,
                nearest: dict[str, Any] | None = None, prefilter: bool = False) -> Any:
        """A scan of this version (see :meth:`to_table_async` for the arguments); with ``nearest``
        a vector search (see :mod:`lancejit.table.vector.search`), ``filter`` applied before it
        with ``prefilter``, after it otherwise."""
        if nearest is not None:
            from .vector.scanner import NearestScanner

            return NearestScanner(self, nearest, columns=columns, filter=filter, prefilter=prefilter, limit=limit,
                                  offset=offset, with_row_id=with_row_id, with_row_address=with_row_address,
                                  batch_size=batch_size, fragment_ids=fragment_ids)
        return super().scanner(columns, filter, limit, offset, with_row_id, with_row_address, batch_size,
                               fragment_ids, readahead)

    async def to_table_async(self, columns: Sequence[str] | None = None, filter: str | pc.Expression | None = None,
                             limit: int | None = None, offset: int | None = None, with_row_id: bool = False,
                             with_row_address: bool = False, batch_size: int | None = None,
                             fragment_ids: Sequence[int] | None = None, *, nearest: dict[str, Any] | None = None,
                             prefilter: bool = False) -> pa.Table:
        """Rows of this version: ``columns`` (top-level names or dotted struct paths, plus
        ``_rowid``/``_rowaddr``), ``filter`` (SQL string or ``pyarrow.compute.Expression``), then
        ``offset``/``limit`` in scan order; ``with_row_id``/``with_row_address`` append uint64
        ``_rowid``/``_rowaddr``; ``fragment_ids`` restricts the scan to those fragments.
        ``nearest``: a vector search (``{"column", "q", "k", "metric", "nprobes", "refine_factor",
        ...}``), ``filter`` applied before it with ``prefilter``, after it otherwise."""
        return await self.scanner(columns, filter, limit, offset, with_row_id, with_row_address,
                                  batch_size, fragment_ids, nearest=nearest, prefilter=prefilter).to_table_async()


    to_table = bridged(to_table_async)
    def to_batches(self, columns: Sequence[str] | None = None, filter: str | pc.Expression | None = None,
                   limit: int | None = None, offset: int | None = None, with_row_id: bool = False,
                   with_row_address: bool = False, batch_size: int | None = None,
                   fragment_ids: Sequence[int] | None = None, *, nearest: dict[str, Any] | None = None,
                   prefilter: bool = False) -> Iterator[pa.RecordBatch]:
        """Like ``to_table``, as an iterator of record batches (bounded readahead)."""
        return self.scanner(columns, filter, limit, offset, with_row_id, with_row_address,
                            batch_size, fragment_ids, nearest=nearest, prefilter=prefilter).to_batches()

    async def create_index_async(self, column: str, index_type: str, **kwargs: Any) -> "Dataset":
        """Build a vector index (``IVF_PQ``, ``IVF_FLAT``, ``IVF_SQ``) on ``column`` and commit it;
        returns the new version (see :func:`lancejit.table.vector.build.create_index_async` for
        the options)."""
        from .vector.build import create_index_async

        return await create_index_async(self, column, index_type, **kwargs)


    create_index = bridged(create_index_async)
    def count_rows(self, filter: str | pc.Expression | None = None) -> int:
        """Rows after deletions (matching ``filter`` if given)."""
        if filter is None:  # the manifest's counts: no I/O, no event loop
            index = index_now(self._ctx)
            if index is not None:
                return index.count_rows()
        return run_sync(self.count_rows_async(filter), store=self._ctx.store)

    def __len__(self) -> int:
        return self.count_rows()

    # ------------------------------------------------------------------ tags
    @property
    def tags(self) -> "Tags":
        """The tags: iterate for ``Tag(name, version, ...)`` sorted by name; ``create(name,
        version)``, ``update``, ``delete(name)``, ``list()`` (see :class:`.write.maintenance.Tags`)."""
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
    async def delete_async(self, predicate: str | pc.Expression) -> "Dataset":
        """Delete the rows matching ``predicate``; returns the new version (see :mod:`.write.mutate`)."""
        from .write.mutate import delete_async

        return await delete_async(self, predicate)


    delete = bridged(delete_async)
    async def update_async(self, values: dict[str, Any], where: str | pc.Expression | None = None,
                           **kwargs: Any) -> "Dataset":
        """Set ``values`` (column -> SQL expression or value) where ``where``; returns the new version."""
        from .write.mutate import update_async

        return await update_async(self, values, where, **kwargs)


    update = bridged(update_async)
    async def add_columns_async(self, transforms: Any, read_columns: Sequence[str] | None = None) -> "Dataset":
        """Add columns (SQL expressions, a batch function, aligned data or null fields; see
        :mod:`.write.evolve`)."""
        from .write.evolve import add_columns_async

        return await add_columns_async(self, transforms, read_columns)


    add_columns = bridged(add_columns_async)
    async def drop_columns_async(self, columns: Sequence[str]) -> "Dataset":
        """Remove top-level columns (or struct fields); returns the new version."""
        from .write.evolve import drop_columns_async

        return await drop_columns_async(self, columns)


    drop_columns = bridged(drop_columns_async)
    async def alter_columns_async(self, *alterations: dict[str, Any]) -> "Dataset":
        """Rename / relax nullability: ``alter_columns({"path": "a", "name": "b"})``."""
        from .write.evolve import alter_columns_async

        return await alter_columns_async(self, *alterations)


    alter_columns = bridged(alter_columns_async)
    async def restore_async(self, version: int | str | None = None) -> "Dataset":
        """Make ``version`` (default: this one) the latest version again; returns it."""
        from .write.maintenance import restore_async

        return await restore_async(self, version)


    restore = bridged(restore_async)
    async def cleanup_old_versions_async(self, older_than: Any = None, *, delete_unverified: bool = False,
                                         error_if_tagged_old_versions: bool = True) -> Any:
        """Remove versions older than ``older_than`` (a timedelta) and files only they use."""
        from .write.maintenance import cleanup_old_versions_async

        return await cleanup_old_versions_async(self, older_than, delete_unverified=delete_unverified,
                                                error_if_tagged_old_versions=error_if_tagged_old_versions)


    cleanup_old_versions = bridged(cleanup_old_versions_async)
    async def insert_async(self, data: Any, mode: str = "append", **kwargs: Any) -> "Dataset":
        """Append (or overwrite with ``mode="overwrite"``) ``data``; returns the new version."""
        return await write_dataset_async(data, self.uri, mode, storage_options=self._ctx.storage_options, **kwargs)


    insert = bridged(insert_async)
    @property
    def optimize(self) -> Any:
        """Maintenance operations (``ds.optimize.compact_files(...)``), as in the reference."""
        from .write.compaction import DatasetOptimizer

        return DatasetOptimizer(self)

    def merge_insert(self, on: str | Sequence[str]) -> Any:
        """An upsert builder keyed on column(s) ``on`` (``.when_matched_update_all()`` ...
        ``.execute(data)``), as in the reference."""
        from .write.merge_insert import MergeInsertBuilder

        return MergeInsertBuilder(self, on)

    def __repr__(self) -> str:
        return f"lancejit.Dataset({self.uri!r}, version={self.version})"


async def open_dataset_async(uri: str, version: int | str | None = None,
                             storage_options: dict[str, str] | None = None) -> Dataset:
    """The dataset at ``uri`` at ``version`` (None = latest, a number, or a tag name)."""
    return await Dataset.open_async(uri, version, storage_options)


def dataset(uri: str, version: int | str | None = None, storage_options: dict[str, str] | None = None) -> Dataset:
    """Open the Lance dataset at ``uri`` (local path, ``file://``, ``memory://``, ``s3://``,
    ``gs://``) at ``version`` (None = latest, a number, or a tag name)."""
    from lancejit.io.sync import store_hint

    return run_sync(Dataset.open_async(uri, version, storage_options), store=store_hint(uri))


async def write_dataset_async(data: Any, uri: Any, mode: str = "create", **kwargs: Any) -> Dataset:
    """Write ``data`` to the dataset at ``uri``; returns the new version (see
    :func:`lancejit.table.write.dataset_write.write_data_async` for the arguments)."""
    from .write.dataset_write import write_data_async

    uri, version = await write_data_async(data, uri, mode, **kwargs)
    return await Dataset.open_async(uri, version, kwargs.get("storage_options"))


def write_dataset(data: Any, uri: Any, mode: str = "create", **kwargs: Any) -> Dataset:
    """Synchronous :func:`write_dataset_async` (runs on lancejit's I/O loop)."""
    return run_sync(write_dataset_async(data, uri, mode, **kwargs))


__all__ = ["Dataset", "Scanner", "dataset", "open_dataset_async", "write_dataset", "write_dataset_async"]
