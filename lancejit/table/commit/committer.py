"""The commit protocol: make a transaction the dataset's next version, safely under concurrency.

One attempt:

1. list ``_versions/`` once: the latest version L and the naming scheme (V1 ``N.manifest`` or V2
   inverted 20-digit names; a new dataset uses V2 unless asked otherwise);
2. if L > read version: read the transactions of versions read_version+1 .. L (inline in their
   manifests, else ``_transactions/``) and check compatibility (:mod:`.conflicts`); overlapping
   deletions are rebased by writing merged deletion files; the transaction's read version becomes L;
3. write the transaction file ``_transactions/{read_version}-{uuid}.txn``;
4. build manifest L+1 from manifest L (:mod:`.manifest_writer`) and create it with the store's
   atomic create-if-absent (local: link of a complete temp file; S3: ``If-None-Match: *``;
   GCS: ``ifGenerationMatch=0``; ``s3+ddb://``: staged, claimed in the external manifest store,
   finalized -- :mod:`..meta.external_store`);
5. on success, on local and memory stores (as the reference), write
   ``_versions/latest_version_hint.json`` (best effort: readers only use it as a hint).

When step 4 finds the manifest already there (another writer won), sleep a jittered, growing
backoff and start again, at most ``max_attempts`` times, then raise
:class:`~lancejit.core.errors.CommitConflictError`.  A crash at any step leaves version L intact:
data, deletion and transaction files written so far are simply not referenced by any manifest.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
from dataclasses import dataclass, field
from typing import Any, Mapping, overload

import numpy as np

from lancejit.core.errors import (
    AlreadyExistsError,
    CommitConflictError,
    InvalidInputError,
    NotFoundError,
    NotSupportedError,
    RetryableCommitError,
)
from lancejit.io.store import ObjectStore, join_path
from lancejit.io.sync import runs_inline
from lancejit.pb import table_pb2
from lancejit.core.config import settings

from ..meta.features import FLAG_DISABLE_TRANSACTION_FILE, FLAG_UNKNOWN
from ..meta.external_store import ExternalManifestStore, ExternalVersion, external_store_of, finalize, staging_path
from ..meta.naming import VERSIONS_DIR, ManifestLocation, NamingScheme, manifest_name
from ..meta.paths import confined_join
from ..meta.versions import HINT_NAME, list_versions
from .conflicts import ConflictChecker
from .deletion_writer import read_deleted_offsets, write_deletion_file
from .indices import adjust_index_section
from .manifest_writer import (
    LoadedManifest,
    ManifestWriteConfig,
    build_manifest,
    parse_manifest_file,
    serialize_manifest,
)
from .operations import Delete, Operation, Overwrite, Restore, Transaction, Update, modified_fragment_ids

TRANSACTIONS_DIR = "_transactions"


@dataclass(frozen=True, slots=True)
class CommitResult:
    """A successful commit: the new ``version``, its manifest protobuf, the manifest's store
    ``path``, the transaction as committed (read version possibly moved forward) and the number
    of attempts it took."""

    version: int
    manifest: table_pb2.Manifest
    path: str
    transaction: Transaction
    attempts: int
    #: The manifest file's bytes as written (open the new version from them: no read).
    data: bytes = b""


@dataclass
class _Reader:
    """Reads (and caches, by path) manifests and transactions of one dataset during a commit."""

    store: ObjectStore
    root: str
    manifests: dict[str, LoadedManifest] = field(default_factory=dict)

    async def manifest(self, loc: ManifestLocation) -> LoadedManifest:
        got = self.manifests.get(loc.path)
        if got is None:
            data = await self.store.read_all(loc.path)
            got = self.manifests[loc.path] = parse_manifest_file(data, self.store.uri(loc.path))
        return got

    async def transaction_of(self, loc: ManifestLocation) -> Transaction | None:
        lm = await self.manifest(loc)
        if lm.transaction is not None:
            return Transaction.parse(lm.transaction, self.store.uri(loc.path))
        name = lm.manifest.transaction_file
        if not name:
            return None
        path = confined_join(self.root, TRANSACTIONS_DIR, name, what="transaction file", where=self.store.uri(loc.path))
        try:
            data = await self.store.read_all(path)
        except NotFoundError:
            return None
        return Transaction.parse(data, self.store.uri(path))


def _check_writable(manifest: table_pb2.Manifest, where: str) -> None:
    unknown = manifest.writer_feature_flags & ~(FLAG_UNKNOWN - 1)
    if unknown:
        raise NotSupportedError(
            f"dataset {where} version {manifest.version} requires writer feature flags {unknown:#x} "
            "that lancejit does not support"
        )


async def _rebase_deletions(
    store: ObjectStore,
    root: str,
    txn: Transaction,
    latest: table_pb2.Manifest,
    frag_ids: set[int],
    affected_rows: Mapping[int, np.ndarray],
) -> Operation:
    """``txn``'s Delete/Update with the deletion files of ``frag_ids`` merged with the latest ones."""
    op = txn.operation
    assert isinstance(op, (Delete, Update))
    current = {f.id: f for f in latest.fragments}
    replaced: dict[int, table_pb2.DeletionFile | None] = {}  # None: no deletion file
    dropped: list[int] = []
    for fid in sorted(frag_ids):
        frag = current.get(fid)
        mine = np.asarray(affected_rows.get(fid, ()), dtype=np.int64)
        if frag is None:
            raise RetryableCommitError(f"fragment {fid} was removed by a concurrent commit; retry")
        theirs = (await read_deleted_offsets(store, root, frag)).astype(np.int64)
        if np.intersect1d(theirs, mine).size:
            raise RetryableCommitError(
                f"a concurrent commit deleted some of the same rows of fragment {fid}; retry"
            )
        merged = np.union1d(theirs, mine)
        if len(merged) >= frag.physical_rows:
            dropped.append(fid)
            continue
        was_bitmap = frag.HasField("deletion_file") and frag.deletion_file.file_type == table_pb2.DeletionFile.BITMAP
        replaced[fid] = await write_deletion_file(
            store, root, fid, latest.version, merged, physical_rows=frag.physical_rows, force_bitmap=was_bitmap
        )

    def patch(frags: tuple[table_pb2.DataFragment, ...]) -> tuple[table_pb2.DataFragment, ...]:
        out = []
        for f in frags:
            if f.id in dropped:
                continue
            if f.id in replaced:
                c = table_pb2.DataFragment()
                c.CopyFrom(f)
                deletion = replaced[f.id]
                if deletion is None:
                    c.ClearField("deletion_file")
                else:
                    c.deletion_file.CopyFrom(deletion)
                f = c
            out.append(f)
        return tuple(out)

    if isinstance(op, Delete):
        return Delete(patch(op.updated_fragments), tuple(op.deleted_fragment_ids) + tuple(dropped), op.predicate)
    return Update(
        tuple(op.removed_fragment_ids) + tuple(dropped), patch(op.updated_fragments), op.new_fragments,
        op.fields_modified, op.update_mode, op.fields_for_preserving_frag_bitmap,
    )


