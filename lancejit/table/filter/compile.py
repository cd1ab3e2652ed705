"""SQL predicate strings -> ``pyarrow.compute.Expression``.

Parsing uses sqlglot (backtick-quoted identifiers, single-quoted strings, as users of the
reference write them), bounded by :mod:`.filter_parse` (literal ``IN`` lists never reach
sqlglot; nesting depth is limited; no input recurses away).  Supported: comparisons,
AND/OR/NOT, IN / NOT IN, IS [NOT] NULL, IS [NOT] TRUE/FALSE, [NOT] LIKE / ILIKE, [NOT] BETWEEN,
+ - * / % and unary minus, CAST, DATE/TIMESTAMP literals and nested field access (``st.x`` or ``st['x']``).

:func:`compile_filter` returns the expression and the set of top-level columns it reads.
Evaluation follows SQL: rows where the predicate is NULL are not selected.

Scaling: ``IN`` lists become one ``is_in`` set lookup; ``AND``/``OR`` chains are flattened and
rebuilt as balanced trees (depth log2 of the terms, never a 20,000-deep Arrow expression);
in an ``OR`` chain, :data:`GROUP_EQUALITIES` or more ``column = literal`` terms on one column
become one set lookup too.
"""

from __future__ import annotations

import datetime as _dt
import re
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import expressions as exp

from lancejit.core.errors import InvalidInputError
from lancejit.encoding.arrow_build import array_of, scalar_of

from .evaluate import (
    BoolNode, balanced as _balanced, check_expression, combine, evaluate_expression, evaluate_tree, negate,
)
from .columns import resolve_column as _resolve
from .fast import FastNode, fast_positions, plan_fast
from .functions import compile_function
from .floats import float_key, key_set, literal_key
from .parse import DIALECT as _DIALECT, PLACEHOLDER, InList, parse_filter

#: ``col = literal`` terms of one OR chain on one column from which they become one set lookup.
GROUP_EQUALITIES = 8
#: Filters with a kernel plan are evaluated by :mod:`.filter_fast` (False: always by Arrow,
#: for measurements and tests).
USE_KERNELS = True
_NULL_BOOL = pa.nulls(1, pa.bool_())[0]
_I64_MAX = (1 << 63) - 1
_U64_MAX = (1 << 64) - 1
_COMPARE = {
    "eq": lambda a, b: a == b, "ne": lambda a, b: a != b, "lt": lambda a, b: a < b,
    "le": lambda a, b: a <= b, "gt": lambda a, b: a > b, "ge": lambda a, b: a >= b,
}
_COMPARE_NODES = {exp.EQ: "eq", exp.NEQ: "ne", exp.LT: "lt", exp.LTE: "le", exp.GT: "gt", exp.GTE: "ge"}


