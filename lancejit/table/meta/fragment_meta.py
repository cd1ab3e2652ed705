"""A fragment's metadata as plain values, with the reference's Python names and JSON form
(``FragmentMetadata``, ``DataFile``, ``DeletionFile``, ``RowIdMeta``, ``RowDatasetVersionMeta``),
converted to and from ``lance.table.DataFragment`` protobufs.

Distributed writers pass these between processes as ``to_json()`` strings (or pickles); the JSON
is the reference's, so fragments written by either library commit through the other.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, List, Optional

from lancejit.core.errors import InvalidInputError
from lancejit.pb import table_pb2

_DELETION_TYPES = {"array": table_pb2.DeletionFile.ARROW_ARRAY, "bitmap": table_pb2.DeletionFile.BITMAP}
_DELETION_NAMES = {v: k for k, v in _DELETION_TYPES.items()}


class _CallableStr(str):
    """A path that may also be called (``DataFile.path()`` was a method in older releases)."""

    def __call__(self) -> str:
        return str(self)

    def __reduce__(self) -> Any:
        return (str, (str(self),))


class DataFile:
    """One data file of a fragment: ``path`` (relative to ``data/``), the field ids it stores
    and their column indices, its format version and size in bytes (None = unknown)."""

    __slots__ = ("_path", "fields", "column_indices", "file_major_version", "file_minor_version",
                 "file_size_bytes", "base_id")

    def __init__(self, path: str, fields: List[int], column_indices: List[int] | None = None,
                 file_major_version: int = 0, file_minor_version: int = 0,
                 file_size_bytes: Optional[int] = None, base_id: Optional[int] = None) -> None:
        self._path = str(path)
        self.fields = [int(f) for f in fields]
        self.column_indices = [int(c) for c in (column_indices or [])]
        self.file_major_version = int(file_major_version)
        self.file_minor_version = int(file_minor_version)
        self.file_size_bytes = None if file_size_bytes is None else int(file_size_bytes)
        self.base_id = None if base_id is None else int(base_id)

    @property
    def path(self) -> str:
        return _CallableStr(self._path)

    def field_ids(self) -> List[int]:
        return self.fields

    def _key(self) -> tuple:
        return (self._path, self.fields, self.column_indices, self.file_major_version, self.file_minor_version,
                self.file_size_bytes, self.base_id)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, DataFile) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash((self._path, tuple(self.fields)))

    def __repr__(self) -> str:
        return (f"DataFile(path='{self._path}', fields={self.fields}, column_indices={self.column_indices}, "
                f"file_major_version={self.file_major_version}, file_minor_version={self.file_minor_version}, "
                f"file_size_bytes={self.file_size_bytes})")

    def __getstate__(self) -> dict:
        return self.to_dict()

    def __setstate__(self, state: dict) -> None:
        type(self).__init__(self, **state)

    def to_dict(self) -> dict:
        return {"path": self._path, "fields": list(self.fields), "column_indices": list(self.column_indices),
                "file_major_version": self.file_major_version, "file_minor_version": self.file_minor_version,
                "file_size_bytes": self.file_size_bytes, "base_id": self.base_id}

    def to_pb(self) -> table_pb2.DataFile:
        msg = table_pb2.DataFile(path=self._path, fields=self.fields, column_indices=self.column_indices,
                                 file_major_version=self.file_major_version,
                                 file_minor_version=self.file_minor_version,
                                 file_size_bytes=self.file_size_bytes or 0)
        if self.base_id is not None:
            msg.base_id = self.base_id
        return msg

    @classmethod
    def from_pb(cls, msg: table_pb2.DataFile) -> "DataFile":
        return cls(msg.path, list(msg.fields), list(msg.column_indices), msg.file_major_version,
                   msg.file_minor_version, msg.file_size_bytes or None,
                   msg.base_id if msg.HasField("base_id") else None)


@dataclass
class DeletionFile:
    """A fragment's deletion file (``_deletions/{id}-{read_version}-{id}.{arrow|bin}``)."""

    read_version: int
    id: int
    file_type: str
    num_deleted_rows: int
    base_id: Optional[int] = None

    def __post_init__(self) -> None:
        if self.file_type not in _DELETION_TYPES:
            raise InvalidInputError(f"deletion file type must be 'array' or 'bitmap', got {self.file_type!r}")

    def asdict(self) -> dict:
        return {"read_version": self.read_version, "id": self.id, "file_type": self.file_type,
                "num_deleted_rows": self.num_deleted_rows, "base_id": self.base_id}

    def json(self) -> str:
        return json.dumps(self.asdict())

    @staticmethod
    def from_json(text: str) -> "DeletionFile":
        return DeletionFile(**json.loads(text))

    def path(self, fragment_id: int, base_uri: str | None = None) -> str:
        """The file's path relative to the dataset root (under ``base_uri`` when given)."""
        suffix = "arrow" if self.file_type == "array" else "bin"
        rel = f"_deletions/{fragment_id}-{self.read_version}-{self.id}.{suffix}"
        return f"{base_uri.rstrip('/')}/{rel}" if base_uri else rel

    def __repr__(self) -> str:
        return f"DeletionFile(type='{self.file_type}', num_deleted_rows={self.num_deleted_rows})"

    def to_pb(self) -> table_pb2.DeletionFile:
        msg = table_pb2.DeletionFile(file_type=_DELETION_TYPES[self.file_type], read_version=self.read_version,
                                     id=self.id, num_deleted_rows=self.num_deleted_rows)
        if self.base_id is not None:
            msg.base_id = self.base_id
        return msg

    @classmethod
    def from_pb(cls, msg: table_pb2.DeletionFile) -> "DeletionFile":
        return cls(msg.read_version, msg.id, _DELETION_NAMES.get(msg.file_type, "array"), msg.num_deleted_rows,
                   msg.base_id if msg.HasField("base_id") else None)


