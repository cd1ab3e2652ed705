"""The ``lancejit`` command line.

``lancejit inspect URI [--json] [--storage-option KEY=VALUE ...] [--all-pages]`` prints a Lance
file's version, rows, schema and, per column, its pages with rows, bytes and layout/compression
names.  Exit status: 0 on success, 1 when lancejit raises an error (message on stderr), 2 on
bad usage.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Sequence

from lancejit.core.errors import InvalidInputError, LanceJitError

#: Pages listed per column in text output unless ``--all-pages``.
TEXT_PAGES_PER_COLUMN = 8


def _parse_storage_options(items: Sequence[str] | None) -> dict[str, str] | None:
    if not items:
        return None
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise InvalidInputError(f"--storage-option expects KEY=VALUE, got {item!r}")
        out[key.strip()] = value
    return out


def _human_bytes(n: int) -> str:
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if value < 1024 or unit == "TiB":
            return f"{int(value)} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{n} B"  # pragma: no cover


def format_summary(summary, *, all_pages: bool = False) -> str:
    """Text rendering of a :class:`lancejit.file.summary.FileSummary`."""
    lines = [
        f"path: {summary.path}",
        f"version: {summary.version} (footer {summary.major_version}.{summary.minor_version})",
        f"file size: {summary.file_size} bytes ({_human_bytes(summary.file_size)})",
        f"rows: {summary.num_rows}",
        f"columns: {summary.num_columns}",
        f"pages: {summary.num_pages}",
        f"global buffers: {summary.num_global_buffers}",
        f"data bytes: {summary.num_data_bytes}, column metadata bytes: "
        f"{summary.num_column_metadata_bytes}, global buffer bytes: {summary.num_global_buffer_bytes}",
        "schema:",
    ]
    lines.extend("  " + line for line in summary.schema.to_string(show_schema_metadata=False).splitlines())
    if summary.schema.metadata:
        lines.append("schema metadata:")
        for k, v in summary.schema.metadata.items():
            lines.append(f"  {k.decode('utf-8', 'replace')}: {v.decode('utf-8', 'replace')[:200]}")
    if summary.columns:
        lines.append("columns:")
    for col in summary.columns:
        plural = "page" if col.num_pages == 1 else "pages"
        extra = f", {len(col.column_buffers)} column buffers" if col.column_buffers else ""
        if col.encoding not in ("values", "none"):
            extra = f", column encoding {col.encoding}{extra}"
        lines.append(
            f"  column {col.index}{f' ({col.name})' if col.name else ''}: {col.num_pages} {plural}, {col.num_bytes} bytes"
            f" ({_human_bytes(col.num_bytes)}){extra}"
        )
        shown = col.pages if all_pages else col.pages[:TEXT_PAGES_PER_COLUMN]
        for i, page in enumerate(shown):
            lines.append(
                f"    page {i}: rows {page.num_rows} (first row {page.priority}), "
                f"{page.num_bytes} bytes in {len(page.buffers)} buffers, {page.encoding}"
            )
        if len(shown) < len(col.pages):
            lines.append(f"    ... {len(col.pages) - len(shown)} more pages (--all-pages to list them)")
    return "\n".join(lines)


def cmd_inspect(args: argparse.Namespace) -> int:
    from lancejit.file.reader import LanceFileReader

    reader = LanceFileReader(args.uri, _parse_storage_options(args.storage_option))
    summary = reader.metadata()
    if args.json:
        json.dump(summary.to_dict(), sys.stdout, indent=2 if args.pretty else None)
        sys.stdout.write("\n")
    else:
        print(format_summary(summary, all_pages=args.all_pages))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="lancejit", description="Lance files and datasets with lancejit.")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("inspect", help="describe a Lance file: version, rows, schema, pages")
    p.add_argument("uri", help="path or URI (file://, memory://, s3://bucket/key, gs://bucket/key)")
    p.add_argument("--json", action="store_true", help="print JSON for machines")
    p.add_argument("--pretty", action="store_true", help="indent the JSON output")
    p.add_argument("--all-pages", action="store_true", help="list every page in text output")
    p.add_argument(
        "--storage-option",
        "-o",
        action="append",
        metavar="KEY=VALUE",
        help="store option (repeatable), e.g. aws_endpoint=http://127.0.0.1:9000",
    )
    p.set_defaults(func=cmd_inspect)
    return parser


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
