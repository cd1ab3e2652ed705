"""A plain description of a file's metadata: what ``LanceFileReader.metadata()`` and
``lancejit inspect`` report (version, rows, schema, per-column pages with rows, bytes and
layout/compression names).

Byte positions are absolute offsets in the file; sizes are in bytes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

import pyarrow as pa

from lancejit.file.container import FileMetadata
from lancejit.file.describe import column_encoding_name, describe_page


class BufferDescriptor(NamedTuple):
    """Where a buffer lies in the file: ``position`` and ``size`` in bytes (the reference's
    ``LanceBufferDescriptor``; also a ``(position, size)`` tuple)."""

    position: int
    size: int


def _descriptors(pairs) -> tuple[BufferDescriptor, ...]:
    return tuple(BufferDescriptor(int(p), int(n)) for p, n in pairs)


@dataclass(frozen=True, slots=True)
class PageSummary:
    """One page: ``num_rows`` (items for 2.0 list children), ``priority`` (first row),
    ``buffers`` ``(position, size)``, ``num_bytes`` (sum of buffer sizes), ``layout`` (kind, e.g.
    ``mini_block``) and ``encoding`` (full name, e.g. ``mini_block(inline_bitpacking)``)."""

    num_rows: int
    priority: int
    buffers: tuple[tuple[int, int], ...]
    num_bytes: int
    layout: str
    encoding: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "num_rows": self.num_rows,
            "priority": self.priority,
            "num_bytes": self.num_bytes,
            "buffers": [list(b) for b in self.buffers],
            "layout": self.layout,
            "encoding": self.encoding,
        }


@dataclass(frozen=True, slots=True)
class ColumnSummary:
    """One physical column: its pages in row order and its column-level buffers."""

    index: int
    pages: tuple[PageSummary, ...]
    column_buffers: tuple[tuple[int, int], ...]
    encoding: str
    name: str = ""  # dotted path of the field owning the column ("" if unknown)

    @property
    def num_pages(self) -> int:
        return len(self.pages)

    @property
    def num_bytes(self) -> int:
        return sum(p.num_bytes for p in self.pages) + sum(s for _, s in self.column_buffers)

    def to_dict(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "name": self.name,
            "num_pages": self.num_pages,
            "num_bytes": self.num_bytes,
            "encoding": self.encoding,
            "column_buffers": [list(b) for b in self.column_buffers],
            "pages": [p.to_dict() for p in self.pages],
        }


@dataclass(frozen=True, slots=True)
class FileSummary:
    """The metadata of one Lance file, comparable with pylance's ``LanceFileReader.metadata()``
    (``num_rows``, ``major_version``/``minor_version``, ``global_buffers``, ``columns[i].pages``,
    ``num_*_bytes``)."""

    path: str
    version: str
    major_version: int
    minor_version: int
    num_rows: int
    file_size: int
    schema: pa.Schema
    global_buffers: tuple[tuple[int, int], ...]
    columns: tuple[ColumnSummary, ...]
    num_columns: int
    num_data_bytes: int
    num_column_metadata_bytes: int
    num_global_buffer_bytes: int

    @property
    def num_global_buffers(self) -> int:
        return len(self.global_buffers)

    @property
    def num_pages(self) -> int:
        return sum(c.num_pages for c in self.columns)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (schema as a list of ``{name, type, nullable, metadata}`` plus its text form)."""
        return {
            "path": self.path,
            "version": self.version,
            "major_version": self.major_version,
            "minor_version": self.minor_version,
            "file_size": self.file_size,
            "num_rows": self.num_rows,
            "num_columns": self.num_columns,
            "num_pages": self.num_pages,
            "num_global_buffers": self.num_global_buffers,
            "global_buffers": [list(b) for b in self.global_buffers],
            "num_data_bytes": self.num_data_bytes,
            "num_column_metadata_bytes": self.num_column_metadata_bytes,
            "num_global_buffer_bytes": self.num_global_buffer_bytes,
            "schema": schema_to_json(self.schema),
            "schema_text": self.schema.to_string(show_schema_metadata=False),
            "columns": [c.to_dict() for c in self.columns],
        }


def _metadata_to_json(md: dict | None) -> dict[str, str]:
    if not md:
        return {}
    return {k.decode("utf-8", "replace"): v.decode("utf-8", "replace") for k, v in md.items()}


def field_to_json(field: pa.Field) -> dict[str, Any]:
    """``{name, type, nullable, metadata[, children]}`` of an Arrow field."""
    out: dict[str, Any] = {
        "name": field.name,
        "type": str(field.type),
        "nullable": field.nullable,
    }
    md = _metadata_to_json(field.metadata)
    if md:
        out["metadata"] = md
    t = field.type
    children: list[pa.Field] = []
    if isinstance(t, pa.StructType):
        children = [t.field(i) for i in range(t.num_fields)]
    elif isinstance(t, (pa.ListType, pa.LargeListType, pa.FixedSizeListType)):
        children = [t.value_field]
    elif isinstance(t, pa.MapType):
        children = [t.key_field, t.item_field]
    if children:
        out["children"] = [field_to_json(c) for c in children]
    return out