class _SequenceMeta:
    """Bytes of a serialized sequence, inline or in an external file (row ids, row versions)."""

    _INLINE = "Inline"
    _EXTERNAL = "External"

    def __init__(self, inline: bytes | None = None, external: dict | None = None) -> None:
        self.inline = None if inline is None else bytes(inline)
        self.external = external

    def asdict(self) -> dict:
        if self.inline is not None:
            return {self._INLINE: list(self.inline)}
        return {self._EXTERNAL: dict(self.external or {})}

    def json(self) -> str:
        return json.dumps(self.asdict())

    @classmethod
    def from_dict(cls, d: dict) -> Any:
        for k, v in d.items():
            if k.lower() == "inline":
                return cls(inline=bytes(v))
            if k.lower() == "external":
                return cls(external=dict(v))
        raise InvalidInputError(f"not a {cls.__name__}: {d!r}")

    @classmethod
    def from_json(cls, text: str) -> Any:
        return cls.from_dict(json.loads(text))

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and self.asdict() == other.asdict()

    def __repr__(self) -> str:
        kind = "inline" if self.inline is not None else "external"
        return f"{type(self).__name__}({kind})"

    def set_on(self, frag: table_pb2.DataFragment, inline_name: str, external_name: str) -> None:
        if self.inline is not None:
            setattr(frag, inline_name, self.inline)
        else:
            ext = self.external or {}
            getattr(frag, external_name).CopyFrom(table_pb2.ExternalFile(
                path=ext.get("path", ""), offset=int(ext.get("offset", 0)), size=int(ext.get("size", 0))))

    @classmethod
    def from_fragment(cls, frag: table_pb2.DataFragment, oneof: str, inline_name: str) -> Any:
        which = frag.WhichOneof(oneof)
        if which is None:
            return None
        if which == inline_name:
            return cls(inline=getattr(frag, which))
        ext = getattr(frag, which)
        return cls(external={"path": ext.path, "offset": ext.offset, "size": ext.size})


class RowIdMeta(_SequenceMeta):
    """A fragment's stable row ids (a serialized ``RowIdSequence``)."""


class RowDatasetVersionMeta(_SequenceMeta):
    """The dataset versions of a fragment's rows (created / last updated)."""

    _INLINE = "inline"
    _EXTERNAL = "external"


