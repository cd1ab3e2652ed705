"""The 2.0 :class:`~lancejit.encoding.protocol.FieldDecoder` and its factory.

In a 2.0 file every Lance field owns one column, in schema pre-order: structs (a column of
row-count-only pages, then their children), lists (an offsets column, then the item field),
every other field one column.  Packed structs (``packed: true`` / ``lance-encoding:packed``)
and blob fields (``lance-encoding:blob``) are a single column; their children own none.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import pyarrow as pa

from lancejit.core.errors import CorruptFileError, InvalidInputError, NotSupportedError
from lancejit.core.ranges import RangeReader
from lancejit.encoding.pages import ColumnInfo
from lancejit.encoding.v20.columns import BlobNode, ListNode, Node, PrimitiveNode, StructNode
from lancejit.encoding.v20.step_field import StepFieldDecoder
from lancejit.encoding.v20.steps import Steps


def is_packed_struct(field) -> bool:
    """True if a struct field is stored packed (one column), as the reference decides."""
    md = field.metadata
    legacy = md.get("packed")
    if legacy is not None:
        return bytes(legacy).lower() == b"true"
    return "lance-encoding:packed" in md


def _is_blob(field) -> bool:
    return bool(getattr(field, "is_blob", False))


def column_count(field) -> int:
    """Columns a Lance field (with its descendants) occupies in a 2.0 file."""
    if field.is_struct and not is_packed_struct(field):
        return 1 + sum(column_count(c) for c in field.children)
    if field.is_list:
        return 1 + sum(column_count(c) for c in field.children)
    return 1


def build_node(field, arrow_type: pa.DataType, columns: Sequence[ColumnInfo], first: int, path: str,
               cache=None) -> Node:
    """The reader of ``field`` whose first column is ``columns[first]``."""
    if first >= len(columns):
        raise CorruptFileError(f"field {field.name!r} needs column {first} but the file has {len(columns)}", path=path)
    col = columns[first]
    storage = arrow_type.storage_type if isinstance(arrow_type, pa.ExtensionType) else arrow_type
    if field.is_struct and not is_packed_struct(field):
        children = []
        nxt = first + 1
        for i, child in enumerate(field.children):
            children.append(build_node(child, storage.field(i).type, columns, nxt, path, cache))
            nxt += column_count(child)
        return StructNode(col, arrow_type, children, path)
    if field.is_list:
        if pa.types.is_map(storage):
            raise NotSupportedError("map fields in 2.0 files")
        child = build_node(field.children[0], storage.value_type, columns, first + 1, path, cache)
        return ListNode(col, arrow_type, child, path)
    if _is_blob(field) and (pa.types.is_large_binary(storage) or pa.types.is_binary(storage)):
        enc = col.encoding
        if enc is None or enc.WhichOneof("column_encoding") == "blob" or _has_packed_pages(col):
            return BlobNode(col, arrow_type, path)
    return PrimitiveNode(col, arrow_type, path, cache)


def _has_packed_pages(col: ColumnInfo) -> bool:
    return bool(col.pages) and col.pages[0].encoding.WhichOneof("array_encoding") == "packed_struct"


class V20FieldDecoder(StepFieldDecoder):
    """Decodes one top-level field of a 2.0 file (see :class:`FieldDecoder`)."""

    def __init__(self, reader: RangeReader, field: pa.Field, node: Node, num_rows: int) -> None:
        self._reader = reader
        self._field = field
        self._node = node
        self._num_rows = num_rows

    def estimated_bytes_per_row(self) -> float:
        return self._node.nbytes / max(self._num_rows, 1)

    def _read_rows(self, ranges: np.ndarray) -> Steps:
        return self._node.read(ranges)


def _top_level_arrow(metadata) -> pa.Schema:
    arrow = getattr(metadata, "arrow_schema", None)
    if arrow is None:
        arrow = metadata.schema.to_arrow()
    return arrow


def make_field_decoders(reader: RangeReader, metadata, field_names: Sequence[str] | None) -> list[V20FieldDecoder]:
    """One decoder per requested top-level field (all fields when ``field_names`` is None)."""
    schema = metadata.schema
    arrow = _top_level_arrow(metadata)
    columns = tuple(metadata.columns)
    path = getattr(metadata, "path", None) or reader.path
    firsts: dict[str, tuple[int, object]] = {}
    nxt = 0
    for f in schema.fields:
        firsts.setdefault(f.name, (nxt, f))
        nxt += column_count(f)
    if nxt != len(columns):
        raise CorruptFileError(f"schema needs {nxt} columns but the file has {len(columns)}", path=path)
    names = list(field_names) if field_names is not None else [f.name for f in schema.fields]
    out = []
    for name in names:
        if name not in firsts:
            raise InvalidInputError(f"no field {name!r} in {path}")
        first, lf = firsts[name]
        af = arrow.field(name)
        node = build_node(lf, af.type, columns, first, path, getattr(metadata, "cache", None))
        num_rows = int(getattr(metadata, "num_rows", node.num_rows))
        if node.num_rows != num_rows:
            raise CorruptFileError(f"field {name!r} has {node.num_rows} rows, the file {num_rows}", path=path)
        out.append(V20FieldDecoder(reader, af, node, num_rows))
    return out
