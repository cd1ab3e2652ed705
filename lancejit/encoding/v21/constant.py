"""All-null pages (2.1/2.2) and 2.2 constant pages (both use ``AllNullLayout``).

* Simple all-null: no buffers; every row is null at the leaf.
* Complex all-null: buffers ``[rep, def]`` of u16 levels (2.1 raw; 2.2 possibly compressed as
  described by fields 7/8 with counts in 9/10); an empty buffer means "no such levels".
* 2.2 constant: the value is inline (field 6, raw little-endian bytes of one value) or, when the
  page has an odd number of buffers, buffer 0 holds the scalar as
  ``u32 n_buffers, u32 size[n_buffers], bytes...`` (the Arrow buffers of a 1-row array);
  rep/def buffers follow.

Levels are loaded once per page and kept; reads slice them by rows.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import pyarrow as pa

from lancejit.core.errors import CorruptFileError, NotSupportedError
from lancejit.encoding import arrow_build as ab
from lancejit.encoding.pages import PageInfo
from lancejit.encoding.v21 import compression as cmp
from lancejit.encoding.v21.context import ColumnContext, Steps
from lancejit.encoding.v21.page import LayoutPage
from lancejit.encoding.v21.leaf import placeholder, repeat_scalar
from lancejit.encoding.v21.levels import LeafRows, count_visible, extract_row_ranges
from lancejit.encoding.v21.repdef import translate_def


def scalar_from_inline(raw: bytes, t: pa.DataType, *, path: str) -> pa.Array:
    """A 1-row array of fixed-width type ``t`` from its raw little-endian bytes."""
    data = np.frombuffer(raw, dtype=np.uint8)
    if pa.types.is_boolean(t):
        if data.size < 1:
            raise CorruptFileError("empty inline boolean constant", path=path)
        return pa.array([bool(data[0] & 1)], type=pa.bool_())
    if pa.types.is_dictionary(t):
        inner = scalar_from_inline(raw, t.value_type, path=path)
        return inner.dictionary_encode().cast(t)
    if pa.types.is_fixed_size_list(t):
        total = _fsl_bytes(t)
        if total is None or data.size != total:
            raise CorruptFileError(f"inline constant of {data.size} bytes for {t}", path=path)
        inner = t
        n = 1
        while pa.types.is_fixed_size_list(inner):
            n *= inner.list_size
            inner = inner.value_type
        items = ab.fixed_width_array(inner, data, n) if not pa.types.is_boolean(inner) else ab.bool_array(data, n)
        return _wrap_fsl(t, items)
    width = ab.byte_width(t)
    if width is None:
        raise NotSupportedError(f"inline constant of type {t}")
    if data.size != width:
        raise CorruptFileError(f"inline constant of {data.size} bytes for {t} ({width} bytes)", path=path)
    return ab.fixed_width_array(t, data, 1)


def _fsl_bytes(t: pa.DataType) -> int | None:
    n = 1
    while pa.types.is_fixed_size_list(t):
        n *= t.list_size
        t = t.value_type
    w = ab.byte_width(t)
    return None if w is None else n * w


def _wrap_fsl(t: pa.DataType, items: pa.Array) -> pa.Array:
    if not pa.types.is_fixed_size_list(t):
        return items
    inner = _wrap_fsl(t.value_type, items)
    return ab.fixed_size_list_array(t, inner, len(inner) // t.list_size)


def scalar_from_buffer(buf: memoryview, t: pa.DataType, *, path: str) -> pa.Array:
    """A 1-row array from ``u32 n, u32 sizes[n], buffers...`` (Arrow buffers of one value)."""
    if len(buf) < 4:
        raise CorruptFileError("constant scalar buffer too short", path=path)
    n = int(np.frombuffer(buf, dtype="<u4", count=1)[0])
    if n > 16 or 4 + 4 * n > len(buf):
        raise CorruptFileError(f"constant scalar claims {n} buffers", path=path)
    sizes = np.frombuffer(buf, dtype="<u4", count=n, offset=4).astype(np.int64)
    pos = 4 + 4 * n
    parts = []
    for s in sizes:
        if pos + s > len(buf):
            raise CorruptFileError("constant scalar buffers past the end", path=path)
        parts.append(bytes(buf[pos : pos + int(s)]))
        pos += int(s)
    vt = t.value_type if pa.types.is_dictionary(t) else t
    if pa.types.is_string(vt) or pa.types.is_binary(vt) or pa.types.is_large_string(vt) or pa.types.is_large_binary(vt):
        if len(parts) != 2:
            raise CorruptFileError(f"variable constant with {len(parts)} buffers", path=path)
        odt = "<i8" if len(parts[0]) == 16 else "<i4"
        offs = np.frombuffer(parts[0], dtype=odt).astype(np.int64)
        if offs.size != 2:
            raise CorruptFileError("constant scalar offsets are not one value", path=path)
        arr = ab.binary_array(vt, offs, np.frombuffer(parts[1], dtype=np.uint8))
    else:
        if len(parts) != 1:
            raise CorruptFileError(f"fixed constant with {len(parts)} buffers", path=path)
        return scalar_from_inline(parts[0], t, path=path)
    if pa.types.is_dictionary(t):
        return arr.dictionary_encode().cast(t)
    return arr


class ConstantPage(LayoutPage):
    """Reads rows of an all-null or constant page."""

    def __init__(self, ctx: ColumnContext, page: PageInfo, layout: Any, page_index: int, def_table: np.ndarray) -> None:
        super().__init__(ctx, page, layout, page_index, def_table)
        nbuf = len(page.buffer_offsets)
        self.inline = layout.HasField("inline_value") if _has_field(layout, "inline_value") else False
        self.scalar_in_buffer = (nbuf % 2) == 1
        self.is_constant = self.inline or self.scalar_in_buffer
        self.level_bufs = list(range(1, nbuf)) if self.scalar_in_buffer else list(range(nbuf))
        if len(self.level_bufs) not in (0, 2):
            raise CorruptFileError(f"all-null/constant page with {nbuf} buffers", path=ctx.path)
        self._state: tuple | None = None

    async def _load(self) -> tuple:
        if self._state is not None:
            return self._state
        # no lock: concurrent loads on one loop share the cache's single load, and this page
        # may be read from several event loops (the I/O loop, callers' own threads)

        async def load() -> tuple:
            ranges = self._meta_ranges()
            bufs = await self.ctx.read(ranges, priority=self.page.priority) if ranges else []
            return self._parse(bufs)

        st = await self.ctx.cached(self._key(), load, _state_bytes)
        self._state = st
        return st

    def _key(self) -> tuple:
        return ("v21-constant", self.ctx.column_index, self.page_index)

    def _meta_ranges(self) -> list[tuple[int, int]]:
        idx = ([0] if self.scalar_in_buffer else []) + self.level_bufs
        return [(self.page.buffer_offsets[i], self.page.buffer_offsets[i] + self.page.buffer_sizes[i]) for i in idx]

    def _load_steps(self) -> Steps:
        """Step generator returning the parsed page state (no step when loaded or cached)."""
        if self._state is not None:
            return self._state
        st = self.ctx.cache_get(self._key())
        if st is None:
            bufs = yield from self.ctx.read_steps(self._meta_ranges())
            st = self._parse(bufs)
            self.ctx.cache_put(self._key(), st, _state_bytes(st))
        self._state = st
        return st

    def _levels(self, buf: memoryview, enc_field: str, count_field: str) -> np.ndarray | None:
        path = self.ctx.path
        if len(buf) == 0:
            return None
        lay = self.layout
        if _has_field(lay, enc_field) and lay.HasField(enc_field):
            n = int(getattr(lay, count_field))
            return np.asarray(cmp.decode_levels(getattr(lay, enc_field), buf, n, path=path), dtype=np.uint16)
        if len(buf) % 2:
            raise CorruptFileError(f"raw u16 levels of odd length {len(buf)}", path=path)
        return np.frombuffer(buf, dtype="<u2").astype(np.uint16)

    def _parse(self, bufs: list[memoryview]) -> tuple:
        path = self.ctx.path
        canon = self.ctx.canon
        scalar = None
        k = 0
        if self.scalar_in_buffer:
            scalar = scalar_from_buffer(bufs[0], self.ctx.value_type, path=path)
            k = 1
        elif self.inline:
            scalar = scalar_from_inline(bytes(self.layout.inline_value), self.ctx.value_type, path=path)
        rep = deff = None
        if self.level_bufs:
            rep = self._levels(bufs[k], "rep_compression", "num_rep_values")
            deff = self._levels(bufs[k + 1], "def_compression", "num_def_values")
        if rep is not None and canon.max_rep == 0:
            raise CorruptFileError("repetition levels in a column without lists", path=path)
        if rep is None and canon.max_rep > 0:
            raise CorruptFileError("list column page without repetition levels", path=path)
        null_def = None
        if deff is not None:
            deff = translate_def(deff, self.def_table, path=path)
        elif not self.is_constant:
            # simple all-null: every row null at the innermost level (levels made per read, for
            # the rows asked: the page's row count is only a claim)
            if canon.max_rep:
                raise CorruptFileError("simple all-null page in a list column", path=path)
            null_def = int(self.def_table[1]) if self.def_table.size > 1 else 1
        num_levels = rep.size if rep is not None else (deff.size if deff is not None else self.num_rows)
        if rep is not None and deff is not None and rep.size != deff.size:
            raise CorruptFileError(f"{rep.size} rep levels but {deff.size} def levels", path=path)
        if rep is None and num_levels != self.num_rows:
            raise CorruptFileError(f"{num_levels} levels for {self.num_rows} rows", path=path)
        if rep is not None and int(np.count_nonzero(rep == canon.max_rep)) != self.num_rows:
            raise CorruptFileError("repetition levels do not match the page's rows", path=path)
        return rep, deff, scalar, num_levels, null_def

    async def read(self, ranges: Sequence[tuple[int, int]]) -> LeafRows:
        """Rows in the half-open page-relative ``ranges`` (sorted, disjoint), concatenated."""
        if self._state is None and not self._is_empty_struct():
            await self._load()
        return await self.ctx.drive(self.read_steps(ranges), priority=self.page.priority)

    def _is_empty_struct(self) -> bool:
        t = self.ctx.value_type
        return pa.types.is_struct(t) and t.num_fields == 0

    def read_steps(self, ranges: Any) -> Steps:
        """Step generator for rows in the half-open page-relative ``ranges`` (sorted,
        disjoint): at most one step (the page's scalar and levels, unless cached)."""
        ranges = [(int(a), int(b)) for a, b in np.asarray(ranges, dtype=np.int64).reshape(-1, 2).tolist()]
        t = self.ctx.value_type
        canon = self.ctx.canon
        if self._is_empty_struct():
            # Empty structs (never null, never in a list: the writer refuses both) are stored as
            # a no-buffer all-null page; the reference reads them back as valid rows.
            total = sum(b - a for a, b in ranges)
            return LeafRows(None, None, ab.struct_array(t, [], total), total)
        rep, deff, scalar, num_levels, null_def = yield from self._load_steps()
        if rep is None:
            total = sum(b - a for a, b in ranges)
            d: np.ndarray | None
            if null_def is not None:
                d = np.full(total, null_def, dtype=np.uint16)
            else:
                d = None if deff is None else np.concatenate([deff[a:b] for a, b in ranges])
            values = placeholder(t, total) if scalar is None else repeat_scalar(scalar, total)
            return LeafRows(None, d, values, total)
        nvis = count_visible(rep, deff, canon, num_levels)
        stub = placeholder(t, nvis) if scalar is None else repeat_scalar(scalar, nvis)
        whole = LeafRows(rep, deff, stub, num_levels)
        parts = extract_row_ranges(whole, canon, 0, False, ranges, path=self.ctx.path)
        from lancejit.encoding.v21.levels import concat_rows

        return concat_rows(parts, t)


def _state_bytes(st: tuple) -> int:
    return sum(a.nbytes for a in st[:2] if a is not None) + 256


def _has_field(msg: Any, name: str) -> bool:
    return name in msg.DESCRIPTOR.fields_by_name
