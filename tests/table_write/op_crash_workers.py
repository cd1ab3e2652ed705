"""Bodies of the operation crash tests (test_crash_ops.py): each operation of the table, and a
store that counts its mutating calls (``put``, ``put_if_absent``, ``open_writer``, a file
writer's ``write`` and ``close``, ``delete``, ``delete_many``) and SIGKILLs the process right
before the ``kill_at``-th one.  Importable by name (multiprocessing, spawn)."""

from __future__ import annotations

import os
import signal

import numpy as np
import pyarrow as pa

ROWS = 6000
FRAGMENT_ROWS = 1000


def base_table() -> pa.Table:
    ids = np.arange(ROWS, dtype=np.int64)
    return pa.table({"id": ids, "x": ids * 0.5, "s": pa.array([f"s{i % 97}-{i}" for i in ids.tolist()])})


def upsert_source() -> pa.Table:
    ids = np.arange(3000, 9000, 3, dtype=np.int64)
    return pa.table({"id": ids, "x": np.full(len(ids), -1.0), "s": pa.array([f"new-{i}" for i in ids.tolist()])})


def run_op(name: str, uri: str) -> None:
    import lancejit

    ds = lancejit.dataset(uri)
    if name == "delete":
        ds.delete("id % 7 = 3")
    elif name == "update":
        ds.update({"x": "x + 100", "s": "'updated'"}, where="id >= 2500 AND id < 4200")
    elif name == "add_columns":
        ds.add_columns({"y": "x * 2", "z": "id + 1"})
    elif name == "merge_insert":
        ds.merge_insert("id").when_matched_update_all().when_not_matched_insert_all().execute(upsert_source())
    elif name == "compact_files":
        ds.optimize.compact_files(target_rows_per_fragment=2500)
    elif name == "append":
        ids = np.arange(ROWS, ROWS + 2500, dtype=np.int64)
        lancejit.write_dataset(pa.table({"id": ids, "x": ids * 0.5, "s": pa.array([f"a{i}" for i in ids.tolist()])}),
                               uri, mode="append", max_rows_per_file=FRAGMENT_ROWS)
    elif name == "overwrite":
        lancejit.write_dataset(base_table().slice(0, 1234), uri, mode="overwrite")
    else:  # pragma: no cover
        raise ValueError(name)


def install_counter(kill_at: int | None):
    """Count the local store's mutating calls; SIGKILL before call ``kill_at``.  Returns
    ``([count], restore)`` (``restore()`` puts the store's methods back)."""
    from lancejit.io import local

    count = [0]
    originals = []

    def wrap(cls, name):
        original = getattr(cls, name)
        originals.append((cls, name, original))

        async def counted(self, *args, **kwargs):
            count[0] += 1
            if kill_at is not None and count[0] == kill_at:
                os.kill(os.getpid(), signal.SIGKILL)
            return await original(self, *args, **kwargs)

        setattr(cls, name, counted)

    for name in ("put", "put_if_absent", "open_writer", "delete", "delete_many"):
        wrap(local.LocalStore, name)
    for name in ("write", "close"):
        wrap(local.LocalWriter, name)

    def restore() -> None:
        for cls, name, original in originals:
            setattr(cls, name, original)

    return count, restore


def killed_op(name: str, uri: str, kill_at: int) -> None:
    """Child: run operation ``name`` on ``uri``, killed before mutating call ``kill_at``."""
    os.environ.setdefault("LANCE_LOG", "error")
    install_counter(kill_at)
    run_op(name, uri)