@dataclass(frozen=True, slots=True)
class CompiledFilter:
    """A filter ready to evaluate: ``root`` (one Arrow expression, or for very long AND/OR
    chains an n-ary :class:`~.filter_eval.BoolNode` of them) reads the top-level ``columns``."""

    root: pc.Expression | BoolNode
    columns: frozenset[str]
    text: str
    #: The same predicate as a kernel plan (:mod:`.filter_fast`), None when it has none.
    fast: FastNode | None = None

    @property
    def expression(self) -> pc.Expression:
        """The filter as one Arrow expression (InvalidInputError for n-ary trees)."""
        return check_expression(self.root, f"filter {self.text[:200]!r}")


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
    def __init__(self, schema: pa.Schema, text: str, in_lists: dict[str, InList] | None = None) -> None:
        self.schema = schema
        self.text = text if len(text) <= 200 else text[:200] + "..."
        self.columns: set[str] = set()
        self.in_lists = in_lists or {}

    def fail(self, node: exp.Expression) -> InvalidInputError:
        try:
            what = node.sql(_DIALECT)
        except RecursionError:  # pragma: no cover - depth is bounded before
            what = type(node).__name__
        if len(what) > 200:
            what = what[:200] + "..."
        return InvalidInputError(f"filter {self.text!r}: unsupported expression {what!r}")

    def column_type(self, node: exp.Expression) -> pa.DataType | None:
        """The Arrow type of ``node`` when it is a plain column reference (None otherwise)."""
        parts = self.column_parts(node)
        if parts is None:
            return None
        path = _resolve(parts, self.schema, self.text)
        t = self.schema.field(path[0]).type
        for p in path[1:]:
            t = t.field(p).type
        return t

    def chain(self, node: exp.Expression) -> list[exp.Expression]:
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

    def value_set(self, values: InList, target: pa.DataType | None, node: exp.Expression) -> pa.Array:
        try:
            if values.kind == "str":
                arr = array_of(values.values, pa.string())
            else:
                arr = array_of(values.values)
            if target is not None and arr.type != target:
                arr = arr.cast(target, safe=True)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError, TypeError, OverflowError) as exc:
            raise InvalidInputError(f"filter {self.text!r}: IN list does not match the column's type: {exc}") from None
        return arr

    def set_lookup(self, x: pc.Expression, arr: pa.Array, has_null: bool) -> pc.Expression:
        """SQL ``x IN (arr...)``: NULL when ``x`` is NULL, or when nothing matched and the list
        held a NULL."""
        if pa.types.is_floating(arr.type):  # the reference's float order (see filter_floats)
            x, arr = float_key(x, True), key_set(arr)
        out = pc.if_else(x.is_valid(), pc.is_in(x, value_set=arr, skip_nulls=True), _NULL_BOOL)
        return out | pc.scalar(_NULL_BOOL) if has_null else out

    def in_list(self, node: exp.In) -> pc.Expression:
        items = node.expressions
        if len(items) == 1 and isinstance(items[0], exp.Column) and items[0].name.startswith(PLACEHOLDER):
            values = self.in_lists.get(items[0].name)
            if values is not None:
                arr = self.value_set(values, self.column_type(node.this), node)
                return self.set_lookup(self.expr(node.this), arr, values.has_null)
        return combine("or", [self.compare("eq", node.this, e) for e in items])

    def or_chain(self, node: exp.Or) -> pc.Expression:
        terms = self.chain(node)
        groups: dict[tuple[str, ...], list[tuple[int, exp.Expression, object]]] = {}
        for i, t in enumerate(terms):
            hit = _equality_literal(self, t)
            if hit is not None:
                groups.setdefault(hit[0], []).append((i, hit[1], hit[2]))
        out: list[pc.Expression | BoolNode] = []
        grouped: set[int] = set()
        for members in groups.values():
            if len(members) < GROUP_EQUALITIES:
                continue
            col = members[0][1]
            vals = [m[2] for m in members]
            kind = "str" if all(isinstance(v, str) for v in vals) else (
                "int" if all(isinstance(v, int) for v in vals) else "mixed")
            if kind == "mixed":
                continue
            try:
                arr = self.value_set(InList(vals, False, kind), self.column_type(col), col)
            except InvalidInputError:
                continue  # keep the equalities (their comparison rules apply)
            out.append(self.set_lookup(self.expr(col), arr, False))
            grouped.update(m[0] for m in members)
        out.extend(self.visit(t) for i, t in enumerate(terms) if i not in grouped)
        return combine("or", out)

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
            return pc.scalar(scalar_of(node.this))
        text = node.this
        if re.fullmatch(r"[+-]?\d+", text):
            value = int(text)
            if value > _U64_MAX:
                raise InvalidInputError(f"filter {self.text!r}: integer literal {text[:40]} out of range")
            return pc.scalar(scalar_of(value, pa.uint64() if value > _I64_MAX else pa.int64()))
        return pc.scalar(scalar_of(float(text)))

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
        return self.expr(inner).cast(target)

    def operand_is_float(self, node: exp.Expression, compiled: pc.Expression) -> bool:
        """True when ``node`` (compiled to ``compiled``) is of a floating-point type."""
        t = self.column_type(node)
        if t is None:
            value = _literal_value(node)
            if value is not None or isinstance(node, exp.Null):
                return isinstance(value, float)
            try:  # a computed operand: its type from an empty evaluation
                from .evaluate import _project

                # (built from names, not the schema: pyarrow checks a schema's pandas metadata)
                empty = pa.Table.from_arrays([pa.nulls(0, f.type) for f in self.schema], names=self.schema.names)
                t = _project(empty, [compiled])[0].type
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError, KeyError, TypeError):
                return False
        return pa.types.is_floating(t)

    def compare(self, op: str, left: exp.Expression, right: exp.Expression) -> pc.Expression:
        """``left <op> right``; floats compare in the reference's total order (see
        :mod:`.filter_floats`)."""
        a, b = self.expr(left), self.expr(right)
        if not (self.operand_is_float(left, a) or self.operand_is_float(right, b)):
            return _COMPARE[op](a, b)
        # a constant side (no column) folds -0.0 into 0.0 on both sides, as the reference does
        fold = _constant(left) or _constant(right)
        return _COMPARE[op](_key(left, a, fold), _key(right, b, fold))

    def expr(self, node: exp.Expression) -> pc.Expression:
        """``node`` compiled to one Arrow expression (operands of non-boolean operators)."""
        return check_expression(self.visit(node), f"filter {self.text!r}")

    def visit(self, node: exp.Expression) -> pc.Expression | BoolNode:
        parts = self.column_parts(node)
        if parts is not None:
            return self.column(parts)
        v = self.expr
        if isinstance(node, exp.Paren):
            return self.visit(node.this)
        if isinstance(node, exp.Literal):
            return self.literal(node)
        if isinstance(node, exp.Boolean):
            return pc.scalar(bool(node.this))
        if isinstance(node, exp.Null):
            return pc.scalar(None)
        if isinstance(node, (exp.Cast, exp.TryCast)):
            return self.cast(node)
        if isinstance(node, exp.And):
            return combine("and", [self.visit(t) for t in self.chain(node)])
        if isinstance(node, exp.Or):
            return self.or_chain(node)
        if isinstance(node, exp.Not):
            return negate(self.visit(node.this))
        if isinstance(node, exp.Neg):
            return pc.negate(v(node.this))
        func = compile_function(self, node)
        if func is not None:
            return func
        op = _COMPARE_NODES.get(type(node))
        if op is not None:
            return self.compare(op, node.this, node.expression)
        binary = {exp.Add: pc.add, exp.Sub: pc.subtract, exp.Mul: pc.multiply, exp.Div: pc.divide}
        for cls, fn in binary.items():
            if type(node) is cls:
                return fn(v(node.this), v(node.expression))
        if isinstance(node, exp.Mod):  # SQL %: the sign follows the dividend (truncated division)
            return pc.remainder(v(node.this), v(node.expression))
        if isinstance(node, exp.Between):
            return self.compare("ge", node.this, node.args["low"]) & self.compare("le", node.this, node.args["high"])
        if isinstance(node, exp.In):
            if node.args.get("query") is not None or not node.expressions:
                raise self.fail(node)
            return self.in_list(node)
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
    parsed = parse_filter(filter)
    comp = _Compiler(schema, filter, parsed.in_lists)
    try:
        expr = comp.visit(parsed.tree)
    except RecursionError:  # pragma: no cover - nesting is bounded by parse_filter
        raise InvalidInputError(f"filter {comp.text!r} nests too deeply") from None
    fast = plan_fast(comp, parsed.tree, parsed.in_lists) if USE_KERNELS else None
    return CompiledFilter(expr, frozenset(comp.columns), filter, fast)


