"""The reference's commit API as values: ``LanceOperation.{Overwrite, Append, Delete, Update,
Merge, Restore, Rewrite, Project, UpdateConfig, DataReplacement, CreateIndex}`` and
``Transaction``, with the reference's field names, converted to and from lancejit's operations
(:mod:`.commit.operations`).

Fragments inside operations are :class:`~.meta.fragment_meta.FragmentMetadata` (what
``LanceFragment.create``, ``write_fragments`` and ``fragment.delete`` return); schemas are
lancejit ``LanceSchema`` objects or ``pyarrow.Schema`` (field ids resolved against the dataset by
name, new fields numbered after the dataset's largest id).
"""

from __future__ import annotations

import dataclasses
import uuid as _uuid
from dataclasses import dataclass
from typing import Any, Dict, Iterable, List, Optional

import pyarrow as pa

from lancejit.core.errors import InvalidInputError, InvalidTypeError, NotSupportedError
from lancejit.core.schema import LanceField, LanceSchema
from lancejit.pb import table_pb2

from .commit import operations as ops
from .meta.fragment_meta import DataFile, FragmentMetadata, fragment_pb


def _frag_list(fragments: Any, what: str) -> List[Any]:
    if isinstance(fragments, (str, bytes)) or not isinstance(fragments, Iterable):
        raise InvalidTypeError(f"{what} must be a list of FragmentMetadata, got {type(fragments).__name__}")
    out = list(fragments)
    for f in out:
        if not isinstance(f, (FragmentMetadata, table_pb2.DataFragment)) and not hasattr(f, "metadata"):
            raise InvalidTypeError(f"{what} must be a list of FragmentMetadata, got {type(f).__name__}")
    return out


class LanceOperation:
    """Namespace of the operations :meth:`LanceDataset.commit` applies."""

    class BaseOperation:
        """Base class of the operations."""

    @dataclass
    class Overwrite(BaseOperation):
        """Replace the schema and all fragments (creates the dataset when absent)."""

        new_schema: Any
        fragments: Iterable[FragmentMetadata]
        initial_bases: Optional[List[Any]] = None

        def __post_init__(self) -> None:
            if not isinstance(self.new_schema, (pa.Schema, LanceSchema)):
                raise InvalidTypeError(f"schema must be pyarrow.Schema or LanceSchema, got {type(self.new_schema)}")
            self.fragments = _frag_list(self.fragments, "fragments")
            if self.initial_bases:
                raise NotSupportedError("initial_bases (multi-base datasets) are not supported by lancejit")

    @dataclass
    class Append(BaseOperation):
        """Add new fragments."""

        fragments: Iterable[FragmentMetadata]

        def __post_init__(self) -> None:
            self.fragments = _frag_list(self.fragments, "fragments")

    @dataclass
    class Delete(BaseOperation):
        """Replace fragments with their new deletion files; remove whole fragments."""

        updated_fragments: Iterable[FragmentMetadata]
        deleted_fragment_ids: Iterable[int]
        predicate: str

        def __post_init__(self) -> None:
            self.updated_fragments = _frag_list(self.updated_fragments, "updated_fragments")
            self.deleted_fragment_ids = [int(i) for i in self.deleted_fragment_ids]

    @dataclass
    class Update(BaseOperation):
        """Rows rewritten (``update_mode`` "rewrite_rows", the default) or columns rewritten."""

        removed_fragment_ids: List[int] = dataclasses.field(default_factory=list)
        updated_fragments: List[FragmentMetadata] = dataclasses.field(default_factory=list)
        new_fragments: List[FragmentMetadata] = dataclasses.field(default_factory=list)
        fields_modified: List[int] = dataclasses.field(default_factory=list)
        fields_for_preserving_frag_bitmap: List[int] = dataclasses.field(default_factory=list)
        update_mode: str = ""
        updated_fragment_offsets: Optional[Dict[int, bytes]] = None

        def __post_init__(self) -> None:
            self.updated_fragments = _frag_list(self.updated_fragments, "updated_fragments")
            self.new_fragments = _frag_list(self.new_fragments, "new_fragments")
            if self.update_mode not in ("", "rewrite_rows", "rewrite_columns"):
                raise InvalidInputError(f"update_mode must be 'rewrite_rows' or 'rewrite_columns', got {self.update_mode!r}")

    @dataclass
    class Merge(BaseOperation):
        """Add columns: every fragment (with its new data files) and the new schema."""

        fragments: Iterable[FragmentMetadata]
        schema: Any
        preserves_nullability: bool = False

        def __post_init__(self) -> None:
            self.fragments = _frag_list(self.fragments, "fragments")

    @dataclass
    class Restore(BaseOperation):
        """Make ``version`` the latest again."""

        version: int

    @dataclass
    class RewriteGroup:
        """Old fragments replaced by new fragments holding the same rows."""

        old_fragments: Iterable[FragmentMetadata]
        new_fragments: Iterable[FragmentMetadata]

    @dataclass
    class RewrittenIndex:
        """An index rewritten by a compaction (carried, not built, by lancejit)."""

        old_id: str
        new_id: str
        new_details_type_url: str
        new_details_value: bytes
        new_index_version: int

    @dataclass
    class Rewrite(BaseOperation):
        """Rearrange data without changing it (compaction)."""

        groups: Iterable[Any]
        rewritten_indices: Iterable[Any] = dataclasses.field(default_factory=list)

        def __post_init__(self) -> None:
            self.groups = list(self.groups)
            self.rewritten_indices = list(self.rewritten_indices)

    @dataclass
    class CreateIndex(BaseOperation):
        """Add / remove index segments (lancejit carries these; it does not build them here)."""

        new_indices: List[Any]
        removed_indices: List[Any]

    @dataclass
    class DataReplacementGroup:
        """``new_file`` replaces the data file holding the same fields in fragment ``fragment_id``."""

        fragment_id: int
        new_file: DataFile

    @dataclass
    class DataReplacement(BaseOperation):
        """Replace data files of fragments (same fields, same rows)."""

        replacements: List[Any]

    @dataclass
    class Project(BaseOperation):
        """A new schema over the same data files (drops or renames columns)."""

        schema: Any
        preserves_nullability: bool = False

    @dataclass
    class UpdateMap:
        """Key changes (None deletes the key); ``replace`` replaces the whole map."""

        updates: Dict[str, Optional[str]]
        replace: bool = False

    @dataclass
    class UpdateConfig(BaseOperation):
        """Change the table config, table metadata, schema metadata or fields' metadata."""

        config_updates: Optional[Any] = None
        table_metadata_updates: Optional[Any] = None
        schema_metadata_updates: Optional[Any] = None
        field_metadata_updates: Optional[Dict[int, Any]] = None


