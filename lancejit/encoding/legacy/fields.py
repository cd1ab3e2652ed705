"""Field readers of legacy (0.1) files and their :class:`FieldDecoder`.

A 0.1 file is cut into batches ("row groups"); every field with data has one page per batch,
found in the page table by (field id, batch).  Structs have no pages (their children do);
lists have a PLAIN page of ``n + 1`` batch-relative i32 (large: i64) offsets, then their item
field's pages.  Nodes read half-open row ranges ``[start, end)`` *within one batch*.
Nulls come back as the reference returns them: primitives, structs and lists carry no
validity; strings/binaries of nullable fields read empty values as null.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import pyarrow as pa

from lancejit.core.errors import CorruptFileError, InvalidInputError, NotSupportedError
from lancejit.core.schema import LanceField
from lancejit.core.ranges import RangeReader
from lancejit.encoding import arrow_build as AB
from lancejit.encoding.legacy.values import (
    is_binary_like,
    is_fixed_stride,
    read_dictionary_values,
    read_offsets,
    read_plain,
    read_var_binary,
)
from lancejit.encoding.v20.rowranges import EMPTY, merge_touching, split_by_pages, total
from lancejit.encoding.v20.step_field import StepFieldDecoder
from lancejit.encoding.v20.steps import Steps, gather

#: Row ranges: ``(k, 2)`` int64 arrays of half-open ``[start, end)`` rows.
Ranges = np.ndarray

class LegacyNode:
    """Base: ``read(batch, ranges)`` -> step generator returning an Arrow array."""

    typ: pa.DataType

    def __init__(self, field, typ: pa.DataType, legacy, path: str) -> None:
        self.field = field
        self.typ = typ
        self.legacy = legacy
        self.path = path

    def page(self, batch: int) -> tuple[int, int]:
        return self.legacy.page(self.field.id, batch)

    def batch_rows(self, batch: int) -> int:
        """Values of this field in ``batch`` (the page length)."""
        return self.page(batch)[1]

    def read(self, batch: int, ranges: Ranges) -> Steps:  # pragma: no cover - interface
        raise NotImplementedError


class PlainNode(LegacyNode):
    def read(self, batch: int, ranges: Ranges) -> Steps:
        pos, length = self.page(batch)
        return (yield from read_plain(self.typ, pos, length, ranges, self.path))


class NullNode(LegacyNode):
    def read(self, batch: int, ranges: Ranges) -> Steps:
        _, length = self.page(batch)
        if len(ranges) and int(ranges[-1, 1]) > length:
            raise CorruptFileError(f"rows up to {int(ranges[-1, 1])} requested from a page of {length}", path=self.path)
        return pa.nulls(total(ranges))
        yield  # pragma: no cover


class BinaryNode(LegacyNode):
    def read(self, batch: int, ranges: Ranges) -> Steps:
        pos, length = self.page(batch)
        return (yield from read_var_binary(self.typ, self.field.nullable, pos, length, ranges, self.path))


class DictionaryNode(LegacyNode):
    def __init__(self, field, typ, legacy, path) -> None:
        super().__init__(field, typ, legacy, path)
        self._values: pa.Array | None = (legacy.dictionaries or {}).get(field.id)

    def read(self, batch: int, ranges: Ranges) -> Steps:
        pos, length = self.page(batch)
        if self._values is None:
            if self.field.dictionary is None:
                raise CorruptFileError(f"dictionary field {self.field.name!r} has no values", path=self.path)
            off, ln = self.field.dictionary
            self._values = yield from read_dictionary_values(self.typ.value_type, int(off), int(ln), self.path)
        keys = yield from read_plain(self.typ.index_type, pos, length, ranges, self.path)
        k = keys.to_numpy(zero_copy_only=False)
        if len(k) and (k.min() < 0 or k.max() >= len(self._values)):
            raise CorruptFileError("dictionary key out of range", path=self.path)
        return pa.DictionaryArray.from_arrays(keys, self._values)


class StructNode(LegacyNode):
    def __init__(self, field, typ, legacy, path, children) -> None:
        super().__init__(field, typ, legacy, path)
        self.children = children

    def batch_rows(self, batch: int) -> int:
        return self.children[0].batch_rows(batch) if self.children else 0

    def read(self, batch: int, ranges: Ranges) -> Steps:
        arrays = yield from gather([c.read(batch, ranges) for c in self.children])
        n = total(ranges)
        return AB.struct_array(self.typ, arrays, n)


class ListNode(LegacyNode):
    def __init__(self, field, typ, legacy, path, child) -> None:
        super().__init__(field, typ, legacy, path)
        self.child = child
        self.width = 8 if pa.types.is_large_list(typ) else 4

    def batch_rows(self, batch: int) -> int:
        return max(self.page(batch)[1] - 1, 0)

    def read(self, batch: int, ranges: Ranges) -> Steps:
        pos, length = self.page(batch)
        lens, firsts, lasts = yield from read_offsets(pos, length, self.width, ranges, self.path)
        limit = self.child.batch_rows(batch)
        if len(firsts) and (int(firsts.min()) < 0 or int(lasts.max()) > limit):
            raise CorruptFileError(f"list offsets outside the {limit} items of the batch", path=self.path)
        spans = merge_touching(np.stack([firsts, lasts], axis=1)) if len(firsts) else EMPTY
        items = yield from self.child.read(batch, spans)
        offsets = np.zeros(len(lens) + 1, dtype=np.int64)
        np.cumsum(lens, out=offsets[1:])
        if offsets[-1] != len(items):
            raise CorruptFileError("list offsets do not match the items read", path=self.path)
        return AB.list_array(self.typ, offsets, items)


def _walk_types(field, typ: pa.DataType):
    """(Lance field, Arrow type) of ``field`` and its descendants."""
    yield field, typ
    storage = typ.storage_type if isinstance(typ, pa.ExtensionType) else typ
    if pa.types.is_struct(storage):
        for i, c in enumerate(field.children):
            yield from _walk_types(c, storage.field(i).type)
    elif (pa.types.is_list(storage) or pa.types.is_large_list(storage)) and field.children:
        yield from _walk_types(field.children[0], storage.value_type)


def _value_width(typ: pa.DataType) -> float:
    storage = typ.storage_type if isinstance(typ, pa.ExtensionType) else typ
    if pa.types.is_struct(storage) or pa.types.is_null(storage):
        return 0.0
    if pa.types.is_list(storage):
        return 4.0
    if pa.types.is_large_list(storage):
        return 8.0
    if pa.types.is_dictionary(storage):
        return float(AB.byte_width(storage.index_type) or 4)
    if is_binary_like(storage):
        return 32.0
    leaf = storage
    mult = 1
    while pa.types.is_fixed_size_list(leaf):
        mult *= leaf.list_size
        leaf = leaf.value_type
    if isinstance(leaf, pa.ExtensionType):
        leaf = leaf.storage_type
    if pa.types.is_boolean(leaf):
        return mult / 8.0
    return float(mult * (AB.byte_width(leaf) or 8))


def build_node(field, typ: pa.DataType, legacy, path: str) -> LegacyNode:
    """The reader of one Lance field of a 0.1 file."""
    storage = typ.storage_type if isinstance(typ, pa.ExtensionType) else typ
    if pa.types.is_struct(storage):
        kids = [build_node(c, storage.field(i).type, legacy, path) for i, c in enumerate(field.children)]
        return StructNode(field, typ, legacy, path, kids)
    if pa.types.is_list(storage) or pa.types.is_large_list(storage):
        child = build_node(field.children[0], storage.value_type, legacy, path)
        return ListNode(field, typ, legacy, path, child)
    if pa.types.is_dictionary(storage):
        return DictionaryNode(field, typ, legacy, path)
    if pa.types.is_null(storage):
        return NullNode(field, typ, legacy, path)
    if is_binary_like(storage):
        return BinaryNode(field, typ, legacy, path)
    if is_fixed_stride(storage):
        return PlainNode(field, typ, legacy, path)
    raise NotSupportedError(f"legacy field {field.name!r} of type {typ}")


class LegacyFieldDecoder(StepFieldDecoder):
    """Decodes one top-level field of a 0.1 file (see :class:`FieldDecoder`)."""

    def __init__(self, reader: RangeReader, field: pa.Field, node: LegacyNode, legacy) -> None:
        self._reader = reader
        self._field = field
        self._node = node
        self._offsets_arr = np.asarray(legacy.batch_offsets, dtype=np.int64)
        self._num_rows = int(self._offsets_arr[-1])
        self._legacy = legacy

    def estimated_bytes_per_row(self) -> float:
        """Encoded bytes per row estimated from the page table's value counts and value widths
        (variable-width values counted as 8-byte positions plus 24 bytes)."""
        legacy = self._legacy
        total_bytes = 0.0
        for lf, typ in _walk_types(self._node.field, self._field.type):
            i = lf.id - legacy.min_field_id
            if not (0 <= i < legacy.page_table.shape[0]):
                continue
            values = float(legacy.page_table[i, :, 1].sum())
            total_bytes += values * _value_width(typ)
        return max(total_bytes / max(self._num_rows, 1), 1.0)

    def _read_rows(self, ranges: Ranges) -> Steps:
        parts = split_by_pages(ranges, self._offsets_arr)
        arrays = yield from gather([self._node.read(b, local) for b, local in parts])
        if not arrays:
            return pa.array([], type=self._field.type)
        if len(arrays) == 1:
            return arrays[0]
        return pa.concat_arrays(arrays)


def make_field_decoders(reader: RangeReader, metadata, field_names: Sequence[str] | None) -> list[LegacyFieldDecoder]:
    """One decoder per requested top-level field of a 0.1 file (all when ``field_names`` is None).

    ``metadata.legacy`` is the :class:`lancejit.file.legacy.LegacyMetadata` of the file.
    """
    legacy = metadata.legacy
    if legacy is None:
        raise InvalidInputError("not a legacy (0.1) file")
    schema = metadata.schema
    arrow = getattr(metadata, "arrow_schema", None) or legacy.arrow_schema
    path = getattr(metadata, "path", None) or reader.path
    by_name: dict[str, LanceField] = {}
    for f in schema.fields:
        by_name.setdefault(f.name, f)
    names = list(field_names) if field_names is not None else [f.name for f in schema.fields]
    out = []
    for name in names:
        if name not in by_name:
            raise InvalidInputError(f"no field {name!r} in {path}")
        af = arrow.field(name)
        node = build_node(by_name[name], af.type, legacy, path)
        out.append(LegacyFieldDecoder(reader, af, node, legacy))
    return out
