"""SQL predicate strings -> ``pyarrow.compute.Expression``.

Parsing uses sqlglot (backtick-quoted identifiers, single-quoted strings, as users of the
reference write them).  Supported: comparisons, AND/OR/NOT, IN / NOT IN, IS [NOT] NULL,
IS [NOT] TRUE/FALSE, [NOT] LIKE / ILIKE, [NOT] BETWEEN, + - * / % and unary minus, CAST,
DATE/TIMESTAMP literals and nested field access (``st.x`` or ``st['x']``).

:func:`compile_filter` returns the expression and the set of top-level columns it reads.
Evaluation follows SQL: rows where the predicate is NULL are not selected.
"""

from __future__ import annotations

import datetime as _dt
import re
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import sqlglot
from sqlglot import expressions as exp

from lancejit.core.errors import InvalidInputError

_DIALECT = "databricks"


@dataclass(frozen=True, slots=True)
class CompiledFilter:
    """A filter ready to evaluate: ``expression`` reads the top-level ``columns``."""

    expression: pc.Expression
    columns: frozenset[str]
    text: str


def _resolve(name_parts: list[str], schema: pa.Schema, text: str) -> tuple[str, ...]:
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


_TYPE_MAP = {
    "TINYINT": pa.int8(), "SMALLINT": pa.int16(), "INT": pa.int32(), "INTEGER": pa.int32(),
    "BIGINT": pa.int64(), "UTINYINT": pa.uint8(), "USMALLINT": pa.uint16(), "UINT": pa.uint32(),
    "UBIGINT": pa.uint64(), "FLOAT": pa.float32(), "REAL": pa.float32(), "DOUBLE": pa.float64(),
    "BOOLEAN": pa.bool_(), "TEXT": pa.string(), "VARCHAR": pa.string(), "CHAR": pa.string(),
    "STRING": pa.string(), "DATE": pa.date32(), "TIMESTAMP": pa.timestamp("us"),
    "TIMESTAMPTZ": pa.timestamp("us"), "TIMESTAMPNTZ": pa.timestamp("us"),
    "DATETIME": pa.timestamp("us"), "BINARY": pa.binary(), "VARBINARY": pa.binary(),
    "DECIMAL": pa.decimal128(38, 10),
}


