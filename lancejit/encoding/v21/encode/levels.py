"""Repetition / definition levels of one leaf column, computed from an Arrow array.

Conventions (as the reference, see the Lance file format specification): levels are u16; def 0 = valid at every
level; layers are listed innermost first; rep ``max_rep`` starts a new top-level row, rep 0
continues the innermost list.  Null and empty lists occupy one level slot but no value
("invisible"); null leaf items and null structs do carry a placeholder value ("visible").

Layer kinds are decided from the data of one page (a nullable field without nulls gets an
ALL_VALID layer), so levels are first recorded as *codes* (which layer made a slot dead and
why) and resolved to numbers by :func:`resolve`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from lancejit.core.errors import NotSupportedError
from lancejit.pb import encodings_v2_1_pb2 as pb21

# RepDefLayer values
ALL_VALID_ITEM = pb21.REPDEF_ALL_VALID_ITEM
ALL_VALID_LIST = pb21.REPDEF_ALL_VALID_LIST
NULLABLE_ITEM = pb21.REPDEF_NULLABLE_ITEM
NULLABLE_LIST = pb21.REPDEF_NULLABLE_LIST
EMPTYABLE_LIST = pb21.REPDEF_EMPTYABLE_LIST
NULL_AND_EMPTY_LIST = pb21.REPDEF_NULL_AND_EMPTY_LIST

#: code of a live (visible, valid) slot
ALIVE = 0


def is_leaf_type(t: pa.DataType) -> bool:
    """True for types stored as one leaf column (FSL of a fixed-width leaf counts as a leaf)."""
    if pa.types.is_struct(t) or pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_map(t):
        return False
    if pa.types.is_fixed_size_list(t):
        return is_leaf_type(t.value_type) and not _is_variable(t.value_type)
    return True


def _is_variable(t: pa.DataType) -> bool:
    return (
        pa.types.is_string(t)
        or pa.types.is_large_string(t)
        or pa.types.is_binary(t)
        or pa.types.is_large_binary(t)
    )


@dataclass
class LeafSlots:
    """Level codes of one leaf column for a run of top-level rows.

    ``rep``: u16 rep level per slot, or None when the path has no list.
    ``code``: per slot, 0 for a visible valid item, else ``2*layer + 1`` (null at that layer) or
    ``2*layer + 2`` (empty list at that layer); layers numbered outermost = 0 .. leaf = depth-1.
    ``visible``: per slot, True when the slot carries a value.
    ``values``: the leaf Arrow array of the visible slots, in order (nulls keep placeholders).
    ``kinds``: per layer (outermost first) 'struct' / 'list' / 'item'.
    """

    rep: np.ndarray | None
    code: np.ndarray
    visible: np.ndarray
    values: pa.Array
    kinds: list[str]
    num_rows: int
    #: codes to treat as present when choosing layer kinds (a list under a null struct still
    #: has an entry, so its layer must be able to express an empty list)
    forced: frozenset = frozenset()


@dataclass
class Leaf:
    """A leaf column's path from the top-level field: Arrow fields outermost first."""

    path: list[pa.Field]
    leaf_field: pa.Field


def leaves_of(f: pa.Field) -> list[Leaf]:
    """Leaf columns of a top-level field, pre-order (the order of the file's columns)."""
    out: list[Leaf] = []

    def walk(fld: pa.Field, path: list[pa.Field]) -> None:
        t = fld.type
        if is_leaf_type(t) or _is_packed(fld) or _is_blob(fld):
            out.append(Leaf(path + [fld], fld))
        elif pa.types.is_struct(t):
            if t.num_fields == 0:
                out.append(Leaf(path + [fld], fld))
            for i in range(t.num_fields):
                walk(t.field(i), path + [fld])
        elif pa.types.is_list(t) or pa.types.is_large_list(t):
            walk(t.value_field, path + [fld])
        elif pa.types.is_map(t):
            walk(pa.field("entries", pa.struct([t.key_field, t.item_field]), False), path + [fld])
        elif pa.types.is_fixed_size_list(t) and pa.types.is_struct(t.value_type):
            walk(t.value_field, path + [fld])  # structural FSL: multiplies the child's slots
        else:
            raise NotSupportedError(f"cannot write field {fld.name} of type {t}")

    walk(f, [])
    return out


