"""SQL predicate text -> a sqlglot tree, bounded so that no input can crash or recurse away.

* Literal ``IN (...)`` lists are cut out of the text before sqlglot sees it (one regular
  expression, vectorized literal conversion) and replaced by a placeholder identifier: a list of
  100,000 values costs milliseconds instead of a 100,000-node parse.
* Parenthesis nesting deeper than :data:`MAX_PAREN_DEPTH` is refused before parsing (the
  reference refuses about 50 levels), and the parsed tree may nest at most
  :data:`MAX_EXPRESSION_DEPTH` levels, where a chain of one operator (``a OR b OR c ...``)
  counts as one level: chains are flattened by the compiler, so their length is unbounded.
* Any ``RecursionError`` left (sqlglot recurses per nesting level) becomes
  :class:`~lancejit.core.errors.InvalidInputError`.
* Text that does not parse raises :class:`~lancejit.core.errors.FilterSyntaxError` naming the
  character of the caller's text where parsing stopped (:mod:`.locate`).
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass

import numpy as np
import sqlglot
from sqlglot import expressions as exp

from lancejit.core.errors import FilterSyntaxError, InvalidInputError

from .locate import short as _short, syntax_error

from .quick import quick_tree

DIALECT = "databricks"
#: Deepest parenthesis nesting accepted (checked on the text, outside quotes).
MAX_PAREN_DEPTH = 40
#: Deepest expression nesting accepted (an operator chain counts as one level).
MAX_EXPRESSION_DEPTH = 64
#: Prefix of the identifiers that stand for extracted IN lists.
PLACEHOLDER = "__lancejit_in_list_"

_QUOTED = r"'(?:[^']|'')*'|`(?:[^`]|``)*`|\"(?:[^\"]|\"\")*\""
_NUMBER = r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?"
_LIT = rf"(?:{_NUMBER}|'(?:[^']|'')*'|NULL)"
# A quoted run is consumed whole (IN lists inside strings are not touched); the atomic group
# keeps a list that does not close from backtracking item by item.
_SCAN = re.compile(
    rf"(?P<q>{_QUOTED})|(?P<in>\bIN\s*\(\s*(?>(?:{_LIT}\s*,\s*)*){_LIT}\s*\))", re.IGNORECASE
)
_NOT_BEFORE = re.compile(r"\bNOT\s*$", re.IGNORECASE)
_ITEM = re.compile(rf"{_NUMBER}|'(?:[^']|'')*'|NULL", re.IGNORECASE)
_INT = re.compile(r"[+-]?\d+")
_QUOTED_RE = re.compile(_QUOTED)
_IDENT = r"(?:[A-Za-z_][\w.]*|`(?:[^`]|``)*`)"
_EQ_TERM = re.compile(rf"\s*({_IDENT})\s*=\s*({_LIT})\s*", re.IGNORECASE)
_NE_TERM = re.compile(rf"\s*({_IDENT})\s*(?:!=|<>)\s*({_LIT})\s*", re.IGNORECASE)
#: Terms ``col = literal`` of one top-level OR chain (``col != literal`` of an AND chain) on one
#: column from which the text is rewritten to ``col IN (...)`` (``NOT IN``) before parsing.
CHAIN_TO_IN = 8
#: Most tokens (words, numbers, symbols; after the rewrites) handed to sqlglot, whose parse
#: time grows with them: this bounds a filter's parse to seconds.
MAX_TOKENS = 60_000
_TOKEN = re.compile(r"\w+|[^\w\s]")


@dataclass(frozen=True, slots=True)
class InList:
    """The literals of one ``IN (...)`` list: ``values`` (ints, floats or strs, as a NumPy array
    or a list) and whether a NULL was among them."""

    values: object
    has_null: bool
    kind: str  # "int", "float", "str" or "mixed"
    #: Written ``x NOT IN (...)`` (one predicate), not ``NOT x IN (...)`` (a NOT around one):
    #: the two parse alike, but the reference converts literals only in the first.
    not_in: bool = False


@dataclass(frozen=True, slots=True)
class ParsedFilter:
    tree: exp.Expression
    in_lists: dict[str, InList]


def _convert_items(items: list[str]) -> InList:
    has_null = False
    strs, nums = [], []
    for it in items:
        c = it[0]
        if c == "'":
            strs.append(it)
        elif c in "nN":
            has_null = True
        else:
            nums.append(it)
    if strs and nums:
        return InList([_num(n) for n in nums] + [_str(s) for s in strs], has_null, "mixed")
    if strs:
        return InList([_str(s) for s in strs], has_null, "str")
    if all(_INT.fullmatch(n) for n in nums):
        try:
            return InList(np.array(nums).astype(np.int64), has_null, "int")
        except (OverflowError, ValueError):
            return InList([int(n) for n in nums], has_null, "int")
    return InList(np.array(nums).astype(np.float64), has_null, "float")


def _numbers(inner: str) -> InList | None:
    """A list of plain numbers converted at once (None: it holds strings or NULL)."""
    if "'" in inner or "n" in inner or "N" in inner:
        return None
    items = np.array(inner.split(","))
    try:
        return InList(items.astype(np.int64), False, "int")
    except (OverflowError, ValueError):
        pass
    if any(c in inner for c in ".eE"):
        return InList(items.astype(np.float64), False, "float")
    return None


def _num(text: str) -> int | float:
    return int(text) if _INT.fullmatch(text) else float(text)


def _str(text: str) -> str:
    return text[1:-1].replace("''", "'")


def _requote(literal: str) -> str:
    """A SQL-standard string literal (``''`` escapes a quote, backslashes are plain, as the
    reference reads them) in the parser dialect's spelling (backslash escapes)."""
    value = _str(literal)
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _extract_in_lists(text: str) -> tuple[str, dict[str, InList], str]:
    """``text`` with literal IN lists replaced by placeholders, the lists, and the text with
    quoted runs blanked (for the depth check)."""
    out: list[str] = []
    blank: list[str] = []
    lists: dict[str, InList] = {}
    pos = 0
    for m in _SCAN.finditer(text):
        a, b = m.span()
        out.append(text[pos:a])
        blank.append(text[pos:a])
        if m.group("q") is not None:
            q = m.group(0)
            out.append(_requote(q) if q[0] == "'" else q)
            blank.append(" ")
        else:
            body = m.group(0)
            inner = body[body.index("(") + 1 : body.rindex(")")]
            key = f"{PLACEHOLDER}{len(lists)}"
            got = _numbers(inner) or _convert_items(_ITEM.findall(inner))
            if _NOT_BEFORE.search(text, 0, a):
                got = dataclasses.replace(got, not_in=True)
            lists[key] = got
            out.append(f"IN ({key})")
            blank.append("IN (x)")
        pos = b
    out.append(text[pos:])
    blank.append(text[pos:])
    return "".join(out), lists, "".join(blank)


