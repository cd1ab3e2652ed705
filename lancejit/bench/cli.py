"""The ``bench`` and ``explain`` subcommands of the ``lancejit`` command line.

* ``lancejit bench store URI [--sizes 4K,64K,8M] [--concurrency 1,4,16,64] [--requests N]
  [--large-requests N] [--object-size 32M] [--json PATH] [--plot PNG] [--no-progress] [-o K=V]``
* ``lancejit bench dataset URI [--sizes 1,10,100,1000,10000] [--columns a,b] [--repeats N]
  [--scan-repeats N] [--no-scan] [--compare] [--model STORE.json | --no-model] [--json PATH]
  [--plot PNG] [--no-progress] [-o K=V]``
* ``lancejit explain scan URI --filter F [--columns a,b] [--run]``: pages page statistics skip;
* ``lancejit explain take URI (--rows 1,5,10-20 | --random N) [--columns a,b] [--run]
  [--model STORE.json] [--json PATH] [-o K=V]``

``--json -`` writes the JSON report to stdout (the table then goes to stderr).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any, Callable

import numpy as np

from lancejit.core.errors import InvalidInputError


def _options(args: argparse.Namespace) -> dict[str, str] | None:
    from lancejit.io.registry import parse_storage_options

    return parse_storage_options(args.storage_option)


def _check_extras(args: argparse.Namespace) -> None:
    """Fail before measuring when ``--plot`` / the progress bar need a missing ``bench`` extra."""
    from lancejit.bench.report import require

    if getattr(args, "plot", None):
        require("matplotlib")
    if not getattr(args, "no_progress", True):
        require("tqdm")


def _emit(text: str, args: argparse.Namespace) -> None:
    print(text, file=sys.stderr if args.json == "-" else sys.stdout)


def cmd_bench_store(args: argparse.Namespace) -> int:
    from lancejit.bench.report import parse_list, parse_size, write_json
    from lancejit.bench.store_bench import bench_store

    _check_extras(args)
    kwargs: dict[str, Any] = {
        "sizes": parse_list(args.sizes, parse_size),
        "concurrency": parse_list(args.concurrency, int),
        "requests": args.requests,
        "large_requests": args.large_requests,
        "object_size": parse_size(args.object_size),
        "seed": args.seed,
    }
    result = bench_store(args.uri, _options(args), show_progress=not args.no_progress, **kwargs)
    _emit(result.table(), args)
    if args.json:
        write_json(result.to_dict(), args.json)
    if args.plot:
        result.plot(args.plot)
    return 0


def _model(args: argparse.Namespace, uri: str, options: dict[str, str] | None) -> Any:
    from lancejit.bench.model import LatencyModel, calibrate_async
    from lancejit.io.sync import run_sync

    if getattr(args, "no_model", False):
        return None
    if args.model:
        return LatencyModel.load(args.model)
    if getattr(args, "calibration_requests", 0) <= 0:
        return None
    return run_sync(calibrate_async(uri, options, requests=args.calibration_requests))


def cmd_bench_dataset(args: argparse.Namespace) -> int:
    from lancejit.bench.dataset_bench import bench_dataset, total_operations
    from lancejit.bench.report import parse_list, progress, write_json

    _check_extras(args)
    options = _options(args)
    sizes = parse_list(args.sizes, int)
    columns = parse_list(args.columns, str) if args.columns else None
    model = _model(args, args.uri, options)
    total = total_operations(len(sizes), args.repeats, args.scan_repeats, not args.no_scan,
                             3 if args.compare else 1)
    with progress(total, "bench dataset", not args.no_progress, unit="op") as bar:
        result = bench_dataset(
            args.uri, options, sizes=sizes, columns=columns, repeats=args.repeats,
            scan_repeats=args.scan_repeats, scan=not args.no_scan, compare=args.compare, model=model,
            parquet_row_group_size=args.parquet_row_group_size, seed=args.seed, on_progress=bar.update,
        )
    _emit(result.table(), args)
    if model is not None:
        _emit(model.describe(), args)
    if args.json:
        write_json(result.to_dict(), args.json)
    if args.plot:
        result.plot(args.plot)
    return 0


def parse_rows(text: str) -> np.ndarray:
    """Row offsets from ``"1,5,10-20"`` (``a-b`` is the half-open range ``[a, b)``)."""
    out: list[int] = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        try:
            if "-" in part:
                a, b = part.split("-", 1)
                out.extend(range(int(a), int(b)))
            else:
                out.append(int(part))
        except ValueError:
            raise InvalidInputError(f"--rows: bad item {part!r} (use e.g. 1,5,10-20)") from None
    if not out:
        raise InvalidInputError("--rows: no rows given")
    return np.asarray(out, dtype=np.int64)


def cmd_explain_take(args: argparse.Namespace) -> int:
    from lancejit.bench.explain import open_target, plan_take, run_take
    from lancejit.bench.report import parse_list, write_json
    from lancejit.io.sync import run_sync

    options = _options(args)
    columns = parse_list(args.columns, str) if args.columns else None
    if (args.rows is None) == (args.random is None):
        raise InvalidInputError("give exactly one of --rows and --random")
    model = _model(args, args.uri, options) if args.model else None

    async def go():
        target = await open_target(args.uri, options)
        if args.rows is not None:
            rows = parse_rows(args.rows)
        else:
            total = await target.num_rows_async()
            rng = np.random.default_rng(args.seed)
            rows = np.sort(rng.choice(total, min(args.random, total), replace=False))
        plan = await plan_take(target, rows, columns, model)
        if args.run:
            await run_take(target, plan, rows, columns)
        return plan

    plan = run_sync(go())
    _emit(plan.render(), args)
    if args.json:
        write_json(plan.to_dict(), args.json)
    return 0 if plan.measured is None or plan.measured["requests"] == plan.num_requests else 3


def cmd_explain_scan(args: argparse.Namespace) -> int:
    from lancejit.bench.explain_scan import plan_scan
    from lancejit.bench.report import parse_list, write_json
    from lancejit.io.sync import run_sync
    from lancejit.table.dataset import Dataset

    options = _options(args)
    columns = parse_list(args.columns, str) if args.columns else None

    async def go():
        ds = await Dataset.open_async(args.uri, None, options)
        return await plan_scan(ds, args.filter, columns, run=args.run)

    plan = run_sync(go())
    _emit(plan.render(), args)
    if args.json:
        write_json(plan.to_dict(), args.json)
    return 0


def add_bench_commands(sub: Any, add_storage_option: Callable[[argparse.ArgumentParser], None]) -> None:
    """Register ``bench store``, ``bench dataset`` and ``explain take`` on ``sub``."""
    bench = sub.add_parser("bench", help="benchmark a store or a dataset")
    bsub = bench.add_subparsers(dest="bench_command", required=True)

    p = bsub.add_parser("store", help="latency percentiles, IOPS and throughput of a store")
    p.add_argument("uri", help="directory or prefix to write the test object under")
    p.add_argument("--sizes", default="4K,64K,8M", help="request sizes (default 4K,64K,8M)")
    p.add_argument("--concurrency", default="1,4,16,64", help="concurrency levels (default 1,4,16,64)")
    p.add_argument("--requests", type=int, default=256, help="requests per point below 1 MiB (default 256)")
    p.add_argument("--large-requests", type=int, default=16, help="requests per point of >= 1 MiB (default 16)")
    p.add_argument("--object-size", default="32M", help="test object size (default 32M)")
    p.add_argument("--seed", type=int, default=0)
    _add_outputs(p)
    add_storage_option(p)
    p.set_defaults(func=cmd_bench_store)

    p = bsub.add_parser("dataset", help="random takes and scans of a dataset (optionally vs reference/Parquet)")
    p.add_argument("uri", help="dataset URI")
    p.add_argument("--sizes", default="1,10,100,1000,10000", help="rows per take (default 1,10,100,1000,10000)")
    p.add_argument("--columns", help="comma-separated columns (default all)")
    p.add_argument("--repeats", type=int, default=5, help="takes per size (default 5)")
    p.add_argument("--scan-repeats", type=int, default=1, help="full scans (default 1)")
    p.add_argument("--no-scan", action="store_true", help="skip the full scans")
    p.add_argument("--compare", action="store_true", help="also run the reference (if installed) and Parquet")
    p.add_argument("--parquet-row-group-size", type=int, default=None, help="rows per Parquet row group")
    _add_model(p)
    p.add_argument("--seed", type=int, default=0)
    _add_outputs(p)
    add_storage_option(p)
    p.set_defaults(func=cmd_bench_dataset)

    explain = sub.add_parser("explain", help="show the read plan of an operation")
    esub = explain.add_subparsers(dest="explain_command", required=True)
    p = esub.add_parser("take", help="plan (and with --run, measure) a take of rows")
    p.add_argument("uri", help="Lance file or dataset URI")
    p.add_argument("--rows", help="row offsets, e.g. 1,5,10-20 (a-b: rows a..b-1)")
    p.add_argument("--random", type=int, help="take N random distinct rows instead of --rows")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--columns", help="comma-separated columns (default all)")
    p.add_argument("--run", action="store_true", help="run the take and compare measured with planned "
                   "(exit status 3 when the request counts differ)")
    p.add_argument("--model", metavar="JSON", help="latency model: a 'bench store --json' report")
    p.add_argument("--json", metavar="PATH", help="write the plan as JSON ('-': stdout)")
    add_storage_option(p)
    p.set_defaults(func=cmd_explain_take)
    p = esub.add_parser("scan", help="pages a filtered scan skips from statistics (with --run, measured)")
    p.add_argument("uri", help="dataset URI")
    p.add_argument("--filter", required=True, help="SQL filter, e.g. \"id > 100 AND name = 'x'\"")
    p.add_argument("--columns", help="comma-separated columns (default all)")
    p.add_argument("--run", action="store_true", help="run the scan with and without pruning; report io_stats")
    p.add_argument("--json", metavar="PATH", help="write the plan as JSON ('-': stdout)")
    add_storage_option(p)
    p.set_defaults(func=cmd_explain_scan)


def _add_outputs(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", metavar="PATH", help="write the JSON report ('-': stdout)")
    p.add_argument("--plot", metavar="PNG", help="write plots as PNG")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")


def _add_model(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", metavar="JSON", help="latency model from a 'bench store --json' report "
                   "(default: a quick calibration on the dataset's store)")
    p.add_argument("--no-model", action="store_true", help="no latency predictions")
    p.add_argument("--calibration-requests", type=int, default=32,
                   help="requests per point of the quick calibration (default 32)")


__all__ = ["add_bench_commands", "cmd_bench_dataset", "cmd_bench_store", "cmd_explain_scan", "cmd_explain_take",
           "parse_rows"]
