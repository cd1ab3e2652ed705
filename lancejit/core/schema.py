"""Lance field trees and their conversion to and from ``pyarrow.Schema``.

A Lance schema is stored as a flat list of ``lance.file.Field`` protobufs in pre-order
(parent before children), each naming its ``parent_id`` (-1 at top level) and carrying a
*logical type* string (``"int32"``, ``"timestamp:us:UTC"``, ``"fixed_size_list:float:128"``,
``"dict:string:int32:false"``, ``"list"``, ``"struct"``, ``"map"`` ...).  The same list is
global buffer 0 of a v2 file (``FileDescriptor.schema``) and fields 1/5 of a table manifest.

:class:`LanceSchema` rebuilds the tree (:meth:`LanceSchema.from_pb`), flattens it back
(:meth:`LanceSchema.to_pb`), and converts to/from Arrow the way pylance 14 does:

* :meth:`LanceSchema.to_arrow` returns the schema ``LanceFileReader(path).metadata().schema``
  returns; ``to_arrow(dataset=True)`` the one ``lance.dataset(uri).schema`` returns (the only
  difference: ``json`` fields are ``arrow.json`` text there, JSONB ``large_binary`` in files).
* :meth:`LanceSchema.from_arrow` assigns field ids depth-first pre-order from 0.

Registered Arrow extension types (``arrow.uuid``, ``arrow.json``, and whatever the process
registered) are resolved the way an Arrow IPC / C-data import resolves them.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Iterable, Iterator, Mapping, Sequence

import pyarrow as pa

from lancejit.core.errors import CorruptFileError, InvalidInputError, NotSupportedError
from lancejit.pb import file_pb2

__all__ = [
    "ARROW_EXT_META_KEY",
    "ARROW_EXT_NAME_KEY",
    "BFLOAT16_EXT_NAME",
    "ENCODING_DICTIONARY",
    "ENCODING_NONE",
    "ENCODING_PLAIN",
    "ENCODING_VAR_BINARY",
    "LanceField",
    "LanceSchema",
    "UNENFORCED_PRIMARY_KEY_KEY",
    "arrow_type_to_logical",
    "logical_to_arrow_type",
    "parse_field_path",
]

ARROW_EXT_NAME_KEY = "ARROW:extension:name"
ARROW_EXT_META_KEY = "ARROW:extension:metadata"
BFLOAT16_EXT_NAME = "lance.bfloat16"
LANCE_JSON_EXT_NAME = "lance.json"
ARROW_JSON_EXT_NAME = "arrow.json"
UNENFORCED_PRIMARY_KEY_KEY = "lance-schema:unenforced-primary-key"

#: Legacy page-encoding hints (``lance.file.Encoding``), still written in v2 schemas.
ENCODING_NONE = 0
ENCODING_PLAIN = 1
ENCODING_VAR_BINARY = 2
ENCODING_DICTIONARY = 3

_UNITS = {"s", "ms", "us", "ns"}

_SIMPLE_TYPES: dict[str, pa.DataType] = {
    "null": pa.null(),
    "bool": pa.bool_(),
    "int8": pa.int8(),
    "uint8": pa.uint8(),
    "int16": pa.int16(),
    "uint16": pa.uint16(),
    "int32": pa.int32(),
    "uint32": pa.uint32(),
    "int64": pa.int64(),
    "uint64": pa.uint64(),
    "halffloat": pa.float16(),
    "float": pa.float32(),
    "double": pa.float64(),
    "string": pa.string(),
    "binary": pa.binary(),
    "large_string": pa.large_string(),
    "large_binary": pa.large_binary(),
    "json": pa.large_binary(),
    "date32:day": pa.date32(),
    "date64:ms": pa.date64(),
    "time32:s": pa.time32("s"),
    "time32:ms": pa.time32("ms"),
    "time64:us": pa.time64("us"),
    "time64:ns": pa.time64("ns"),
    "duration:s": pa.duration("s"),
    "duration:ms": pa.duration("ms"),
    "duration:us": pa.duration("us"),
    "duration:ns": pa.duration("ns"),
}
_SIMPLE_NAMES: dict[pa.DataType, str] = {
    t: name for name, t in _SIMPLE_TYPES.items() if name != "json"
}

#: Logical types whose Arrow type is built from child fields.
_NESTED = {"list", "list.struct", "large_list", "large_list.struct", "struct", "map"}


# --------------------------------------------------------------------------------------
# logical type strings <-> Arrow data types (non-nested types only)
# --------------------------------------------------------------------------------------


def _corrupt(message: str, path: str | None) -> CorruptFileError:
    return CorruptFileError(message, path=path)


def _parse_int(text: str, what: str, logical: str, path: str | None) -> int:
    try:
        return int(text)
    except ValueError:
        raise _corrupt(f"bad {what} {text!r} in logical type {logical!r}", path) from None


def logical_to_arrow_type(logical: str, *, path: str | None = None) -> pa.DataType:
    """Arrow type of a non-nested logical type string (not ``list``/``struct``/``map``).

    Raises :class:`NotSupportedError` for a well-formed type lancejit does not know and
    :class:`CorruptFileError` (naming ``path``) for a malformed one.
    """
    simple = _SIMPLE_TYPES.get(logical)
    if simple is not None:
        return simple
    parts = logical.split(":")
    kind = parts[0]
    if kind == "fixed_size_list":
        if len(parts) < 3:
            raise _corrupt(f"malformed logical type {logical!r}", path)
        size = _parse_int(parts[-1], "list size", logical, path)
        if size < 0:
            raise _corrupt(f"negative list size in {logical!r}", path)
        inner = ":".join(parts[1:-1])
        if inner == BFLOAT16_EXT_NAME:
            item = pa.field(
                "item",
                pa.binary(2),
                nullable=True,
                metadata={ARROW_EXT_NAME_KEY: BFLOAT16_EXT_NAME, ARROW_EXT_META_KEY: ""},
            )
        else:
            item = pa.field("item", logical_to_arrow_type(inner, path=path), nullable=True)
        return pa.list_(item, size)
    if kind == "fixed_size_binary":
        if len(parts) != 2:
            raise _corrupt(f"malformed logical type {logical!r}", path)
        size = _parse_int(parts[1], "byte width", logical, path)
        if size < 0:
            raise _corrupt(f"negative byte width in {logical!r}", path)
        return pa.binary(size)
    if kind == "dict":
        if len(parts) != 4:
            raise _corrupt(f"malformed dictionary type {logical!r}", path)
        value_type = logical_to_arrow_type(parts[1], path=path)
        index_type = logical_to_arrow_type(parts[2], path=path)
        if not pa.types.is_integer(index_type):
            raise _corrupt(f"dictionary index type must be an integer: {logical!r}", path)
        return pa.dictionary(index_type, value_type)
    if kind == "decimal":
        if len(parts) != 4:
            raise _corrupt(f"malformed decimal type {logical!r}", path)
        bits = _parse_int(parts[1], "decimal width", logical, path)
        precision = _parse_int(parts[2], "precision", logical, path)
        scale = _parse_int(parts[3], "scale", logical, path)
        if bits not in (128, 256):
            raise NotSupportedError(f"decimal width {bits} in logical type {logical!r}")
        try:
            return pa.decimal128(precision, scale) if bits == 128 else pa.decimal256(precision, scale)
        except (ValueError, pa.ArrowInvalid) as exc:
            raise _corrupt(f"invalid decimal type {logical!r}: {exc}", path) from None
    if kind == "timestamp":
        if len(parts) < 3:
            raise _corrupt(f"malformed timestamp type {logical!r}", path)
        unit = parts[1]
        if unit not in _UNITS:
            raise _corrupt(f"unknown time unit in {logical!r}", path)
        tz = ":".join(parts[2:])  # time zones such as "+05:00" contain colons
        try:
            return pa.timestamp(unit, None if tz == "-" else tz)
        except (ValueError, pa.ArrowInvalid) as exc:
            raise _corrupt(f"invalid timestamp type {logical!r}: {exc}", path) from None
    if kind in ("time32", "time64", "duration", "date32", "date64") or logical in _NESTED:
        raise _corrupt(f"malformed logical type {logical!r}", path)
    raise NotSupportedError(f"unsupported Lance logical type {logical!r}")


def arrow_type_to_logical(data_type: pa.DataType) -> str:
    """The logical type string pylance writes for an Arrow type (extension types: storage).

    Raises :class:`NotSupportedError` for types Lance cannot store (views, unions, ...).
    """
    t = data_type
    if isinstance(t, pa.BaseExtensionType):
        t = t.storage_type
    name = _SIMPLE_NAMES.get(t)
    if name is not None:
        return name
    if pa.types.is_timestamp(t):
        return f"timestamp:{t.unit}:{t.tz if t.tz is not None else '-'}"
    if pa.types.is_decimal128(t):
        return f"decimal:128:{t.precision}:{t.scale}"
    if pa.types.is_decimal256(t):
        return f"decimal:256:{t.precision}:{t.scale}"
    if pa.types.is_fixed_size_binary(t):
        return f"fixed_size_binary:{t.byte_width}"
    if pa.types.is_dictionary(t):
        value = arrow_type_to_logical(t.value_type)
        index = arrow_type_to_logical(t.index_type)
        return f"dict:{value}:{index}:false"
    if pa.types.is_fixed_size_list(t):
        item_type = t.value_type
        if _extension_name_of(item_type) == BFLOAT16_EXT_NAME or _is_bfloat16_field(t.value_field):
            return f"fixed_size_list:{BFLOAT16_EXT_NAME}:{t.list_size}"
        return f"fixed_size_list:{arrow_type_to_logical(item_type)}:{t.list_size}"
    if pa.types.is_map(t):
        return "map"
    if pa.types.is_list(t):
        return "list.struct" if pa.types.is_struct(t.value_type) else "list"
    if pa.types.is_large_list(t):
        return "large_list.struct" if pa.types.is_struct(t.value_type) else "large_list"
    if pa.types.is_struct(t):
        return "struct"
    raise NotSupportedError(f"Lance cannot store Arrow type {data_type}")


def _extension_name_of(t: pa.DataType) -> str | None:
    return t.extension_name if isinstance(t, pa.BaseExtensionType) else None


def _is_bfloat16_field(f: pa.Field) -> bool:
    md = f.metadata or {}
    return md.get(ARROW_EXT_NAME_KEY.encode()) == BFLOAT16_EXT_NAME.encode()


# --------------------------------------------------------------------------------------
# Extension-type metadata as the Arrow C data interface exports it
# --------------------------------------------------------------------------------------


class _ArrowSchemaC(ctypes.Structure):
    pass


_ArrowSchemaC._fields_ = [
    ("format", ctypes.c_char_p),
    ("name", ctypes.c_char_p),
    ("metadata", ctypes.c_void_p),
    ("flags", ctypes.c_int64),
    ("n_children", ctypes.c_int64),
    ("children", ctypes.c_void_p),
    ("dictionary", ctypes.c_void_p),
    ("release", ctypes.c_void_p),
    ("private_data", ctypes.c_void_p),
]

_capsule_get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_get_pointer.restype = ctypes.c_void_p
_capsule_get_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]


def _extension_metadata(t: pa.BaseExtensionType) -> dict[str, bytes]:
    """``ARROW:extension:*`` entries an Arrow export of extension type ``t`` carries."""
    capsule = t.__arrow_c_schema__()
    ptr = _capsule_get_pointer(capsule, b"arrow_schema")
    c_schema = _ArrowSchemaC.from_address(ptr)
    out: dict[str, bytes] = {}
    if c_schema.metadata:
        base = c_schema.metadata
        count = ctypes.c_int32.from_address(base).value
        pos = base + 4
        for _ in range(count):
            klen = ctypes.c_int32.from_address(pos).value
            key = ctypes.string_at(pos + 4, klen)
            pos += 4 + klen
            vlen = ctypes.c_int32.from_address(pos).value
            value = ctypes.string_at(pos + 4, vlen)
            pos += 4 + vlen
            out[key.decode("utf-8", "replace")] = value
    del capsule  # the capsule's destructor releases the exported schema
    out.setdefault(ARROW_EXT_NAME_KEY, t.extension_name.encode())
    return out


def _lossy(value: bytes) -> bytes:
    """Metadata values as pylance returns them (decoded as UTF-8 with replacement)."""
    return value.decode("utf-8", "replace").encode("utf-8")


# --------------------------------------------------------------------------------------
# Fields
# --------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class LanceField:
    """One node of a Lance field tree (a ``lance.file.Field`` with its children attached).

    ``metadata`` holds the raw Arrow field metadata (values are bytes; read-only mapping).
    ``encoding`` is the legacy hint (:data:`ENCODING_PLAIN` ...), ``dictionary`` the
    ``(offset, length)`` in bytes of a legacy (v0.1) file's dictionary, or ``None``.
    """

    id: int
    parent_id: int
    name: str
    logical_type: str
    nullable: bool = True
    metadata: Mapping[str, bytes] = field(default_factory=dict, hash=False)
    children: tuple["LanceField", ...] = ()
    extension_name: str = ""
    encoding: int = ENCODING_NONE
    dictionary: tuple[int, int] | None = None
    unenforced_primary_key: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.metadata, MappingProxyType):
            object.__setattr__(self, "metadata", MappingProxyType(dict(self.metadata)))

    # -- shape -------------------------------------------------------------------------

    @property
    def is_leaf(self) -> bool:
        """True if the field has no child fields (primitives, FSL, empty structs)."""
        return not self.children

    @property
    def is_struct(self) -> bool:
        return self.logical_type == "struct"

    @property
    def is_list(self) -> bool:
        """True for ``list``/``large_list`` (with or without ``.struct``)."""
        return self.logical_type in ("list", "list.struct", "large_list", "large_list.struct")

    @property
    def is_large_list(self) -> bool:
        return self.logical_type in ("large_list", "large_list.struct")

    @property
    def is_map(self) -> bool:
        return self.logical_type == "map"

    @property
    def is_blob(self) -> bool:
        """True if the field is marked as a blob (``lance-encoding:blob`` or blob v2 extension)."""
        value = self.metadata.get("lance-encoding:blob")
        if value is not None and value.lower() in (b"true", b"1", b"yes"):
            return True
        return self.extension_name == "lance.blob.v2"

    def walk(self) -> Iterator["LanceField"]:
        """This field and all its descendants, pre-order."""
        yield self
        for child in self.children:
            yield from child.walk()

    def child(self, name: str) -> "LanceField":
        """The direct child called ``name``; ``KeyError`` if absent."""
        for c in self.children:
            if c.name == name:
                return c
        raise KeyError(name)

    # -- Arrow ---------------------------------------------------------------------------

    def arrow_type(self, *, dataset: bool = False, path: str | None = None) -> pa.DataType:
        """The Arrow type of this field (extension types not yet resolved)."""
        lt = self.logical_type
        if lt in ("list", "list.struct", "large_list", "large_list.struct"):
            if len(self.children) != 1:
                raise _corrupt(
                    f"list field {self.name!r} (id {self.id}) has {len(self.children)} children", path
                )
            item = self.children[0].to_arrow_field(dataset=dataset, path=path)
            return pa.large_list(item) if lt.startswith("large") else pa.list_(item)
        if lt == "struct":
            return pa.struct([c.to_arrow_field(dataset=dataset, path=path) for c in self.children])
        if lt == "map":
            if len(self.children) != 1 or len(self.children[0].children) != 2:
                raise _corrupt(f"map field {self.name!r} (id {self.id}) needs one entries struct "
                               "with a key and a value", path)
            entries = self.children[0]
            key = entries.children[0].to_arrow_field(dataset=dataset, path=path)
            value = entries.children[1].to_arrow_field(dataset=dataset, path=path)
            try:
                return pa.map_(key, value)
            except (ValueError, TypeError, pa.ArrowInvalid) as exc:
                raise _corrupt(f"invalid map field {self.name!r}: {exc}", path) from None
        if self.children and lt.startswith("fixed_size_list:"):
            # pylance 14 gives a fixed-size list of structs one child field ("item")
            parts = lt.split(":")
            if len(parts) < 3 or len(self.children) != 1:
                raise _corrupt(
                    f"fixed-size list field {self.name!r} (id {self.id}) of type {lt!r} "
                    f"has {len(self.children)} children", path
                )
            size = _parse_int(parts[-1], "list size", lt, path)
            if size < 0:
                raise _corrupt(f"negative list size in {lt!r}", path)
            item = self.children[0].to_arrow_field(dataset=dataset, path=path)
            return pa.list_(item, size)
        if self.children:
            raise _corrupt(
                f"field {self.name!r} (id {self.id}) of type {lt!r} cannot have children", path
            )
        return logical_to_arrow_type(lt, path=path)

    def arrow_metadata(self, *, dataset: bool = False) -> dict[bytes, bytes]:
        """Arrow field metadata as pylance returns it (before extension resolution)."""
        md = {k.encode("utf-8"): _lossy(v) for k, v in self.metadata.items()}
        if self.extension_name:
            md[ARROW_EXT_NAME_KEY.encode()] = self.extension_name.encode("utf-8")
        if self.logical_type == "json":
            if dataset:
                md.pop(ARROW_EXT_NAME_KEY.encode(), None)
                md.pop(ARROW_EXT_META_KEY.encode(), None)
            else:
                md[ARROW_EXT_NAME_KEY.encode()] = LANCE_JSON_EXT_NAME.encode()
        return md

    def to_arrow_field(self, *, dataset: bool = False, path: str | None = None) -> pa.Field:
        """This field as a ``pyarrow.Field`` (extension types not yet resolved).

        ``dataset=True``: ``json`` fields become ``arrow.json`` text, as datasets return them.
        """
        if dataset and self.logical_type == "json":
            data_type: pa.DataType = pa.json_(pa.string())
        else:
            data_type = self.arrow_type(dataset=dataset, path=path)
        md = self.arrow_metadata(dataset=dataset)
        return pa.field(self.name, data_type, nullable=self.nullable, metadata=md or None)

    @classmethod
    def from_arrow(cls, f: pa.Field, *, next_id: list[int] | None = None,
                   parent_id: int = -1) -> "LanceField":
        """A field tree for Arrow field ``f``; ids come from ``next_id[0]`` (pre-order).

        Follows pylance 14: extension types are stored as their storage type with
        ``ARROW:extension:*`` metadata; ``arrow.json``/``lance.json`` become logical
        ``json`` (JSONB ``large_binary``); fixed-size lists get no child field, except a
        fixed-size list of structs, whose item is a child field.
        """
        counter = next_id if next_id is not None else [0]
        my_id = counter[0]
        counter[0] += 1
        data_type = f.type
        md: dict[str, bytes] = {
            k.decode("utf-8", "replace"): bytes(v) for k, v in (f.metadata or {}).items()
        }
        if isinstance(data_type, pa.BaseExtensionType):
            md.update(_extension_metadata(data_type))
            data_type = data_type.storage_type
        ext_name = md.get(ARROW_EXT_NAME_KEY, b"").decode("utf-8", "replace")
        if ext_name in (ARROW_JSON_EXT_NAME, LANCE_JSON_EXT_NAME):
            logical = "json"
            md[ARROW_EXT_NAME_KEY] = LANCE_JSON_EXT_NAME.encode()
            md.setdefault(ARROW_EXT_META_KEY, b"")
            ext_name = LANCE_JSON_EXT_NAME
        else:
            if pa.types.is_map(data_type) and data_type.keys_sorted:
                raise NotSupportedError(f"map field {f.name!r} with keys_sorted=True")
            logical = arrow_type_to_logical(data_type)
        pk_value = md.get(UNENFORCED_PRIMARY_KEY_KEY)
        pk = pk_value is not None and pk_value.decode("utf-8", "replace").lower() in ("true", "1", "yes")

        children: list[LanceField] = []
        child_fields: list[pa.Field] = []
        if logical == "json":
            pass
        elif pa.types.is_struct(data_type):
            child_fields = [data_type.field(i) for i in range(data_type.num_fields)]
        elif pa.types.is_map(data_type):
            child_fields = [data_type.field(0)]
        elif pa.types.is_list(data_type) or pa.types.is_large_list(data_type):
            child_fields = [data_type.value_field]
        elif pa.types.is_fixed_size_list(data_type) and pa.types.is_struct(data_type.value_type):
            child_fields = [data_type.value_field]  # pylance 14 writes an "item" child here
        for cf in child_fields:
            children.append(cls.from_arrow(cf, next_id=counter, parent_id=my_id))
        return cls(
            id=my_id,
            parent_id=parent_id,
            name=f.name,
            logical_type=logical,
            nullable=f.nullable,
            metadata=md,
            children=tuple(children),
            extension_name=ext_name,
            encoding=_encoding_hint(logical, data_type),
            dictionary=None,
            unenforced_primary_key=pk,
        )

    # -- protobuf ------------------------------------------------------------------------

    def to_pb(self) -> file_pb2.Field:
        """This node alone as a ``lance.file.Field`` (children not included)."""
        pb = file_pb2.Field(
            name=self.name,
            id=self.id,
            parent_id=self.parent_id,
            logical_type=self.logical_type,
            nullable=self.nullable,
            encoding=self.encoding,  # type: ignore[arg-type]  # generated stub: the enum takes ints
            extension_name=self.extension_name,
            unenforced_primary_key=self.unenforced_primary_key,
        )
        for k, v in self.metadata.items():
            pb.metadata[k] = v
        if self.dictionary is not None:
            pb.dictionary.offset, pb.dictionary.length = self.dictionary
        return pb

    @classmethod
    def from_pb(cls, pb: file_pb2.Field, children: Sequence["LanceField"] = ()) -> "LanceField":
        """One node from a ``lance.file.Field`` with the given children."""
        dictionary = (pb.dictionary.offset, pb.dictionary.length) if pb.HasField("dictionary") else None
        return cls(
            id=pb.id,
            parent_id=pb.parent_id,
            name=pb.name,
            logical_type=pb.logical_type,
            nullable=pb.nullable,
            metadata=dict(pb.metadata),
            children=tuple(children),
            extension_name=pb.extension_name,
            encoding=int(pb.encoding),
            dictionary=dictionary,
            unenforced_primary_key=pb.unenforced_primary_key,
        )


def _is_blob_descriptor_owner(pb: file_pb2.Field) -> bool:
    """True for a blob struct that a data file stores without children (blob v2): the
    descriptor fields following it (id -1, parent -1) belong to it."""
    if pb.logical_type != "struct" or pb.id < 0:
        return False
    value = pb.metadata.get("lance-encoding:blob")
    return (value is not None and value.lower() in (b"true", b"1", b"yes")) or (
        pb.extension_name == "lance.blob.v2")


def _encoding_hint(logical: str, data_type: pa.DataType) -> int:
    """Legacy encoding hint pylance writes for a field of this type."""
    if logical in ("struct", "null"):
        return ENCODING_NONE
    if logical.startswith("dict:"):
        return ENCODING_DICTIONARY
    if logical in ("string", "binary", "large_string", "large_binary", "json"):
        return ENCODING_VAR_BINARY
    return ENCODING_PLAIN


# --------------------------------------------------------------------------------------
# Field paths
# --------------------------------------------------------------------------------------


def parse_field_path(path: str) -> list[str]:
    """Split a dotted field path; names containing dots are quoted with backticks.

    ``"a.b"`` -> ``["a", "b"]``; ```a.`b.c`.d``` -> ``["a", "b.c", "d"]``;
    a doubled backtick inside quotes is a literal backtick.
    """
    parts: list[str] = []
    current: list[str] = []
    i = 0
    quoted = False
    started_quoted = False
    while i < len(path):
        ch = path[i]
        if quoted:
            if ch == "`":
                if i + 1 < len(path) and path[i + 1] == "`":
                    current.append("`")
                    i += 2
                    continue
                quoted = False
            else:
                current.append(ch)
        elif ch == "`" and not current:
            quoted = True
            started_quoted = True
        elif ch == ".":
            if not current and not started_quoted:
                raise InvalidInputError(f"empty name in field path {path!r}")
            parts.append("".join(current))
            current = []
            started_quoted = False
        else:
            current.append(ch)
        i += 1
    if quoted:
        raise InvalidInputError(f"unterminated backtick in field path {path!r}")
    if not current and not started_quoted:
        raise InvalidInputError(f"empty name in field path {path!r}")
    parts.append("".join(current))
    return parts


# --------------------------------------------------------------------------------------
# Schemas
# --------------------------------------------------------------------------------------


def _resolve_extensions(schema: pa.Schema) -> pa.Schema:
    """Turn ``ARROW:extension:*`` metadata into registered extension types, as an import does."""
    return pa.ipc.read_schema(pa.py_buffer(schema.serialize()))


@dataclass(frozen=True, slots=True)
class LanceSchema:
    """A Lance field tree: top-level ``fields`` plus Arrow schema ``metadata`` (bytes values)."""

    fields: tuple[LanceField, ...]
    metadata: Mapping[str, bytes] = field(default_factory=dict, hash=False)
    _by_id: Mapping[int, LanceField] = field(init=False, repr=False, compare=False, hash=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "fields", tuple(self.fields))
        if not isinstance(self.metadata, MappingProxyType):
            object.__setattr__(self, "metadata", MappingProxyType(dict(self.metadata)))
        by_id: dict[int, LanceField] = {}
        for f in self.walk():
            if f.id >= 0:
                by_id.setdefault(f.id, f)
        object.__setattr__(self, "_by_id", MappingProxyType(by_id))

    # -- protobuf ------------------------------------------------------------------------

    @classmethod
    def from_pb(cls, fields: Iterable[file_pb2.Field], metadata: Mapping[str, bytes] | None = None,
                *, path: str | None = None) -> "LanceSchema":
        """Rebuild the tree from a pre-order ``lance.file.Field`` list (parents first).

        Fields with ``parent_id == -1`` are top-level, except the blob v2 descriptor fields a
        data file stores (id -1, parent -1, right after a childless blob struct): they become
        that blob field's children (``kind, position, size, blob_id, blob_uri``), as a dataset
        scan returns them.  A missing or later parent, or a repeated id, raises
        :class:`CorruptFileError` naming ``path``.
        """
        pbs = list(fields)
        children_of: dict[int, list[int]] = {}
        index_of_id: dict[int, int] = {}
        top: list[int] = []
        blob_owner: int | None = None  # index of a childless blob struct collecting descriptors
        for i, pb in enumerate(pbs):
            if pb.id == -1 and pb.parent_id == -1 and blob_owner is not None:
                children_of.setdefault(blob_owner, []).append(i)
                continue
            blob_owner = i if _is_blob_descriptor_owner(pb) else None
            if pb.parent_id == -1:
                top.append(i)
            else:
                parent = index_of_id.get(pb.parent_id)
                if parent is None:
                    raise _corrupt(
                        f"field {pb.name!r} (id {pb.id}) names parent id {pb.parent_id} "
                        "which does not precede it", path)
                children_of.setdefault(parent, []).append(i)
            if pb.id >= 0:
                if pb.id in index_of_id:
                    raise _corrupt(f"field id {pb.id} appears twice", path)
                index_of_id[pb.id] = i

        def build(i: int, depth: int) -> LanceField:
            if depth > 1000:
                raise _corrupt("field tree nested too deeply", path)
            kids = [build(k, depth + 1) for k in children_of.get(i, ())]
            return LanceField.from_pb(pbs[i], kids)

        schema = cls(tuple(build(i, 0) for i in top), dict(metadata or {}))
        for f in schema.fields:  # validate every type and tree shape now, not at first use
            f.arrow_type(path=path)
        return schema

    @classmethod
    def from_file_descriptor(cls, fd: file_pb2.FileDescriptor, *, path: str | None = None
                             ) -> "LanceSchema":
        """The schema in a v2 file's global buffer 0 (``lance.file.FileDescriptor``)."""
        return cls.from_pb(fd.schema.fields, dict(fd.schema.metadata), path=path)

    def to_pb(self) -> list[file_pb2.Field]:
        """The flattened pre-order ``lance.file.Field`` list."""
        return [f.to_pb() for f in self.walk()]

    def to_pb_schema(self) -> file_pb2.Schema:
        """As a ``lance.file.Schema`` (fields + metadata)."""
        out = file_pb2.Schema(fields=self.to_pb())
        for k, v in self.metadata.items():
            out.metadata[k] = v
        return out

    # -- Arrow ---------------------------------------------------------------------------

    def to_arrow(self, *, dataset: bool = False, path: str | None = None) -> pa.Schema:
        """The ``pyarrow.Schema`` pylance 14 returns for this Lance schema.

        ``dataset=False``: as ``LanceFileReader.metadata().schema``; ``dataset=True``: as
        ``lance.dataset(uri).schema`` (``json`` -> ``arrow.json`` text).  Extension types
        registered in this process are resolved; unregistered ones stay metadata.
        """
        arrow_fields = [f.to_arrow_field(dataset=dataset, path=path) for f in self.fields]
        md = {k.encode("utf-8"): _lossy(v) for k, v in self.metadata.items()}
        return _resolve_extensions(pa.schema(arrow_fields, metadata=md or None))

    @classmethod
    def from_arrow(cls, schema: pa.Schema) -> "LanceSchema":
        """A Lance schema for ``schema`` with ids assigned depth-first pre-order from 0."""
        counter = [0]
        fields = tuple(LanceField.from_arrow(f, next_id=counter) for f in schema)
        md = {k.decode("utf-8", "replace"): bytes(v) for k, v in (schema.metadata or {}).items()}
        return cls(fields, md)

    @classmethod
    def from_pyarrow(cls, schema: pa.Schema) -> "LanceSchema":
        """The reference's name for :meth:`from_arrow`."""
        return cls.from_arrow(schema)

    def to_pyarrow(self) -> pa.Schema:
        """The reference's name for :meth:`to_arrow` (as a dataset returns it)."""
        return self.to_arrow(dataset=True)

    # -- lookup --------------------------------------------------------------------------

    def walk(self) -> Iterator[LanceField]:
        """All fields, pre-order (the order of the protobuf list)."""
        for f in self.fields:
            yield from f.walk()

    def leaf_ids(self) -> list[int]:
        """Ids of the fields without children, pre-order."""
        return [f.id for f in self.walk() if f.is_leaf]

    def field_ids(self) -> list[int]:
        """All field ids, pre-order."""
        return [f.id for f in self.walk()]

    def max_field_id(self) -> int:
        """The largest field id, -1 for an empty schema."""
        return max((f.id for f in self.walk()), default=-1)

    def field_by_id(self, field_id: int) -> LanceField:
        """The field with id ``field_id``; ``KeyError`` if absent."""
        try:
            return self._by_id[field_id]
        except KeyError:
            raise KeyError(f"no field with id {field_id}") from None

    def has_field_id(self, field_id: int) -> bool:
        return field_id in self._by_id

    def field(self, path: str | Sequence[str]) -> LanceField:
        """The field at a dotted path (``"a.b.c"``; see :func:`parse_field_path`) or name list.

        ``KeyError`` if any step is missing.
        """
        names = parse_field_path(path) if isinstance(path, str) else list(path)
        candidates: Sequence[LanceField] = self.fields
        found: LanceField | None = None
        for name in names:
            found = next((c for c in candidates if c.name == name), None)
            if found is None:
                raise KeyError(f"no field {path!r} in schema")
            candidates = found.children
        if found is None:
            raise KeyError(f"no field {path!r} in schema")
        return found

    def path_of(self, field_id: int) -> list[str]:
        """Names from the top-level field down to the field with ``field_id``."""
        target = self.field_by_id(field_id)
        names = [target.name]
        current = target
        while current.parent_id != -1:
            current = self.field_by_id(current.parent_id)
            names.append(current.name)
        return names[::-1]

    def project(self, names: Iterable[str | Sequence[str]]) -> "LanceSchema":
        """The sub-schema holding the named fields (dotted paths allowed), ids unchanged.

        A named field keeps all its descendants; a nested path keeps its ancestors with
        only the selected children.  Field order follows this schema.  Missing names raise
        ``KeyError``.
        """
        selected: set[int] = set()
        keep_ancestors: set[int] = set()
        wanted_paths = [parse_field_path(n) if isinstance(n, str) else list(n) for n in names]
        for p in wanted_paths:
            chain: list[LanceField] = []
            candidates: Sequence[LanceField] = self.fields
            for name in p:
                nxt = next((c for c in candidates if c.name == name), None)
                if nxt is None:
                    raise KeyError(f"no field {'.'.join(p)!r} in schema")
                chain.append(nxt)
                candidates = nxt.children
            if not chain:
                raise KeyError("empty field path")
            for anc in chain[:-1]:
                keep_ancestors.add(id(anc))
            selected.add(id(chain[-1]))

        def prune(f: LanceField) -> LanceField | None:
            if id(f) in selected:
                return f
            if id(f) not in keep_ancestors:
                return None
            kept = tuple(c for c in (prune(c) for c in f.children) if c is not None)
            return replace(f, children=kept)

        out = tuple(p for p in (prune(f) for f in self.fields) if p is not None)
        return LanceSchema(out, dict(self.metadata))

    def __len__(self) -> int:
        return len(self.fields)

    def __iter__(self) -> Iterator[LanceField]:
        return iter(self.fields)
