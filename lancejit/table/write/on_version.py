"""Committing an operation on a checked-out version, without reading what the reader holds.

An operation (delete, update, merge_insert, add_columns, compaction) is planned on a
:class:`~..read.dataset_reader.DatasetReader` whose manifest file is usually held whole in
memory (:attr:`~..meta.manifest.Manifest.file_bytes`): :func:`loaded_manifest` rebuilds the
protobuf from those bytes, :func:`commit_on` hands them to the committer (which then reads no
manifest when nobody committed meanwhile), and the new version is opened from the bytes the
committer wrote (no read either), sharing the reader's caches.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping, TypeVar

import numpy as np

from ..commit import LoadedManifest, Transaction, commit_transaction, load_manifest, parse_manifest_file
from ..commit.committer import CommitResult
from ..commit.manifest_writer import ManifestWriteConfig
from ..commit.operations import Operation
from lancejit.io.sync import runs_inline

from ..meta.manifest import decode_manifest_file
from ..meta.open import make_context
from ..read.datafile import open_data_files

if TYPE_CHECKING:  # pragma: no cover
    from ..read.dataset_reader import DatasetReader

R = TypeVar("R", bound="DatasetReader")


async def loaded_manifest(ds: "DatasetReader") -> LoadedManifest:
    """``ds``'s manifest decoded for rebuilding: from the bytes it holds, else read."""
    c = ds.context
    data = c.manifest.file_bytes
    if data is not None:
        return parse_manifest_file(data, c.store.uri(c.manifest_path))
    lm = await load_manifest(c.store, c.root, ds.version)
    assert lm is not None
    return lm


def _known(ds: "DatasetReader", loaded: LoadedManifest | None) -> dict[str, LoadedManifest]:
    c = ds.context
    if loaded is None:
        data = c.manifest.file_bytes
        if data is None:
            return {}
        loaded = parse_manifest_file(data, c.store.uri(c.manifest_path))
    return {c.manifest_path: loaded}


async def commit_result(
    ds: "DatasetReader", operation: Operation, *, loaded: LoadedManifest | None = None,
    affected_rows: Mapping[int, np.ndarray] | None = None, read_version: int | None = None,
    **kwargs: Any,
) -> CommitResult:
    """Commit ``operation`` read at ``ds``'s version (or ``read_version``); ``loaded``: ``ds``'s
    manifest as :func:`loaded_manifest` gave it (passed on to the committer, not read again)."""
    c = ds.context
    txn = Transaction(ds.version if read_version is None else read_version, operation,
                      tag=kwargs.pop("tag", ""), transaction_properties=dict(kwargs.pop("transaction_properties", None) or {}))
    return await commit_transaction(c.store, c.root, txn, config=kwargs.pop("config", ManifestWriteConfig()),
                                    affected_rows=affected_rows, known=_known(ds, loaded), **kwargs)


async def open_data_files_of(ds: "DatasetReader") -> None:
    """On object stores, open every data file of ``ds`` at once (their tails read concurrently,
    :func:`~..read.datafile.open_data_files`) before an operation scans them all: the scan
    then finds them open instead of opening them one unit after another (a round trip each)."""
    c = ds.context
    if runs_inline(c.store):
        return
    files = [df for frag in c.manifest.fragments for df in frag.files]
    if files:
        await open_data_files(c, files)


def open_committed(ds: R, result: CommitResult) -> R:
    """``ds``'s dataset at the version ``result`` committed, opened from the manifest bytes the
    committer wrote (no I/O), sharing ``ds``'s caches."""
    c = ds.context
    manifest = decode_manifest_file(result.data, c.store.uri(result.path))
    ctx = make_context(c.uri, c.store, c.root, manifest, result.path, c.caches, c.storage_options)
    return type(ds)(ctx)


async def commit_on(ds: R, operation: Operation, *, loaded: LoadedManifest | None = None,
                    affected_rows: Mapping[int, np.ndarray] | None = None, **kwargs: Any) -> R:
    """:func:`commit_result` then :func:`open_committed`: ``ds``'s dataset at the new version."""
    result = await commit_result(ds, operation, loaded=loaded, affected_rows=affected_rows, **kwargs)
    return open_committed(ds, result)


__all__ = ["commit_on", "commit_result", "loaded_manifest", "open_committed", "open_data_files_of"]
