"""One top-level field of a 2.0 file: a column per field in pre-order, each accumulating its
own arrays and emitting pages of at most about ``page_bytes``."""

from __future__ import annotations

import pyarrow as pa

from lancejit.core.errors import NotSupportedError
from lancejit.encoding.v21.encode.page import EncodedPage

from lancejit.encoding.v21.encode.levels import concat_arrays

from . import arrays


def _is_binary(t: pa.DataType) -> bool:
    return (pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t)
            or pa.types.is_large_binary(t))


class _Column:
    def __init__(self, kind: str, index: int, page_bytes: int) -> None:
        self.kind = kind  # 'values' | 'binary' | 'list' | 'struct'
        self.index = index
        self.page_bytes = page_bytes
        self.pending: list[pa.Array] = []
        self.pending_len = 0
        self.pending_bytes = 0
        self.written = 0

    def add(self, arr: pa.Array, nbytes: int) -> list:
        self.pending.append(arr)
        self.pending_len += len(arr)
        self.pending_bytes += nbytes
        if self.pending_bytes >= self.page_bytes:
            return self.flush()
        return []

    def flush(self) -> list:
        if not self.pending_len:
            return []
        out = []
        if self.kind == "struct":
            out.append((self.index, EncodedPage([], arrays.struct_page(), self.pending_len), self.written))
            self.written += self.pending_len
        else:
            arr = concat_arrays(self.pending)
            pieces = max(1, -(-self.pending_bytes // self.page_bytes)) if self.kind != "list" else 1
            n = len(arr)
            bounds = [n * i // pieces for i in range(pieces + 1)]
            for a, b in zip(bounds[:-1], bounds[1:]):
                if b <= a:
                    continue
                part = arr.slice(a, b - a)
                if self.kind == "values":
                    enc, bufs = arrays.nullable(part, 0)
                elif self.kind == "dict":
                    enc, bufs = arrays.arrow_dictionary(part, 0)
                elif self.kind == "binary":
                    if arrays.should_dictionary(part):
                        enc, bufs = arrays.dictionary(part, 0)
                    else:
                        enc, bufs = arrays.binary(part, 0)
                else:
                    enc, bufs, _ = arrays.list_offsets(part)
                out.append((self.index, EncodedPage(bufs, enc, len(part)), self.written))
                self.written += len(part)
        self.pending, self.pending_len, self.pending_bytes = [], 0, 0
        return out


class FieldEncoder20:
    """Encodes one top-level Arrow field into one column per (nested) field, pre-order."""

    def __init__(self, f: pa.Field, first_column: int, page_bytes: int) -> None:
        self.field = f
        self.page_bytes = page_bytes
        self.columns: list[_Column] = []
        self._plan = self._build(f, first_column)
        for i, c in enumerate(self.columns):
            c.index = first_column + i

    def _new(self, kind: str) -> _Column:
        col = _Column(kind, 0, self.page_bytes)
        self.columns.append(col)
        return col

    def _build(self, f: pa.Field, first: int):
        t = f.type
        if pa.types.is_struct(t):
            col = self._new("struct")
            children = [self._build(t.field(i), first) for i in range(t.num_fields)]
            node = ("struct", col, children)
        elif pa.types.is_list(t) or pa.types.is_large_list(t):
            col = self._new("list")
            node = ("list", col, self._build(t.value_field, first))
        elif pa.types.is_dictionary(t):
            node = ("values", self._new("dict"), None)
        elif pa.types.is_map(t):
            raise NotSupportedError(f"2.0 writer does not support field {f.name!r} of type {t}")
        elif _is_binary(t):
            node = ("binary", self._new("binary"), None)
        else:
            node = ("values", self._new("values"), None)
        return node

    @property
    def num_columns(self) -> int:
        return len(self.columns)

    def add(self, arr: pa.Array) -> list:
        """Buffer the rows of ``arr``; returns ``(column, page, first_row)`` ready to write."""
        return self._add(self._plan, arr)

    def _add(self, node, arr: pa.Array) -> list:
        kind, col, sub = node
        if kind == "struct":
            if arr.null_count:
                raise NotSupportedError("2.0 files cannot store null structs (use version 2.1+)")
            out = []
            col.pending_len += len(arr)  # one struct page per column, emitted at finish
            for i, child in enumerate(sub):
                out += self._add(child, arr.field(i))
            return out
        if kind == "list":
            offs = arr.offsets
            start = offs[0].as_py()
            end = offs[-1].as_py()
            out = col.add(arr, 8 * len(arr))
            items = arr.values.slice(start, end - start)
            return out + self._add(sub, items)
        return col.add(arr, arr.nbytes)

    def finish(self) -> list:
        out = []
        for c in self.columns:
            out += c.flush()
        return out
