"""A first user's workload: datasets the reference wrote (file versions 2.0, 2.1, 2.2 and legacy
0.1, many fragments, the usual types and encodings), read with every kind of filter, and every
write and table operation of lancejit.

Used by ``tests/api/test_warm_complete.py`` (after ``lancejit warmup`` a fresh process running it
compiles nothing) and ``perf/cold_start.py`` (wall time, compile time and compilations of each
step in a fresh installation).  :func:`make_datasets` needs pylance; :func:`steps` only lancejit.
"""

from __future__ import annotations

import os
import shutil
from typing import Any, Callable, Iterator

import numpy as np
import pyarrow as pa

#: File versions of the reference's datasets ("legacy" is 0.1).
VERSIONS = ("legacy", "2.0", "2.1", "2.2")

#: Filters of every kind the scans use (columns of :func:`table`).
FILTERS = (
    "id > 1000",
    "id >= 10 AND id < 5000 AND x > 0.0",
    "cat IN ('c1', 'c3', 'c5')",
    "id IN (1, 2, 3, 500, 2999)",
    "s LIKE 'row 1%'",
    "s LIKE '%7'",
    "x BETWEEN -0.5 AND 0.5 OR i32 = 7",
    "i32 IS NULL",
    "i32 IS NOT NULL AND NOT flag",
    "id % 7 = 0",
    "f32 < 0.25",
    "st.a > 0",
    "ts > CAST('1970-01-01 00:00:01' AS TIMESTAMP)",
    "d < CAST('1970-03-01' AS DATE)",
    "i8 = -3 OR u16 > 100",
    "cat IS NULL OR cat = 'c2'",
    "s ILIKE 'ROW 2%'",
)


def table(n: int, seed: int) -> pa.Table:
    """``n`` rows of the usual types: integers of every width (some nullable), floats, a
    boolean, a date, a timestamp, low- and high-cardinality strings, binary, a float vector, a
    list, a struct."""
    rng = np.random.default_rng(seed)
    mask = rng.random(n) < 0.1
    ints = rng.integers(-1000, 1000, n)
    words = np.array([f"c{i}" for i in range(12)])
    base = seed * 1_000_000
    return pa.table({
        "id": pa.array(np.arange(base, base + n, dtype=np.int64)),
        "i8": pa.array(ints.astype(np.int8)),
        "i32": pa.array(ints.astype(np.int32), mask=mask),
        "u16": pa.array(np.abs(ints).astype(np.uint16)),
        "x": pa.array(rng.standard_normal(n)),
        "f32": pa.array(rng.standard_normal(n).astype(np.float32), mask=mask),
        "flag": pa.array(rng.random(n) < 0.5),
        "d": pa.array(ints.astype(np.int32), pa.int32()).cast(pa.date32()),
        "ts": pa.array(np.arange(n, dtype=np.int64) * 1_000, pa.timestamp("us")),
        "cat": pa.array(words[rng.integers(0, len(words), n)], mask=rng.random(n) < 0.05),
        "s": pa.array([f"row {i} {'ab' * (i % 9)}" for i in range(n)]),
        "bin": pa.array([bytes([i % 251]) * (i % 7) for i in range(n)], pa.binary()),
        "v": pa.FixedSizeListArray.from_arrays(pa.array(rng.standard_normal(n * 16).astype(np.float32)), 16),
        "l": pa.array([list(range(i % 4)) if i % 11 else None for i in range(n)], pa.list_(pa.int32())),
        "st": pa.StructArray.from_arrays([pa.array(ints.astype(np.int32)), pa.array(words[np.arange(n) % 12])],
                                         names=["a", "b"]),
    })


