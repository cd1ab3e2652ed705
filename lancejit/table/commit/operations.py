"""Commits as data: one frozen dataclass per operation and :class:`Transaction` (operation + the
version it read), converting to and from ``lance.table.Transaction`` protobufs.

Fragments inside operations are ``lance.table.DataFragment`` protobuf messages (treat them as
immutable: the manifest builder copies them).  New fragments of ``Append`` / ``Overwrite`` /
``Update.new_fragments`` carry id 0 ("unassigned"): the manifest builder numbers them from
``max_fragment_id + 1`` (from 0 for ``Overwrite``), exactly like the reference.  Schemas are tuples
of ``lance.file.Field`` messages (pre-order, ids assigned), e.g. from
:meth:`lancejit.core.schema.LanceSchema.to_pb`.

:class:`Rewrite` (compaction) carries groups of old fragments (existing ids) and the new
fragments replacing them (ids reserved beforehand by a ``ReserveFragments`` commit, as the
reference does, or 0 = assigned at commit).

Operations lancejit does not build itself (DataReplacement, Clone,
UpdateMemWalState, UpdateBases) are read back as :class:`OtherOperation` keeping the raw message,
so conflict checks still see them and they can be written back unchanged; so is a committed
``CreateIndex`` (lancejit writes one with :class:`CreateIndex`).
"""

from __future__ import annotations

import uuid as _uuid
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence, Union

import pyarrow as pa

from lancejit.core.errors import CorruptFileError, InvalidInputError, NotSupportedError
from lancejit.core.schema import LanceSchema
from lancejit.pb import file_pb2, table_pb2, transaction_pb2

Fragment = table_pb2.DataFragment
Field = file_pb2.Field

REWRITE_ROWS = 0
REWRITE_COLUMNS = 1


# --------------------------------------------------------------------------- building blocks
def data_file(
    path: str,
    fields: Sequence[int],
    column_indices: Sequence[int],
    *,
    file_major_version: int = 2,
    file_minor_version: int = 2,
    file_size_bytes: int = 0,
) -> table_pb2.DataFile:
    """A ``DataFile`` description: ``path`` is relative to ``<root>/data/``; ``fields[i]`` is stored
    in top-level column ``column_indices[i]``; versions as in the file footer except 2.0 files,
    which are described as (2, 0) here; ``file_size_bytes`` in bytes."""
    if len(fields) != len(column_indices) and not (file_major_version == 0 and file_minor_version < 3):
        raise InvalidInputError("a data file needs one column index per field")
    return table_pb2.DataFile(
        path=path,
        fields=list(fields),
        column_indices=list(column_indices),
        file_major_version=file_major_version,
        file_minor_version=file_minor_version,
        file_size_bytes=file_size_bytes,
    )


def new_fragment(
    files: Iterable[table_pb2.DataFile], physical_rows: int, *, row_ids: bytes | None = None
) -> Fragment:
    """A fragment to add (id 0 = assigned at commit).  ``row_ids``: a serialized ``RowIdSequence``
    for rows that keep their ids (updates); None lets the commit assign fresh ids when the dataset
    uses stable row ids."""
    frag = Fragment(physical_rows=physical_rows)
    frag.files.extend(files)
    if row_ids is not None:
        frag.inline_row_ids = row_ids
    return frag


def schema_fields(schema: LanceSchema | pa.Schema) -> tuple[tuple[Field, ...], dict[str, bytes]]:
    """``(fields, schema_metadata)`` for an operation from a Lance or Arrow schema."""
    if isinstance(schema, pa.Schema):
        schema = LanceSchema.from_arrow(schema)
    meta = {k if isinstance(k, str) else k.decode(): bytes(v) for k, v in (schema.metadata or {}).items()}
    return tuple(schema.to_pb()), meta


def _frags(frags: Iterable[Fragment]) -> tuple[Fragment, ...]:
    out = []
    for f in frags:
        if not isinstance(f, table_pb2.DataFragment):
            raise InvalidInputError(f"expected a lance.table.DataFragment, got {type(f).__name__}")
        out.append(f)
    return tuple(out)