def _is_packed(fld: pa.Field) -> bool:
    md = fld.metadata or {}
    return pa.types.is_struct(fld.type) and (b"lance-encoding:packed" in md or b"packed" in md)


def _is_blob(fld: pa.Field) -> bool:
    md = fld.metadata or {}
    return md.get(b"lance-encoding:blob") in (b"true", b"True", b"1")


def _valid_mask(arr: pa.Array) -> np.ndarray | None:
    if arr.null_count == 0:
        return None
    if pa.types.is_null(arr.type):
        return np.zeros(len(arr), dtype=bool)
    return np.asarray(arr.is_valid())


def leaf_slots(arr: pa.Array, leaf: Leaf) -> LeafSlots:
    """Walk ``arr`` (the top-level array) down ``leaf.path`` and record one slot per level."""
    n = len(arr)
    if len(leaf.path) == 1:  # a flat column: one visible slot per row, code 1 where null
        code = np.zeros(n, dtype=np.uint16)
        valid = _valid_mask(arr)
        if valid is not None:
            code[~valid] = 1
        return LeafSlots(None, code, np.ones(n, dtype=bool), arr, ["item"], n, frozenset())
    kinds: list[str] = []
    has_list = any(
        pa.types.is_list(f.type) or pa.types.is_large_list(f.type) or pa.types.is_map(f.type)
        for f in leaf.path[:-1]
    )
    max_rep = sum(
        1
        for f in leaf.path[:-1]
        if pa.types.is_list(f.type) or pa.types.is_large_list(f.type) or pa.types.is_map(f.type)
    )
    rep = np.full(n, max_rep, dtype=np.uint16) if has_list else None
    code = np.zeros(n, dtype=np.uint16)
    forced: set[int] = set()
    idx = np.arange(n, dtype=np.int64)  # element index into `cur` for alive slots (-1 = dead)
    cur = arr
    list_level = max_rep
    for depth, fld in enumerate(leaf.path):
        t = fld.type
        is_last = depth == len(leaf.path) - 1
        alive = (idx >= 0) & (code == 0)
        if is_last:
            kinds.append("item")
            valid = _valid_mask(cur)
            if valid is not None:
                nulls = alive.copy()
                nulls[alive] = ~valid[idx[alive]]
                code[nulls] = 2 * depth + 1
            break
        if pa.types.is_struct(t):
            kinds.append("struct")
            valid = _valid_mask(cur)
            if valid is not None:
                nulls = alive.copy()
                nulls[alive] = ~valid[idx[alive]]
                code[nulls] = 2 * depth + 1
            child_name = leaf.path[depth + 1].name
            cur = _struct_child(cur, leaf.path[depth + 1], child_name)
            continue
        if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_map(t):
            kinds.append("list")
            offsets = np.asarray(cur.offsets).astype(np.int64)
            valid = _valid_mask(cur)
            if ((idx >= 0) & (code != 0)).any():
                forced.add(2 * depth + 2)
            idx[~alive] = -1
            alive_idx = idx[alive]
            lens = np.zeros(len(idx), dtype=np.int64)
            lens[alive] = offsets[alive_idx + 1] - offsets[alive_idx]
            if valid is not None:
                nul = alive.copy()
                nul[alive] = ~valid[alive_idx]
                lens[nul] = 0
                code[nul] = 2 * depth + 1
                idx[nul] = -1
            else:
                nul = np.zeros(len(idx), dtype=bool)
            empty = alive & ~nul & (lens == 0)
            code[empty] = 2 * depth + 2
            idx[empty] = -1
            counts = np.where(lens > 0, lens, 1)
            total = int(counts.sum())
            parent = np.repeat(np.arange(len(idx), dtype=np.int64), counts)
            starts = np.cumsum(counts) - counts
            within = np.arange(total, dtype=np.int64) - starts[parent]
            assert rep is not None  # a list on the path: has_list
            new_rep = np.where(within == 0, rep[parent], list_level - 1).astype(np.uint16)
            new_code = code[parent]
            base = np.where(idx >= 0, offsets[np.maximum(idx, 0)], -1)
            new_idx = np.where(idx[parent] >= 0, base[parent] + within, -1)
            rep, code, idx = new_rep, new_code, new_idx
            list_level -= 1
            if pa.types.is_map(t):
                cur = pa.StructArray.from_arrays(
                    [cur.keys, cur.items], fields=[t.key_field, t.item_field]
                )
            else:
                cur = cur.values
            continue
        if pa.types.is_fixed_size_list(t):
            kinds.append("fsl")
            dim = t.list_size
            valid = _valid_mask(cur)
            if valid is not None:
                nulls = alive.copy()
                nulls[alive] = ~valid[idx[alive]]
                code[nulls] = 2 * depth + 1
            has = idx >= 0
            counts = np.where(has, dim, 1)
            total = int(counts.sum())
            parent = np.repeat(np.arange(len(idx), dtype=np.int64), counts)
            starts = np.cumsum(counts) - counts
            within = np.arange(total, dtype=np.int64) - starts[parent]
            if rep is not None:
                rep = np.where(within == 0, rep[parent], 0).astype(np.uint16)
            code = code[parent]
            base = np.where(has, (idx + cur.offset) * dim, -1)
            idx = np.where(has[parent], base[parent] + within, -1)
            cur = cur.values
            continue
        raise NotSupportedError(f"unexpected type {t} on a leaf path")
    visible = idx >= 0
    # null leaf items stay visible (placeholder values) but their idx is still valid
    vidx = idx[visible]
    if len(vidx) == len(cur) and (len(vidx) == 0 or (vidx[0] == 0 and np.all(np.diff(vidx) == 1))):
        values = cur
    else:
        values = cur.take(pa.array(vidx, type=pa.int64()))
    return LeafSlots(rep, code, visible, values, kinds, n, frozenset(forced))


