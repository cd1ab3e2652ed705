"""Python calls per 1-row take (cProfile ``ncalls`` totals), file layer and whole dataset take.

Run:  .venv/bin/python perf/take_calls.py [--takes 200] [--by-module]

On ``perf/data/one_1m`` (written by ``perf/service.py``: 1M rows, Lance 2.2, one fragment),
columns id,x,s, random single rows (warm: 20 untimed takes first).  Counts every Python and
built-in call made in the calling thread (sync calls on local files run there, see
``lancejit.io.sync``) and, for the sync cases, on lancejit's I/O loop thread too:

* ``LanceFileReader.take_rows`` (sync) and ``AsyncLanceFileReader.take_rows`` awaited on the
  caller's own loop: the file layer (take plan, one read, one decode kernel per column);
* ``Dataset.take`` (sync) and ``await Dataset.take_async``: the whole take, table layer included;
* on ``perf/data/frag_2000`` (2,000 fragments), a 100-row ``Dataset.take`` with every data file
  open, and its calls per touched fragment (the multi-file take's per-fragment control plane).
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import cProfile
import glob
import os
import pstats
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
COLUMNS = ["id", "x", "s"]


def _count(prof: cProfile.Profile, takes: int, by_module: collections.Counter | None) -> float:
    stats = pstats.Stats(prof).stats  # type: ignore[attr-defined]
    if by_module is not None:
        for (filename, _, _), value in stats.items():
            where = filename.split(os.sep + "lancejit" + os.sep)[-1] if "lancejit" in filename else "(other)"
            by_module[where] += value[1] / takes
    return sum(v[1] for v in stats.values()) / takes


def profile_sync(fn, idxs, warm: int = 20) -> tuple[cProfile.Profile, cProfile.Profile]:
    """Profiles of ``fn(i)`` for ``idxs[warm:]`` (after ``warm`` untimed calls): one of the
    caller's thread, one of lancejit's loop thread (sync calls may run on either)."""
    from lancejit.io.sync import run_sync

    for i in idxs[:warm]:
        fn(i)
    here, loop = cProfile.Profile(), cProfile.Profile()

    async def on() -> None:
        loop.enable()

    async def off() -> None:
        loop.disable()

    run_sync(on())
    here.enable()
    for i in idxs[warm:]:
        fn(i)
    here.disable()
    run_sync(off())
    return here, loop


def sync_calls(fn, idxs, by_module=None) -> float:
    here, loop = profile_sync(fn, idxs)
    n = len(idxs) - 20
    return _count(here, n, by_module) + _count(loop, n, None)


def async_calls(fn, idxs, by_module=None) -> float:
    prof = cProfile.Profile()

    async def go() -> None:
        for i in idxs[:20]:
            await fn(i)
        prof.enable()
        for i in idxs[20:]:
            await fn(i)
        prof.disable()

    asyncio.run(go())
    return _count(prof, len(idxs) - 20, by_module)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--takes", type=int, default=200)
    ap.add_argument("--by-module", action="store_true", help="also print calls per take by lancejit module")
    args = ap.parse_args()
    path = os.path.join(HERE, "data", "one_1m")
    if not os.path.exists(path):
        sys.exit("perf/data/one_1m is missing: run perf/service.py once first")

    import lancejit
    from lancejit.file.reader import AsyncLanceFileReader, LanceFileReader

    fpath = sorted(glob.glob(os.path.join(path, "data", "*.lance")))[0]
    rng = np.random.default_rng(1)
    idxs = [rng.integers(0, 1_000_000, 1) for _ in range(args.takes + 20)]
    ds = lancejit.dataset(path)
    fr = LanceFileReader(fpath)
    ar = asyncio.run(AsyncLanceFileReader.open(fpath))  # its scheduler is used on fresh loops below
    mods: collections.Counter = collections.Counter()
    rows = [
        ("file: LanceFileReader.take_rows (sync)", sync_calls(lambda i: fr.take_rows(i, columns=COLUMNS), idxs)),
        ("file: AsyncLanceFileReader.take_rows (own loop)",
         async_calls(lambda i: ar.take_rows(i, columns=COLUMNS), idxs)),
        ("dataset: Dataset.take (sync)", sync_calls(lambda i: ds.take(i, columns=COLUMNS), idxs,
                                                    mods if args.by_module else None)),
        ("dataset: Dataset.take_async (own loop)", async_calls(lambda i: ds.take_async(i, columns=COLUMNS), idxs)),
    ]
    many = os.path.join(HERE, "data", "frag_2000")
    if os.path.exists(many):  # the multi-file take: calls per touched fragment (every file open)
        dm = lancejit.dataset(many)
        dm.take(np.arange(0, 1_000_000, 500), columns=COLUMNS)
        big = [rng.integers(0, 1_000_000, 100) for _ in range(40)]
        touched = float(np.mean([len(np.unique(i // 500)) for i in big[20:]]))
        calls = sync_calls(lambda i: dm.take(i, columns=COLUMNS), big)
        rows.append((f"dataset frag_2000: Dataset.take of 100 rows (warm; per take / per touched fragment "
                     f"of {touched:.0f})", calls))
        rows.append(("  ... per touched fragment", calls / touched))
    print("| take, columns id,x,s (1 row unless said) | Python calls per take |")
    print("|---|---|")
    for name, calls in rows:
        print(f"| {name} | {calls:.1f} |" if calls < 20 else f"| {name} | {calls:.0f} |")
    if args.by_module:
        print("\nDataset.take (sync) by module:")
        for mod, calls in mods.most_common(25):
            print(f"{calls:8.1f}  {mod}")


if __name__ == "__main__":
    main()