# -------------------------------------------------------------------------------- operations
@dataclass(frozen=True, slots=True, eq=False)
class Append:
    """Add new fragments (ids assigned at commit)."""

    fragments: tuple[Fragment, ...]
    name = "Append"


@dataclass(frozen=True, slots=True, eq=False)
class Overwrite:
    """Replace all fragments and the schema (also creates a dataset, read version 0)."""

    fragments: tuple[Fragment, ...]
    schema: tuple[Field, ...]
    schema_metadata: Mapping[str, bytes] = field(default_factory=dict)
    config_upsert_values: Mapping[str, str] = field(default_factory=dict)
    name = "Overwrite"


@dataclass(frozen=True, slots=True, eq=False)
class Delete:
    """Replace ``updated_fragments`` (new deletion files) and drop ``deleted_fragment_ids``."""

    updated_fragments: tuple[Fragment, ...]
    deleted_fragment_ids: tuple[int, ...] = ()
    predicate: str = ""
    name = "Delete"


@dataclass(frozen=True, slots=True, eq=False)
class Update:
    """Rewrite rows (``REWRITE_ROWS``: old rows deleted in ``updated_fragments``, new copies in
    ``new_fragments``) or columns (``REWRITE_COLUMNS``)."""

    removed_fragment_ids: tuple[int, ...] = ()
    updated_fragments: tuple[Fragment, ...] = ()
    new_fragments: tuple[Fragment, ...] = ()
    fields_modified: tuple[int, ...] = ()
    update_mode: int = REWRITE_ROWS
    fields_for_preserving_frag_bitmap: tuple[int, ...] = ()
    name = "Update"


@dataclass(frozen=True, slots=True, eq=False)
class Merge:
    """Add columns: the full new fragment list (each with its extra data files) and schema.

    ``preserves_nullability`` (Merge field 4, written by pylance 14 as 1 when adding nullable
    columns): the merge adds no field that data staged against the older schema could not omit.
    Pass False when adding a non-nullable column."""

    fragments: tuple[Fragment, ...]
    schema: tuple[Field, ...]
    schema_metadata: Mapping[str, bytes] = field(default_factory=dict)
    preserves_nullability: bool = True
    name = "Merge"


@dataclass(frozen=True, slots=True, eq=False)
class Project:
    """Drop (or rename) columns: the new schema; data files keep their field ids.

    ``preserves_nullability`` (Project field 2; pylance 14 writes 1 for drops and renames): False
    only when the projection tightens nullability."""

    schema: tuple[Field, ...]
    preserves_nullability: bool = True
    name = "Project"


@dataclass(frozen=True, slots=True, eq=False)
class Restore:
    """Make an old ``version`` the latest again (a new version with its content)."""

    version: int
    name = "Restore"


@dataclass(frozen=True, slots=True, eq=False)
class ReserveFragments:
    """Reserve ``num_fragments`` fragment ids (raises ``max_fragment_id``)."""

    num_fragments: int
    name = "ReserveFragments"


@dataclass(frozen=True, slots=True, eq=False)
class UpdateMap:
    """Changes to a string map: ``updates`` (key -> new value, None = delete the key); with
    ``replace`` the map becomes exactly the non-None updates."""

    updates: Mapping[str, str | None] = field(default_factory=dict)
    replace: bool = False

    def apply(self, current: Mapping[str, Any], encode: bool = False) -> dict[str, Any]:
        """``current`` after the changes (values as bytes when ``encode``)."""
        out = {} if self.replace else dict(current)
        for k, v in self.updates.items():
            if v is None:
                out.pop(k, None)
            else:
                out[k] = v.encode() if encode and isinstance(v, str) else v
        return out

    def to_pb(self, msg: Any) -> None:
        msg.SetInParent()
        msg.replace = self.replace
        for k, v in self.updates.items():
            e = msg.update_entries.add(key=k)
            if v is not None:
                e.value = v

    @classmethod
    def from_pb(cls, msg: Any) -> "UpdateMap":
        return cls({e.key: (e.value if e.HasField("value") else None) for e in msg.update_entries}, msg.replace)


