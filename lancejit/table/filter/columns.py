"""Column names in filters: identifier parts resolved to a field path of the schema.

A name that matches no field raises :class:`~lancejit.core.errors.UnknownColumnError` naming the
closest existing names (by :func:`difflib.get_close_matches`, compared case-insensitively), or,
when none is close, the names there are.
"""

from __future__ import annotations

import difflib

import pyarrow as pa

from lancejit.core.errors import InvalidInputError, UnknownColumnError

#: Closest names suggested for an unknown column.
SUGGESTIONS = 3
#: Similarity (difflib's ratio, 0..1) a name needs to be suggested.
CUTOFF = 0.6
#: A name after the closest is suggested only when its similarity is within this of the closest's.
SPREAD = 0.1
#: Names listed when none is close.
LISTED = 20


def closest_names(name: str, names: list[str], n: int = SUGGESTIONS) -> tuple[str, ...]:
    """Up to ``n`` of ``names`` closest to ``name``, best first: similarity (case-insensitive)
    at least :data:`CUTOFF` and within :data:`SPREAD` of the closest's."""
    by_lower: dict[str, str] = {}
    for candidate in names:
        by_lower.setdefault(candidate.lower(), candidate)
    hits = difflib.get_close_matches(name.lower(), list(by_lower), n=n, cutoff=CUTOFF)
    if not hits:
        return ()
    matcher = difflib.SequenceMatcher(b=name.lower())
    scores = []
    for h in hits:
        matcher.set_seq1(h)
        scores.append(matcher.ratio())
    return tuple(by_lower[h] for h, r in zip(hits, scores) if r >= scores[0] - SPREAD)


def _listing(names: list[str]) -> str:
    shown = ", ".join(repr(n) for n in names[:LISTED])
    return shown + (f" and {len(names) - LISTED} more" if len(names) > LISTED else "")


def unknown_column(text: str, parts: list[str], depth: int, names: list[str]) -> UnknownColumnError:
    """The error for ``parts[depth]`` matching none of ``names`` (the fields at that depth)."""
    missing = ".".join(parts[: depth + 1])
    parent = ".".join(parts[:depth])
    close = closest_names(parts[depth], names)
    prefix = f"{parent}." if parent else ""
    if close:
        hint = "; did you mean " + " or ".join(repr(prefix + c) for c in close) + "?"
    elif names:
        hint = ("; its fields: " if parent else "; columns: ") + _listing(names)
    else:
        hint = "" if parent else "; there are no columns"
    if parent and not names:
        what = f"column {parent!r} is not a struct (no field {parts[depth]!r})"
    elif parent:
        what = f"struct column {parent!r} has no field {parts[depth]!r}"
    else:
        what = f"no column {parts[depth]!r}"
    return UnknownColumnError(
        f"filter {text!r}: {what}{hint}",
        name=missing,
        suggestions=tuple(prefix + c for c in close),
    )


def resolve_column(name_parts: list[str], schema: pa.Schema, text: str) -> tuple[str, ...]:
    """Map identifier parts to a field path, matching names exactly, then case-insensitively
    (a case-insensitive name matching two fields is refused as ambiguous)."""
    path: list[str] = []
    fields = list(schema)
    for i, part in enumerate(name_parts):
        match = next((f for f in fields if f.name == part), None)
        if match is None:
            lowered = [f for f in fields if f.name.lower() == part.lower()]
            if len(lowered) > 1:
                raise InvalidInputError(
                    f"filter {text!r}: {'.'.join(name_parts[: i + 1])!r} is ambiguous: it matches "
                    + " and ".join(repr(f.name) for f in lowered) + " (quote the exact name with backticks)"
                )
            match = lowered[0] if lowered else None
        if match is None:
            raise unknown_column(text, name_parts, i, [f.name for f in fields])
        path.append(match.name)
        t = match.type
        fields = list(t) if pa.types.is_struct(t) else []
    return tuple(path)


__all__ = ["closest_names", "resolve_column", "unknown_column"]
