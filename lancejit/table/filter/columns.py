"""Column names in filters: identifier parts resolved to a field path of the schema."""

from __future__ import annotations

import pyarrow as pa

from lancejit.core.errors import InvalidInputError


def resolve_column(name_parts: list[str], schema: pa.Schema, text: str) -> tuple[str, ...]:
    """Map identifier parts to a field path, matching names exactly, then case-insensitively."""
    path: list[str] = []
    fields = list(schema)
    for i, part in enumerate(name_parts):
        match = next((f for f in fields if f.name == part), None)
        if match is None:
            lowered = [f for f in fields if f.name.lower() == part.lower()]
            match = lowered[0] if len(lowered) == 1 else None
        if match is None:
            raise InvalidInputError(f"filter {text!r}: no column {'.'.join(name_parts[: i + 1])!r}")
        path.append(match.name)
        t = match.type
        fields = list(t) if pa.types.is_struct(t) else []
    return tuple(path)


__all__ = ["resolve_column"]