@dataclass
class Transaction:
    """An operation and the version it was built on (the reference's ``Transaction``)."""

    read_version: int
    operation: LanceOperation.BaseOperation
    uuid: str = dataclasses.field(default_factory=lambda: str(_uuid.uuid4()))
    transaction_properties: Optional[Dict[str, str]] = dataclasses.field(default_factory=dict)


# ------------------------------------------------------------------ to lancejit's operations
def _pbs(frags: Iterable[Any]) -> tuple:
    return tuple(fragment_pb(f) for f in frags)


def schema_for(schema: Any, current: LanceSchema | None) -> LanceSchema:
    """``schema`` as a Lance schema: a ``LanceSchema`` as is; a ``pyarrow.Schema`` with the ids
    of ``current``'s fields of the same name (new fields numbered after the largest id)."""
    if isinstance(schema, LanceSchema):
        return schema
    if not isinstance(schema, pa.Schema):
        raise InvalidInputError(f"schema must be pyarrow.Schema or LanceSchema, got {type(schema).__name__}")
    if current is None:
        return LanceSchema.from_arrow(schema)
    by_name = {f.name: f for f in current.fields}
    counter = [current.max_field_id() + 1]
    fields = []
    for f in schema:
        old = by_name.get(f.name)
        if old is not None and old.to_arrow_field().type == f.type:
            fields.append(old)
        else:
            fields.append(LanceField.from_arrow(f, next_id=counter))
    md = {k.decode("utf-8", "replace"): bytes(v) for k, v in (schema.metadata or {}).items()}
    return LanceSchema(tuple(fields), md)


def _update_map(m: Any) -> ops.UpdateMap | None:
    if m is None:
        return None
    if isinstance(m, dict):
        return ops.UpdateMap(dict(m), False)
    return ops.UpdateMap(dict(m.updates), bool(m.replace))


