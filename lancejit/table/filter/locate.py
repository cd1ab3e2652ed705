"""Where a filter's SQL text stops parsing, as a position in the text the caller wrote.

:func:`~.parse.parse_filter` hands sqlglot a rewritten text (literal ``IN`` lists cut out, string
literals re-spelled, long ``OR`` chains folded), so sqlglot's line and column point into that text,
not the caller's.  On a failure, :func:`syntax_error` looks for an unterminated quoted run or
comment in the caller's text; failing that, it parses a copy of the text of the same length in
which every character keeps its place (see ``parse.same_length_text``), so the position sqlglot
reports there is the caller's.  Positions are 1-based character numbers of the whole text (a
newline counts as one character).
"""

from __future__ import annotations

import re
from typing import Any

import sqlglot

from lancejit.core.errors import FilterSyntaxError

#: Characters of the filter shown each side of the position in the message.
EXCERPT = 30

# Closed quoted runs and comments are skipped whole; an opening with no close is caught by
# the last group.
_RUNS = re.compile(
    r"'(?:[^']|'')*'|`(?:[^`]|``)*`|\"(?:[^\"]|\"\")*\"|--[^\n]*|/\*.*?\*/|(?P<open>['`\"]|/\*)", re.DOTALL
)
_OPENED = {"'": "string", '"': "quoted string", "`": "quoted name", "/*": "comment"}
_CLASS_REPR = re.compile(r"<class '(?:[\w.]+\.)?(\w+)'>")


def unterminated(text: str) -> tuple[int, str] | None:
    """``(0-based offset, what)`` of the first quoted run or comment of ``text`` that is never
    closed (``what``: ``string``, ``quoted string``, ``quoted name`` or ``comment``), else None."""
    for m in _RUNS.finditer(text):
        if m.group("open") is not None:
            return m.start(), _OPENED[m.group("open")]
    return None


def _offset(text: str, line: int, col: int, highlight: str) -> int | None:
    """0-based offset of the token sqlglot highlights (its ``line`` and ``col`` are 1-based and
    ``col`` is the token's last character)."""
    lines = text.split("\n")
    if not 1 <= line <= len(lines):
        return None
    start = sum(len(x) + 1 for x in lines[: line - 1]) + col - max(len(highlight), 1)
    return start if 0 <= start < max(len(text), 1) else None


def _sqlglot_position(exc: Exception, text: str) -> tuple[int | None, str, str]:
    """``(0-based offset or None, description, highlighted token)`` of a sqlglot error."""
    errors = getattr(exc, "errors", None) or []
    if not errors:
        return None, _CLASS_REPR.sub(r"\1", str(exc).splitlines()[0] if str(exc) else type(exc).__name__), ""
    first = errors[0]
    description = _CLASS_REPR.sub(r"\1", str(first.get("description") or "unexpected input"))
    highlight = str(first.get("highlight") or "")
    line, col = first.get("line"), first.get("col")
    if not isinstance(line, int) or not isinstance(col, int):
        return None, description, highlight
    return _offset(text, line, col, highlight), description, highlight


def _locate(same_length: str, dialect: str) -> tuple[int | None, str, str] | None:
    """Parse the same-length copy again: where it fails, or None when it parses."""
    try:
        sqlglot.parse_one(same_length, dialect=dialect)
    except sqlglot.errors.SqlglotError as exc:
        return _sqlglot_position(exc, same_length)
    except RecursionError:
        return None
    return None


def excerpt(text: str, offset: int) -> str:
    """Two lines: the text around ``offset`` (newlines shown as spaces) and a caret under it."""
    lo = max(0, offset - EXCERPT)
    hi = min(len(text), offset + EXCERPT)
    head = "..." if lo else ""
    tail = "..." if hi < len(text) else ""
    shown = text[lo:hi].replace("\n", " ").replace("\r", " ").replace("\t", " ")
    return f"  {head}{shown}{tail}\n  {' ' * (len(head) + offset - lo)}^"


def short(text: str, n: int = 200) -> str:
    """``text`` cut to ``n`` characters."""
    return text if len(text) <= n else text[:n] + "..."


def syntax_error(text: str, exc: Exception, same_length: str | None, dialect: str) -> FilterSyntaxError:
    """The error for filter ``text`` whose rewritten form sqlglot refused with ``exc``;
    ``same_length`` is the copy of ``text`` for locating (None: too big to parse again)."""
    opened = unterminated(text)
    if opened is not None:
        start, what = opened
        return FilterSyntaxError(
            f"filter {short(text)!r} does not parse: unterminated {what} starting at character {start + 1}\n"
            f"{excerpt(text, start)}",
            position=start + 1,
        )
    found: tuple[int | None, str, Any] | None = None
    if same_length is not None:
        found = _locate(same_length, dialect)
    if found is None or found[0] is None:
        _, description, _ = _sqlglot_position(exc, "")
        return FilterSyntaxError(f"filter {short(text)!r} does not parse: {short(description, 300)}")
    offset, description, highlight = found
    assert offset is not None
    token = text[offset : offset + len(highlight)] if highlight else text[offset : offset + 1]
    at_end = not text[offset + len(token) :].strip()
    where = f"character {offset + 1} ({token!r}{', where the filter ends' if at_end else ''})"
    return FilterSyntaxError(
        f"filter {short(text)!r} does not parse at {where}: {short(description, 300)}\n{excerpt(text, offset)}",
        position=offset + 1,
    )


__all__ = ["EXCERPT", "excerpt", "short", "syntax_error", "unterminated"]