def _backoff(attempt: int, base: float, cap: float) -> float:
    return min(cap, base * (2 ** min(attempt, 16))) * random.uniform(0.5, 1.5)


async def commit_transaction(
    store: ObjectStore,
    root: str,
    txn: Transaction,
    *,
    config: ManifestWriteConfig = ManifestWriteConfig(),
    enable_v2_manifest_paths: bool = True,
    affected_rows: Mapping[int, np.ndarray] | None = None,
    create_only: bool = False,
    max_attempts: int | None = None,
    backoff_base_s: float = 0.02,
    backoff_cap_s: float = 1.0,
    write_hint: bool | None = None,
    known: Mapping[str, LoadedManifest] | None = None,
) -> CommitResult:
    """Commit ``txn`` to the dataset at ``root`` of ``store`` (see the module docstring).

    ``affected_rows``: for Delete/Update, the local row offsets this transaction newly deleted per
    fragment id; with it, deletions racing on the same fragments are merged instead of retried.
    ``create_only``: fail with :class:`AlreadyExistsError` if the dataset already has a version.
    ``known``: manifests the caller already holds, by store path (not read again).
    ``write_hint``: write ``_versions/latest_version_hint.json`` (default: on local and memory
    stores only, as the reference does; readers never trust it).
    Raises :class:`CommitConflictError` (incompatible, or out of attempts) or
    :class:`RetryableCommitError` (the caller must re-read and redo its work).
    """
    if max_attempts is None:
        max_attempts = settings().commit_attempts
    if max_attempts < 1:
        raise InvalidInputError("max_attempts must be >= 1")
    if txn.read_version < 0:
        raise InvalidInputError("read_version must be >= 0")
    reader = _Reader(store, root, dict(known or {}))
    if write_hint is None:
        write_hint = runs_inline(store)
    where = store.uri(root)
    ext = external_store_of(store)
    if ext is None and not store.conditional_put:
        raise NotSupportedError(
            f"{where}: the store has no conditional put (storage option conditional_put='disabled'), so "
            "concurrent commits could overwrite each other; commit through an external manifest store "
            "(s3+ddb://bucket/path?ddbTableName=TABLE) instead"
        )
    original = txn
    for attempt in range(max_attempts):
        locs = await list_versions(store, root)
        by_version = {loc.version: loc for loc in locs}
        latest_loc = locs[-1] if locs else None
        if latest_loc is not None and create_only:
            raise AlreadyExistsError(f"dataset {where} already exists (version {latest_loc.version})")
        latest_version = latest_loc.version if latest_loc else 0
        if original.read_version > latest_version:
            raise InvalidInputError(
                f"read version {original.read_version} is newer than the latest version {latest_version} of {where}"
            )
        if latest_loc is None:
            scheme = NamingScheme.V2 if enable_v2_manifest_paths else NamingScheme.V1
            previous: LoadedManifest | None = None
        else:
            scheme = latest_loc.scheme
            previous = await reader.manifest(latest_loc)
            _check_writable(previous.manifest, where)

        current = original
        skip_checks = isinstance(original.operation, Overwrite) and original.read_version == 0
        if latest_version > original.read_version and not skip_checks:
            initial: dict[int, table_pb2.DataFragment] = {}
            if isinstance(original.operation, (Delete, Update)):
                mods = modified_fragment_ids(original.operation)
                read_loc = by_version.get(original.read_version)
                if read_loc is None:
                    raise CommitConflictError(f"version {original.read_version} of {where} is gone; cannot check")
                base = await reader.manifest(read_loc)
                initial = {f.id: f for f in base.manifest.fragments if f.id in mods}
            checker = ConflictChecker(original, initial, rows_known=affected_rows is not None)
            for v in range(original.read_version + 1, latest_version + 1):
                loc = by_version.get(v)
                theirs = await reader.transaction_of(loc) if loc is not None else None
                checker.check(theirs, v)
            op = original.operation
            if checker.needs_merge:
                assert previous is not None and affected_rows is not None
                op = await _rebase_deletions(store, root, original, previous.manifest, checker.needs_merge,
                                             affected_rows)
            current = original.with_read_version(latest_version, op)

        # datasets created with transaction files disabled (writer flag 32) get none
        txn_file = current.file_name
        if previous is not None and previous.manifest.writer_feature_flags & FLAG_DISABLE_TRANSACTION_FILE:
            txn_file = ""
        else:
            await store.put(join_path(root, TRANSACTIONS_DIR, txn_file), current.serialize())

        restore_source = None
        index_section = previous.index_section if previous is not None else None
        if isinstance(current.operation, Restore):
            src_loc = by_version.get(current.operation.version)
            if src_loc is None:
                raise NotFoundError(f"dataset {where} has no version {current.operation.version} to restore")
            src = await reader.manifest(src_loc)
            restore_source = src.manifest
            index_section = src.index_section
        manifest = build_manifest(
            previous.manifest if previous is not None else None,
            current,
            transaction_file=txn_file,
            config=config,
            restore_source=restore_source,
        )
        if restore_source is None:
            index_section = adjust_index_section(index_section, current.operation, manifest)
        data = serialize_manifest(manifest, transaction=current.serialize(), index_section=index_section)
        path = join_path(root, VERSIONS_DIR, manifest_name(manifest.version, scheme))
        try:
            if ext is not None:
                await commit_manifest(store, root, ext, manifest.version, path, data)
            else:
                await store.put_if_absent(path, data)
        except AlreadyExistsError:
            if attempt + 1 < max_attempts:
                await asyncio.sleep(_backoff(attempt, backoff_base_s, backoff_cap_s))
            continue
        if write_hint:
            try:
                await store.put(join_path(root, VERSIONS_DIR, HINT_NAME),
                                json.dumps({"version": manifest.version}, separators=(",", ":")).encode())
            except Exception:  # noqa: BLE001 - the hint is optional; the commit already happened
                pass
        return CommitResult(manifest.version, manifest, path, current, attempt + 1, data)
    raise CommitConflictError(
        f"could not commit {original.operation.name} to {where} after {max_attempts} attempts "
        "(other writers kept winning)"
    )