def to_internal(op: Any, current: LanceSchema | None) -> ops.Operation:
    """``op`` (a ``LanceOperation``) as a lancejit operation; ``current`` is the dataset's schema
    (None for a new dataset)."""
    L = LanceOperation
    if isinstance(op, L.Overwrite):
        fields, meta = ops.schema_fields(schema_for(op.new_schema, None) if isinstance(op.new_schema, pa.Schema)
                                         else op.new_schema)
        return ops.Overwrite(_pbs(op.fragments), fields, meta)
    if isinstance(op, L.Append):
        return ops.Append(_pbs(op.fragments))
    if isinstance(op, L.Delete):
        return ops.Delete(_pbs(op.updated_fragments), tuple(op.deleted_fragment_ids), op.predicate or "")
    if isinstance(op, L.Update):
        if op.updated_fragment_offsets:
            raise NotSupportedError("Update.updated_fragment_offsets is not supported by lancejit")
        mode = ops.REWRITE_COLUMNS if op.update_mode == "rewrite_columns" else ops.REWRITE_ROWS
        return ops.Update(tuple(int(i) for i in op.removed_fragment_ids), _pbs(op.updated_fragments),
                          _pbs(op.new_fragments), tuple(int(i) for i in op.fields_modified), mode,
                          tuple(int(i) for i in op.fields_for_preserving_frag_bitmap))
    if isinstance(op, L.Merge):
        schema = schema_for(op.schema, current)
        fields, meta = ops.schema_fields(schema)
        return ops.Merge(_pbs(op.fragments), fields, meta, bool(op.preserves_nullability))
    if isinstance(op, L.Restore):
        return ops.Restore(int(op.version))
    if isinstance(op, L.Rewrite):
        if op.rewritten_indices:
            raise NotSupportedError("Rewrite.rewritten_indices is not supported by lancejit")
        return ops.Rewrite(tuple(ops.RewriteGroup(_pbs(g.old_fragments), _pbs(g.new_fragments))
                                 for g in op.groups))
    if isinstance(op, L.Project):
        schema = schema_for(op.schema, current) if not isinstance(op.schema, pa.Schema) else LanceSchema.from_arrow(op.schema)
        fields, _ = ops.schema_fields(schema)
        return ops.Project(fields, bool(op.preserves_nullability))
    if isinstance(op, L.UpdateConfig):
        return ops.UpdateConfig(
            config_updates=_update_map(op.config_updates),
            table_metadata_updates=_update_map(op.table_metadata_updates),
            schema_metadata_updates=_update_map(op.schema_metadata_updates),
            # a field whose changes are None has none (the reference skips it)
            field_metadata_updates={int(k): m for k, v in (op.field_metadata_updates or {}).items()
                                    if (m := _update_map(v)) is not None},
        )
    if isinstance(op, (L.DataReplacement, L.CreateIndex)):
        raise NotSupportedError(f"committing {type(op).__name__} operations is not supported by lancejit")
    raise InvalidInputError(f"operation must be a LanceOperation, got {type(op).__name__}")


# ------------------------------------------------------------------ from lancejit's operations
def _metas(frags: Iterable[Any]) -> List[FragmentMetadata]:
    return [FragmentMetadata.from_pb(f) for f in frags]


def _schema_of(fields: Iterable[Any], metadata: Any = None) -> LanceSchema:
    return LanceSchema.from_pb(list(fields), dict(metadata or {}))


def _ref_map(m: ops.UpdateMap | None) -> Any:
    return None if m is None else LanceOperation.UpdateMap(dict(m.updates), m.replace)


def from_internal(op: ops.Operation) -> Any:
    """A lancejit operation as the reference's ``LanceOperation`` value."""
    L = LanceOperation
    if isinstance(op, ops.Overwrite):
        return L.Overwrite(_schema_of(op.schema, op.schema_metadata), _metas(op.fragments))
    if isinstance(op, ops.Append):
        return L.Append(_metas(op.fragments))
    if isinstance(op, ops.Delete):
        return L.Delete(_metas(op.updated_fragments), list(op.deleted_fragment_ids), op.predicate)
    if isinstance(op, ops.Update):
        mode = "rewrite_columns" if op.update_mode == ops.REWRITE_COLUMNS else "rewrite_rows"
        return L.Update(list(op.removed_fragment_ids), _metas(op.updated_fragments), _metas(op.new_fragments),
                        list(op.fields_modified), list(op.fields_for_preserving_frag_bitmap), mode)
    if isinstance(op, ops.Merge):
        return L.Merge(_metas(op.fragments), _schema_of(op.schema, op.schema_metadata), op.preserves_nullability)
    if isinstance(op, ops.Restore):
        return L.Restore(op.version)
    if isinstance(op, ops.Rewrite):
        return L.Rewrite([L.RewriteGroup(_metas(g.old_fragments), _metas(g.new_fragments)) for g in op.groups])
    if isinstance(op, ops.Project):
        return L.Project(_schema_of(op.schema), op.preserves_nullability)
    if isinstance(op, ops.UpdateConfig):
        cfg = op.config_updates
        if cfg is None and (op.upsert_values or op.delete_keys):
            cfg = ops.UpdateMap({**dict(op.upsert_values), **{k: None for k in op.delete_keys}})
        return L.UpdateConfig(_ref_map(cfg), _ref_map(op.table_metadata_updates), _ref_map(op.schema_metadata_updates),
                              {k: _ref_map(v) for k, v in op.field_metadata_updates.items()} or None)
    return op  # operations the reference's Python API has no class for (ReserveFragments, carried ones)


def transaction_to_internal(txn: Transaction, current: LanceSchema | None) -> ops.Transaction:
    return ops.Transaction(int(txn.read_version), to_internal(txn.operation, current), txn.uuid,
                           transaction_properties=dict(txn.transaction_properties or {}))


def transaction_from_internal(txn: ops.Transaction) -> Transaction:
    return Transaction(txn.read_version, from_internal(txn.operation), txn.uuid, dict(txn.transaction_properties))


__all__ = ["LanceOperation", "Transaction", "from_internal", "schema_for", "to_internal",
           "transaction_from_internal", "transaction_to_internal"]