def _constant(node: exp.Expression) -> bool:
    """True when ``node`` reads no column."""
    return next(node.find_all(exp.Column), None) is None


def _key(node: exp.Expression, compiled: pc.Expression, fold_zero: bool) -> pc.Expression:
    """The total-order key of a float comparison operand (see :mod:`.filter_floats`)."""
    value = _literal_value(node)
    if isinstance(value, (int, float)) and fold_zero:
        return literal_key(value)
    return float_key(compiled, fold_zero)


def _literal_value(node: exp.Expression) -> int | float | str | None:
    if isinstance(node, exp.Literal):
        if node.is_string:
            return node.this
        text = node.this
        return int(text) if re.fullmatch(r"[+-]?\d+", text) else float(text)
    if isinstance(node, exp.Neg) and isinstance(node.this, exp.Literal) and not node.this.is_string:
        v = _literal_value(node.this)
        return -v if v is not None else None  # type: ignore[operator]
    return None


def _equality_literal(comp: "_Compiler", node: exp.Expression) -> tuple[tuple[str, ...], exp.Expression, object] | None:
    """``(column path, column node, value)`` when ``node`` is ``column = literal`` (either side)."""
    while isinstance(node, exp.Paren):
        node = node.this
    if type(node) is not exp.EQ:
        return None
    for col, lit in ((node.this, node.expression), (node.expression, node.this)):
        parts = comp.column_parts(col)
        if parts is None:
            continue
        value = _literal_value(lit)
        if value is None:
            return None
        return _resolve(parts, comp.schema, comp.text), col, value
    return None


