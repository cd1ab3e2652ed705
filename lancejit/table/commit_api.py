"""``LanceDataset.commit`` / ``commit_batch`` / ``drop``: the reference's commit entry points over
lancejit's commit protocol (:mod:`.commit.committer`).

The driver of a distributed write commits, once, the fragments its workers wrote with
``write_fragments``: ``commit(uri, LanceOperation.Append(fragments), read_version=v)``
(``Overwrite(schema, fragments)`` for a new dataset).  Conflicts with concurrent commits follow
the reference's rules (an ``Append`` lands after any concurrent ``Append``).
"""

from __future__ import annotations

import os
from typing import Any, Sequence

from lancejit.core.errors import InvalidInputError, InvalidTypeError, NotSupportedError
from lancejit.core.schema import LanceSchema
from lancejit.io import open_store

from .commit import ManifestWriteConfig, commit_transaction, load_manifest
from .commit import Transaction as InternalTransaction
from .operation import LanceOperation, Transaction, to_internal, transaction_from_internal, transaction_to_internal
from .write.data_files import normalize_storage_version
from .write.dataset_write import held_lock, merge_properties


async def commit_async(uri: str, operation: Any, read_version: int | None = None, *, commit_lock: Any = None,
                       storage_options: dict[str, str] | None = None, enable_v2_manifest_paths: bool | None = None,
                       detached: bool = False, max_retries: int = 20, commit_message: str | None = None,
                       enable_stable_row_ids: bool | None = None, create_only: bool = False,
                       data_storage_version: str | None = None, **kwargs: Any) -> tuple[str, int]:
    """Commit ``operation`` (a ``LanceOperation`` or ``Transaction``) to the dataset at ``uri``;
    returns ``(uri, new version)``.

    lancejit's additions: ``create_only`` fails with :class:`AlreadyExistsError` when the dataset
    exists (checked at the commit itself, so a dataset created concurrently is not overwritten);
    ``data_storage_version`` is the file format version an ``Overwrite`` records (the reference
    keeps the dataset's; a new dataset takes its files')."""
    for k, v in kwargs.items():
        if k == "commit_timeout":
            continue
        if v not in (None, False):
            raise NotSupportedError(f"commit option {k} is not supported by lancejit")
    if detached:
        raise NotSupportedError("detached commits are not supported by lancejit")
    store, root = open_store(uri, storage_options)
    root = root.rstrip("/")
    latest = await load_manifest(store, root)
    current = (LanceSchema.from_pb(latest.manifest.fields, dict(latest.manifest.schema_metadata))
               if latest is not None else None)
    if isinstance(operation, Transaction):
        if commit_message is not None:
            raise InvalidInputError("commit_message is not supported when calling commit with a Transaction.  "
                                    "Set the message on the transaction properties instead.")
        txn = transaction_to_internal(operation, current)
    elif isinstance(operation, LanceOperation.BaseOperation):
        if read_version is None:
            if not isinstance(operation, (LanceOperation.Overwrite, LanceOperation.Restore)):
                raise InvalidInputError("read_version is required for all operations except Overwrite and Restore")
            read_version = latest.manifest.version if latest is not None else 0
        txn = InternalTransaction(int(read_version), to_internal(operation, current),
                                  transaction_properties=merge_properties(None, commit_message) or {})
    else:
        raise InvalidTypeError(f"operation must be a LanceOperation.BaseOperation or Transaction, "
                               f"got {type(operation).__name__}")
    if latest is None and txn.read_version != 0:
        raise InvalidInputError(f"dataset {uri} does not exist: only an Overwrite at read version 0 creates it")
    config = ManifestWriteConfig(enable_stable_row_ids=bool(enable_stable_row_ids) and latest is None,
                                 data_storage_version=None if data_storage_version is None
                                 else normalize_storage_version(data_storage_version))
    with held_lock(commit_lock, txn.read_version + 1):
        res = await commit_transaction(store, root, txn, config=config,
                                       enable_v2_manifest_paths=enable_v2_manifest_paths is not False,
                                       create_only=bool(create_only), max_attempts=max(1, int(max_retries)))
    return os.fspath(uri), res.version


async def commit_batch_async(uri: str, transactions: Sequence[Any], *, commit_lock: Any = None,
                             storage_options: dict[str, str] | None = None,
                             enable_v2_manifest_paths: bool | None = None, detached: bool = False,
                             max_retries: int = 20) -> tuple[str, int, Transaction]:
    """Commit ``transactions`` (appends) as one version: ``(uri, version, merged transaction)``."""
    txns = list(transactions)
    if not txns:
        raise InvalidInputError("commit_batch needs at least one transaction")
    frags: list = []
    for t in txns:
        if not isinstance(t, Transaction) or not isinstance(t.operation, LanceOperation.Append):
            raise NotSupportedError("commit_batch supports only Append transactions (as the reference)")
        frags.extend(t.operation.fragments)
    read_version = min(int(t.read_version) for t in txns)
    merged = Transaction(read_version, LanceOperation.Append(frags))
    uri, version = await commit_async(uri, merged, commit_lock=commit_lock, storage_options=storage_options,
                                      enable_v2_manifest_paths=enable_v2_manifest_paths, detached=detached,
                                      max_retries=max_retries)
    return uri, version, merged


async def drop_async(uri: str, storage_options: dict[str, str] | None = None, ignore_not_found: bool = False) -> None:
    """Delete every object under the dataset at ``uri`` (NotFoundError when there is no dataset,
    unless ``ignore_not_found``)."""
    from lancejit.core.errors import NotFoundError

    store, root = open_store(uri, storage_options)
    root = root.rstrip("/")
    objects = await store.list(root)
    if not objects and not ignore_not_found:
        raise NotFoundError(f"dataset {uri} not found")
    await store.delete_many([o.path for o in objects])


__all__ = ["commit_async", "commit_batch_async", "drop_async", "transaction_from_internal"]