def _blank_quotes(text: str) -> str:
    """``text`` with every quoted run replaced by as many ``x`` (positions kept)."""
    return _QUOTED_RE.sub(lambda m: "x" * len(m.group(0)), text)


def _split_top(text: str, blank: str, word: str) -> list[str]:
    """``text`` cut at the keyword ``word`` where it stands outside quotes and parentheses."""
    raw = np.frombuffer(blank.encode("latin-1", "replace"), dtype=np.uint8)
    depth = np.cumsum((raw == ord("(")).astype(np.int64) - (raw == ord(")")).astype(np.int64))
    cuts = [m.span() for m in re.finditer(rf"\b{word}\b", blank, re.IGNORECASE) if depth[m.start()] == 0]
    pieces, pos = [], 0
    for a, b in cuts:
        pieces.append(text[pos:a])
        pos = b
    pieces.append(text[pos:])
    return pieces


def _unwrap(piece: str) -> str:
    """``piece`` without balanced outer parentheses when it holds no other parenthesis."""
    core = piece.strip()
    k = len(core) - len(core.lstrip("("))
    if k and len(core) - len(core.rstrip(")")) == k and "(" not in core[k:-k] and ")" not in core[k:-k]:
        return core[k:-k]
    return piece


def _chain_to_in(text: str) -> str:
    """A top-level ``c = 1 OR c = 2 OR ...`` chain (or ``c != 1 AND c != 2 AND ...``) rewritten
    with ``c IN (1, 2, ...)`` (``c NOT IN``): same SQL meaning, NULLs included."""
    lowered = text.lower()
    if lowered.count(" or ") + lowered.count(" and ") < CHAIN_TO_IN:
        return text
    blank = _blank_quotes(text)
    for word, term, op in (("OR", _EQ_TERM, "IN"), ("AND", _NE_TERM, "NOT IN")):
        if word == "AND" and re.search(r"\bbetween\b", blank, re.IGNORECASE):
            continue  # BETWEEN's AND is not a conjunction
        pieces = _split_top(text, blank, word)
        if len(pieces) < CHAIN_TO_IN:
            continue
        groups: dict[str, list[str]] = {}
        rest: list[str] = []
        for piece in pieces:
            m = term.fullmatch(_unwrap(piece))
            if m is None:
                rest.append(piece)
            else:
                groups.setdefault(m.group(1), []).append(m.group(2))
        for col, lits in groups.items():
            if len(lits) >= CHAIN_TO_IN:
                rest.append(f" ({col} {op} ({', '.join(lits)})) ")
            else:
                rest.extend(f" {col} {'=' if op == 'IN' else '!='} {lit} " for lit in lits)
        return f" {word} ".join(rest)
    return text


