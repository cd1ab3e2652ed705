"""Helpers of the bench tests: tiny datasets written by the reference and copied to any store."""

from __future__ import annotations

import os

import numpy as np
import pyarrow as pa

from lancejit.io import join_path, open_store, run_sync

ROWS = 600

#: The reference file writer's page size limit (bytes), read from the environment at write time.
PAGE_BYTES_ENV = "LANCE_FILE_WRITER_MAX_PAGE_BYTES"


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
                        delete: bool = True, max_page_bytes: int | None = None) -> pa.Table:
    """A reference-written dataset at ``path``; returns its live rows (after deleting ~2%).

    ``max_page_bytes``: the reference writer's page size limit (small values: many pages).
    """
    import lance

    table = make_table(rows)
    old = os.environ.get(PAGE_BYTES_ENV)
    if max_page_bytes is not None:
        os.environ[PAGE_BYTES_ENV] = str(int(max_page_bytes))
    try:
        lance.write_dataset(table, path, data_storage_version=version, max_rows_per_file=rows_per_file)
    finally:
        if max_page_bytes is not None:
            if old is None:
                os.environ.pop(PAGE_BYTES_ENV, None)
            else:
                os.environ[PAGE_BYTES_ENV] = old
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
    """A tiny dataset of ``version`` under ``root`` (a ``StoreRoot``); returns (uri, live rows).
    ``kwargs`` go to :func:`write_local_dataset`."""
    local = os.path.join(os.fspath(tmp_path), f"src-{version}-{len(os.listdir(tmp_path))}")
    table = write_local_dataset(local, version, **kwargs)
    if root.kind == "local":
        return local, table
    uri = root.join(f"ds-{version}")
    upload_dir(local, uri, root.storage_options)
    return uri, table


def file_on(root, tmp_path, version: str, rows: int = 3000, max_page_bytes: int = 4096) -> tuple[str, pa.Table]:
    """One reference-written Lance file of ``version`` (pages of ~``max_page_bytes``) under
    ``root``; returns (uri, table)."""
    from lance.file import LanceFileWriter

    table = make_table(rows)
    local = os.path.join(os.fspath(tmp_path), f"f{version}.lance")
    with LanceFileWriter(local, version=version, max_page_bytes=max_page_bytes) as w:
        w.write_batch(table)
    if root.kind == "local":
        return local, table
    uri = root.join(f"f{version}.lance")
    store, path = open_store(uri, root.storage_options)
    with open(local, "rb") as f:
        run_sync(store.put(path, f.read()))
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
