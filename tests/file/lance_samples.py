"""Sample Lance files written by pylance 14 (the reference) for the file-layer tests.

``write_samples(directory)`` writes every (version, schema) combination once and returns
``{(version, name): path}``.  Versions: "2.0", "2.1", "2.2" via ``lance.file.LanceFileWriter``
and "0.1" via ``lance.write_dataset(..., data_storage_version="legacy")`` (its data file).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa

VERSIONS = ("2.0", "2.1", "2.2")


def flat_table(n: int = 3000, seed: int = 1) -> pa.Table:
    rng = np.random.default_rng(seed)
    ints = rng.integers(-1000, 1000, n)
    valid = rng.random(n) > 0.1
    schema = pa.schema(
        [
            pa.field("i32", pa.int32(), nullable=False),
            pa.field("i64", pa.int64(), metadata={"note": "some nulls"}),
            pa.field("f64", pa.float64()),
            pa.field("s", pa.string()),
            pa.field("b", pa.bool_()),
            pa.field("bin", pa.binary()),
            pa.field("d", pa.date32()),
            pa.field("ts", pa.timestamp("us", tz="UTC")),
        ],
        metadata={"origin": "lancejit-tests", "seed": str(seed)},
    )
    return pa.table(
        [
            pa.array(np.arange(n, dtype=np.int32)),
            pa.array(ints, mask=~valid, type=pa.int64()),
            pa.array(rng.random(n)),
            pa.array([None if i % 17 == 0 else f"str-{i % 97}-{i}" for i in range(n)]),
            pa.array(rng.random(n) > 0.5),
            pa.array([bytes([i % 256]) * (i % 7) for i in range(n)], type=pa.binary()),
            pa.array(np.arange(n, dtype=np.int32), type=pa.int32()).cast(pa.date32()),
            pa.array(np.arange(n, dtype=np.int64) * 1_000_000, type=pa.timestamp("us", tz="UTC")),
        ],
        schema=schema,
    )


def nested_table(n: int = 2000, seed: int = 2) -> pa.Table:
    rng = np.random.default_rng(seed)
    lists = [None if i % 11 == 0 else list(range(i % 5)) for i in range(n)]
    return pa.table(
        {
            "id": pa.array(np.arange(n, dtype=np.int64)),
            "st": pa.array(
                [{"x": i, "y": f"y{i % 13}", "z": {"w": float(i)}} for i in range(n)],
                type=pa.struct(
                    [("x", pa.int32()), ("y", pa.string()), ("z", pa.struct([("w", pa.float64())]))]
                ),
            ),
            "l": pa.array(lists, type=pa.list_(pa.int32())),
            "ls": pa.array(
                [[{"a": j, "b": str(j)} for j in range(i % 3)] for i in range(n)],
                type=pa.list_(pa.struct([("a", pa.int64()), ("b", pa.string())])),
            ),
            "vec": pa.FixedSizeListArray.from_arrays(
                pa.array(rng.random(n * 8).astype(np.float32)), 8
            ),
            "ll": pa.array([[[i], [i, i + 1]] for i in range(n)], type=pa.large_list(pa.list_(pa.int16()))),
        }
    )


def many_columns_table(num_columns: int = 300, n: int = 100) -> pa.Table:
    return pa.table({f"col_{i:03d}": pa.array(np.arange(n, dtype=np.int32) * i) for i in range(num_columns)})


def big_metadata_table(num_columns: int = 60, n: int = 12000) -> pa.Table:
    return pa.table({f"c{i}": pa.array(np.arange(n, dtype=np.int32) + i) for i in range(num_columns)})


def write_file(path: Path, table: pa.Table, version: str, *, chunk: int | None = None, **writer_kwargs) -> Path:
    """Write ``table`` with pylance (in ``chunk``-row batches when given: sliced struct batches
    crash pylance 14, so only flat tables are chunked)."""
    from lance.file import LanceFileWriter

    with LanceFileWriter(str(path), version=version, **writer_kwargs) as writer:
        batches = table.to_batches(max_chunksize=chunk) if chunk else table.combine_chunks().to_batches()
        for batch in batches:
            writer.write_batch(batch)
    return path


def write_legacy(directory: Path, table: pa.Table, name: str) -> Path:
    """A 0.1 data file: written through a legacy dataset, returned by its data file path."""
    import lance

    ds_dir = directory / f"{name}_legacy_ds"
    lance.write_dataset(table, str(ds_dir), data_storage_version="legacy", max_rows_per_group=512)
    files = sorted((ds_dir / "data").glob("*.lance"))
    assert len(files) == 1, files
    return files[0]


#: name -> (table factory, extra LanceFileWriter kwargs)
SCHEMAS = {
    "flat": (flat_table, {}),
    "nested": (nested_table, {}),
    "many": (many_columns_table, {}),
    # small per-column buffers => a page per written batch => > 64 KiB of column metadata
    "bigmeta": (big_metadata_table, {"data_cache_bytes": 64 * 1024, "max_page_bytes": 4096, "chunk": 400}),
}


def write_samples(directory: Path) -> dict[tuple[str, str], Path]:
    directory.mkdir(parents=True, exist_ok=True)
    out: dict[tuple[str, str], Path] = {}
    for name, (factory, kwargs) in SCHEMAS.items():
        table = factory()
        for version in VERSIONS:
            out[(version, name)] = write_file(directory / f"{name}_{version}.lance", table, version, **dict(kwargs))
    for name in ("flat", "many"):
        table = SCHEMAS[name][0]()
        if name == "flat":
            table = table.drop_columns(["bin"])
        out[("0.1", name)] = write_legacy(directory, table, name)
    return out