def _paren_depth(unquoted: str) -> int:
    raw = np.frombuffer(unquoted.encode("utf-8", "replace"), dtype=np.uint8)
    step = (raw == ord("(")).astype(np.int64) - (raw == ord(")")).astype(np.int64)
    return int(np.cumsum(step).max(initial=0)) if len(step) else 0


def chain_terms(node: exp.Expression) -> list[exp.Expression]:
    """The operands of the And/Or chain rooted at ``node`` (through parentheses), in order,
    collected without recursion."""
    kind = type(node)
    out: list[exp.Expression] = []
    stack = [node]
    while stack:
        n = stack.pop()
        while isinstance(n, exp.Paren):
            n = n.this
        if type(n) is kind:
            stack.append(n.expression)
            stack.append(n.this)
        else:
            out.append(n)
    return out


def _chain_key(node: exp.Expression) -> type | None:
    return type(node) if isinstance(node, (exp.And, exp.Or)) else None


def expression_depth(tree: exp.Expression) -> int:
    """Nesting depth of ``tree`` without recursion; a child continuing its parent's operator
    chain (``And`` under ``And``...) or a parenthesis adds no level."""
    best = 0
    stack: list[tuple[exp.Expression, int, type | None]] = [(tree, 0, None)]
    while stack:
        node, parent_level, parent_key = stack.pop()
        key = _chain_key(node)
        if isinstance(node, exp.Paren):
            level, child_key = parent_level, parent_key
        elif key is not None and key is parent_key:
            level, child_key = parent_level, key
        else:
            level, child_key = parent_level + 1, key
        if level > best:
            best = level
            if best > MAX_EXPRESSION_DEPTH:
                return best
        stack.extend((child, level, child_key) for child in node.iter_expressions())
    return best


def same_length_text(text: str) -> str:
    """``text`` as sqlglot can parse it with every character in its place: string literals
    re-spelled in as many characters (``''`` -> ``\\'``, a backslash -> ``_``) and literal
    ``IN`` lists blanked to one number, so that a parse error's position is one in ``text``."""
    out: list[str] = []
    pos = 0
    for m in _SCAN.finditer(text):
        a, b = m.span()
        out.append(text[pos:a])
        body = m.group(0)
        if m.group("q") is not None:
            if body[0] == "'":
                body = "'" + _str(body).replace("\\", "_").replace("'", "\\'") + "'"
        else:
            head = body[: body.index("(") + 1]
            body = head + "0" + " " * (len(body) - len(head) - 2) + ")"
        out.append(body)
        pos = b
    out.append(text[pos:])
    return "".join(out)


def _token_count(text: str) -> int:
    return sum(1 for _ in _TOKEN.finditer(_blank_quotes(text)))


def parse_filter(text: str) -> ParsedFilter:
    """Parse ``text`` (bounded; see the module docstring)."""
    if not text.strip():
        raise FilterSyntaxError(f"filter {text!r} is empty", position=1)
    rewritten, lists, unquoted = _extract_in_lists(_chain_to_in(text))
    depth = _paren_depth(unquoted)
    if depth > MAX_PAREN_DEPTH:
        raise InvalidInputError(
            f"filter nests parentheses {depth} deep; at most {MAX_PAREN_DEPTH} levels are supported"
        )
    tokens = _token_count(rewritten)
    if tokens > MAX_TOKENS:
        raise InvalidInputError(
            f"filter has {tokens:,} tokens besides IN lists; at most {MAX_TOKENS:,} are supported"
        )
    tree = quick_tree(rewritten, PLACEHOLDER)  # simple filters without sqlglot's parser
    try:
        if tree is None:
            parsed = sqlglot.parse_one(rewritten, dialect=DIALECT)
            # (sqlglot >= 30 types its nodes as ``Expr``; each node class is an ``Expression``)
            assert isinstance(parsed, exp.Expression)
            tree = parsed
    except sqlglot.errors.SqlglotError as exc:
        same = same_length_text(text)
        locate = same if _token_count(same) <= MAX_TOKENS else None
        raise syntax_error(text, exc, locate, DIALECT) from None
    except RecursionError:
        raise InvalidInputError(f"filter {_short(text)!r} nests too deeply") from None
    if tree is None:
        raise FilterSyntaxError(f"filter {_short(text)!r} is empty", position=1)
    if expression_depth(tree) > MAX_EXPRESSION_DEPTH:
        raise InvalidInputError(
            f"filter {_short(text)!r} nests expressions more than {MAX_EXPRESSION_DEPTH} levels deep"
        )
    return ParsedFilter(tree, lists)

