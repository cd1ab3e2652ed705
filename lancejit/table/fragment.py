"""Fragments as the reference's Python API shows them: ``LanceFragment`` (one fragment of a
checked-out version: counts, scans, takes, and the uncommitted changes distributed writers make:
``delete``, ``delete_rows``, ``merge_columns``), ``LanceFragment.create`` and ``write_fragments``
(data files written without a commit, to be committed once with ``LanceDataset.commit``).

A fragment object holds its dataset (the face's Dataset, duck-typed here) and its
:class:`~.meta.fragment_meta.FragmentMetadata`.
"""

from __future__ import annotations

import os
from typing import Any, Iterator, List, Literal, Optional, Sequence, overload

import numpy as np
import pyarrow as pa

from lancejit.core.errors import InvalidInputError, NotSupportedError
from lancejit.core.schema import LanceSchema
from lancejit.io.sync import run_sync, store_hint

from .commit import delete_rows
from .meta.fragment_meta import DataFile, FragmentMetadata, fragment_pb
from .operation import LanceOperation, Transaction
from .read.fragment import ROWADDR
from .write.dataset_write import DEFAULT_MAX_BYTES_PER_FILE, DEFAULT_MAX_ROWS_PER_FILE, stage_write
from .write.evolve import stage_columns_async

_STORAGE_ALIASES = {True: "legacy", False: "stable"}


