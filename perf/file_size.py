"""File size (and write time) of lancejit's writer vs pylance's LanceFileWriter, per type family.

Usage: .venv/bin/python perf/file_size.py [rows] [repeats]
Prints, for each version and family: reference bytes, lancejit bytes, ratio, and write seconds
(the best of ``repeats`` writes, default 3, so a shared machine's load spikes count less).
(pylance is used here only as the reference to compare against.)
"""

from __future__ import annotations

import os
import sys
import tempfile
import time

import numpy as np
import pyarrow as pa

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "writer"))
import writer_datagen as g  # noqa: E402

from lancejit.file.writer import LanceFileWriter  # noqa: E402


def families(n: int) -> dict[str, pa.Array]:
    rng = np.random.default_rng(42)
    return {
        "int32 seq": pa.array(np.arange(n, dtype=np.int32)),
        "int64 random": g.ints(rng, n, np.int64, hi=1 << 40),
        "int64 lowcard": pa.array(rng.integers(0, 100, n) * 1000003),
        "int8": g.ints(rng, n, np.int8, lo=-100, hi=100),
        "int32 nulls": g.ints(rng, n, np.int32, nulls=0.1),
        "runs": pa.array(np.arange(n) // 100),
        "float32": g.floats(rng, n),
        "float64": g.floats(rng, n, np.float64),
        "bool": g.bools(rng, n),
        "string short": pa.array([str(i) for i in range(n)]),
        "string lowcard": g.strings(rng, n, card=20),
        "string random": g.strings(rng, n, nulls=0.05),
        "string lowc+nul": g.strings(rng, n, card=max(n // 5, 1), nulls=0.5),
        "int64 lowc+nul": g.ints(rng, n, np.int64, hi=max(n // 10, 2), nulls=0.3),
        "binary": g.binaries(rng, n, nulls=0.05),
        "vector f32x16": g.vectors(rng, n),
        "vector nulls": g.vectors(rng, n, nulls=0.1),
        "all null": pa.nulls(n, pa.int32()),
        "constant": pa.array(np.full(n, 7, dtype=np.int64)),
        "list<int32>": g.lists(rng, n),
        "struct": g.structs(rng, n),
        "wide binary": g.binaries(rng, max(n // 100, 10), maxlen=2000),
    }


def write_ref(path, t, version):
    import lance.file as lf

    with lf.LanceFileWriter(path, t.schema, version=version) as w:
        w.write_batch(t)


def write_ours(path, t, version):
    with LanceFileWriter(path, t.schema, version=version) as w:
        w.write_batch(t)


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
    repeats = max(1, int(sys.argv[2])) if len(sys.argv) > 2 else 3
    fams = families(n)
    # warm up (Numba caches, lazy imports) so timings measure steady-state writing
    with tempfile.TemporaryDirectory() as d:
        for version in ("2.2", "2.1", "2.0"):
            for name, arr in families(2000).items():
                if version == "2.0" and name == "struct":
                    continue
                write_ours(os.path.join(d, "w.lance"), pa.table({"a": arr}), version)
    with tempfile.TemporaryDirectory() as d:
        for version in ("2.2", "2.1", "2.0"):
            print(f"version {version} ({n} rows)")
            print(f"  {'family':<16}{'reference':>12}{'lancejit':>12}{'ratio':>8}{'ref s':>8}{'ours s':>8}")
            tot_r = tot_o = tot_rt = tot_ot = 0.0
            for name, arr in fams.items():
                if version == "2.0" and name == "struct":
                    arr = g.structs(np.random.default_rng(1), len(arr), nulls=0.0)
                t = pa.table({"a": arr})
                pr, po = os.path.join(d, "r.lance"), os.path.join(d, "o.lance")
                rt = ot = float("inf")
                for _ in range(repeats):
                    t0 = time.perf_counter()
                    write_ref(pr, t, version)
                    t1 = time.perf_counter()
                    write_ours(po, t, version)
                    t2 = time.perf_counter()
                    rt, ot = min(rt, t1 - t0), min(ot, t2 - t1)
                sr, so = os.path.getsize(pr), os.path.getsize(po)
                print(f"  {name:<16}{sr:>12}{so:>12}{so / sr:>8.3f}{rt:>8.3f}{ot:>8.3f}")
                tot_r += sr
                tot_o += so
                tot_rt += rt
                tot_ot += ot
                os.unlink(pr)
                os.unlink(po)
            mb = sum(a.nbytes for a in fams.values()) / 1e6
            print(f"  {'TOTAL':<16}{int(tot_r):>12}{int(tot_o):>12}{tot_o / tot_r:>8.3f}{tot_rt:>8.3f}{tot_ot:>8.3f}"
                  f"   write throughput: reference {mb / tot_rt:.0f} MB/s, lancejit {mb / tot_ot:.0f} MB/s")


if __name__ == "__main__":
    main()
