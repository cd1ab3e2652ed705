"""Arrow schemas as JSON-compatible dicts, in the reference's form (``lance.schema_to_json`` /
``json_to_schema``): ``{"fields": [{"name", "type": {"type": <logical type>, "fields": [...],
"length": n}, "nullable", "metadata"}], "metadata": {...}}``; leaf types are Lance logical type
strings, nested types (lists, structs, fixed-size lists, maps) carry their children."""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from .errors import InvalidInputError
from .schema import arrow_type_to_logical, logical_to_arrow_type

_NESTED_NAMES = {"list": pa.list_, "large_list": pa.large_list}


def _type_json(t: pa.DataType) -> dict[str, Any]:
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return {"type": "list" if pa.types.is_list(t) else "large_list", "fields": [_field_json(t.value_field)]}
    if pa.types.is_fixed_size_list(t) and not arrow_type_to_logical(t).startswith("fixed_size_list:lance"):
        return {"type": "fixed_size_list", "fields": [_field_json(t.value_field)], "length": t.list_size}
    if pa.types.is_struct(t):
        return {"type": "struct", "fields": [_field_json(t.field(i)) for i in range(t.num_fields)]}
    if pa.types.is_map(t):
        return {"type": "map", "fields": [_field_json(t.key_field), _field_json(t.item_field)],
                "keys_sorted": bool(t.keys_sorted)}
    return {"type": arrow_type_to_logical(t)}


def _field_json(f: pa.Field) -> dict[str, Any]:
    out: dict[str, Any] = {"name": f.name, "type": _type_json(f.type), "nullable": f.nullable}
    if f.metadata:
        out["metadata"] = {k.decode(): v.decode() for k, v in f.metadata.items()}
    return out


def schema_to_json(schema: pa.Schema) -> dict[str, Any]:
    """``schema`` as a JSON-compatible dict."""
    out: dict[str, Any] = {"fields": [_field_json(f) for f in schema]}
    if schema.metadata:
        out["metadata"] = {k.decode(): v.decode() for k, v in schema.metadata.items()}
    return out


def _type_of(d: dict[str, Any]) -> pa.DataType:
    kind = d.get("type")
    children = [_field_of(c) for c in d.get("fields", [])]
    if kind in _NESTED_NAMES:
        return _NESTED_NAMES[kind](children[0])
    if kind == "fixed_size_list":
        return pa.list_(children[0], int(d["length"]))
    if kind == "struct":
        return pa.struct(children)
    if kind == "map":
        return pa.map_(children[0], children[1], keys_sorted=bool(d.get("keys_sorted", False)))
    if not isinstance(kind, str):
        raise InvalidInputError(f"not a schema's JSON type: {d!r}")
    return logical_to_arrow_type(kind)


def _field_of(d: dict[str, Any]) -> pa.Field:
    try:
        return pa.field(d["name"], _type_of(d["type"]), nullable=bool(d.get("nullable", True)),
                        metadata=d.get("metadata") or None)
    except (KeyError, TypeError) as exc:
        raise InvalidInputError(f"not a schema's JSON field: {exc}") from None


def json_to_schema(schema_json: dict[str, Any]) -> pa.Schema:
    """The Arrow schema of :func:`schema_to_json`'s dict."""
    if not isinstance(schema_json, dict) or "fields" not in schema_json:
        raise InvalidInputError("expected a dict with 'fields'")
    return pa.schema([_field_of(f) for f in schema_json["fields"]], metadata=schema_json.get("metadata") or None)


__all__ = ["json_to_schema", "schema_to_json"]