def make_datasets(root: str, rows: int = 6000, fragments: int = 12) -> dict[str, str]:
    """Write one dataset per file version with pylance under ``root``: ``rows`` rows in about
    ``fragments`` fragments plus an appended one and a deletion.  Returns version -> path."""
    import lance

    out = {}
    for k, version in enumerate(VERSIONS):
        path = os.path.join(root, f"ref-{version}")
        t = table(rows, k)
        lance.write_dataset(t, path, data_storage_version=version, max_rows_per_file=rows // fragments)
        lance.write_dataset(table(500, k + 10), path, mode="append", data_storage_version=version)
        lance.dataset(path).delete("id % 97 = 5")
        out[version] = path
    return out


def steps(root: str, paths: dict[str, str]) -> Iterator[tuple[str, Callable[[], Any]]]:
    """``(step name, callable)`` of the workload, in order; each returns something small."""
    import lancejit

    rng = np.random.default_rng(7)
    for version, path in paths.items():
        def open_count(path: str = path) -> int:
            return lancejit.dataset(path).count_rows()

        yield f"{version}: open + count_rows", open_count
        ds = lancejit.dataset(path)
        n = ds.count_rows()
        yield f"{version}: take 200 random rows", lambda ds=ds, n=n: ds.take(
            np.sort(rng.choice(n, 200, replace=False)).tolist()).num_rows
        yield f"{version}: take 5 rows", lambda ds=ds: ds.take([3, 1, 4, 1, 5]).num_rows
        yield f"{version}: full scan", lambda ds=ds: ds.to_table().num_rows
        yield f"{version}: scan 2 columns", lambda ds=ds: ds.to_table(columns=["id", "s"]).num_rows
        for f in FILTERS:
            yield f"{version}: filter {f}", lambda ds=ds, f=f: ds.to_table(filter=f).num_rows
        yield f"{version}: count_rows(filter)", lambda ds=ds: ds.count_rows("x > 0.5")
        yield f"{version}: scan with limit", lambda ds=ds: ds.to_table(columns=["id", "v"], limit=100,
                                                                        offset=50).num_rows
        yield f"{version}: batches", lambda ds=ds: sum(b.num_rows for b in ds.to_batches(columns=["cat", "l"]))
    for version in ("2.0", "2.1", "2.2"):
        path = os.path.join(root, f"own-{version}")

        def write(path: str = path, version: str = version) -> int:
            shutil.rmtree(path, ignore_errors=True)
            t = table(4000, 20)
            return lancejit.write_dataset(t, path, data_storage_version=version,
                                          max_rows_per_file=1000).count_rows()

        yield f"write {version}", write
        yield f"append {version}", lambda path=path: lancejit.write_dataset(
            table(700, 21), path, mode="append").count_rows()
        yield f"delete {version}", lambda path=path: lancejit.dataset(path).delete("i32 > 500")["num_deleted_rows"]
        yield f"update {version}", lambda path=path: lancejit.dataset(path).update(
            {"x": "x + 1.0"}, where="id < 100")["num_rows_updated"]

        def indices(path: str = path) -> int:
            ds = lancejit.dataset(path).create_scalar_index("id", "BTREE").create_scalar_index("cat", "BITMAP")
            return ds.to_table(filter="id < 2000 OR cat = 'c3'").num_rows + ds.count_rows(
                "NOT (cat = 'c2') AND id < 3000")

        yield f"scalar indices {version}", indices

        def merge(path: str = path) -> int:
            ds = lancejit.dataset(path)
            new = table(300, 20).slice(0, 300)
            return (ds.merge_insert("id").when_matched_update_all().when_not_matched_insert_all()
                    .execute(new) is not None)

        yield f"merge_insert {version}", merge
        yield f"compaction {version}", lambda path=path: lancejit.dataset(path).optimize.compact_files(
            target_rows_per_fragment=100_000) is not None
        yield f"read back {version}", lambda path=path: lancejit.dataset(path).to_table(
            filter="cat = 'c3'").num_rows
    for version, path in paths.items():
        if version == "legacy":
            continue

        def merge_ref(path: str = path, version: str = version) -> int:
            copy = os.path.join(root, f"copy-{version}")
            shutil.rmtree(copy, ignore_errors=True)
            shutil.copytree(path, copy)
            ds = lancejit.dataset(copy)
            new = table(200, 30)
            ds.merge_insert("id").when_matched_update_all().when_not_matched_insert_all().execute(new)
            return lancejit.dataset(copy).count_rows()

        yield f"merge_insert into the reference's {version}", merge_ref


__all__ = ["FILTERS", "VERSIONS", "make_datasets", "steps", "table"]
