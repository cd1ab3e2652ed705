"""Encoding one top-level field of a 2.1 / 2.2 file: its leaf columns and page accumulation.

Each leaf column accumulates level slots independently and emits a page once its buffered
bytes reach ``page_bytes`` (so memory stays bounded by columns x page size); ``finish`` flushes
what is left.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from lancejit.core.errors import NotSupportedError

from .allnull import simple_all_null
from .levels import (EMPTYABLE_LIST, NULL_AND_EMPTY_LIST, NULLABLE_ITEM, NULLABLE_LIST, Leaf,
                     LeafSlots, Levels, concat_slots, resolve, leaf_slots, leaves_of, storage_array,
                     storage_field)
from .blob import blob_values, descriptor_page
from .data import VarBlock, block_from_arrow
from .page import EncodedPage
from .strategy import FieldParams, encode_leaf_page


def compact(arr: pa.Array) -> pa.Array:
    """A copy of ``arr`` when it is a small slice of big buffers (so pending data does not keep
    whole batches alive: memory stays bounded by columns x page size)."""
    if len(arr) and arr.get_total_buffer_size() > 2 * arr.nbytes + 4096:
        return pa.concat_arrays([arr])
    return arr


def _slots_nbytes(s: LeafSlots) -> int:
    n = s.values.nbytes if len(s.values) else 0
    return int(n + s.code.nbytes + (s.rep.nbytes if s.rep is not None else 0))


class _LeafColumn:
    def __init__(self, leaf: Leaf, column_index: int, defaults: dict | None = None) -> None:
        self.leaf = leaf
        self.column_index = column_index
        md = dict(defaults or {})
        for f in leaf.path:  # inner metadata wins
            md.update(f.metadata or {})
        self.params = FieldParams.from_metadata(md)
        self.empty_struct = pa.types.is_struct(leaf.leaf_field.type) and leaf.leaf_field.type.num_fields == 0
        self.pending: list[LeafSlots] = []
        #: ``pending[:compacted]`` hold no slice of a bigger buffer (see :func:`compact`).
        self.compacted = 0
        self.pending_bytes = 0
        self.pending_rows = 0
        self.rows_flushed = 0
        # pylance 14 counts a page of a fixed-size list of structs in items (rows x dimension)
        self.count_slots = any(pa.types.is_fixed_size_list(f.type) for f in leaf.path[:-1])
        # blob columns (no repetition): values written out of line as they arrive, descriptors kept
        t = leaf.leaf_field.type
        self.blob = self.params.blob and (pa.types.is_binary(t) or pa.types.is_large_binary(t)
                                          or pa.types.is_string(t) or pa.types.is_large_string(t)) \
            and not any(pa.types.is_list(f.type) or pa.types.is_large_list(f.type) or pa.types.is_fixed_size_list(f.type)
                        for f in leaf.path[:-1])
        self.blob_positions: list[np.ndarray] = []
        self.blob_sizes: list[np.ndarray] = []
        self.blob_nulls: bool | None = None  # whether the pending page's batches had nulls

    def add(self, arr: pa.Array, version: tuple[int, int]) -> list[tuple[EncodedPage, int]]:
        """Take the rows of ``arr``; returns what to write now: a blob column's values (an
        :class:`EncodedPage` of ``external`` buffers only), after its pending page when the
        batch's nullability differs from that page's (the reference starts a page there)."""
        if self.empty_struct:
            self.pending_rows += len(arr)
            return []
        s = leaf_slots(arr, self.leaf)
        if self.blob:
            nulls = resolve(s).value_nulls
            has_nulls = nulls is not None and bool(nulls.any())
            out = self.flush(version) if self.blob_nulls is not None and has_nulls != self.blob_nulls else []
            self.blob_nulls = has_nulls
            self.pending_rows += len(arr)
            out.append((self._add_blob(s, nulls), 0))
            return out
        self.pending_rows += len(arr)
        self.pending.append(s)
        self.pending_bytes += _slots_nbytes(s)
        return []

    def _add_blob(self, s: LeafSlots, nulls: np.ndarray | None) -> EncodedPage:
        block = block_from_arrow(s.values)
        assert isinstance(block, VarBlock)  # blob columns are binary (see __init__)
        external, idx, sizes = blob_values(block, nulls)
        positions = np.zeros(len(sizes), dtype=np.uint64)
        self.blob_positions.append(positions)
        self.blob_sizes.append(sizes)
        # the values are written now: the page keeps the levels only
        self.pending.append(LeafSlots(s.rep, s.code, s.visible, pa.nulls(len(s.values)), s.kinds, s.num_rows,
                                      s.forced))
        self.pending_bytes += 16 * len(sizes) + s.code.nbytes

        def record(written: list[int]) -> None:
            positions[idx] = np.asarray(written, dtype=np.uint64)

        return EncodedPage([], None, 0, external=external, finish=record)

    def _flush_blob(self, version: tuple[int, int]) -> EncodedPage:
        slots = concat_slots(self.pending)
        positions = np.concatenate(self.blob_positions)
        sizes = np.concatenate(self.blob_sizes)
        self.blob_positions, self.blob_sizes, self.blob_nulls = [], [], None
        return descriptor_page(positions, sizes, resolve(slots), version)

    def flush(self, version: tuple[int, int]) -> list[tuple[EncodedPage, int]]:
        """Encode what is pending: ``[(page, first_row)]`` (several pages when a page with
        repetition would exceed 65 535 rep/def levels, as pylance 14 splits them)."""
        if self.pending_rows == 0:
            return []
        out = []
        if self.empty_struct:
            out.append((simple_all_null(self.pending_rows), self.rows_flushed))
            self.rows_flushed += self.pending_rows
        elif self.blob:
            page = self._flush_blob(version)
            out.append((page, self.rows_flushed))
            self.rows_flushed += page.num_rows
        else:
            slots = concat_slots(self.pending)
            for piece in split_levels(slots, MAX_LEVELS_PER_PAGE):
                page = encode_leaf_page(piece, self.params, version)
                if self.count_slots and piece.rep is None:
                    page.num_rows = len(piece.code)
                out.append((page, self.rows_flushed))
                self.rows_flushed += page.num_rows
        self.pending = []
        self.compacted = 0
        self.pending_bytes = 0
        self.pending_rows = 0
        return out


MAX_LEVELS_PER_PAGE = 0xFFFF
#: no page is cut below this many level slots (:func:`level_limit` of the deepest nesting)
MIN_LEVEL_LIMIT = 2 * 0xFFFF // 32

_DEF_STEPS: dict[int, int] = {NULLABLE_ITEM: 1, NULLABLE_LIST: 1, EMPTYABLE_LIST: 1, NULL_AND_EMPTY_LIST: 2}


def level_limit(levels: Levels) -> int:
    """Most level slots pylance 14 puts in a page with null or empty lists:
    ``2 * 65535 // (bits of the highest rep level + bits of the highest def level)`` (found
    from its files: 65 535 for a nullable list, 43 690 with two or three def levels, 32 767
    with four)."""
    max_def = sum(_DEF_STEPS.get(layer, 0) for layer in levels.layers)
    bits = int(levels.max_rep).bit_length() + max_def.bit_length()
    return max(2 * 0xFFFF // max(bits, 1), MIN_LEVEL_LIMIT)


def split_levels(slots: LeafSlots, max_levels: int) -> list[LeafSlots]:
    """Split at top-level row starts so each piece has at most ``max_levels`` level slots
    (only slots with repetition are split; a single row longer than that stays whole).

    As pylance 14, only pages with invisible slots (null or empty lists, which take a level
    but no value) are split: a page whose every slot carries a value stays whole however many
    levels it has (each mini-block chunk still holds at most 4096 of them)."""
    n = len(slots.code)
    if slots.rep is None or n <= MIN_LEVEL_LIMIT or bool(slots.visible.all()):
        return [slots]
    max_levels = min(max_levels, level_limit(resolve(slots)))
    if n <= max_levels:
        return [slots]
    max_rep = sum(1 for k in slots.kinds if k == "list")
    starts = np.flatnonzero(slots.rep == max_rep)
    vis_before = np.concatenate([[0], np.cumsum(slots.visible)])
    pieces = []
    a = 0
    while a < n:
        # the last row start <= a + max_levels (exclusive end of this piece)
        limit = a + max_levels
        if limit >= n:
            b = n
        else:
            j = np.searchsorted(starts, limit, side="right") - 1
            b = int(starts[j]) if j >= 0 and starts[j] > a else int(starts[np.searchsorted(starts, a, side="right")]) \
                if np.searchsorted(starts, a, side="right") < len(starts) else n
        v0, v1 = int(vis_before[a]), int(vis_before[b])
        pieces.append(LeafSlots(
            slots.rep[a:b], slots.code[a:b], slots.visible[a:b], slots.values.slice(v0, v1 - v0),
            slots.kinds, int((slots.rep[a:b] == max_rep).sum()), slots.forced))
        a = b
    return pieces


class FieldEncoder:
    """Encodes one top-level Arrow field into ``num_columns`` leaf columns."""

    def __init__(self, f: pa.Field, first_column: int, version: tuple[int, int], page_bytes: int,
                 defaults: dict | None = None) -> None:
        """``defaults``: writer-level ``lance-encoding:*`` options (field metadata wins)."""
        self.field = f
        f = storage_field(f)
        self.storage = f.type
        self.version = version
        self.page_bytes = page_bytes
        self.leaves = [_LeafColumn(lf, first_column + i, defaults) for i, lf in enumerate(leaves_of(f))]
        if version < (2, 2):
            for lf in self.leaves:
                for node in lf.leaf.path[:-1]:
                    if pa.types.is_fixed_size_list(node.type):
                        raise NotSupportedError(
                            f"field {f.name!r}: fixed-size lists of structs need file version 2.2")

    @property
    def num_columns(self) -> int:
        return len(self.leaves)

    def _split(self, arr: pa.Array) -> list[pa.Array]:
        n = len(arr)
        nbytes = arr.nbytes
        if nbytes <= self.page_bytes or n <= 1:
            return [arr]
        pieces = min(n, -(-nbytes // self.page_bytes))
        bounds = np.linspace(0, n, pieces + 1).astype(np.int64)
        return [arr.slice(int(a), int(b - a)) for a, b in zip(bounds[:-1], bounds[1:]) if b > a]

    def add(self, arr: pa.Array) -> list[tuple[int, EncodedPage, int]]:
        """Buffer ``arr`` (rows of this field); returns pages ready to write:
        ``(column_index, page, first_row)``."""
        out = []
        arr = storage_array(arr, self.storage)
        for piece in self._split(arr):
            for leaf in self.leaves:
                for page, first_row in leaf.add(piece, self.version):  # blob values (and pages) now
                    out.append((leaf.column_index, page, first_row))
                if leaf.pending_bytes >= self.page_bytes:
                    for page, first_row in leaf.flush(self.version):
                        out.append((leaf.column_index, page, first_row))
        for leaf in self.leaves:  # what this call left pending (earlier slots are compact already)
            for sl in leaf.pending[leaf.compacted:]:
                sl.values = compact(sl.values)
            leaf.compacted = len(leaf.pending)
        return out

    def finish(self) -> list[tuple[int, EncodedPage, int]]:
        out = []
        for leaf in self.leaves:
            for page, first_row in leaf.flush(self.version):
                out.append((leaf.column_index, page, first_row))
        return out
