"""``lancejit.warmup()`` / ``lancejit warmup``: prepare an installation so a fresh process starts fast.

Run it once after installing (and after upgrading) lancejit:

1. byte-compiles lancejit's modules (``compileall``; editable installs and environments with
   ``PYTHONDONTWRITEBYTECODE`` otherwise compile ~100 modules from source in every process);
2. compiles every Numba kernel into Numba's on-disk cache by writing small generated tables of
   every type family with lancejit's writer (file versions 2.0, 2.1 and 2.2; dictionary, FSST,
   bit-packing, RLE, general compression, packed structs, blobs, lists, structs, nulls) to an
   in-memory store and reading them back (full reads, ranges, sorted and unsorted takes), so each
   kernel is compiled for the argument types reading and writing actually use.

Later processes load the compiled kernels from the cache on first use instead of compiling
(check with ``lancejit.encoding.kernels.jit.cache_misses()``: all zeros).  Nothing is written
outside lancejit's own directories (the cache lives in the package's ``__pycache__``).
"""

from __future__ import annotations

import compileall
import os
import tempfile
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

if TYPE_CHECKING:  # pragma: no cover
    from lancejit.file.reader import LanceFileReader

#: File versions warmed (the legacy 0.1 format has no kernels of its own).
VERSIONS = ("2.0", "2.1", "2.2")


@dataclass(frozen=True, slots=True)
class WarmupReport:
    """What :func:`warmup` did: ``kernels`` defined, ``loaded`` of them used at least once,
    ``compiled`` compilations (cache misses) it caused (0 when the cache was already warm),
    ``not_exercised`` kernels no warm-up read or write called, ``seconds`` wall time."""

    kernels: int
    loaded: int
    compiled: int
    not_exercised: tuple[str, ...]
    seconds: float