def _struct_child(cur: pa.Array, child: pa.Field, name: str) -> pa.Array:
    if isinstance(cur, pa.StructArray):
        t = cur.type
        i = t.get_field_index(name)
        if i < 0:
            # duplicate names: fall back to identity
            for j in range(t.num_fields):
                if t.field(j) is child or t.field(j).equals(child):
                    i = j
                    break
        return cur.field(i)
    raise NotSupportedError(f"expected a struct array, got {cur.type}")


@dataclass
class Levels:
    """Resolved levels of one page of one leaf column.

    ``rep`` / ``deff``: u16 arrays over all slots, or None when absent.
    ``layers``: RepDefLayer values, innermost first.
    ``max_visible_def``: slots with def <= this carry a value.
    ``num_rows``: top-level rows.
    """

    rep: np.ndarray | None
    deff: np.ndarray | None
    layers: list[int]
    max_visible_def: int
    max_rep: int
    num_rows: int
    num_slots: int
    # leaf null mask over the visible values (True = null), or None
    value_nulls: np.ndarray | None = field(default=None)


def resolve(slots: LeafSlots) -> Levels:
    """Choose layer kinds from the recorded codes and number the def levels."""
    depth = len(slots.kinds)
    present = np.zeros(2 * depth + 2, dtype=bool)
    if len(slots.code):
        if slots.kinds == ["item"]:  # a flat column: codes 0 (valid) or 1 (null)
            present[1] = bool(slots.code.any())
        else:
            seen = np.bincount(slots.code)  # codes are small (< 2 * depth + 2)
            present[np.flatnonzero(seen)] = True
    for c in slots.forced:
        present[c] = True
    layers_outer_first: list[int] = []
    structural_fsl = "fsl" in slots.kinds
    for d, kind in enumerate(slots.kinds):
        # pylance 14 reads structural FSL pages only when every item layer is nullable
        has_null = present[2 * d + 1] or (structural_fsl and kind != "list")
        has_empty = present[2 * d + 2] if kind == "list" else False
        if kind == "list":
            if has_null and has_empty:
                layers_outer_first.append(NULL_AND_EMPTY_LIST)
            elif has_null:
                layers_outer_first.append(NULLABLE_LIST)
            elif has_empty:
                layers_outer_first.append(EMPTYABLE_LIST)
            else:
                layers_outer_first.append(ALL_VALID_LIST)
        else:
            layers_outer_first.append(NULLABLE_ITEM if has_null else ALL_VALID_ITEM)
    # number def levels innermost first
    lut = np.zeros(2 * depth + 2, dtype=np.uint16)
    level = 1
    max_visible = None
    for d in range(depth - 1, -1, -1):
        layer = layers_outer_first[d]
        if slots.kinds[d] == "list" and max_visible is None:
            max_visible = level - 1
        if layer in (NULLABLE_ITEM, NULLABLE_LIST):
            lut[2 * d + 1] = level
            level += 1
        elif layer == EMPTYABLE_LIST:
            lut[2 * d + 2] = level
            level += 1
        elif layer == NULL_AND_EMPTY_LIST:
            lut[2 * d + 1] = level
            lut[2 * d + 2] = level + 1
            level += 2
    max_def = level - 1
    if max_visible is None:
        max_visible = max_def
    deff = lut[slots.code] if max_def > 0 else None
    max_rep = sum(1 for k in slots.kinds if k == "list")
    value_nulls = None
    leaf_null_code = 2 * (depth - 1) + 1
    if present[leaf_null_code] or any(
        present[2 * d + 1] for d in range(depth - 1) if slots.kinds[d] == "struct"
    ):
        vc = slots.code[slots.visible]
        value_nulls = vc != 0
    return Levels(
        rep=slots.rep,
        deff=deff,
        layers=list(reversed(layers_outer_first)),
        max_visible_def=max_visible,
        max_rep=max_rep,
        num_rows=slots.num_rows,
        num_slots=len(slots.code),
        value_nulls=value_nulls,
    )