@dataclass
class FragmentMetadata:
    """One fragment: ``id``, its data files, ``physical_rows`` (before deletions), the deletion
    file and row-id / row-version metadata (None when absent)."""

    id: int
    files: List[DataFile]
    physical_rows: int
    deletion_file: Optional[DeletionFile] = None
    row_id_meta: Optional[RowIdMeta] = None
    created_at_version_meta: Optional[RowDatasetVersionMeta] = None
    last_updated_at_version_meta: Optional[RowDatasetVersionMeta] = None
    overlays: List[Any] = field(default_factory=list)

    @property
    def num_deletions(self) -> int:
        return 0 if self.deletion_file is None else self.deletion_file.num_deleted_rows

    @property
    def num_rows(self) -> int:
        return self.physical_rows - self.num_deletions

    def data_files(self) -> List[DataFile]:
        return self.files

    def to_json(self) -> dict:
        """A JSON-serializable dict (the reference's form)."""
        return {
            "id": self.id,
            "files": [f.to_dict() for f in self.files],
            "overlays": [],
            "physical_rows": self.physical_rows,
            "deletion_file": self.deletion_file.asdict() if self.deletion_file is not None else None,
            "row_id_meta": self.row_id_meta.asdict() if self.row_id_meta is not None else None,
            "created_at_version_meta": (self.created_at_version_meta.asdict()
                                        if self.created_at_version_meta is not None else None),
            "last_updated_at_version_meta": (self.last_updated_at_version_meta.asdict()
                                             if self.last_updated_at_version_meta is not None else None),
        }

    @staticmethod
    def from_json(json_data: str | dict) -> "FragmentMetadata":
        d = json.loads(json_data) if isinstance(json_data, (str, bytes)) else dict(json_data)
        try:
            deletion = d.get("deletion_file")
            rid = d.get("row_id_meta")
            created = d.get("created_at_version_meta")
            updated = d.get("last_updated_at_version_meta")
            if d.get("overlays"):
                raise InvalidInputError("fragments with data overlays are not supported by lancejit")
            return FragmentMetadata(
                id=int(d["id"]), files=[DataFile(**f) for f in d["files"]], physical_rows=int(d["physical_rows"]),
                deletion_file=DeletionFile(**deletion) if deletion is not None else None,
                row_id_meta=RowIdMeta.from_dict(rid) if rid is not None else None,
                created_at_version_meta=RowDatasetVersionMeta.from_dict(created) if created is not None else None,
                last_updated_at_version_meta=RowDatasetVersionMeta.from_dict(updated) if updated is not None else None,
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise InvalidInputError(f"not a fragment's JSON: {exc}") from None

    def to_pb(self) -> table_pb2.DataFragment:
        frag = table_pb2.DataFragment(id=self.id, physical_rows=self.physical_rows)
        frag.files.extend(f.to_pb() for f in self.files)
        if self.deletion_file is not None:
            frag.deletion_file.CopyFrom(self.deletion_file.to_pb())
        if self.row_id_meta is not None:
            self.row_id_meta.set_on(frag, "inline_row_ids", "external_row_ids")
        if self.created_at_version_meta is not None:
            self.created_at_version_meta.set_on(frag, "inline_created_at_versions", "external_created_at_versions")
        if self.last_updated_at_version_meta is not None:
            self.last_updated_at_version_meta.set_on(frag, "inline_last_updated_at_versions",
                                                     "external_last_updated_at_versions")
        return frag

    @classmethod
    def from_pb(cls, frag: table_pb2.DataFragment) -> "FragmentMetadata":
        return cls(
            frag.id, [DataFile.from_pb(f) for f in frag.files], frag.physical_rows,
            DeletionFile.from_pb(frag.deletion_file) if frag.HasField("deletion_file") else None,
            RowIdMeta.from_fragment(frag, "row_id_sequence", "inline_row_ids"),
            RowDatasetVersionMeta.from_fragment(frag, "created_at_version_sequence", "inline_created_at_versions"),
            RowDatasetVersionMeta.from_fragment(frag, "last_updated_at_version_sequence",
                                                "inline_last_updated_at_versions"),
        )

    def __reduce__(self) -> Any:
        return (FragmentMetadata.from_json, (json.dumps(self.to_json()),))


def fragment_pb(frag: Any) -> table_pb2.DataFragment:
    """``frag`` (a :class:`FragmentMetadata`, a fragment object with ``.metadata``, a JSON string
    or a ``DataFragment`` protobuf) as a protobuf."""
    if isinstance(frag, table_pb2.DataFragment):
        return frag
    if isinstance(frag, FragmentMetadata):
        return frag.to_pb()
    meta = getattr(frag, "metadata", None)
    if isinstance(meta, FragmentMetadata):
        return meta.to_pb()
    if isinstance(frag, (str, dict)):
        return FragmentMetadata.from_json(frag).to_pb()
    raise InvalidInputError(f"expected FragmentMetadata, got {type(frag).__name__}")


__all__ = ["DataFile", "DeletionFile", "FragmentMetadata", "RowDatasetVersionMeta", "RowIdMeta", "fragment_pb"]
