"""The dataset part of the main job (``./run demo``): create a local dataset with
:func:`~lancejit.table.dataset.write_dataset`, append to it, take random rows and scan it,
printing rows, read requests, bytes and latency.

``lancejit/demo.py`` calls :func:`run_dataset_demo` after its single-file part.
"""

from __future__ import annotations

import os
import shutil
import time
from typing import Any, Callable

import numpy as np
import pyarrow as pa


def run_dataset_demo(
    directory: str,
    table: pa.Table,
    *,
    take: int = 1000,
    version: str = "2.2",
    max_rows_per_file: int = 65_536,
    out: Callable[[str], Any] = print,
) -> dict[str, Any]:
    """Write ``table`` as a new dataset under ``directory`` (replacing an old one), append its first
    tenth again, take ``take`` random rows and scan everything.  Returns what was printed as numbers:
    ``rows``, ``versions``, ``taken`` (the taken table), ``scan_rows`` and the request counts."""
    from lancejit.table import dataset, write_dataset

    uri = os.path.join(os.path.abspath(directory), f"sample_{version}.lancedb")
    shutil.rmtree(uri, ignore_errors=True)
    t0 = time.perf_counter()
    ds = write_dataset(table, uri, data_storage_version=version, max_rows_per_file=max_rows_per_file)
    t_create = time.perf_counter() - t0
    out(f"\ndataset: created {uri} (version {ds.version}, {len(ds.get_fragments())} fragments, "
        f"{table.num_rows:,} rows) in {t_create * 1e3:.1f} ms")
    extra = table.slice(0, max(1, table.num_rows // 10))
    t0 = time.perf_counter()
    ds = write_dataset(extra, uri, mode="append", max_rows_per_file=max_rows_per_file)
    t_append = time.perf_counter() - t0
    total = table.num_rows + extra.num_rows
    out(f"dataset: appended {extra.num_rows:,} rows -> version {ds.version}, {total:,} rows, "
        f"in {t_append * 1e3:.1f} ms")

    ds = dataset(uri)
    ds.io_stats()  # reset the incremental counters (opening read the manifest)
    rng = np.random.default_rng(2)
    idx = np.sort(rng.choice(total, min(take, total), replace=False))
    cols = [n for n in ("id", "score", "label") if n in table.column_names] or None
    t0 = time.perf_counter()
    taken = ds.take(idx, columns=cols)
    t_take = time.perf_counter() - t0
    st_take = ds.io_stats()
    out(f"dataset take: {taken.num_rows:,} random rows in {t_take * 1e3:.1f} ms, "
        f"{st_take.read_iops} read requests, {st_take.read_bytes:,} bytes")
    out(str(taken.slice(0, 3).to_pylist()))
    t0 = time.perf_counter()
    scanned = sum(b.num_rows for b in ds.to_batches())
    t_scan = time.perf_counter() - t0
    st_scan = ds.io_stats()
    out(f"dataset scan: {scanned:,} rows in {t_scan * 1e3:.1f} ms, "
        f"{st_scan.read_iops} read requests, {st_scan.read_bytes:,} bytes")
    return {
        "uri": uri, "rows": total, "versions": ds.version, "indices": idx, "taken": taken,
        "scan_rows": scanned, "take_requests": st_take.read_iops, "scan_requests": st_scan.read_iops,
    }


__all__ = ["run_dataset_demo"]