@dataclass(frozen=True, slots=True, eq=False)
class UpdateConfig:
    """Changes to the table config (``Manifest.config``: ``upsert_values`` / ``delete_keys``, or
    ``config_updates``), the table metadata (``Manifest.table_metadata``), the schema metadata
    and fields' metadata (``field_metadata_updates``: field id -> changes)."""

    upsert_values: Mapping[str, str] = field(default_factory=dict)
    delete_keys: tuple[str, ...] = ()
    config_updates: UpdateMap | None = None
    table_metadata_updates: UpdateMap | None = None
    schema_metadata_updates: UpdateMap | None = None
    field_metadata_updates: Mapping[int, UpdateMap] = field(default_factory=dict)
    name = "UpdateConfig"

    def config_keys(self) -> set[str]:
        """The config keys this operation sets or removes."""
        keys = set(self.upsert_values) | set(self.delete_keys)
        if self.config_updates is not None:
            keys |= set(self.config_updates.updates)
        return keys


@dataclass(frozen=True, slots=True, eq=False)
class CreateIndex:
    """Add the indices ``new_indices`` (``IndexMetadata`` messages) to the manifest's index
    section, replacing ``removed_indices`` and any index of the same name; fragments unchanged."""

    new_indices: tuple[Any, ...]
    removed_indices: tuple[Any, ...] = ()
    name = "CreateIndex"


@dataclass(frozen=True, slots=True, eq=False)
class RewriteGroup:
    """Fragments ``old_fragments`` (as they were at the read version, in dataset order) replaced by
    ``new_fragments`` holding the same live rows in the same order."""

    old_fragments: tuple[Fragment, ...]
    new_fragments: tuple[Fragment, ...]


@dataclass(frozen=True, slots=True, eq=False)
class Rewrite:
    """Rearrange data without changing it (compaction): each group's old fragments are replaced,
    in place, by its new fragments.  ``rewritten_indices``: raw ``RewrittenIndex`` messages
    (lancejit writes none; kept when read back)."""

    groups: tuple[RewriteGroup, ...]
    rewritten_indices: tuple[Any, ...] = ()
    name = "Rewrite"


_OTHER_NAMES = {
    "create_index": "CreateIndex",
    "rewrite": "Rewrite",
    "data_replacement": "DataReplacement",
    "update_mem_wal_state": "UpdateMemWalState",
    "clone": "Clone",
    "update_bases": "UpdateBases",
    "update_config": "UpdateConfig",
    "data_overlay": "DataOverlay",
}


@dataclass(frozen=True, slots=True, eq=False)
class OtherOperation:
    """An operation lancejit only carries (``kind`` = the Transaction oneof field name)."""

    kind: str
    message: Any

    @property
    def name(self) -> str:
        return _OTHER_NAMES.get(self.kind, self.kind)


Operation = Union[
    Append, Overwrite, Delete, Update, Merge, Project, Restore, ReserveFragments, UpdateConfig, Rewrite,
    CreateIndex, OtherOperation,
]


