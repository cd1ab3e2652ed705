"""Shared data and comparison helpers for tests/table_ops."""

from __future__ import annotations

import numpy as np
import pyarrow as pa


def make_table(start: int, n: int) -> pa.Table:
    """Rows ``[start, start + n)``: int key, nullable string, struct and list columns."""
    a = np.arange(start, start + n, dtype=np.int64)
    return pa.table({
        "a": a,
        "s": pa.array([None if i % 7 == 3 else f"s{i}" for i in a.tolist()], pa.string()),
        "st": pa.array([{"x": int(i), "y": float(i) / 2} for i in a.tolist()],
                       pa.struct([("x", pa.int64()), ("y", pa.float64())])),
        "l": pa.array([[int(i)] * (int(i) % 3) for i in a.tolist()], pa.list_(pa.int32())),
    })


def manifest_shape(uri: str, version: int) -> list[tuple]:
    """Per fragment: (id, physical rows, [(fields, column_indices, file version)], deleted rows,
    row-id bytes, created-at bytes, last-updated bytes) of a version's manifest."""
    from lancejit.io import open_store
    from lancejit.io.sync import run_sync
    from lancejit.table.commit import load_manifest

    store, root = open_store(uri)
    m = run_sync(load_manifest(store, root, version)).manifest
    out = []
    for f in m.fragments:
        out.append((
            f.id, f.physical_rows,
            [(list(df.fields), list(df.column_indices), df.file_major_version, df.file_minor_version)
             for df in f.files],
            f.deletion_file.num_deleted_rows if f.HasField("deletion_file") else None,
            bytes(f.inline_row_ids), bytes(f.inline_created_at_versions),
            bytes(f.inline_last_updated_at_versions),
        ))
    return out


def manifest_meta(uri: str, version: int) -> tuple:
    """(schema (name, id, parent), max_fragment_id, next_row_id, flags, data format) of a version."""
    from lancejit.io import open_store
    from lancejit.io.sync import run_sync
    from lancejit.table.commit import load_manifest

    store, root = open_store(uri)
    m = run_sync(load_manifest(store, root, version)).manifest
    return ([(f.name, f.id, f.parent_id) for f in m.fields], m.max_fragment_id, m.next_row_id,
            m.reader_feature_flags, m.writer_feature_flags, m.data_format.version)
