"""Issue 28 benchmark: vector search, lancejit vs the reference (pylance 14), one run, same data.

Run:  .venv/bin/python perf/vector.py [--repeat 5] [--only flat ivf build] [--quick]

Data (seeded, float32 standard normal, written once by the reference under
``perf/data/vector/``): ``1Mx128`` and ``4Mx32`` (``id`` int64, ``vec``).  Figures:

* ``flat``: exact search, k = 10 and 100, without and with a filter (``id % 2 = 0``, prefilter),
  each library's median over ``--repeat`` alternated runs: lancejit's first search in the
  process (kernels loaded, vectors decoded from the files), its cache-cold searches (the
  decoded-vector cache, :mod:`lancejit.table.indices.vector.cache`, emptied before each: vectors
  decoded from the files, as the reference always does) and its searches from the cache.
  ``bw ms`` is the memory-bandwidth floor: one pass of NumPy's sum over the vectors held in memory.
* ``ivf``: IVF_PQ search over the reference's index at ``nprobes`` 20, without and with
  ``refine_factor`` 5, on ``1Mx128c`` (clustered; :data:`CLUSTERED`) (latency; recall@10 of both
  answers against exact search over 20 queries near the data);
* ``build``: IVF_PQ build time (``num_partitions`` 256, ``num_sub_vectors`` dim / 8), each
  library once on a copy of the dataset; recall@10 of each index at nprobes 20.

Ratios are lancejit / reference; the machine is shared, so only ratios from one run mean anything.
"""

from __future__ import annotations

import argparse
import functools
import os
import shutil
import statistics
import sys
import time

import numpy as np
import pyarrow as pa

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
os.environ.setdefault("LANCE_LOG", "error")
DATA = os.path.join(HERE, "data", "vector")
SHAPES = {"1Mx128": (1_000_000, 128), "4Mx32": (4_000_000, 32)}
#: The IVF figures' data: 1M x 128 around 2,048 random centres (unit normal centres, noise of
#: standard deviation 0.35 per coordinate), so partitions and recall mean something (on plain
#: normal vectors every index has recall@10 ~0.1).
CLUSTERED = ("1Mx128c", 1_000_000, 128)


def make(name: str, n: int, dim: int, clusters: int = 0) -> str:
    import lance

    path = os.path.join(DATA, name)
    if os.path.exists(path):
        return path
    rng = np.random.default_rng(42)
    centres = rng.standard_normal((clusters, dim)).astype(np.float32) if clusters else None

    def batches():
        for s in range(0, n, 250_000):
            m = min(250_000, n - s)
            v = rng.standard_normal((m, dim)).astype(np.float32)
            if centres is not None:
                v = centres[rng.integers(0, clusters, m)] + np.float32(0.35) * v
            yield pa.record_batch({"id": np.arange(s, s + m),
                                   "vec": pa.FixedSizeListArray.from_arrays(pa.array(v.reshape(-1)), dim)})

    schema = pa.schema([("id", pa.int64()), ("vec", pa.list_(pa.float32(), dim))])
    lance.write_dataset(pa.RecordBatchReader.from_batches(schema, batches()), path)
    return path


def timed(fn) -> float:
    t = time.perf_counter()
    fn()
    return (time.perf_counter() - t) * 1e3


def bandwidth_ms(n: int, dim: int) -> float:
    a = np.random.default_rng(0).standard_normal((n, dim)).astype(np.float32)
    a.sum()
    best = min(timed(a.sum) for _ in range(3))
    del a
    return best


def flat(repeat: int, rows: list) -> None:
    import lance
    from pagecache import warm

    import lancejit
    from lancejit.io.sync import run_sync
    from lancejit.table.indices.vector import cache
    from lancejit.table.vector.scanner import nearest_table

    for name, (n, dim) in SHAPES.items():
        path = make(name, n, dim)
        warm(path)
        ref, ours = lance.dataset(path), lancejit.dataset(path)
        bw = bandwidth_ms(n, dim)
        q = np.random.default_rng(1).standard_normal(dim).astype(np.float32)
        for k in (10, 100):
            for flt in (None, "id % 2 = 0"):
                nn = {"column": "vec", "q": q, "k": k}
                kw = dict(columns=["id"], filter=flt, prefilter=flt is not None)

                def search(ours=ours, nn=nn, kw=kw):
                    return run_sync(nearest_table(ours, nn, **kw))

                first = None
                a, c, b = [], [], []
                for _ in range(repeat + 1):
                    b.append(timed(functools.partial(ref.to_table, nearest=nn, **kw)))
                    cache.clear()
                    t = timed(search)  # decoded from the files (the cache was just emptied)
                    if first is None:
                        first = t
                    else:
                        c.append(t)
                    a.append(timed(search))  # from the cache
                b = b[1:]
                got = search()["id"].to_pylist()
                want = ref.to_table(nearest=nn, **kw)["id"].to_pylist()
                ma, mc, mb = statistics.median(a[1:]), statistics.median(c), statistics.median(b)
                label = f"flat {name} k={k}" + (" prefilter" if flt else "")
                rows.append((label, first, mc / mb, ma, mb, ma / mb,
                             f"cache-cold {mc:.0f} ms; bandwidth floor {bw:.0f} ms; ids equal {got == want}"))
                print(rows[-1], flush=True)


