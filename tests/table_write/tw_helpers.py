"""Helpers for the commit tests: data files written by pylance 14 (the reference's file writer),
descriptions of them, and the worker functions run in child processes (``spawn``).

Importable as ``tw_helpers`` (``conftest.py`` puts this directory on ``sys.path``, which
``multiprocessing``'s spawn start method passes on to children).
"""

from __future__ import annotations

import os
import signal
import tempfile
import uuid

import numpy as np
import pyarrow as pa

os.environ.setdefault("LANCE_LOG", "error")

FILE_VERSIONS = {"2.0": (2, 0), "2.1": (2, 1), "2.2": (2, 2)}


def make_table(start: int, n: int, *, writer: int = 0) -> pa.Table:
    """Rows ``[start, start + n)``: an int64 key, a string and a float column."""
    a = np.arange(start, start + n, dtype=np.int64)
    return pa.table({
        "a": a,
        "s": pa.array([None if i % 7 == 3 else f"w{writer}-{i}" for i in a], pa.string()),
        "f": a.astype(np.float64) * 0.5,
    })


def encode_data_file(table: pa.Table, version: str = "2.2") -> bytes:
    """The bytes of a Lance data file holding ``table``, written by pylance's LanceFileWriter."""
    import lance.file

    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "x.lance")
        w = lance.file.LanceFileWriter(path, table.schema, version=version)
        w.write_batch(table)
        w.close()
        with open(path, "rb") as fh:
            return fh.read()


async def write_data_file(store, root: str, table: pa.Table, version: str = "2.2", field_ids=None):
    """Put a data file for ``table`` under ``<root>/data/`` and return its ``DataFile`` (flat
    schemas only: column i holds field ``field_ids[i]``, default i)."""
    from lancejit.io.store import join_path
    from lancejit.table.commit import data_file

    data = encode_data_file(table, version)
    name = f"{uuid.uuid4().hex}.lance"
    await store.put(join_path(root, "data", name), data)
    major, minor = FILE_VERSIONS[version]
    n = table.num_columns
    ids = list(field_ids) if field_ids is not None else list(range(n))
    return data_file(name, ids, list(range(n)), file_major_version=major,
                     file_minor_version=minor, file_size_bytes=len(data))


async def append_rows(store, root: str, table: pa.Table, *, max_attempts: int = 20, field_ids=None) -> int:
    """Append ``table`` as one fragment read at the latest version; returns the new version."""
    from lancejit.table.commit import Append, commit, latest_version, new_fragment

    df = await write_data_file(store, root, table, field_ids=field_ids)
    rv = await latest_version(store, root)
    return await commit(store, root, Append((new_fragment([df], table.num_rows),)), rv,
                        max_attempts=max_attempts)


# ------------------------------------------------------------------------ child processes
async def _warm(store, root: str) -> None:
    from lancejit.table.commit import latest_version

    await latest_version(store, root)


def append_worker(uri: str, storage_options: dict, writer: int, fragments: list, barrier, out) -> None:
    """Child: wait for every worker, then append each serialized fragment (one commit each, read at
    the latest version); report ``(writer, [(version, attempts)...])``."""
    from lancejit.io import open_store
    from lancejit.io.sync import run_sync
    from lancejit.pb import table_pb2
    from lancejit.table.commit import Append, Transaction, commit_transaction, latest_version

    store, root = open_store(uri, storage_options or None)
    run_sync(_warm(store, root))  # open the store's sessions before the start signal
    barrier.wait()
    done = []
    async def one(frag):
        rv = await latest_version(store, root)
        return await commit_transaction(store, root, Transaction(rv, Append((frag,))), max_attempts=60)

    for raw in fragments:
        res = run_sync(one(table_pb2.DataFragment.FromString(raw)))
        done.append((res.version, res.attempts))
    out.put((writer, done))


def delete_worker(uri: str, storage_options: dict, offsets: list, barrier, out) -> None:
    """Child: wait for every worker, then delete the rows at ``offsets`` of fragment 0, one commit
    per offset (deletion files written against the version read); report like append_worker."""
    from lancejit.io import open_store
    from lancejit.io.sync import run_sync
    from lancejit.table.commit import Delete, Transaction, commit_transaction, delete_rows, load_manifest

    store, root = open_store(uri, storage_options or None)
    run_sync(_warm(store, root))  # open the store's sessions before the start signal
    barrier.wait()
    done = []
    async def one(off):
        lm = await load_manifest(store, root)
        frag = next(f for f in lm.manifest.fragments if f.id == 0)
        new = await delete_rows(store, root, frag, lm.manifest.version, np.array([off]))
        txn = Transaction(lm.manifest.version, Delete((new,), (), f"offset = {off}"))
        return await commit_transaction(store, root, txn, affected_rows={0: np.array([off])}, max_attempts=60)

    for off in offsets:
        res = run_sync(one(off))
        done.append((res.version, res.attempts))
    out.put(("deleter", done))


class KillingStore:
    """Wraps a store; SIGKILLs this process right after a write whose path contains ``marker``
    (``before=True``: right before it)."""

    def __init__(self, inner, marker: str, before: bool = False) -> None:
        self._inner, self._marker, self._before = inner, marker, before

    def __getattr__(self, name):
        return getattr(self._inner, name)

    def _maybe_die(self, path: str, phase_before: bool) -> None:
        if self._marker in path and phase_before == self._before:
            os.kill(os.getpid(), signal.SIGKILL)

    async def put(self, path, data):
        self._maybe_die(path, True)
        await self._inner.put(path, data)
        self._maybe_die(path, False)

    async def put_if_absent(self, path, data):
        self._maybe_die(path, True)
        await self._inner.put_if_absent(path, data)
        self._maybe_die(path, False)


def killed_append(uri: str, marker: str, before: bool) -> None:
    """Child: append 10 rows through a store that kills the process at ``marker``."""
    from lancejit.io import open_store
    from lancejit.io.sync import run_sync

    store, root = open_store(uri)
    run_sync(append_rows(KillingStore(store, marker, before), root, make_table(10_000, 10)))


async def prepare_delete(store, root: str, read_version: int, mask_fn):
    """A Delete (and its affected rows per fragment) of the rows whose key ``a`` matches
    ``mask_fn``, computed on ``read_version`` (keys read with pylance); deletion files written."""
    import lance

    from lancejit.table.commit import Delete, delete_rows, load_manifest

    lm = await load_manifest(store, root, read_version)
    ds = lance.dataset(store.uri(root), version=read_version)
    updated, removed, affected = [], [], {}
    for frag in lm.manifest.fragments:
        t = ds.get_fragment(frag.id).to_table(columns=["a"], with_row_address=True)
        hit = mask_fn(t["a"].to_numpy())
        if not hit.any():
            continue
        offsets = (t["_rowaddr"].to_numpy()[hit] & 0xFFFFFFFF).astype(np.int64)
        new = await delete_rows(store, root, frag, read_version, offsets)
        affected[frag.id] = offsets
        if new is None:
            removed.append(frag.id)
        else:
            updated.append(new)
    return Delete(tuple(updated), tuple(removed), "test"), affected