class _Compiler:
    def __init__(self, schema: pa.Schema, text: str) -> None:
        self.schema = schema
        self.text = text
        self.columns: set[str] = set()

    def fail(self, node: exp.Expression) -> InvalidInputError:
        return InvalidInputError(f"filter {self.text!r}: unsupported expression {node.sql(_DIALECT)!r}")

    def column(self, parts: list[str]) -> pc.Expression:
        path = _resolve(parts, self.schema, self.text)
        self.columns.add(path[0])
        return pc.field(path[0]) if len(path) == 1 else pc.field(path)

    def column_parts(self, node: exp.Expression) -> list[str] | None:
        if isinstance(node, exp.Column):
            return [p.name for p in node.parts]
        if isinstance(node, exp.Dot):
            left = self.column_parts(node.this)
            if left is None or not isinstance(node.expression, exp.Identifier):
                return None
            return left + [node.expression.name]
        if isinstance(node, exp.Bracket) and len(node.expressions) == 1:
            key = node.expressions[0]
            left = self.column_parts(node.this)
            if left is not None and isinstance(key, exp.Literal) and key.is_string:
                return left + [key.this]
        return None

    def literal(self, node: exp.Literal) -> pc.Expression:
        if node.is_string:
            return pc.scalar(node.this)
        text = node.this
        if re.fullmatch(r"[+-]?\d+", text):
            return pc.scalar(int(text))
        return pc.scalar(float(text))

    def cast(self, node: exp.Cast) -> pc.Expression:
        to = node.to
        name = to.this.name if hasattr(to.this, "name") else str(to.this)
        target = _TYPE_MAP.get(name.upper())
        if target is None:
            raise self.fail(node)
        inner = node.this
        if isinstance(inner, exp.Literal) and inner.is_string:
            if target == pa.date32():
                return pc.scalar(pa.scalar(_dt.date.fromisoformat(inner.this), pa.date32()))
            if pa.types.is_timestamp(target):
                return pc.scalar(pa.scalar(_dt.datetime.fromisoformat(inner.this), target))
        return self.visit(inner).cast(target)

    def visit(self, node: exp.Expression) -> pc.Expression:
        parts = self.column_parts(node)
        if parts is not None:
            return self.column(parts)
        v = self.visit
        if isinstance(node, exp.Paren):
            return v(node.this)
        if isinstance(node, exp.Literal):
            return self.literal(node)
        if isinstance(node, exp.Boolean):
            return pc.scalar(bool(node.this))
        if isinstance(node, exp.Null):
            return pc.scalar(None)
        if isinstance(node, (exp.Cast, exp.TryCast)):
            return self.cast(node)
        if isinstance(node, exp.And):
            return v(node.this) & v(node.expression)
        if isinstance(node, exp.Or):
            return v(node.this) | v(node.expression)
        if isinstance(node, exp.Not):
            return ~v(node.this)
        if isinstance(node, exp.Neg):
            return pc.negate(v(node.this))
        binary = {
            exp.EQ: lambda a, b: a == b, exp.NEQ: lambda a, b: a != b,
            exp.LT: lambda a, b: a < b, exp.LTE: lambda a, b: a <= b,
            exp.GT: lambda a, b: a > b, exp.GTE: lambda a, b: a >= b,
            exp.Add: pc.add, exp.Sub: pc.subtract, exp.Mul: pc.multiply, exp.Div: pc.divide,
        }
        for cls, fn in binary.items():
            if type(node) is cls:
                return fn(v(node.this), v(node.expression))
        if isinstance(node, exp.Mod):  # SQL %: the sign follows the dividend (truncated division)
            return pc.remainder(v(node.this), v(node.expression))
        if isinstance(node, exp.Between):
            x = v(node.this)
            return (x >= v(node.args["low"])) & (x <= v(node.args["high"]))
        if isinstance(node, exp.In):
            if node.args.get("query") is not None or not node.expressions:
                raise self.fail(node)
            x = v(node.this)
            items = [v(e) for e in node.expressions]
            out = x == items[0]
            for item in items[1:]:
                out = out | (x == item)
            return out
        if isinstance(node, exp.Is):
            x = v(node.this)
            rhs = node.expression
            if isinstance(rhs, exp.Null):
                return x.is_null()
            if isinstance(rhs, exp.Boolean):
                return pc.fill_null(x == pc.scalar(bool(rhs.this)), False)
            raise self.fail(node)
        if isinstance(node, (exp.Like, exp.ILike)):
            pattern = node.expression
            if not (isinstance(pattern, exp.Literal) and pattern.is_string):
                raise self.fail(node)
            out = pc.match_like(v(node.this), pattern.this, ignore_case=isinstance(node, exp.ILike))
            return ~out if node.args.get("negate") else out
        raise self.fail(node)


def compile_filter(filter: str | pc.Expression, schema: pa.Schema) -> CompiledFilter:
    """Compile a SQL predicate (or accept an Expression) against the dataset's Arrow ``schema``."""
    if isinstance(filter, pc.Expression):
        text = str(filter)
        cols = {f.name for f in schema if re.search(r"(?<![\w])" + re.escape(f.name) + r"(?![\w])", text)}
        return CompiledFilter(filter, frozenset(cols or {f.name for f in schema}), text)
    if not isinstance(filter, str) or not filter.strip():
        raise InvalidInputError(f"filter must be a SQL string or pyarrow.compute.Expression, got {filter!r}")
    try:
        tree = sqlglot.parse_one(filter, dialect=_DIALECT)
    except sqlglot.errors.SqlglotError as exc:
        raise InvalidInputError(f"filter {filter!r} does not parse: {exc}") from None
    comp = _Compiler(schema, filter)
    expr = comp.visit(tree)
    return CompiledFilter(expr, frozenset(comp.columns), filter)


def evaluate_filter(compiled: CompiledFilter, table: pa.Table, num_rows: int | None = None) -> "pa.Array":
    """Positions (int64, ascending) of the rows of ``table`` where the predicate is TRUE.

    ``num_rows`` gives the row count when ``table`` has no columns."""
    n = table.num_rows if table.num_columns or num_rows is None else num_rows
    idx_name = "__lancejit_row__"
    idx = pa.array(np.arange(n, dtype=np.int64))
    t = table.append_column(idx_name, idx) if table.num_columns else pa.table({idx_name: idx})
    try:
        # ``& is_valid`` broadcasts literal-only predicates ("true") over the rows.
        out = t.filter(compiled.expression & pc.field(idx_name).is_valid())
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
        raise InvalidInputError(f"filter {compiled.text!r} cannot be evaluated: {exc}") from None
    return out.column(idx_name).combine_chunks()
