"""The ``lance.file.Schema`` a writer stores in global buffer 0.

Built with :class:`lancejit.core.schema.LanceField` node by node (pre-order ids from 0), plus one
addition pylance 14 makes that ``core.schema`` does not: a fixed-size list of structs (2.2) gets
its struct as a child field (named after the Arrow value field, ``item``).
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa

from lancejit.core.errors import NotSupportedError
from lancejit.core.schema import LanceField, LanceSchema
from lancejit.pb import file_pb2


def _storage(t: pa.DataType) -> pa.DataType:
    return t.storage_type if isinstance(t, pa.BaseExtensionType) else t


def is_structural_fsl(t: pa.DataType) -> bool:
    t = _storage(t)
    return pa.types.is_fixed_size_list(t) and pa.types.is_struct(_storage(t.value_type))


def _has_structural_fsl(t: pa.DataType) -> bool:
    t = _storage(t)
    if is_structural_fsl(t):
        return True
    if pa.types.is_struct(t):
        return any(_has_structural_fsl(t.field(i).type) for i in range(t.num_fields))
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        return _has_structural_fsl(t.value_type)
    if pa.types.is_map(t):
        return _has_structural_fsl(t.key_type) or _has_structural_fsl(t.item_type)
    return False


def _emit(f: pa.Field, parent: int, out: list, counter: list[int]) -> None:
    node = LanceField.from_arrow(f, next_id=[0])
    pb = node.to_pb()
    pb.id = counter[0]
    pb.parent_id = parent
    counter[0] += 1
    out.append(pb)
    t = _storage(f.type)
    children: list[pa.Field] = []
    if is_structural_fsl(t):  # whether or not core.schema already gives it the child
        children = [t.value_field]
    elif node.children:
        if pa.types.is_struct(t):
            children = [t.field(i) for i in range(t.num_fields)]
        elif pa.types.is_map(t):
            children = [t.field(0)]
        elif pa.types.is_list(t) or pa.types.is_large_list(t):
            children = [t.value_field]
    for c in children:
        _emit(c, pb.id, out, counter)


def file_schema_pb(schema: pa.Schema) -> file_pb2.Schema:
    """Fields (pre-order) and metadata of ``schema`` as pylance 14 writes them."""
    base = LanceSchema.from_arrow(schema).to_pb_schema()
    if not any(_has_structural_fsl(f.type) for f in schema):
        return base
    out: list = []
    counter = [0]
    for f in schema:
        _emit(f, -1, out, counter)
    result = file_pb2.Schema(fields=out)
    for k, v in base.metadata.items():
        result.metadata[k] = v
    return result


def apply_field_ids(pb: file_pb2.Schema, lance_schema: LanceSchema) -> bool:
    """Give the file schema ``pb`` the field ids (and parent ids) of ``lance_schema``, in place.

    The fields are matched one to one in pre-order, by name.  Returns False (``pb`` left
    numbered from 0) when they do not line up -- e.g. a 2.2 fixed-size list of structs, whose
    struct is an extra field in the file schema.
    """
    theirs = lance_schema.to_pb()
    if len(theirs) != len(pb.fields) or any(a.name != b.name for a, b in zip(pb.fields, theirs)):
        return False
    for mine, t in zip(pb.fields, theirs):
        mine.id = t.id
        mine.parent_id = t.parent_id
    return True


_JSON_EXTENSIONS = (b"arrow.json", b"lance.json")


def _reject_unsupported(f: pa.Field) -> None:
    """Types lancejit cannot write faithfully yet (JSON needs pylance's JSONB conversion)."""
    t = f.type
    ext = getattr(t, "extension_name", None)
    name = (f.metadata or {}).get(b"ARROW:extension:name")
    if (ext and ext.encode() in _JSON_EXTENSIONS) or name in _JSON_EXTENSIONS:
        raise NotSupportedError(f"field {f.name!r}: JSON columns (JSONB encoding) are not supported")
    if isinstance(t, pa.BaseExtensionType):
        t = t.storage_type
    if pa.types.is_struct(t):
        for i in range(t.num_fields):
            _reject_unsupported(t.field(i))
    elif pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        _reject_unsupported(t.value_field)
    elif pa.types.is_map(t):
        _reject_unsupported(t.key_field)
        _reject_unsupported(t.item_field)


@dataclass(frozen=True)
class WriterTemplate:
    """What a file writer derives from its schemas alone, shared by the files a table write
    makes with one schema: the Arrow ``schema`` and the file's ``schema_pb`` (field ids applied;
    read-only)."""

    schema: pa.Schema
    schema_pb: file_pb2.Schema


def writer_template(schema: pa.Schema, lance_schema: LanceSchema | None = None) -> WriterTemplate:
    """The :class:`WriterTemplate` of ``schema`` (types lancejit cannot write refused), carrying
    ``lance_schema``'s field ids when given."""
    for f in schema:
        _reject_unsupported(f)
    pb = file_schema_pb(schema)
    if lance_schema is not None:
        apply_field_ids(pb, lance_schema)
    return WriterTemplate(schema, pb)