def evaluate_filter(compiled: CompiledFilter, table: pa.Table, num_rows: int | None = None) -> "pa.Array":
    """Positions (int64, ascending) of the rows of ``table`` where the predicate is TRUE.

    ``num_rows`` gives the row count when ``table`` has no columns.  The predicate is projected
    to one boolean column (no copy of the filtered rows)."""
    return pa.array(filter_positions(compiled, table, num_rows), pa.int64())


def filter_positions(compiled: CompiledFilter, table: pa.Table, num_rows: int | None = None) -> np.ndarray:
    """:func:`evaluate_filter` as a NumPy int64 array: by the kernels of :mod:`.filter_fast`
    when the filter has a kernel plan and the columns' layout allows, else by Arrow."""
    if compiled.fast is not None and table.num_columns:
        pos = fast_positions(compiled.fast, table)
        if pos is not None:
            return pos
    if table.num_columns == 0:
        n = table.num_rows if num_rows is None else num_rows
        table = pa.table({"__lancejit_row__": pa.nulls(n, pa.null())})
    try:
        if isinstance(compiled.root, BoolNode):
            return evaluate_tree(compiled.root, table)
        return evaluate_expression(compiled.root, table)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
        raise InvalidInputError(f"filter {compiled.text!r} cannot be evaluated: {exc}") from None


def warm() -> None:
    """Compile (or load) every filter kernel for the argument types scans hand them (for
    ``lancejit.warmup``): each leaf kind on int8/int64/float32/float64/string/large_string
    columns with and without NULLs."""
    n = 64
    ints = np.arange(n, dtype=np.int64) - 20
    mask = ints % 5 == 0
    table = pa.table({
        "i": pa.array(ints), "n": pa.array(ints, mask=mask), "b": pa.array(ints.astype(np.int8)),
        "x": pa.array(ints / 4.0, mask=mask), "y": pa.array((ints / 4.0).astype(np.float32)),
        "s": pa.array([f"w{i}" for i in range(n)], mask=mask),
        "l": pa.array([f"w{i}" for i in range(n)], pa.large_string()),
    })
    for text in ("i > 3 AND n <= 7 AND b = 1", "x >= 0.5 OR y < -1", "i < 2.5", "n % 7 = 3",
                 "i IN (1, 5, 9)", "i IN (1, 9223372036854775807)", "x IN (0.5, 1)", "s LIKE 'w1%'",
                 "l LIKE 'w12345678%'", "n IS NULL", "x IS NOT NULL", "s = 'w1' OR l IN ('w2', 'w3')"):
        compiled = compile_filter(text, table.schema)
        assert compiled.fast is not None, text
        fast_positions(compiled.fast, table)