def _tables(rows: int, seed: int) -> list[tuple[pa.Table, dict[str, dict[str, str]]]]:
    """Generated tables (and per-column encoding metadata) covering the encoders' choices."""
    rng = np.random.default_rng(seed)
    n = rows
    mask = rng.random(n) < 0.1
    ints = rng.integers(-1000, 1000, n)
    words = np.array([f"word-{i:04d}-{'x' * (i % 23)}" for i in range(400)])
    high = [f"row {i} {'abcdefgh'[i % 8] * (i % 31)} {i * 7919 % 100003}" for i in range(n)]
    vec = rng.standard_normal((n, 8)).astype(np.float32)
    base = {
        "i8": pa.array(ints.astype(np.int8), mask=mask),
        "i16": pa.array(ints.astype(np.int16)),
        "i32": pa.array(ints.astype(np.int32), mask=mask),
        "i64": pa.array(np.arange(n, dtype=np.int64) * 3),
        "u8": pa.array((ints % 200).astype(np.uint8)),
        "u16": pa.array(np.abs(ints).astype(np.uint16), mask=mask),
        "u32": pa.array(np.abs(ints).astype(np.uint32)),
        "u64": pa.array(rng.integers(0, 2**62, n).astype(np.uint64)),
        "f32": pa.array(rng.standard_normal(n).astype(np.float32), mask=mask),
        "f64": pa.array(rng.standard_normal(n)),
        "runs": pa.array(np.repeat(np.arange(n // 50 + 1, dtype=np.int64), 50)[:n]),
        "const": pa.array(np.full(n, 7, dtype=np.int32)),
        "flag": pa.array(rng.random(n) < 0.5, mask=mask),
        "date": pa.array(ints.astype(np.int32), pa.int32()).cast(pa.date32()),
        "ts": pa.array(np.arange(n, dtype=np.int64) * 1_000_000, pa.timestamp("us")),
        "cat": pa.array(words[rng.integers(0, 20, n)], mask=mask),
        "s": pa.array(high),
        "ls": pa.array(words[rng.integers(0, len(words), n)], pa.large_string()),
        "bin": pa.array([w.encode() for w in words[rng.integers(0, len(words), n)]], pa.binary()),
        "fsb": pa.array([bytes([i % 256]) * 4 for i in range(n)], pa.binary(4)),
        "vec": pa.FixedSizeListArray.from_arrays(pa.array(vec.reshape(-1)), 8),
        "l": pa.array([list(range(i % 5)) if i % 9 else None for i in range(n)], pa.list_(pa.int32())),
        "ll": pa.array([[words[i % 40]] * (i % 3) for i in range(n)], pa.large_list(pa.string())),
        "st": pa.StructArray.from_arrays([pa.array(ints.astype(np.int32)), pa.array(words[np.arange(n) % 40])],
                                         names=["x", "y"]),
        "nul": pa.nulls(n, pa.int64()),
    }
    t = pa.table(base)
    meta = {
        "zstd": {"lance-encoding:compression": "zstd"},
        "lz4": {"lance-encoding:compression": "lz4"},
        "packed": {"lance-encoding:packed": "true"},
        "blob": {"lance-encoding:blob": "true"},
    }
    variants = pa.table({
        "zi": base["i64"], "zs": base["s"], "lf": base["f64"],
        "pk": pa.StructArray.from_arrays([pa.array(ints.astype(np.int32)), pa.array(rng.standard_normal(n))],
                                         names=["a", "b"]),
        "bl": pa.array([bytes(rng.integers(0, 256, i % 64, dtype=np.uint8)) for i in range(n)], pa.large_binary()),
        "pkv": pa.StructArray.from_arrays([pa.array(ints.astype(np.int32)), pa.array(words[np.arange(n) % 40])],
                                          names=["a", "w"]),
        "bf": base["f32"], "bd": base["f64"],
        "fzs": base["s"], "fzi": base["i32"], "fzl": base["l"],
        "long": pa.array([w * 12 for w in words[rng.integers(0, len(words), n)]]),
        "v64": pa.FixedSizeListArray.from_arrays(pa.array(rng.standard_normal(n * 64).astype(np.float32)), 64),
    })
    bss = {"lance-encoding:bss": "on"}
    fullzip = {"lance-encoding:structural-encoding": "fullzip"}
    field_meta = {"zi": meta["zstd"], "zs": meta["zstd"], "lf": meta["lz4"], "pk": meta["packed"], "bl": meta["blob"],
                  "pkv": meta["packed"], "bf": bss, "bd": bss, "fzs": fullzip, "fzi": fullzip, "fzl": fullzip}
    return [(t, {}), (variants, field_meta)]


def _with_metadata(table: pa.Table, field_meta: dict[str, dict[str, str]]) -> pa.Table:
    fields = [f.with_metadata(field_meta[f.name]) if f.name in field_meta else f for f in table.schema]
    return table.cast(pa.schema(fields))


def _exercise(rows: int, seed: int) -> None:
    from lancejit.io.memory import clear_memory_objects

    prefix = f"lancejit-warmup/{os.getpid()}/"
    try:
        # memory (and object stores) hand kernels read-only buffers, local disk writable ones:
        # Numba compiles one specialization for each, so both are exercised
        _exercise_versions(rows, seed, f"memory://{prefix}")
    finally:
        clear_memory_objects(prefix)
    with tempfile.TemporaryDirectory(prefix="lancejit-warmup-") as tmp:
        _exercise_versions(rows, seed, tmp + "/")
    _exercise_manifest_scan()
    _exercise_multi_file_take()
    _exercise_vector()


def _exercise_vector() -> None:
    """The vector-search kernels (:mod:`lancejit.table.indices.vector.kernels`) with the argument
    types flat search, index search and index building pass."""
    from lancejit.table.indices.vector import kernels as K

    rng = np.random.default_rng(0)
    ids = np.arange(64, dtype=np.uint64)
    none = np.empty(0, np.uint8)
    keep = np.ones(64, np.uint8)
    for dt in (np.float32, np.float64):
        x = rng.standard_normal((64, 8)).astype(dt)
        q = x[:2].copy()
        for kp in (none, keep):
            hd, hi, hn = np.empty((2, 4), np.float32), np.empty((2, 4), np.uint64), np.zeros(2, np.int64)
            K.flat_topk(x, q, np.ones(2, dt), ids, kp, K.L2, hd, hi, hn)
    u8 = rng.integers(0, 255, (64, 8)).astype(np.uint8)
    hd, hi, hn = np.empty((1, 4), np.float32), np.empty((1, 4), np.uint64), np.zeros(1, np.int64)
    K.hamming_topk(u8, u8[:1].copy(), ids, none, hd, hi, hn)
    K.sq_topk(u8, u8[0].copy(), K.L2, np.float32(1), ids, none, hd, hi, hn)
    book = np.ones((2, 256, 4), np.float32)
    K.pq_topk(u8[:, :2].reshape(-1).copy(), 64, book, np.ones(8, np.float32), K.L2, 8, ids, none, np.float32(0),
              hd, hi, hn)
    x = rng.standard_normal((64, 8)).astype(np.float32)
    part, dist = np.empty(64, np.int32), np.empty(64, np.float32)
    K.assign(x, x[:4].T.copy(), np.ones(4, np.float32), K.L2, part, dist)
    K.accumulate(x, part, np.zeros((4, 8)), np.zeros(4, np.int64))
    _exercise_vector_search()


def _exercise_vector_search() -> None:
    """Searches and index builds on a small dataset (the kernels meet read-only Arrow buffers
    there, a specialization of their own)."""
    from lancejit.io.sync import run_sync
    from lancejit.table import dataset, write_dataset
    from lancejit.table.indices.vector.build import create_index_async
    from lancejit.table.indices.vector.search import nearest_table

    rng = np.random.default_rng(1)
    n, dim = 600, 16
    with tempfile.TemporaryDirectory(prefix="lancejit-warmup-vec-") as tmp:
        for dt in (np.float16, np.float32, np.float64):
            v = rng.standard_normal((n, dim)).astype(dt)
            t = pa.table({"id": np.arange(n), "vec": pa.FixedSizeListArray.from_arrays(pa.array(v.reshape(-1)), dim)})
            uri = f"{tmp}/{np.dtype(dt).name}"
            write_dataset(t, uri)
            ds = dataset(uri)
            for metric in ("l2", "cosine", "dot"):
                run_sync(nearest_table(ds, {"column": "vec", "q": v[0], "k": 5, "metric": metric}))
            run_sync(nearest_table(ds, {"column": "vec", "q": v[:2], "k": 5}, filter="id > 3", prefilter=True))
        ds = dataset(f"{tmp}/float32")
        q = {"column": "vec", "q": rng.standard_normal(dim), "k": 5, "nprobes": 2}
        for kind, kw in (("IVF_PQ", {"num_sub_vectors": 4}), ("IVF_PQ", {"num_sub_vectors": 4, "num_bits": 4}),
                         ("IVF_SQ", {}), ("IVF_FLAT", {})):
            ds = run_sync(create_index_async(ds, "vec", kind, num_partitions=2, max_iters=2, seed=0, **kw))
            run_sync(nearest_table(ds, q))
            run_sync(nearest_table(ds, {**q, "refine_factor": 2}))
        ds.delete("id < 10")
        run_sync(nearest_table(dataset(f"{tmp}/float32"), q))
        u8 = rng.integers(0, 256, (n, 8)).astype(np.uint8)
        write_dataset(pa.table({"vec": pa.FixedSizeListArray.from_arrays(pa.array(u8.reshape(-1)), 8)}), f"{tmp}/u8")
        run_sync(nearest_table(dataset(f"{tmp}/u8"), {"column": "vec", "q": u8[0], "k": 5}))


def _exercise_multi_file_take() -> None:
    """The multi-file take's planning kernel (datasets only; its decode kernels are the file
    take's), with the argument types :mod:`lancejit.table.read.take_files` passes."""
    from lancejit.encoding.kernels.take import plan_take_files

    segs = np.zeros((7, 4), dtype=np.int64)
    segs[3] = 8
    slots = np.zeros((3, 2), dtype=np.int64)
    slots[1] = 1
    work = np.empty(7, dtype=np.int64)
    plan_take_files(segs[0], segs[1], segs[2], segs[3], slots[0], slots[1], slots[2], np.zeros(1, np.int64),
                    np.zeros(1, np.int64), 1, 4096, work[:1], work[1:2], work[2:3], work[3:].reshape(1, 4))


def _exercise_manifest_scan() -> None:
    """The manifest wire-format and fragment-index kernels (opening a dataset in a process that
    loaded Numba)."""
    from lancejit.encoding.kernels.frag_index import index_arrays
    from lancejit.pb import table_pb2
    from lancejit.table.meta.manifest_scan import scan_manifest

    m = table_pb2.Manifest(version=1)
    frag = m.fragments.add(id=0, physical_rows=10)
    frag.files.add(path="a.lance", fields=[0], column_indices=[0])
    frag.deletion_file.num_deleted_rows = 1
    a = scan_manifest(m.SerializeToString(), force=True).arrays
    index_arrays(a.ids, a.physical_rows, a.num_deleted, a.has_deletion, a.num_files, True, 1 << 32,
                 np.empty((4, 1), dtype=np.int64), np.empty(2, dtype=np.int64))


def _exercise_versions(rows: int, seed: int, root: str) -> None:
    from lancejit.core.errors import LanceJitError
    from lancejit.file.reader import LanceFileReader

    rng = np.random.default_rng(seed)
    for version in VERSIONS:
        for k, (table, field_meta) in enumerate(_tables(rows, seed)):
            uri = f"{root}{version}-{k}.lance"
            cols = table.column_names
            if version == "2.0":  # 2.0 has no packed structs / blobs
                cols = [c for c in cols if c not in ("pk", "pkv", "bl")]
            t = _with_metadata(table.select(cols), field_meta)
            try:
                _write(uri, t, version, rows)
            except LanceJitError:  # a column this version does not support: the others one by one
                for j, c in enumerate(cols):
                    try:
                        _write(f"{uri}.{j}", t.select([c]), version, rows)
                        _read(LanceFileReader(f"{uri}.{j}"), rows, rng)
                    except LanceJitError:
                        pass
                continue
            _read(LanceFileReader(uri), rows, rng)


def _write(uri: str, t: pa.Table, version: str, rows: int) -> None:
    from lancejit.file.writer import LanceFileWriter

    with LanceFileWriter(uri, t.schema, version=version) as w:
        w.write_batch(t.slice(0, rows // 2))
        w.write_batch(t.slice(rows // 2))


def _read(r: "LanceFileReader", rows: int, rng: np.random.Generator) -> None:
    r.read_all()
    r.read_range(rows // 3, rows // 4)
    idx = rng.integers(0, rows, 64)
    r.take_rows(np.sort(np.unique(idx)))
    r.take_rows(idx)
    r.take_rows([int(idx[0])])
    # the array take path serves a projection only when it covers every column: one by one too
    for name in r.schema.names:
        r.take_rows(idx[:16], columns=[name])
    for _ in r.to_batches(batch_size=rows // 3 + 1):
        pass
    _scan_files(r, rows)


def _scan_files(r: "LanceFileReader", rows: int) -> None:
    """The multi-file scan kernels (:mod:`lancejit.file.multi_decode`, what dataset scans of
    small fragments use): each column alone and all of them, whole ranges and selected rows."""
    from lancejit.file.multi_decode import file_scan, read_scans
    from lancejit.io.sync import run_sync

    inner = r.async_reader

    async def scan() -> None:
        names = list(r.schema.names)
        for cols in [(n,) for n in names] + [tuple(names)]:
            s = await file_scan(inner, cols)
            if s is not None:
                picked = np.arange(rows // 3, rows, 3, dtype=np.int64)
                await read_scans([s, s], [0, rows // 3], [rows // 4, rows], [None, picked])

    run_sync(scan(), store=inner.store)


def _byte_compile() -> None:
    import lancejit

    root = os.path.dirname(os.path.abspath(lancejit.__file__))
    try:
        compileall.compile_dir(root, quiet=2, workers=1)
    except OSError:  # a read-only installation: nothing to do
        pass


def warmup(*, byte_compile: bool = True, rows: int = 5000, seed: int = 0) -> WarmupReport:
    """Byte-compile lancejit and compile every kernel into Numba's cache (see the module docstring).

    ``rows``: rows of each generated table (several mini-block chunks and pages).  Takes a few
    seconds with a warm cache, up to a few minutes on a fresh installation."""
    import importlib
    import pkgutil

    from lancejit.encoding import kernels as kpkg
    from lancejit.encoding.kernels import jit

    t0 = time.perf_counter()
    if byte_compile:
        _byte_compile()
    from lancejit.encoding.kernels import tier0

    jit.numba()  # every call compiled from here on: no tier-0 (interpreted) kernel calls
    tier0.ALWAYS = False
    for m in pkgutil.iter_modules(kpkg.__path__):
        importlib.import_module(f"{kpkg.__name__}.{m.name}")
    importlib.import_module("lancejit.encoding.v21.repdef_kernels")
    before = sum(jit.cache_misses().values())
    _exercise(rows, seed)
    from lancejit.table.filter.fast import warm as warm_filters

    warm_filters()  # the filter kernels (lancejit.encoding.kernels.filter)
    all_k = jit.kernels()
    loaded = [k for k in all_k if k.materialized and k.signatures]
    called = set()  # kernels only called from other kernels: compiled into their callers
    for k in all_k:
        g = k.__wrapped__.__globals__
        for name in jit._names(k.__wrapped__.__code__):
            called.add(id(g.get(name)))
    unused = tuple(f"{k.__module__}.{k.__qualname__}" for k in all_k
                   if not (k.materialized and k.signatures) and id(k) not in called
                   and id(k._disp) not in called)
    compiled = sum(jit.cache_misses().values()) - before
    return WarmupReport(len(all_k), len(loaded), compiled, unused, time.perf_counter() - t0)
