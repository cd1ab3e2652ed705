"""The main job on an embedded default (local disk): ``./run demo`` or ``python -m lancejit.demo``.

Writes a sample Lance file with lancejit's own writer, inspects it, scans it and serves a
random take from it; then creates a dataset from the same rows, appends to it, takes random
rows and scans it.  Each step prints rows, read requests, bytes and latency.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
import pyarrow as pa


def sample_table(rows: int, seed: int = 0) -> pa.Table:
    rng = np.random.default_rng(seed)
    vec = rng.standard_normal(rows * 32).astype(np.float32)
    return pa.table({
        "id": pa.array(np.arange(rows, dtype=np.int64)),
        "score": pa.array(rng.standard_normal(rows)),
        "label": pa.array([f"label-{i % 97}" for i in range(rows)]),
        "text": pa.array([f"row {i} says {rng.integers(1_000_000)}" for i in range(rows)]),
        "vec": pa.FixedSizeListArray.from_arrays(pa.array(vec), 32),
    })


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="lancejit demo", description=__doc__)
    ap.add_argument("--dir", default="demo-data", help="directory to write into (default: ./demo-data)")
    ap.add_argument("--rows", type=int, default=200_000)
    ap.add_argument("--take", type=int, default=1000)
    ap.add_argument("--version", default="2.2", choices=["2.0", "2.1", "2.2"])
    args = ap.parse_args(argv)

    import lancejit
    from lancejit.cli import main as cli_main

    os.makedirs(args.dir, exist_ok=True)
    path = os.path.join(os.path.abspath(args.dir), f"sample_{args.version}.lance")
    table = sample_table(args.rows)
    t0 = time.perf_counter()
    with lancejit.LanceFileWriter(path, table.schema, version=args.version) as w:
        w.write_batch(table)
    t_write = time.perf_counter() - t0
    print(f"wrote {table.num_rows:,} rows to {path} ({os.path.getsize(path):,} bytes) "
          f"in {t_write * 1e3:.1f} ms\n")
    cli_main(["inspect", path])

    reader = lancejit.LanceFileReader(path)
    before = reader.io_stats()
    t0 = time.perf_counter()
    scanned = sum(b.num_rows for b in reader.to_batches())
    t_scan = time.perf_counter() - t0
    after = reader.io_stats()
    st, before = after - before, after
    assert scanned == table.num_rows
    print(f"\nscan: {scanned:,} rows in {t_scan * 1e3:.1f} ms, "
          f"{st.read_iops} read requests, {st.read_bytes:,} bytes")

    rng = np.random.default_rng(1)
    idx = rng.choice(table.num_rows, min(args.take, table.num_rows), replace=False)
    t0 = time.perf_counter()
    got = reader.take_rows(idx, columns=["id", "score", "label"]).to_table()
    t_take = time.perf_counter() - t0
    st = reader.io_stats() - before
    assert got.column("id").to_pylist() == idx.tolist()
    print(f"take: {got.num_rows:,} random rows (3 columns) in {t_take * 1e3:.1f} ms, "
          f"{st.read_iops} read requests, {st.read_bytes:,} bytes")
    print(got.slice(0, 3).to_pandas() if _has_pandas() else got.slice(0, 3))

    from lancejit.demo_dataset import run_dataset_demo

    run_dataset_demo(args.dir, table, take=args.take, version=args.version)


def _has_pandas() -> bool:
    try:
        import pandas  # noqa: F401
    except ImportError:
        return False
    return True


if __name__ == "__main__":
    main()
