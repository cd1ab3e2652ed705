"""One top-level field of a 2.0 file: a column per field in pre-order, each accumulating its
own arrays and emitting pages of at most about ``page_bytes``."""

from __future__ import annotations

import pyarrow as pa

from lancejit.core.errors import NotSupportedError
from lancejit.encoding.v21.encode.page import EncodedPage

from lancejit.encoding.v21.encode.levels import concat_arrays, storage_array, storage_field

from lancejit.encoding.v21.encode import general

from . import arrays


def _blob_page(arr: pa.Array) -> EncodedPage:
    """Blob values go out of line (written before the page); the page holds descriptors."""
    import numpy as np

    n = len(arr)
    ends, data, _ = arrays._end_offsets(arr)
    starts = np.concatenate([[0], ends[:-1]]).astype(np.int64)
    lens = (ends.astype(np.int64) - starts)
    valid = np.asarray(arr.is_valid()) if arr.null_count else np.ones(n, dtype=bool)
    has = valid & (lens > 0)
    idx = np.flatnonzero(has)
    external = [data[starts[i] : starts[i] + lens[i]].tobytes() for i in idx]

    def finish(positions: list[int]) -> EncodedPage:
        pos = np.zeros(n, dtype=np.uint64)
        size = np.zeros(n, dtype=np.uint64)
        pos[idx] = np.asarray(positions, dtype=np.uint64)
        size[idx] = lens[idx].astype(np.uint64)
        pos[~valid] = 1
        enc, bufs = arrays.blob_descriptors(pos, size)
        return EncodedPage(bufs, enc, n)

    return EncodedPage([], None, n, external=external, finish=finish)


def _is_binary(t: pa.DataType) -> bool:
    return (pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t)
            or pa.types.is_large_binary(t))


def _fixed_leaf(t: pa.DataType) -> bool:
    while pa.types.is_fixed_size_list(t):
        t = t.value_type
    return not (pa.types.is_struct(t) or pa.types.is_list(t) or pa.types.is_large_list(t)
                or pa.types.is_map(t) or _is_binary(t) or pa.types.is_dictionary(t))


def _params(f: pa.Field) -> dict[str, str]:
    return {k.decode(): v.decode() for k, v in (f.metadata or {}).items()}


class _Column:
    def __init__(self, kind: str, index: int, page_bytes: int,
                 compression: tuple[str, int | None] | None = None) -> None:
        self.kind = kind  # 'values' | 'binary' | 'list' | 'struct' | 'dict' | 'packed' | 'blob'
        self.compression = compression
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
                if self.kind == "blob":
                    out.append((self.index, _blob_page(part), self.written))
                    self.written += len(part)
                    continue
                if self.kind == "values":
                    enc, bufs = arrays.nullable(part, 0)
                elif self.kind == "packed":
                    enc, bufs = arrays.packed_struct(part)
                elif self.kind == "dict":
                    enc, bufs = arrays.arrow_dictionary(part, 0)
                elif self.kind == "binary":
                    if arrays.should_dictionary(part):
                        enc, bufs = arrays.dictionary(part, 0)
                    else:
                        enc, bufs = arrays.binary(part, 0, self.compression)
                else:
                    enc, bufs, _ = arrays.list_offsets(part)
                out.append((self.index, EncodedPage(bufs, enc, len(part)), self.written))
                self.written += len(part)
        self.pending, self.pending_len, self.pending_bytes = [], 0, 0
        return out


#: A field's plan: (kind, its column, children: a list of nodes (struct), one node (list) or None).
_Node = tuple[str, _Column, "list[_Node] | _Node | None"]


class FieldEncoder20:
    """Encodes one top-level Arrow field into one column per (nested) field, pre-order."""

    def __init__(self, f: pa.Field, first_column: int, page_bytes: int,
                 defaults: dict | None = None) -> None:
        """``defaults``: writer-level ``lance-encoding:*`` options (field metadata wins)."""
        self.defaults = {(k.encode() if isinstance(k, str) else k): (v.encode() if isinstance(v, str) else v)
                         for k, v in (defaults or {}).items()}
        self.field = f
        f = storage_field(f)
        self.storage = f.type
        self.page_bytes = page_bytes
        self.columns: list[_Column] = []
        self._plan = self._build(f, first_column)
        for i, c in enumerate(self.columns):
            c.index = first_column + i

    def _new(self, kind: str, compression=None) -> _Column:
        col = _Column(kind, 0, self.page_bytes, compression)
        self.columns.append(col)
        return col

    def _build(self, f: pa.Field, first: int) -> _Node:
        t = f.type
        md = _params(f.with_metadata({**self.defaults, **(f.metadata or {})}))
        if "lance-encoding:packed" in md and pa.types.is_struct(t):
            return ("values", self._new("packed"), None)
        if md.get("lance-encoding:blob", "").lower() in ("true", "1", "yes", "on") and _is_binary(t):
            return ("values", self._new("blob"), None)
        node: _Node
        if pa.types.is_struct(t):
            col = self._new("struct")
            children = [self._build(t.field(i), first) for i in range(t.num_fields)]
            node = ("struct", col, children)
        elif pa.types.is_list(t) or pa.types.is_large_list(t):
            col = self._new("list")
            node = ("list", col, self._build(t.value_field, first))
        elif pa.types.is_fixed_size_list(t) and not _fixed_leaf(t):
            raise NotSupportedError(f"2.0 writer does not support field {f.name!r} of type {t}")
        elif pa.types.is_dictionary(t):
            node = ("values", self._new("dict"), None)
        elif pa.types.is_map(t):
            raise NotSupportedError(f"2.0 writer does not support field {f.name!r} of type {t}")
        elif _is_binary(t):
            scheme = general.parse_scheme(md.get("lance-encoding:compression"))
            level = md.get("lance-encoding:compression-level")
            comp = (scheme, int(level) if level is not None else None) if scheme else None
            node = ("binary", self._new("binary", comp), None)
        else:
            node = ("values", self._new("values"), None)
        return node

    @property
    def num_columns(self) -> int:
        return len(self.columns)

    def add(self, arr: pa.Array) -> list:
        """Buffer the rows of ``arr``; returns ``(column, page, first_row)`` ready to write."""
        from lancejit.encoding.v21.encode.field import compact

        out = self._add(self._plan, storage_array(arr, self.storage))
        for c in self.columns:
            c.pending = [compact(a) for a in c.pending]
        return out

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

    def column_encodings(self) -> dict[int, object]:
        """Column-level ``ColumnEncoding`` messages that differ from ``values`` (blob columns)."""
        from lancejit.pb import encodings_v2_0_pb2 as pb20

        out: dict[int, object] = {}
        for c in self.columns:
            if c.kind == "blob":
                ce = pb20.ColumnEncoding()
                ce.blob.inner.values.SetInParent()
                out[c.index] = ce
        return out

    def finish(self) -> list:
        out = []
        for c in self.columns:
            out += c.flush()
        return out