class LanceFragment:
    """One fragment of a dataset version (``dataset.get_fragment(id)``)."""

    def __init__(self, dataset: Any, fragment_id: int | None = None, *, fragment: Any = None) -> None:
        if fragment is None:
            if fragment_id is None:
                raise InvalidInputError("Either fragment or fragment_id must be specified")
            found = dataset.get_fragment(fragment_id)
            if found is None:
                raise InvalidInputError(f"Fragment id does not exist: {fragment_id}")
            fragment = found.metadata
        self._ds = dataset
        self._meta = fragment if isinstance(fragment, FragmentMetadata) else FragmentMetadata.from_pb(fragment_pb(fragment))

    # ------------------------------------------------------------------ metadata
    @property
    def fragment_id(self) -> int:
        return self._meta.id

    @property
    def metadata(self) -> FragmentMetadata:
        return self._meta

    @property
    def id(self) -> int:
        return self._meta.id

    @property
    def files(self) -> List[DataFile]:
        return list(self._meta.files)

    @property
    def num_rows(self) -> int:
        """Rows after deletions."""
        return self._meta.num_rows

    @property
    def has_row_ids(self) -> bool:
        """True when the fragment stores stable row ids."""
        return self._meta.row_id_meta is not None

    @property
    def num_deletions(self) -> int:
        return self._meta.num_deletions

    @property
    def physical_rows(self) -> int:
        return self._meta.physical_rows

    @property
    def schema(self) -> pa.Schema:
        return self._ds.schema

    @property
    def physical_schema(self) -> pa.Schema:
        return self._ds.schema

    @property
    def partition_expression(self) -> Any:
        import pyarrow.compute as pc

        return pc.scalar(True)

    def data_files(self) -> List[DataFile]:
        return list(self._meta.files)

    def deletion_file(self) -> Optional[str]:
        """The deletion file's path relative to the dataset root (None without deletions)."""
        d = self._meta.deletion_file
        return None if d is None else d.path(self._meta.id)

    def validate(self) -> None:
        """Check that the fragment's data files exist and hold ``physical_rows`` rows."""
        run_sync(self._validate_async(), store=self._ds.store)

    async def _validate_async(self) -> None:
        from lancejit.file.reader import AsyncLanceFileReader

        c = self._ds.context
        for f in self._meta.files:
            r = await AsyncLanceFileReader.open(c.store.uri(f"{c.root}/data/{f._path}"), c.storage_options)
            if r.num_rows != self._meta.physical_rows:
                raise InvalidInputError(f"data file {f._path} holds {r.num_rows} rows, the fragment "
                                        f"{self._meta.physical_rows}")

    def __repr__(self) -> str:
        return (f"LanceFileFragment(id={self._meta.id}, data_files={[f._path for f in self._meta.files]}, "
                f"deletion_file={self.deletion_file()!r})")

    def __reduce__(self) -> Any:
        return (_restore_fragment, (self._ds, self._meta))

    # ------------------------------------------------------------------ reads
    def count_rows(self, filter: Any = None) -> int:
        if filter is None:
            return self._meta.num_rows
        return self.scanner(columns=[], filter=filter).count_rows()

    def scanner(self, *, columns: Any = None, batch_size: int | None = None, filter: Any = None,
                limit: int | None = None, offset: int | None = None, with_row_id: bool = False,
                with_row_address: bool = False, batch_readahead: int = 16, **kwargs: Any) -> Any:
        """A scan of this fragment (arguments as :meth:`LanceDataset.scanner`)."""
        return self._ds.scanner(columns=columns, filter=filter, limit=limit, offset=offset, batch_size=batch_size,
                                batch_readahead=batch_readahead, with_row_id=with_row_id,
                                with_row_address=with_row_address, fragment_ids=[self._meta.id], **kwargs)

    def head(self, num_rows: int) -> pa.Table:
        return self.scanner(limit=num_rows).to_table()

    def to_batches(self, *, columns: Any = None, batch_size: int | None = None, filter: Any = None,
                   limit: int | None = None, offset: int | None = None, with_row_id: bool = False,
                   with_row_address: bool = False, batch_readahead: int = 16, **kwargs: Any) -> Iterator[pa.RecordBatch]:
        return self.scanner(columns=columns, batch_size=batch_size, filter=filter, limit=limit, offset=offset,
                            with_row_id=with_row_id, with_row_address=with_row_address,
                            batch_readahead=batch_readahead, **kwargs).to_batches()

    def to_table(self, columns: Any = None, filter: Any = None, limit: int | None = None, offset: int | None = None,
                 with_row_id: bool = False, with_row_address: bool = False, **kwargs: Any) -> pa.Table:
        return self.scanner(columns=columns, filter=filter, limit=limit, offset=offset, with_row_id=with_row_id,
                            with_row_address=with_row_address, **kwargs).to_table()

    def to_pandas(self, columns: Any = None, filter: Any = None, limit: int | None = None,
                  offset: int | None = None, **kwargs: Any) -> Any:
        return self.to_table(columns=columns, filter=filter, limit=limit, offset=offset).to_pandas(**kwargs)

    def take(self, indices: Any, columns: Any = None) -> pa.Table:
        """Rows at ``indices`` (offsets among the fragment's live rows)."""
        t = self.to_table(columns=columns)
        return t.take(pa.array(np.asarray(indices, dtype=np.int64)))

    # ------------------------------------------------------------------ uncommitted changes
    def delete(self, predicate: str) -> FragmentMetadata | None:
        """This fragment with the rows matching ``predicate`` deleted (a new deletion file,
        not committed): None when no row is left.  Commit with ``LanceOperation.Delete``."""
        t = self.to_table(columns=[], filter=predicate, with_row_address=True)
        addrs = t.column(ROWADDR).to_numpy()
        return self._delete_offsets((addrs & np.uint64(0xFFFFFFFF)).astype(np.int64))

    def delete_rows(self, offsets: Any) -> FragmentMetadata | None:
        """This fragment with the rows at physical ``offsets`` deleted (uncommitted)."""
        return self._delete_offsets(np.asarray(list(offsets), dtype=np.int64))

    def _delete_offsets(self, offsets: np.ndarray) -> FragmentMetadata | None:
        c = self._ds.context
        new = run_sync(delete_rows(c.store, c.root, self._meta.to_pb(), self._ds.version, offsets), store=c.store)
        return None if new is None else FragmentMetadata.from_pb(new)

    def merge_columns(self, value_func: Any, columns: Sequence[str] | None = None, batch_size: int | None = None,
                      reader_schema: pa.Schema | None = None) -> tuple[FragmentMetadata, Any]:
        """New columns for this fragment (SQL expressions, a batch function, or aligned data),
        written and not committed: ``(fragment with the new data file, schema after the merge)``.
        Commit every fragment's result with ``LanceOperation.Merge``."""
        staged = run_sync(stage_columns_async(self._ds, value_func, columns, reader_schema=reader_schema,
                                              fragment_ids=[self._meta.id]), store=self._ds.store)
        return FragmentMetadata.from_pb(staged.fragments[0]), staged.schema

    def merge(self, data_obj: Any, left_on: str, right_on: str | None = None, schema: Any = None) -> Any:
        raise NotSupportedError("LanceFragment.merge (a join) is not supported by lancejit; use merge_columns")

    def update_columns(self, *args: Any, **kwargs: Any) -> Any:
        raise NotSupportedError("LanceFragment.update_columns is not supported by lancejit")

    # ------------------------------------------------------------------ writing new fragments
    @staticmethod
    def create(dataset_uri: Any, data: Any, fragment_id: int | None = None, schema: pa.Schema | None = None,
               max_rows_per_group: int | None = None, progress: Any = None, mode: str = "append", *,
               data_storage_version: str | None = None, use_legacy_format: bool | None = None,
               storage_options: dict | None = None, **kwargs: Any) -> FragmentMetadata:
        """Write ``data`` as one fragment of the dataset at ``dataset_uri`` (not committed).
        ``mode="append"`` checks the data against the dataset's schema; "create"/"overwrite"
        number the fields from the data's schema.  Commit with ``LanceOperation.Append`` or
        ``Overwrite``."""
        frags = write_fragments(data, dataset_uri, schema, mode=mode, max_rows_per_file=1 << 62,
                                progress=progress, data_storage_version=data_storage_version,
                                use_legacy_format=use_legacy_format, storage_options=storage_options)
        if len(frags) != 1:
            raise InvalidInputError("LanceFragment.create needs data with at least one row")
        meta = frags[0]
        if fragment_id is not None:
            meta.id = int(fragment_id)
        return meta

    @staticmethod
    def create_from_file(filename: str, dataset: Any, fragment_id: int) -> FragmentMetadata:
        """A fragment over an existing data file ``data/<filename>`` of ``dataset``."""
        from lancejit.file.reader import AsyncLanceFileReader

        from .write.data_files import column_field_ids, normalize_storage_version

        c = dataset.context

        async def build() -> FragmentMetadata:
            path = f"{c.root}/data/{filename}"
            r = await AsyncLanceFileReader.open(c.store.uri(path), c.storage_options)
            major, minor = (int(x) for x in r.version.split("."))
            lschema = c.lance_schema if hasattr(c, "lance_schema") else None
            fields = column_field_ids(tuple(lschema.fields), normalize_storage_version(r.version)) if lschema else []
            size = await c.store.size(path)
            df = DataFile(filename, fields, list(range(len(fields))), major, minor, size)
            return FragmentMetadata(int(fragment_id), [df], r.num_rows)

        return run_sync(build(), store=c.store)