def recall(got: list, exact: list) -> float:
    return len(set(got) & set(exact)) / len(exact)


def ivf(repeat: int, rows: list, build: bool) -> None:
    import lance

    import lancejit
    from lancejit.io.sync import run_sync
    from lancejit.table.vector.build import create_index_async
    from lancejit.table.vector.scanner import nearest_table

    name, n, dim = CLUSTERED
    src = make(name, n, dim, clusters=2048)
    params = dict(num_partitions=256, num_sub_vectors=dim // 8)
    ref_path, our_path = os.path.join(DATA, "ivfpq_ref"), os.path.join(DATA, "ivfpq_ours")
    if build or not os.path.exists(ref_path):
        for p in (ref_path, our_path):
            shutil.rmtree(p, ignore_errors=True)
            shutil.copytree(src, p)
        tb = timed(lambda: lance.dataset(ref_path).create_index("vec", "IVF_PQ", **params))
        ta = timed(lambda: run_sync(create_index_async(lancejit.dataset(our_path), "vec", "IVF_PQ", **params,
                                                       seed=0)))
        rows.append((f"build IVF_PQ {name}", None, None, ta, tb, ta / tb, "256 partitions, 16 sub-vectors"))
        print(rows[-1], flush=True)
    rng = np.random.default_rng(2)
    base = lancejit.dataset(src)
    picked = base.take(rng.choice(n, 20, replace=False).tolist(), columns=["vec"]).column("vec")
    qs = np.stack(picked.to_numpy(zero_copy_only=False)).astype(np.float32)
    qs += np.float32(0.1) * rng.standard_normal(qs.shape).astype(np.float32)
    exact = [run_sync(nearest_table(base, {"column": "vec", "q": q, "k": 10, "use_index": False},
                                    columns=["id"]))["id"].to_pylist() for q in qs]
    ref, ours = lance.dataset(ref_path), lancejit.dataset(ref_path)
    for extra in ({}, {"refine_factor": 5}):
        a, b, ra, rb = [], [], [], []
        for q, ex in zip(qs, exact):
            nn = {"column": "vec", "q": q, "k": 10, "nprobes": 20, **extra}
            for _ in range(max(1, repeat // 2)):
                b.append(timed(functools.partial(ref.to_table, nearest=nn, columns=["id"])))
                a.append(timed(lambda nn=nn: run_sync(nearest_table(ours, nn, columns=["id"]))))
            ra.append(recall(run_sync(nearest_table(ours, nn, columns=["id"]))["id"].to_pylist(), ex))
            rb.append(recall(ref.to_table(nearest=nn, columns=["id"])["id"].to_pylist(), ex))
        ma, mb = statistics.median(a[1:]), statistics.median(b[1:])
        label = "IVF_PQ search nprobes=20" + (" refine=5" if extra else "")
        rows.append((label, a[0], None, ma, mb, ma / mb, f"recall@10 {np.mean(ra):.3f} vs {np.mean(rb):.3f}"))
        print(rows[-1], flush=True)
    if os.path.exists(our_path) and build:
        mine = lancejit.dataset(our_path)
        rr, rref = [], []
        for q, ex in zip(qs, exact):
            nn = {"column": "vec", "q": q, "k": 10, "nprobes": 20}
            rr.append(recall(run_sync(nearest_table(mine, nn, columns=["id"]))["id"].to_pylist(), ex))
            rref.append(recall(ref.to_table(nearest=nn, columns=["id"])["id"].to_pylist(), ex))
        rows.append(("index recall@10, lancejit's index vs the reference's", None, None, float(np.mean(rr)),
                     float(np.mean(rref)), float(np.mean(rr)) / max(1e-9, float(np.mean(rref))), "nprobes 20"))
        print(rows[-1], flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--only", nargs="*", default=["flat", "ivf", "build"])
    args = ap.parse_args()
    os.makedirs(DATA, exist_ok=True)
    rows: list = []
    if "flat" in args.only:
        flat(args.repeat, rows)
    if "ivf" in args.only or "build" in args.only:
        ivf(args.repeat, rows, "build" in args.only)
    print("\n| case | lancejit first in process | cache-cold ratio | lancejit | reference | ratio | note |\n"
          "|---|---|---|---|---|---|---|")
    for case, first, cold_ratio, a, b, r, note in rows:
        f = "" if first is None else f"{first:.1f} ms"
        cr = "" if cold_ratio is None else f"{cold_ratio:.2f}"
        unit = "" if case.startswith("index recall") else " ms"
        print(f"| {case} | {f} | {cr} | {a:.3g}{unit} | {b:.3g}{unit} | {r:.2f} | {note} |")


if __name__ == "__main__":
    main()