async def commit(
    store: ObjectStore,
    root: str,
    operation: Operation,
    read_version: int,
    *,
    tag: str = "",
    transaction_properties: Mapping[str, str] | None = None,
    enable_stable_row_ids: bool = False,
    data_storage_version: str | None = None,
    enable_v2_manifest_paths: bool = True,
    affected_rows: Mapping[int, np.ndarray] | None = None,
    create_only: bool = False,
    max_attempts: int | None = None,
) -> int:
    """Commit ``operation`` read at ``read_version`` (0 for a new dataset); returns the new version."""
    txn = Transaction(read_version, operation, tag=tag, transaction_properties=dict(transaction_properties or {}))
    res = await commit_transaction(
        store, root, txn,
        config=ManifestWriteConfig(enable_stable_row_ids=enable_stable_row_ids,
                                   data_storage_version=data_storage_version),
        enable_v2_manifest_paths=enable_v2_manifest_paths, affected_rows=affected_rows,
        create_only=create_only, max_attempts=max_attempts,
    )
    return res.version


def commit_sync(
    uri: str,
    operation: Operation,
    read_version: int,
    *,
    storage_options: Mapping[str, Any] | None = None,
    **kwargs: Any,
) -> int:
    """Synchronous :func:`commit` on a dataset URI (through :func:`lancejit.io.sync.run_sync`)."""
    from lancejit.io import open_store
    from lancejit.io.sync import run_sync

    store, root = open_store(uri, storage_options)
    return run_sync(commit(store, root, operation, read_version, **kwargs))