@dataclass(frozen=True, slots=True, eq=False)
class Transaction:
    """One commit: ``operation`` applied on top of ``read_version`` (0 = the dataset did not exist
    or, for Overwrite, "whatever is there").  ``uuid`` is hyphenated; the transaction file is
    ``_transactions/{read_version}-{uuid}.txn``."""

    read_version: int
    operation: Operation
    uuid: str = field(default_factory=lambda: str(_uuid.uuid4()))
    tag: str = ""
    transaction_properties: Mapping[str, str] = field(default_factory=dict)

    @property
    def file_name(self) -> str:
        return f"{self.read_version}-{self.uuid}.txn"

    def with_read_version(self, read_version: int, operation: Operation | None = None) -> "Transaction":
        return Transaction(
            read_version, operation if operation is not None else self.operation, self.uuid, self.tag,
            dict(self.transaction_properties),
        )

    # ------------------------------------------------------------------------ protobuf
    def to_pb(self) -> transaction_pb2.Transaction:
        msg = transaction_pb2.Transaction(read_version=self.read_version, uuid=self.uuid, tag=self.tag)
        msg.transaction_properties.update(self.transaction_properties)
        op = self.operation
        if isinstance(op, Append):
            msg.append.SetInParent()
            msg.append.fragments.extend(op.fragments)
        elif isinstance(op, Overwrite):
            o = msg.overwrite
            o.SetInParent()
            o.fragments.extend(op.fragments)
            o.schema.extend(op.schema)
            o.schema_metadata.update(op.schema_metadata)
            o.config_upsert_values.update(op.config_upsert_values)
        elif isinstance(op, Delete):
            d = msg.delete
            d.SetInParent()
            d.updated_fragments.extend(op.updated_fragments)
            d.deleted_fragment_ids.extend(op.deleted_fragment_ids)
            d.predicate = op.predicate
        elif isinstance(op, Update):
            u = msg.update
            u.SetInParent()
            u.removed_fragment_ids.extend(op.removed_fragment_ids)
            u.updated_fragments.extend(op.updated_fragments)
            u.new_fragments.extend(op.new_fragments)
            u.fields_modified.extend(op.fields_modified)
            u.fields_for_preserving_frag_bitmap.extend(op.fields_for_preserving_frag_bitmap)
            u.update_mode = op.update_mode  # type: ignore[assignment]  # generated stub: the enum takes ints
        elif isinstance(op, Merge):
            m = msg.merge
            m.SetInParent()
            m.fragments.extend(op.fragments)
            m.schema.extend(op.schema)
            m.schema_metadata.update(op.schema_metadata)
            m.preserves_nullability = op.preserves_nullability
        elif isinstance(op, Project):
            msg.project.SetInParent()
            msg.project.schema.extend(op.schema)
            msg.project.preserves_nullability = op.preserves_nullability
        elif isinstance(op, Restore):
            msg.restore.SetInParent()
            msg.restore.version = op.version
        elif isinstance(op, ReserveFragments):
            msg.reserve_fragments.SetInParent()
            msg.reserve_fragments.num_fragments = op.num_fragments
        elif isinstance(op, UpdateConfig):
            uc = msg.update_config
            uc.SetInParent()
            uc.upsert_values.update(op.upsert_values)
            uc.delete_keys.extend(op.delete_keys)
            for name in ("config_updates", "table_metadata_updates", "schema_metadata_updates"):
                um = getattr(op, name)
                if um is not None:
                    um.to_pb(getattr(uc, name))
            for fid, um in op.field_metadata_updates.items():
                um.to_pb(uc.field_metadata_updates[int(fid)])
        elif isinstance(op, Rewrite):
            r = msg.rewrite
            r.SetInParent()
            for g in op.groups:
                pg = r.groups.add()
                pg.old_fragments.extend(g.old_fragments)
                pg.new_fragments.extend(g.new_fragments)
            r.rewritten_indices.extend(op.rewritten_indices)
        elif isinstance(op, CreateIndex):
            ci = msg.create_index
            ci.SetInParent()
            ci.new_indices.extend(op.new_indices)
            ci.removed_indices.extend(op.removed_indices)
        elif isinstance(op, OtherOperation):
            if op.message is None:
                raise NotSupportedError("cannot write a transaction whose operation lancejit does not know")
            getattr(msg, op.kind).CopyFrom(op.message)
        else:
            raise InvalidInputError(f"unknown operation {op!r}")
        return msg

    def serialize(self) -> bytes:
        """The bytes of the ``.txn`` file (a raw Transaction protobuf, no framing)."""
        return self.to_pb().SerializeToString()

    @classmethod
    def from_pb(cls, msg: transaction_pb2.Transaction) -> "Transaction":
        kind = msg.WhichOneof("operation")
        op: Operation
        if kind == "append":
            op = Append(_frags(msg.append.fragments))
        elif kind == "overwrite":
            o = msg.overwrite
            op = Overwrite(
                _frags(o.fragments), tuple(o.schema), {k: bytes(v) for k, v in o.schema_metadata.items()},
                dict(o.config_upsert_values),
            )
        elif kind == "delete":
            d = msg.delete
            op = Delete(_frags(d.updated_fragments), tuple(d.deleted_fragment_ids), d.predicate)
        elif kind == "update":
            u = msg.update
            op = Update(
                tuple(u.removed_fragment_ids), _frags(u.updated_fragments), _frags(u.new_fragments),
                tuple(u.fields_modified), int(u.update_mode), tuple(u.fields_for_preserving_frag_bitmap),
            )
        elif kind == "merge":
            m = msg.merge
            op = Merge(_frags(m.fragments), tuple(m.schema), {k: bytes(v) for k, v in m.schema_metadata.items()},
                       m.preserves_nullability)
        elif kind == "project":
            op = Project(tuple(msg.project.schema), msg.project.preserves_nullability)
        elif kind == "restore":
            op = Restore(msg.restore.version)
        elif kind == "reserve_fragments":
            op = ReserveFragments(msg.reserve_fragments.num_fragments)
        elif kind == "rewrite":
            r = msg.rewrite
            groups = [RewriteGroup(_frags(g.old_fragments), _frags(g.new_fragments)) for g in r.groups]
            if len(r.old_fragments) or len(r.new_fragments):  # the deprecated single-group form
                groups.insert(0, RewriteGroup(_frags(r.old_fragments), _frags(r.new_fragments)))
            op = Rewrite(tuple(groups), tuple(r.rewritten_indices))
        elif kind == "update_config" and not _has_legacy_maps(msg.update_config):
            uc = msg.update_config

            def update_map(name: str) -> UpdateMap | None:
                return UpdateMap.from_pb(getattr(uc, name)) if uc.HasField(name) else None

            op = UpdateConfig(
                dict(uc.upsert_values), tuple(uc.delete_keys), update_map("config_updates"),
                update_map("table_metadata_updates"), update_map("schema_metadata_updates"),
                {int(k): UpdateMap.from_pb(v) for k, v in uc.field_metadata_updates.items()},
            )
        elif kind is not None:
            op = OtherOperation(kind, getattr(msg, kind))
        else:
            # an operation newer than lancejit's transaction.proto (or none): conflicts with everything
            op = OtherOperation("unknown", None)
        return cls(msg.read_version, op, msg.uuid, msg.tag, dict(msg.transaction_properties))

    @classmethod
    def parse(cls, data: bytes | memoryview, path: str | None = None) -> "Transaction":
        """Decode a ``.txn`` file (or an inline transaction section's protobuf bytes)."""
        msg = transaction_pb2.Transaction()
        try:
            msg.ParseFromString(bytes(data))
        except Exception as exc:  # DecodeError / ValueError from the protobuf runtime
            raise CorruptFileError(f"transaction does not decode: {exc}", path=path) from None
        return cls.from_pb(msg)