def _restore_fragment(dataset: Any, meta: FragmentMetadata) -> LanceFragment:
    return LanceFragment(dataset, fragment=meta)


def _storage_version(data_storage_version: str | None, use_legacy_format: bool | None) -> str | None:
    if use_legacy_format is not None and data_storage_version is None:
        return _STORAGE_ALIASES[bool(use_legacy_format)]
    return data_storage_version


# (the other keywords, typed by the implementation, pass through ``**kwargs`` here)
@overload
def write_fragments(data: Any, dataset_uri: Any, schema: pa.Schema | None = ..., *,
                    return_transaction: Literal[False] = ..., **kwargs: Any) -> List[FragmentMetadata]: ...
@overload
def write_fragments(data: Any, dataset_uri: Any, schema: pa.Schema | None = ..., *,
                    return_transaction: Literal[True], **kwargs: Any) -> Transaction: ...
@overload
def write_fragments(data: Any, dataset_uri: Any, schema: pa.Schema | None = ..., *,
                    return_transaction: bool, **kwargs: Any) -> List[FragmentMetadata] | Transaction: ...


def write_fragments(
    data: Any,
    dataset_uri: Any,
    schema: pa.Schema | LanceSchema | None = None,
    *,
    return_transaction: bool = False,
    mode: str = "append",
    max_rows_per_file: int = DEFAULT_MAX_ROWS_PER_FILE,
    max_rows_per_group: int | None = 1024,
    max_bytes_per_file: int = DEFAULT_MAX_BYTES_PER_FILE,
    data_cache_bytes: int | None = None,
    max_page_bytes: int | None = None,
    progress: Any = None,
    data_storage_version: str | None = None,
    use_legacy_format: bool | None = None,
    storage_options: dict | None = None,
    enable_stable_row_ids: bool = False,
    name_prefix: str = "",
    **kwargs: Any,
) -> List[FragmentMetadata] | Transaction:
    """Write ``data`` as new fragments of the dataset at ``dataset_uri`` (a URI, path or dataset
    object) without committing them: the data files are written, and their
    :class:`FragmentMetadata` returned (or, with ``return_transaction``, the ``Transaction``
    committing them: an ``Append``, or an ``Overwrite`` for ``mode`` "create"/"overwrite").

    This is the distributed writers' step: workers call it, the driver collects the fragments
    (they pickle, and ``to_json()`` / ``FragmentMetadata.from_json`` carry them as text) and
    commits once with ``LanceDataset.commit(uri, LanceOperation.Append(fragments),
    read_version=...)``.  Unknown reference options (bases, namespaces, blobs) raise
    :class:`NotSupportedError` when set.

    lancejit's additions: ``schema`` may be a :class:`~lancejit.core.schema.LanceSchema` (the
    files get exactly its field ids: a driver fixes them once for all its workers, new columns
    included); ``name_prefix`` starts every data file's name, so that a job can list and remove
    the files of its failed attempts."""
    for k, v in kwargs.items():
        if v not in (None, False, "reference"):
            raise NotSupportedError(f"write_fragments option {k} is not supported by lancejit")
    if not isinstance(name_prefix, str) or "/" in name_prefix or "\\" in name_prefix:
        raise InvalidInputError(f"name_prefix must be a file name prefix without '/', got {name_prefix!r}")
    uri, storage_options = _uri_and_options(dataset_uri, storage_options)
    mode = "overwrite" if mode == "create" else mode
    staged = run_sync(stage_write(
        data, uri, "append" if mode == "append" else "overwrite", schema=schema,
        data_storage_version=_storage_version(data_storage_version, use_legacy_format),
        max_rows_per_file=max_rows_per_file, max_bytes_per_file=max_bytes_per_file,
        storage_options=storage_options, progress=progress, max_page_bytes=max_page_bytes,
        name_prefix=name_prefix,
    ), store=store_hint(uri))
    metas = [FragmentMetadata.from_pb(f) for f in staged.fragments]
    if not return_transaction:
        return metas
    if staged.appending:
        op: Any = LanceOperation.Append(metas)
    else:
        op = LanceOperation.Overwrite(staged.lschema, metas)
    return Transaction(staged.read_version, op)


def _uri_and_options(dataset_uri: Any, storage_options: dict | None) -> tuple[str, dict | None]:
    ctx = getattr(dataset_uri, "context", None)
    if ctx is not None and hasattr(dataset_uri, "uri"):
        return dataset_uri.uri, storage_options if storage_options is not None else ctx.storage_options
    if isinstance(dataset_uri, (str, os.PathLike)):
        return os.fspath(dataset_uri), storage_options
    raise InvalidInputError(f"dataset_uri must be a str, path or dataset, got {type(dataset_uri).__name__}")


__all__ = ["DataFile", "FragmentMetadata", "LanceFragment", "write_fragments"]
