"""Helpers of the bench tests: tiny datasets written by the reference and copied to any store."""

from __future__ import annotations

import os

import numpy as np
import pyarrow as pa

from lancejit.io import join_path, open_store, run_sync

ROWS = 600


def make_table(rows: int = ROWS, seed: int = 0) -> pa.Table:
    """int64, float64, string (with empties) and an 8-dim float32 vector."""
    rng = np.random.default_rng(seed)
    vec = pa.array(rng.standard_normal(rows * 8).astype(np.float32))
    return pa.table({
        "id": pa.array(np.arange(rows, dtype=np.int64)),
        "value": pa.array(rng.standard_normal(rows)),
        "name": pa.array([f"n{i}-" + "x" * (i % 7) if i % 5 else "" for i in range(rows)]),
        "vec": pa.FixedSizeListArray.from_arrays(vec, 8),
    })


def write_local_dataset(path: str, version: str, rows: int = ROWS, rows_per_file: int = 200,
                        delete: bool = True) -> pa.Table:
    """A reference-written dataset at ``path``; returns its live rows (after deleting ~2%)."""
    import lance

    table = make_table(rows)
    lance.write_dataset(table, path, data_storage_version=version, max_rows_per_file=rows_per_file)
    if delete:
        lance.dataset(path).delete("id % 50 = 7")
        table = table.filter(pa.compute.not_equal(pa.compute.modulo(table["id"], 50), 7))
    return table


def upload_dir(local: str, uri: str, storage_options: dict | None) -> None:
    """Copy every file under ``local`` to ``uri`` (same relative paths) through lancejit's store."""
    store, base = open_store(uri, storage_options)
    for dirpath, _, files in os.walk(local):
        for name in files:
            full = os.path.join(dirpath, name)
            rel = os.path.relpath(full, local).replace(os.sep, "/")
            with open(full, "rb") as f:
                run_sync(store.put(join_path(base, rel), f.read()))


def dataset_on(root, tmp_path, version: str, **kwargs) -> tuple[str, pa.Table]:
    """A tiny dataset of ``version`` under ``root`` (a ``StoreRoot``); returns (uri, live rows)."""
    local = os.path.join(os.fspath(tmp_path), f"src-{version}")
    table = write_local_dataset(local, version, **kwargs)
    if root.kind == "local":
        return local, table
    uri = root.join(f"ds-{version}")
    upload_dir(local, uri, root.storage_options)
    return uri, table


def option_args(root) -> list[str]:
    """``-o KEY=VALUE`` arguments of ``root``'s storage options."""
    out: list[str] = []
    for k, v in root.storage_options.items():
        out += ["-o", f"{k}={v}"]
    return out


def is_png(path) -> bool:
    with open(path, "rb") as f:
        return f.read(8) == b"\x89PNG\r\n\x1a\n"