def _has_legacy_maps(uc: Any) -> bool:
    """True when an UpdateConfig uses the older schema/field metadata maps (carried raw)."""
    return bool(len(uc.schema_metadata) or len(uc.field_metadata))


def modified_fragment_ids(op: Operation) -> set[int]:
    """Ids of existing fragments ``op`` replaces or removes (the reference's "modified" set)."""
    if isinstance(op, Delete):
        return {f.id for f in op.updated_fragments} | set(op.deleted_fragment_ids)
    if isinstance(op, Update):
        return {f.id for f in op.updated_fragments} | set(op.removed_fragment_ids)
    if isinstance(op, Merge):
        return {f.id for f in op.fragments}
    if isinstance(op, Rewrite):
        return {f.id for g in op.groups for f in g.old_fragments}
    if isinstance(op, OtherOperation) and op.kind == "rewrite":  # a raw message (tests, tools)
        ids = {f.id for f in op.message.old_fragments}
        for g in op.message.groups:
            ids |= {f.id for f in g.old_fragments}
        return ids
    if isinstance(op, OtherOperation) and op.kind == "data_replacement":
        return {r.fragment_id for r in op.message.replacements}
    return set()


__all__ = [
    "Append",
    "Delete",
    "Fragment",
    "Merge",
    "Operation",
    "OtherOperation",
    "Overwrite",
    "Project",
    "REWRITE_COLUMNS",
    "REWRITE_ROWS",
    "ReserveFragments",
    "Restore",
    "Rewrite",
    "RewriteGroup",
    "Transaction",
    "Update",
    "UpdateConfig",
    "UpdateMap",
    "CreateIndex",
    "data_file",
    "modified_fragment_ids",
    "new_fragment",
    "schema_fields",
]