def concat_slots(parts: list[LeafSlots]) -> LeafSlots:
    """Concatenate the slots of consecutive row runs of the same leaf."""
    if len(parts) == 1:
        return parts[0]
    rep = None if parts[0].rep is None else np.concatenate([p.rep for p in parts])
    values = concat_arrays([p.values for p in parts])
    return LeafSlots(
        rep,
        np.concatenate([p.code for p in parts]),
        np.concatenate([p.visible for p in parts]),
        values,
        parts[0].kinds,
        sum(p.num_rows for p in parts),
        frozenset().union(*[p.forced for p in parts]),
    )


def concat_arrays(arrays: list[pa.Array]) -> pa.Array:
    """Concatenate arrays of one type.  Dictionary arrays (several of them) are unified and the
    items no row uses dropped, the others kept in order, as the reference writes such a page (a
    single array keeps its dictionary as given)."""
    if len(arrays) == 1:
        return arrays[0]
    if pa.types.is_dictionary(arrays[0].type):
        return _compact_dictionary(pa.chunked_array(arrays).unify_dictionaries().combine_chunks())
    return pa.concat_arrays(arrays)


def _compact_dictionary(arr: pa.DictionaryArray) -> pa.DictionaryArray:
    """``arr`` with only the dictionary items its rows use, in their dictionary order."""
    idx = arr.indices
    valid = np.asarray(idx.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
    raw = np.asarray(idx.fill_null(0).to_numpy(zero_copy_only=False), dtype=np.int64)
    used = np.unique(raw[valid])
    if len(used) == len(arr.dictionary):
        return arr
    remap = np.zeros(len(arr.dictionary), dtype=np.int64)
    remap[used] = np.arange(len(used))
    kind = "int" if pa.types.is_signed_integer(idx.type) else "uint"
    new_idx = pa.array(remap[raw].astype(f"{kind}{idx.type.bit_width}"), mask=~valid)
    return pa.DictionaryArray.from_arrays(new_idx, arr.dictionary.take(pa.array(used)))


def storage_type(t: pa.DataType) -> pa.DataType:
    """``t`` with every extension type replaced by its storage type (same physical layout)."""
    if isinstance(t, pa.BaseExtensionType):
        return storage_type(t.storage_type)
    if pa.types.is_fixed_size_list(t):
        return pa.list_(t.value_field.with_type(storage_type(t.value_type)), t.list_size)
    if pa.types.is_list(t):
        return pa.list_(t.value_field.with_type(storage_type(t.value_type)))
    if pa.types.is_large_list(t):
        return pa.large_list(t.value_field.with_type(storage_type(t.value_type)))
    if pa.types.is_struct(t):
        return pa.struct([t.field(i).with_type(storage_type(t.field(i).type)) for i in range(t.num_fields)])
    if pa.types.is_map(t):
        return pa.map_(t.key_field.with_type(storage_type(t.key_type)),
                       t.item_field.with_type(storage_type(t.item_type)), t.keys_sorted)
    return t


def storage_field(f: pa.Field) -> pa.Field:
    return f.with_type(storage_type(f.type))


def storage_array(arr: pa.Array, t: pa.DataType) -> pa.Array:
    """A zero-copy view of ``arr`` with storage type ``t`` (no-op when already of that type)."""
    return arr if arr.type == t else arr.view(t)