def schema_to_json(schema: pa.Schema) -> dict[str, Any]:
    return {
        "fields": [field_to_json(f) for f in schema],
        "metadata": _metadata_to_json(schema.metadata),
    }


def _is_packed(lf: Any) -> bool:
    value = lf.metadata.get("lance-encoding:packed")
    return value is not None and bytes(value).lower() in (b"true", b"1", b"yes")


def column_names(meta: FileMetadata) -> list[str]:
    """Dotted path of the field owning each column ("" for all when they cannot be matched).

    2.0: every field in pre-order owns a column.  2.1/2.2: leaves own columns; packed structs,
    blobs and empty structs own one column as a unit.
    """
    names: list[str] = []

    def visit(lf: Any, prefix: str) -> None:
        path = f"{prefix}.{lf.name}" if prefix else lf.name
        if meta.version == "2.0":
            names.append(path)
            if not _is_packed(lf):  # a packed struct is one column
                for child in lf.children:
                    visit(child, path)
            return
        if not lf.children or _is_packed(lf) or lf.is_blob:
            names.append(path)
            return
        for child in lf.children:
            visit(child, path)

    try:
        for lf in meta.schema.fields:
            visit(lf, "")
    except AttributeError:
        return [""] * len(meta.columns)
    return names if len(names) == len(meta.columns) else [""] * len(meta.columns)


def summarize(meta: FileMetadata) -> FileSummary:
    """The :class:`FileSummary` of parsed file metadata."""
    columns = []
    names = column_names(meta) if meta.columns else []
    for col in meta.columns:
        pages = []
        for page in col.pages:
            layout, encoding = describe_page(meta.version, page.encoding, len(page.buffer_sizes))
            pages.append(
                PageSummary(
                    num_rows=page.num_rows,
                    priority=page.priority,
                    buffers=_descriptors(zip(page.buffer_offsets, page.buffer_sizes)),
                    num_bytes=sum(page.buffer_sizes),
                    layout=layout,
                    encoding=encoding,
                )
            )
        columns.append(
            ColumnSummary(
                index=col.index,
                pages=tuple(pages),
                column_buffers=_descriptors(zip(col.buffer_offsets, col.buffer_sizes)),
                encoding=column_encoding_name(col.encoding),
                name=names[col.index] if col.index < len(names) else "",
            )
        )
    legacy_columns = _legacy_columns(meta)
    if legacy_columns is not None:
        columns = legacy_columns
    return FileSummary(
        path=meta.path,
        version=meta.version,
        major_version=meta.major,
        minor_version=meta.minor,
        num_rows=meta.num_rows,
        file_size=meta.file_size,
        schema=meta.arrow_schema,
        global_buffers=_descriptors(meta.global_buffers),
        columns=tuple(columns),
        num_columns=len(columns) if columns else meta.num_columns,
        num_data_bytes=meta.num_data_bytes,
        num_column_metadata_bytes=meta.num_column_metadata_bytes,
        num_global_buffer_bytes=meta.num_global_buffer_bytes,
    )


_LEGACY_ENCODINGS = {0: "none", 1: "plain", 2: "var_binary", 3: "dictionary", 4: "rle"}


def _legacy_columns(meta: FileMetadata) -> list[ColumnSummary] | None:
    """Columns of a 0.1 file: one per non-struct field, one page per batch.

    Legacy page-table entries are ``(position, length)`` with ``length`` counted in values, not
    bytes; pages report ``num_rows`` = values and ``buffers`` = ``((position, length),)``.
    """
    legacy = meta.legacy
    page_table = getattr(legacy, "page_table", None)
    if legacy is None or page_table is None:
        return None
    min_id = int(getattr(legacy, "min_field_id", 0))
    batch_offsets = [int(x) for x in getattr(legacy, "batch_offsets", [0])]
    out: list[ColumnSummary] = []
    for lf in meta.schema.walk():
        if lf.logical_type == "struct" or lf.id < min_id or lf.id - min_id >= page_table.shape[0]:
            continue
        rows = page_table[lf.id - min_id]
        encoding = _LEGACY_ENCODINGS.get(int(lf.encoding), f"encoding{int(lf.encoding)}")
        pages = tuple(
            PageSummary(
                num_rows=int(length),
                priority=batch_offsets[b] if b < len(batch_offsets) else 0,
                buffers=((int(pos), int(length)),),
                num_bytes=0,
                layout="legacy",
                encoding=encoding,
            )
            for b, (pos, length) in enumerate(rows.tolist())
        )
        out.append(
            ColumnSummary(index=len(out), pages=pages, column_buffers=(), encoding="legacy",
                          name=meta.schema.path_of(lf.id) and ".".join(meta.schema.path_of(lf.id)))
        )
    return out


__all__ = ["BufferDescriptor", "ColumnSummary", "FileSummary", "PageSummary", "field_to_json", "schema_to_json", "summarize"]
