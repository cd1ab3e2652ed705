"""The ``lancejit`` command line.

``lancejit inspect URI [--json] [--storage-option KEY=VALUE ...] [--all] [--all-pages]`` prints a
Lance file's version, rows, schema and, per column, its pages with rows, bytes and
layout/compression names.  When ``URI`` is a dataset (a directory or prefix;
``--dataset-version N|TAG`` selects a version) it prints the dataset's versions, tags, schema and
fragments instead.  Text output summarizes long lists: a dataset of more than ``2 * TEXT_EDGE``
fragments gets rows and bytes per fragment, a histogram of fragments by live rows and its first
and last fragments; versions, tags, fields, columns and pages are cut likewise; ``--all`` lists
everything (``--json`` always does).  Exit status: 0 on success, 1 when lancejit raises an
error (message on stderr), 2 on bad usage.

``lancejit warmup`` byte-compiles lancejit and compiles every Numba kernel into the on-disk
cache (run it once after installing, see :mod:`lancejit.warm`).

``lancejit bench store URI``, ``lancejit bench dataset URI`` and ``lancejit explain take URI
--rows ...`` measure stores and datasets and show read plans (see :mod:`lancejit.bench.cli`).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Sequence

from lancejit.bench.report import human_bytes
from lancejit.core.errors import InvalidInputError, LanceJitError
from lancejit.io.registry import parse_storage_options

#: Pages listed per column in text output unless ``--all-pages`` / ``--all``.
TEXT_PAGES_PER_COLUMN = 8
#: Items (fragments, versions, tags, columns) listed at each end of a long list in text output
#: unless ``--all``.
TEXT_EDGE = 5
#: Schema fields listed in text output unless ``--all``.
TEXT_FIELDS = 50


def _edges(items: list, everything: bool, edge: int = TEXT_EDGE) -> tuple[list, int, list]:
    """``(head, omitted, tail)`` of ``items``: all of them when ``everything`` or few."""
    if everything or len(items) <= 2 * edge:
        return list(items), 0, []
    return list(items[:edge]), len(items) - 2 * edge, list(items[-edge:])


def _listed(lines: list[str], head: list[str], omitted: int, tail: list[str], what: str, indent: str) -> None:
    lines.extend(head)
    if omitted:
        lines.append(f"{indent}... {omitted} more {what} (--all lists them)")
    lines.extend(tail)


def format_summary(summary, *, all_pages: bool = False, everything: bool = False) -> str:
    """Text rendering of a :class:`lancejit.file.summary.FileSummary` (``everything``: every
    column, field and page; ``all_pages``: every page)."""
    all_pages = all_pages or everything
    lines = [
        f"path: {summary.path}",
        f"version: {summary.version} (footer {summary.major_version}.{summary.minor_version})",
        f"file size: {summary.file_size} bytes ({human_bytes(summary.file_size)})",
        f"rows: {summary.num_rows}",
        f"columns: {summary.num_columns}",
        f"pages: {summary.num_pages}",
        f"global buffers: {summary.num_global_buffers}",
        f"data bytes: {summary.num_data_bytes}, column metadata bytes: "
        f"{summary.num_column_metadata_bytes}, global buffer bytes: {summary.num_global_buffer_bytes}",
        "schema:",
    ]
    fields = [f"  {line}" for line in summary.schema.to_string(show_schema_metadata=False).splitlines()]
    shown = fields if everything else fields[:TEXT_FIELDS]
    _listed(lines, shown, len(fields) - len(shown), [], "schema lines", "  ")
    if summary.schema.metadata:
        lines.append("schema metadata:")
        for k, v in summary.schema.metadata.items():
            lines.append(f"  {k.decode('utf-8', 'replace')}: {v.decode('utf-8', 'replace')[:200]}")
    if summary.columns:
        lines.append("columns:")
    head, omitted, tail = _edges(summary.columns, everything, 2 * TEXT_EDGE)
    for col in head:
        lines.extend(_column_lines(col, all_pages))
    if omitted:
        lines.append(f"  ... {omitted} more columns (--all lists them)")
    for col in tail:
        lines.extend(_column_lines(col, all_pages))
    return "\n".join(lines)


def _column_lines(col, all_pages: bool) -> list[str]:
    plural = "page" if col.num_pages == 1 else "pages"
    extra = f", {len(col.column_buffers)} column buffers" if col.column_buffers else ""
    if col.encoding not in ("values", "none"):
        extra = f", column encoding {col.encoding}{extra}"
    lines = [
        f"  column {col.index}{f' ({col.name})' if col.name else ''}: {col.num_pages} {plural}, {col.num_bytes} bytes"
        f" ({human_bytes(col.num_bytes)}){extra}"
    ]
    shown = col.pages if all_pages else col.pages[:TEXT_PAGES_PER_COLUMN]
    for i, page in enumerate(shown):
        lines.append(
            f"    page {i}: rows {page.num_rows} (first row {page.priority}), "
            f"{page.num_bytes} bytes in {len(page.buffers)} buffers, {page.encoding}"
        )
    if len(shown) < len(col.pages):
        lines.append(f"    ... {len(col.pages) - len(shown)} more pages (--all-pages to list them)")
    return lines


def _fragment_line(frag: dict) -> str:
    files = ", ".join(f"{f['path']} ({f['file_version']})" for f in frag.get("files", []))
    deleted = f", {frag['deleted_rows']} deleted" if frag.get("deleted_rows") else ""
    return f"  fragment {frag['id']}: {frag['physical_rows']} rows{deleted}: {files}"


def _spread_line(what: str, spread: dict | None, fmt) -> str:
    if spread is None:
        return f"{what}: unknown"
    return (f"{what}: min {fmt(spread['min'])}, median {fmt(spread['median'])}, "
            f"mean {fmt(spread['mean'])}, max {fmt(spread['max'])}")


def _fragment_summary(stats: dict) -> list[str]:
    """Rows and bytes per fragment and the histogram of fragments by live rows."""
    lines = [_spread_line("live rows per fragment", stats["rows"], lambda v: f"{v:,.0f}")]
    if stats["rows_unknown"]:
        lines[-1] += f" ({stats['rows_unknown']} fragments do not record their rows)"
    lines.append(_spread_line("bytes per fragment", stats["bytes"], human_bytes))
    hist = stats["histogram"]
    if hist:
        lines.append("fragments by live rows:")
        widest = max(h["fragments"] for h in hist)
        spans = [f"[{h['rows_from']:,}, {h['rows_to']:,})" for h in hist]
        width = max(len(x) for x in spans)
        for span, h in zip(spans, hist):
            bar = "#" * max(1, round(30 * h["fragments"] / widest))
            lines.append(f"  {span:>{width}} {h['fragments']:>7,} {'fragment ' if h['fragments'] == 1 else 'fragments'} {human_bytes(h['bytes']):>10}  {bar}")
    return lines


def format_dataset(info: dict, *, everything: bool = False) -> str:
    """Text rendering of a dataset description (``lancejit.table.describe``): many fragments,
    versions, tags or fields are summarized (statistics, the first and last few) unless
    ``everything``."""
    summary = info.get("summary", {})
    stats = info.get("fragment_stats") or {}
    count = stats.get("count", 0)
    ids = f" (ids {stats['first_id']} to {stats['last_id']})" if count > 1 else ""
    size = int(summary.get("total_files_size") or 0)
    lines = [
        f"dataset: {info.get('uri')}",
        f"version: {info.get('version')} (latest {info.get('latest_version')})",
        f"data storage version: {info.get('data_storage_version')}",
        f"writer: {info.get('writer')}",
        f"rows: {summary.get('total_rows')} ({summary.get('total_deletion_file_rows')} deleted)",
        f"fragments: {summary.get('total_fragments')}{ids}, data files: {summary.get('total_data_files')}, "
        f"deletion files: {summary.get('total_deletion_files')}, bytes: {size} ({human_bytes(size)})",
        "schema:",
    ]
    fields = [f"  {field}" for field in info.get("schema", [])]
    shown = fields if everything else fields[:TEXT_FIELDS]
    _listed(lines, shown, len(fields) - len(shown), [], "fields", "  ")
    versions = [str(v["version"]) for v in info.get("versions", [])]
    if versions:
        head, omitted, tail = _edges(versions, everything)
        middle = [f"... {omitted} more ..."] if omitted else []
        lines.append(f"versions ({len(versions)}): {', '.join(head + middle + tail)}")
    tags = [f"{t['name']}={t['version']}" for t in info.get("tags", [])]
    if tags:
        head, omitted, tail = _edges(tags, everything)
        middle = [f"... {omitted} more ..."] if omitted else []
        lines.append(f"tags ({len(tags)}): {', '.join(head + middle + tail)}")
    frags = info.get("fragments", [])
    head, omitted, tail = _edges(frags, everything)
    if omitted:
        lines.extend(_fragment_summary(stats))
        lines.append(f"fragments (the first and last {TEXT_EDGE} of {count}):")
    _listed(lines, [_fragment_line(f) for f in head], omitted, [_fragment_line(f) for f in tail],
            "fragments", "  ")
    return "\n".join(lines)


def _describe_dataset(uri: str, version: str | None, options: dict[str, str] | None) -> dict | None:
    """The description of the dataset at ``uri``, or ``None`` when there is no dataset there."""
    from lancejit.core.errors import NotFoundError

    try:
        from lancejit.table import dataset
        from lancejit.table.describe import describe
    except ImportError:  # datasets not in this build
        return None
    parsed: int | str | None = version
    if version is not None and version.isdigit():
        parsed = int(version)
    try:
        return describe(dataset(uri, parsed, storage_options=options))
    except NotFoundError:
        if version is not None:
            raise
        return None


def cmd_inspect(args: argparse.Namespace) -> int:
    from lancejit.core.errors import NotFoundError
    from lancejit.file.reader import LanceFileReader

    options = parse_storage_options(args.storage_option)
    info = None
    if args.dataset_version is not None:
        info = _describe_dataset(args.uri, args.dataset_version, options)
    else:
        try:
            summary = LanceFileReader(args.uri, options).metadata()
        except (InvalidInputError, NotFoundError) as file_error:  # a directory/prefix: a dataset?
            info = _describe_dataset(args.uri, None, options)
            if info is None:
                raise file_error from None
    if info is not None:
        if args.json:
            json.dump(info, sys.stdout, indent=2 if args.pretty else None, default=str)
            sys.stdout.write("\n")
        else:
            print(format_dataset(info, everything=args.all))
        return 0
    if args.json:
        json.dump(summary.to_dict(), sys.stdout, indent=2 if args.pretty else None)
        sys.stdout.write("\n")
    else:
        print(format_summary(summary, all_pages=args.all_pages, everything=args.all))
    return 0


def cmd_warmup(args: argparse.Namespace) -> int:
    """``lancejit warmup``: see :mod:`lancejit.warm`."""
    from lancejit.warm import warmup

    def progress(line: str) -> None:
        if not args.quiet:
            print(line, flush=True)

    rep = warmup(byte_compile=not args.no_byte_compile, jobs=args.jobs, progress=progress)
    print(f"lancejit warmup: {rep.kernels} kernels, {rep.specializations} specializations ready, "
          f"{rep.compiled} compiled now, {rep.seconds:.1f} s")
    if rep.undeclared:
        print("declaring no specialization (compiled on first use): " + ", ".join(rep.undeclared))
    return 0


def cmd_config(args: argparse.Namespace) -> int:
    """Print every configuration knob with its environment variable, default and current value."""
    from lancejit.core import config

    print(config.knob_table(config.settings()))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="lancejit", description="Lance files and datasets with lancejit.")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser(
        "inspect", help="describe a Lance file (version, rows, schema, pages) or dataset (versions, fragments)"
    )
    p.add_argument("uri", help="path or URI (file://, memory://, s3://bucket/key, gs://bucket/key)")
    p.add_argument(
        "--dataset-version", metavar="N|TAG", help="inspect this version of a dataset (default: latest)"
    )
    p.add_argument("--json", action="store_true", help="print JSON for machines (always complete)")
    p.add_argument("--pretty", action="store_true", help="indent the JSON output")
    p.add_argument("--all", action="store_true",
                   help="list everything in text output: every fragment, version, tag, field, column and page "
                        "(default: long lists are summarized, with their first and last items)")
    p.add_argument("--all-pages", action="store_true", help="list every page of a file's columns in text output")
    p.add_argument(
        "--storage-option",
        "-o",
        action="append",
        metavar="KEY=VALUE",
        help="store option (repeatable), e.g. aws_endpoint=http://127.0.0.1:9000",
    )
    p.set_defaults(func=cmd_inspect)
    p = sub.add_parser("warmup", help="byte-compile lancejit and compile every kernel (run once after installing)")
    p.add_argument("--no-byte-compile", action="store_true", help="only compile the Numba kernels")
    p.add_argument("--jobs", "-j", type=int, default=None,
                   help="worker processes compiling kernels (default: one per core; 0: this process)")
    p.add_argument("--quiet", "-q", action="store_true", help="no line per kernel")
    p.set_defaults(func=cmd_warmup)
    p = sub.add_parser("config", help="print the configuration knobs, their environment variables and values")
    p.set_defaults(func=cmd_config)
    from lancejit.bench.cli import add_bench_commands

    add_bench_commands(sub, _add_storage_option)
    return parser


def _add_storage_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--storage-option",
        "-o",
        action="append",
        metavar="KEY=VALUE",
        help="store option (repeatable), e.g. aws_endpoint=http://127.0.0.1:9000",
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except LanceJitError as exc:
        print(f"lancejit: error: {exc}", file=sys.stderr)
        return 1
    except BrokenPipeError:  # e.g. piped into head
        return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
