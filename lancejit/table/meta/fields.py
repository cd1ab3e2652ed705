"""Field-id bookkeeping of a dataset schema (the manifest's flattened ``lance.file.Field`` list).

Maps each top-level column to its field id and the ids of all its descendants, so a
fragment's data file holding a column can be found from ``DataFile.fields`` (2.1+ files list
only the leaves that own columns; 2.0 and legacy files list every field).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import pyarrow as pa

from lancejit.core.errors import CorruptFileError


@dataclass(frozen=True, slots=True)
class TopField:
    """A top-level field: ``name``, its ``id`` and ``ids`` = itself plus every descendant."""

    name: str
    id: int
    ids: frozenset[int]


def top_level_fields(fields: Sequence[Any], where: str) -> list[TopField]:
    """Top-level fields in schema order from pre-order ``lance.file.Field`` messages."""
    parent_of: dict[int, int] = {}
    tops: list[tuple[str, int]] = []
    for f in fields:
        if f.id in parent_of:
            raise CorruptFileError(f"schema repeats field id {f.id}", path=where)
        parent_of[f.id] = f.parent_id
        if f.parent_id < 0:
            tops.append((f.name, f.id))
    members: dict[int, set[int]] = {fid: {fid} for _, fid in tops}
    for fid in parent_of:
        node, seen = fid, 0
        while parent_of.get(node, -1) >= 0:
            node = parent_of[node]
            seen += 1
            if seen > len(parent_of):
                raise CorruptFileError(f"schema has a parent cycle at field {fid}", path=where)
        if node not in members:
            raise CorruptFileError(f"field {fid} has a missing parent", path=where)
        members[node].add(fid)
    return [TopField(name, fid, frozenset(members[fid])) for name, fid in tops]


# ------------------------------------------------------------------ matching children by id
def same_shape(dataset_field: Any, file_field: Any) -> bool:
    """True when ``file_field``'s tree has the same names for the same ids at every level as
    ``dataset_field``'s (both :class:`lancejit.core.schema.LanceField`), so a file array can be
    used as is."""
    if dataset_field.name != file_field.name and dataset_field.parent_id >= 0:
        return False
    if dataset_field.logical_type != file_field.logical_type:
        return False
    if len(dataset_field.children) != len(file_field.children):
        return False
    return all(
        d.id == f.id and same_shape(d, f) for d, f in zip(dataset_field.children, file_field.children)
    )


def conform_array(array: pa.Array, dataset_field: Any, file_field: Any, target: pa.DataType) -> pa.Array:
    """``array`` (read for ``file_field`` from a data file) rebuilt as ``target``, the Arrow type
    of ``dataset_field``: struct children are matched by Lance field id at every level (renamed
    children keep their values, children the file lacks read as nulls, children the dataset
    dropped are left out)."""
    if same_shape(dataset_field, file_field):
        return array
    n = len(array)
    mask = array.is_null() if array.null_count else None
    if pa.types.is_struct(target):
        by_id = {c.id: i for i, c in enumerate(file_field.children)}
        children = []
        for j, d in enumerate(dataset_field.children):
            t = target.field(j)
            i = by_id.get(d.id)
            if i is None:
                children.append(pa.nulls(n, t.type))
            else:
                children.append(conform_array(array.field(i), d, file_field.children[i], t.type))
        return pa.StructArray.from_arrays(children, fields=list(target), mask=mask)
    if pa.types.is_list(target) or pa.types.is_large_list(target):
        if not (file_field.children and dataset_field.children):
            raise CorruptFileError(f"list field {dataset_field.name!r} has no item field")
        values = conform_array(
            array.values, dataset_field.children[0], file_field.children[0], target.value_type
        )
        cls = pa.LargeListArray if pa.types.is_large_list(target) else pa.ListArray
        return cls.from_arrays(array.offsets, values, type=target, mask=mask)
    if pa.types.is_fixed_size_list(target) and file_field.children and dataset_field.children:
        size = target.list_size
        values = array.values.slice(array.offset * size, n * size)
        values = conform_array(values, dataset_field.children[0], file_field.children[0], target.value_type)
        return pa.FixedSizeListArray.from_arrays(values, type=target, mask=mask)
    # leaves and maps (map entries keep the file's layout): names only differ at this level
    if array.type == target:
        return array
    try:
        return array.cast(target)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, TypeError):
        return array
