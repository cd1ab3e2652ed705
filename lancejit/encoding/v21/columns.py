"""Which physical columns a 2.1/2.2 field owns, and the schema path of each.

In 2.1+ only leaves get columns, in pre-order.  A packed struct (``lance-encoding:packed``), a
blob field (``lance-encoding:blob`` or the ``lance.blob.v2`` extension) and an empty struct take
one column as a unit.  Lists/large lists/maps add a LIST node to the path, structs an ITEM node.
A fixed-size list of a primitive type is a leaf; a fixed-size list of structs/lists
("structural FSL") is not supported yet.
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa

from lancejit.core.errors import NotSupportedError
from lancejit.encoding.v21.repdef import ITEM, LIST, fsl_kind

PACKED_KEYS = ("lance-encoding:packed", "packed")
BLOB_KEY = "lance-encoding:blob"
BLOB_V2_EXTENSION = "lance.blob.v2"


def _meta(field: pa.Field) -> dict[str, str]:
    md = field.metadata or {}
    return {
        (k.decode() if isinstance(k, bytes) else k): (v.decode(errors="replace") if isinstance(v, bytes) else v)
        for k, v in md.items()
    }


def _truthy(v: str | None) -> bool:
    return v is not None and v.strip().lower() not in ("", "false", "0", "no", "off")


def is_packed(field: pa.Field) -> bool:
    md = _meta(field)
    return pa.types.is_struct(field.type) and any(_truthy(md.get(k)) for k in PACKED_KEYS)


def is_blob(field: pa.Field) -> bool:
    md = _meta(field)
    if md.get("ARROW:extension:name") == BLOB_V2_EXTENSION:
        return True
    return _truthy(md.get(BLOB_KEY))


def is_unit(field: pa.Field) -> bool:
    """True when ``field`` occupies exactly one column as a whole."""
    t = field.type
    if is_blob(field) or is_packed(field):
        return True
    if pa.types.is_struct(t) and t.num_fields == 0:
        return True
    return False


@dataclass(frozen=True, slots=True)
class LeafPath:
    """One leaf column: its column index and the nodes from the top-level field down.

    ``fields``: the Arrow fields along the path (outermost first; map entries included);
    ``kinds``: ITEM/LIST per node; ``leaf``: the field stored in the column.
    """

    column: int
    fields: tuple[pa.Field, ...]
    kinds: tuple[int, ...]
    child_index: tuple[int, ...]  # index of each node within its parent (0 for the top field)

    @property
    def leaf(self) -> pa.Field:
        return self.fields[-1]


def leaf_paths(field: pa.Field, first_column: int) -> list[LeafPath]:
    """The leaf columns of top-level ``field`` whose first column is ``first_column``."""
    out: list[LeafPath] = []

    def walk(f: pa.Field, fields: tuple, kinds: tuple, idx: tuple) -> None:
        t = f.type
        if is_unit(f):
            out.append(LeafPath(first_column + len(out), fields + (f,), kinds + (ITEM,), idx))
        elif pa.types.is_struct(t):
            for i in range(t.num_fields):
                walk(t.field(i), fields + (f,), kinds + (ITEM,), idx + (i,))
        elif pa.types.is_map(t):
            entries = pa.field("entries", pa.struct([t.key_field, t.item_field]), nullable=False)
            walk(entries, fields + (f,), kinds + (LIST,), idx + (0,))
        elif pa.types.is_list(t) or pa.types.is_large_list(t):
            walk(t.value_field, fields + (f,), kinds + (LIST,), idx + (0,))
        elif pa.types.is_fixed_size_list(t) and _is_structural(t.value_type):
            if not pa.types.is_struct(t.value_type):
                raise NotSupportedError(f"fixed-size list of {t.value_type} is not supported")
            walk(t.value_field, fields + (f,), kinds + (fsl_kind(t.list_size),), idx + (0,))
        elif pa.types.is_list_view(t) if hasattr(pa.types, "is_list_view") else False:
            raise NotSupportedError(f"type {t} is not a Lance type")
        else:
            out.append(LeafPath(first_column + len(out), fields + (f,), kinds + (ITEM,), idx))

    walk(field, (), (), (0,))
    return out


def _is_structural(t: pa.DataType) -> bool:
    return (
        pa.types.is_struct(t)
        or pa.types.is_list(t)
        or pa.types.is_large_list(t)
        or pa.types.is_map(t)
        or (pa.types.is_fixed_size_list(t) and _is_structural(t.value_type))
    )


def count_columns(field: pa.Field) -> int:
    """Columns owned by ``field`` in a 2.1+ file."""
    t = field.type
    if is_unit(field):
        return 1
    if pa.types.is_struct(t):
        return sum(count_columns(t.field(i)) for i in range(t.num_fields))
    if pa.types.is_map(t):
        return count_columns(t.key_field) + count_columns(t.item_field)
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return count_columns(t.value_field)
    if pa.types.is_fixed_size_list(t) and _is_structural(t.value_type):
        return count_columns(t.value_field)
    return 1