async def latest_version(store: ObjectStore, root: str) -> int:
    """The latest version of the dataset (0 when it does not exist yet), from one listing."""
    locs = await list_versions(store, root)
    return locs[-1].version if locs else 0


@overload
async def load_manifest(store: ObjectStore, root: str, version: int) -> LoadedManifest: ...
@overload
async def load_manifest(store: ObjectStore, root: str, version: None = None) -> LoadedManifest | None: ...


async def load_manifest(store: ObjectStore, root: str, version: int | None = None) -> LoadedManifest | None:
    """The manifest (protobuf + raw sections) of ``version`` (latest when None: None if there is no
    dataset; a version that does not exist raises :class:`NotFoundError`)."""
    locs = await list_versions(store, root)
    if not locs:
        if version is None:
            return None
        raise NotFoundError(f"dataset {store.uri(root)} not found")
    loc = locs[-1] if version is None else next((x for x in locs if x.version == version), None)
    if loc is None:
        raise NotFoundError(f"dataset {store.uri(root)} has no version {version}")
    data = await store.read_all(loc.path)
    return parse_manifest_file(data, store.uri(loc.path))



async def commit_manifest(store: ObjectStore, root: str, ext: ExternalManifestStore, version: int,
                          final_path: str, data: bytes) -> None:
    """Commit ``data`` as ``version``'s manifest (stage, claim, finalize; module docstring).

    Raises :class:`AlreadyExistsError` when another writer claimed ``version`` first.
    """
    staged = staging_path(final_path)
    await store.put(staged, data)
    try:
        await ext.put_if_not_exists(root, version, staged, len(data))
    except BaseException:
        with contextlib.suppress(Exception):
            await store.delete(staged)
        raise
    # a writer dying here leaves a committed, staged version: the next resolve finalizes it
    await finalize(store, root, ext, ExternalVersion(version, staged, len(data)), bytes(data))


__all__ = [
    "CommitResult",
    "TRANSACTIONS_DIR",
    "commit",
    "commit_sync",
    "commit_transaction",
    "latest_version",
    "load_manifest",
]
