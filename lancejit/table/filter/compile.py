"""SQL predicate strings -> ``pyarrow.compute.Expression``.

Parsing uses sqlglot (backtick-quoted identifiers, single-quoted strings, as users of the
reference write them), bounded by :mod:`.filter_parse` (literal ``IN`` lists never reach
sqlglot; nesting depth is limited; no input recurses away).  Supported: comparisons,
AND/OR/NOT, IN / NOT IN, IS [NOT] NULL, IS [NOT] TRUE/FALSE, [NOT] LIKE / ILIKE, [NOT] BETWEEN,
+ - * / % and unary minus, CAST, DATE/TIMESTAMP literals, nested field access (``st.x`` or
``st['x']``) and, on list columns, ``array_has_any(col, [...])`` / ``array_has_all(col, [...])`` /
``array_contains(col, v)`` / ``array_has(col, v)`` with literal labels.

:func:`compile_filter` returns the expression and the set of top-level columns it reads.
Evaluation follows SQL: rows where the predicate is NULL are not selected.

Typing follows the reference: literals are typed as it types them and converted to their
column's type where it converts them, refusing the filter when it does (:mod:`.literals`,
:mod:`.resolve`); other comparisons compare both sides in their common type (:mod:`.operands`).
The terms statistics can decide are kept with the compiled filter (:mod:`.conditions`).

Scaling: ``IN`` lists become one ``is_in`` set lookup; ``AND``/``OR`` chains are flattened and
rebuilt as balanced trees (depth log2 of the terms, never a 20,000-deep Arrow expression);
in an ``OR`` chain, :data:`GROUP_EQUALITIES` or more ``column = literal`` terms on one column
become one set lookup too.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
from sqlglot import expressions as exp

from lancejit.core import arrow_compute as pc
from lancejit.core.errors import InvalidInputError
from lancejit.encoding.arrow_build import array_of

from .evaluate import (
    BoolNode, ListMatch, check_expression, combine, evaluate_expression, evaluate_tree, negate,
)
from .columns import resolve_column as _resolve
from .fast import FastNode, fast_positions, plan_fast
from .conditions import Condition, conditions_of_tree
from .functions import compile_function
from .floats import float_key, key_set, literal_key
from .literals import FLOAT64, INT64, UINT64, UTF8, SqlLiteral, literal_array, sql_literal
from .operands import Side, arithmetic_sides, coerce_sides, temporal_constant
from .parse import DIALECT as _DIALECT, PLACEHOLDER, InList, ParsedFilter, chain_terms, parse_filter
from .resolve import Resolved, resolve_literals

#: ``col = literal`` terms of one OR chain on one column from which they become one set lookup.
GROUP_EQUALITIES = 8
#: Filters with a kernel plan are evaluated by :mod:`.filter_fast` (False: always by Arrow,
#: for measurements and tests).
USE_KERNELS = True
#: (made from an array: pa.scalar() of a Python value makes pyarrow import pandas)
_NULL_BOOL = pa.nulls(1, pa.bool_())[0]
_COMPARE = {
    "eq": lambda a, b: a == b, "ne": lambda a, b: a != b, "lt": lambda a, b: a < b,
    "le": lambda a, b: a <= b, "gt": lambda a, b: a > b, "ge": lambda a, b: a >= b,
}
_LIST_FUNCS = {"array_has_any": "any", "array_has_all": "all", "array_contains_all": "all",
               "array_contains_any": "any"}
#: Arithmetic nodes -> Arrow functions (SQL %: the sign follows the dividend, truncated division).
_ARITHMETIC: dict[type, str] = {exp.Add: "add", exp.Sub: "subtract", exp.Mul: "multiply", exp.Div: "divide",
                                exp.Mod: "remainder"}
_COMPARE_NODES: dict[type, str] = {exp.EQ: "eq", exp.NEQ: "ne", exp.LT: "lt", exp.LTE: "le", exp.GT: "gt", exp.GTE: "ge"}


@dataclass(frozen=True, slots=True)
class CompiledFilter:
    """A filter ready to evaluate: ``root`` (one Arrow expression, or for very long AND/OR
    chains an n-ary :class:`~.filter_eval.BoolNode` of them) reads the top-level ``columns``."""

    root: pc.Expression | BoolNode
    columns: frozenset[str]
    text: str
    #: The same predicate as a kernel plan (:mod:`.filter_fast`), None when it has none.
    fast: FastNode | None = None
    #: Conjuncts statistics can decide (:mod:`.conditions`), literals in their column's type.
    conditions: tuple[Condition, ...] = ()
    #: The parsed SQL (tree and IN lists; None for Expression filters), for planners (indices).
    parsed: ParsedFilter | None = None

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
_TIMESTAMP_UNITS = {0: "s", 3: "ms", 6: "us", 9: "ns"}


class _Compiler:
    def __init__(self, schema: pa.Schema, text: str, in_lists: dict[str, InList] | None = None) -> None:
        self.schema = schema
        self.text = text if len(text) <= 200 else text[:200] + "..."
        self.columns: set[str] = set()
        self.in_lists = in_lists or {}
        #: Literals converted to their column's type (:mod:`.resolve`), set before compiling.
        self.resolved = Resolved()
        #: Compile-time values of casts of literals (``DATE '...'``...), by node id.
        self.constants: dict[int, pa.Scalar] = {}

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
        """The operands of the And/Or chain rooted at ``node`` (see :func:`.parse.chain_terms`)."""
        return chain_terms(node)

    def value_set(self, values: InList, target: pa.DataType | None, node: exp.Expression) -> pa.Array:
        """The values of an ``IN`` list for a set lookup on an operand of type ``target``: as the
        reference converted them (:mod:`.resolve`), else in the operand's type where they are
        exactly representable (others cannot be equal to any value of it), floats as doubles."""
        items = node.expressions if isinstance(node, exp.In) else ()
        if len(items) == 1 and isinstance(items[0], exp.Column):
            got = self.resolved.lists.get(items[0].name)
            if got is not None:
                return got
        listed: Any = values.values
        try:
            arr = array_of(listed, pa.string()) if values.kind == "str" else array_of(listed)
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, OverflowError):
            arr = pa.concat_arrays([array_of([v]) for v in listed]) if values.kind == "int" else None
        if arr is None:
            raise InvalidInputError(f"filter {self.text!r}: IN list values of mixed types")
        if target is None or arr.type == target:
            return arr
        if pa.types.is_dictionary(target):
            target = target.value_type
        if pa.types.is_floating(target) and (pa.types.is_integer(arr.type) or pa.types.is_floating(arr.type)):
            return pc.cast(arr, pa.float64(), safe=False)
        try:
            return pc.cast(arr, target, safe=True)
        except pa.ArrowInvalid:
            keep = []
            for i in range(len(arr)):
                try:
                    keep.append(pc.cast(arr.slice(i, 1), target, safe=True))
                except pa.ArrowInvalid:
                    continue  # not representable: equal to no value of the operand
            return pa.concat_arrays(keep) if keep else pa.nulls(0, target)
        except (pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
            raise InvalidInputError(f"filter {self.text!r}: IN list does not match the column's type: {exc}") from None

    def set_lookup(self, x: pc.Expression, arr: pa.Array, has_null: bool,
                   x_type: pa.DataType | None = None) -> pc.Expression:
        """SQL ``x IN (arr...)``: NULL when ``x`` is NULL, or when nothing matched and the list
        held a NULL."""
        if x_type is not None and pa.types.is_dictionary(x_type):
            x = x.cast(x_type.value_type)
        if len(arr) == 0:  # no value (or only NULLs): FALSE, NULL where x is NULL
            out = pc.if_else(x.is_valid(), pc.scalar(False), _NULL_BOOL)
            return out | pc.scalar(_NULL_BOOL) if has_null else out
        if pa.types.is_floating(arr.type):  # the reference's float order (see filter_floats)
            x, arr = float_key(x, True), key_set(arr)
        out = pc.if_else(x.is_valid(), pc.is_in(x, value_set=arr, skip_nulls=True), _NULL_BOOL)
        return out | pc.scalar(_NULL_BOOL) if has_null else out

    def in_list(self, node: exp.In) -> pc.Expression:
        items = node.expressions
        if len(items) == 1 and isinstance(items[0], exp.Column) and items[0].name.startswith(PLACEHOLDER):
            values = self.in_lists.get(items[0].name)
            if values is not None:
                t = self.column_type(node.this)
                arr = self.value_set(values, t, node)
                return self.set_lookup(self.expr(node.this), arr, values.has_null, t)
        return combine("or", [self.compare("eq", node.this, e) for e in items])

    def or_chain(self, node: exp.Or) -> pc.Expression:
        terms = self.chain(node)
        groups: dict[tuple[str, ...], list[tuple[int, exp.Expression, pa.Scalar]]] = {}
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
            arr = pc.drop_null(pa.concat_arrays([m[2] for m in members]))
            out.append(self.set_lookup(self.expr(col), arr, False, self.column_type(col)))
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

    def list_match(self, node: exp.Expression) -> pc.Expression | ListMatch:
        """``array_has_any`` / ``array_has_all`` / ``array_contains`` / ``array_has`` of literal
        labels on a top-level list column."""
        if isinstance(node, exp.ArrayContainsAll):
            col, arr, op = node.this, node.expression, "all"
        elif isinstance(node, exp.ArrayContains):
            col, arr, op = node.this, exp.Array(expressions=[node.expression]), "any"
        else:
            name = str(node.this).lower()
            if name not in _LIST_FUNCS or len(node.expressions) != 2:
                raise self.fail(node)
            col, arr, op = node.expressions[0], node.expressions[1], _LIST_FUNCS[name]
        parts = self.column_parts(col)
        if parts is None or not isinstance(arr, exp.Array):
            raise self.fail(node)
        path = _resolve(parts, self.schema, self.text)
        t = self.schema.field(path[0]).type
        for p in path[1:]:
            t = t.field(p).type
        if len(path) != 1 or not (pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t)):
            raise InvalidInputError(f"filter {self.text!r}: {op} needs a top-level list column")
        lits = [sql_literal(e) for e in arr.expressions]
        if any(lit is None or lit.value is None for lit in lits):
            raise self.fail(node)
        values = [lit.value for lit in lits if lit is not None]  # (none is: checked above)
        self.columns.add(path[0])
        if not values:  # the reference: every row holds all of no label, none holds any of them
            return pc.scalar(op == "all")
        try:
            labels = array_of(list(dict.fromkeys(values)), t.value_type if pa.types.is_string(t.value_type) else None)
            if labels.type != t.value_type:
                labels = labels.cast(t.value_type, safe=True)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError, TypeError, OverflowError) as exc:
            raise InvalidInputError(f"filter {self.text!r}: labels do not match the list's items: {exc}") from None
        return ListMatch(path[0], op, labels)

    def literal(self, lit: SqlLiteral) -> pc.Expression:
        """A literal keeping its own type (where the reference does not convert it)."""
        return pc.scalar(literal_array(lit)[0])

    def cast(self, node: exp.Cast) -> pc.Expression:
        to = node.to
        name = to.this.name if hasattr(to.this, "name") else str(to.this)
        target = _TYPE_MAP.get(name.upper())
        if target is None:
            raise self.fail(node)
        if pa.types.is_timestamp(target) and to.expressions:
            p = to.expressions[0]
            digits = p.this.this if isinstance(p, exp.DataTypeParam) and isinstance(p.this, exp.Literal) else None
            unit = _TIMESTAMP_UNITS.get(int(digits)) if digits is not None and str(digits).isdigit() else None
            if unit is None:
                raise self.fail(node)
            target = pa.timestamp(unit)
        inner = node.this
        while isinstance(inner, exp.Paren):
            inner = inner.this
        if isinstance(inner, exp.Literal) and inner.is_string and (pa.types.is_date32(target)
                                                                  or pa.types.is_timestamp(target)):
            value = temporal_constant(inner.this, target)  # an offset in the text: its UTC time
            assert value is not None  # text always converts (or raises)
            self.constants[id(node)] = value[0]
            return pc.scalar(value[0])
        return self.expr(inner).cast(target)

    def side(self, node: exp.Expression, compiled: pc.Expression) -> Side:
        """``node`` (compiled to ``compiled``) as a comparison side: its type and, when known at
        compile time, its value (a literal's text for strings, which may be dates)."""
        t = self.column_type(node)
        if t is not None:
            return Side(compiled, t)
        got = self.resolved.scalar(node)
        if got is None:
            got = self.constants.get(id(_strip(node)))
        if got is not None:
            return Side(compiled, got.type, got)
        lit = sql_literal(node)
        if lit is not None:
            value = literal_array(lit)[0]
            return Side(compiled, value.type, lit.value if lit.kind == UTF8 else value)
        try:  # a computed operand: its type from an empty evaluation
            from .evaluate import project

            # (built from names, not the schema: pyarrow checks a schema's pandas metadata)
            empty = pa.Table.from_arrays([pa.nulls(0, f.type) for f in self.schema], names=self.schema.names)
            return Side(compiled, project(empty, [compiled])[0].type)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError, KeyError, TypeError):
            return Side(compiled, None)

    def compare(self, op: str, left: exp.Expression, right: exp.Expression) -> pc.Expression:
        """``left <op> right`` in the sides' common type (:mod:`.operands`); floats compare in the
        reference's total order (see :mod:`.floats`)."""
        ls, rs = self.side(left, self.expr(left)), self.side(right, self.expr(right))
        if any(isinstance(x.constant, pa.Scalar) and not x.constant.is_valid for x in (ls, rs)):
            return pc.scalar(_NULL_BOOL)  # a comparison with NULL is NULL, whatever the other side's type
        try:
            a, b, ftype = coerce_sides(ls, rs)
        except InvalidInputError as exc:
            raise InvalidInputError(f"filter {self.text!r}: {exc}") from None
        if ftype is None:
            return _COMPARE[op](a, b)
        # a constant side (no column) folds -0.0 into 0.0 on both sides, as the reference does
        fold = _constant(left) or _constant(right)
        return _COMPARE[op](_key(ls, a, ftype, fold), _key(rs, b, ftype, fold))

    def expr(self, node: exp.Expression) -> pc.Expression:
        """``node`` compiled to one Arrow expression (operands of non-boolean operators)."""
        return check_expression(self.visit(node), f"filter {self.text!r}")

    def visit(self, node: exp.Expression) -> pc.Expression | BoolNode:
        parts = self.column_parts(node)
        if parts is not None:
            return self.column(parts)
        v = self.expr
        got = self.resolved.scalar(node)
        if got is not None:
            return pc.scalar(got)
        if isinstance(node, exp.Paren):
            return self.visit(node.this)
        lit = sql_literal(node)
        if lit is not None:
            return self.literal(lit)
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
        arithmetic = _ARITHMETIC.get(type(node))
        if arithmetic is not None:
            a, b = self.side(node.this, v(node.this)), self.side(node.expression, v(node.expression))
            return getattr(pc, arithmetic)(*arithmetic_sides(a, b))
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
            if isinstance(rhs, exp.Boolean):  # IS [NOT] TRUE/FALSE: never NULL
                t = self.side(node.this, x).type
                if t is not None and not (pa.types.is_boolean(t) or pa.types.is_null(t)):
                    raise InvalidInputError(f"filter {self.text!r}: IS {'TRUE' if rhs.this else 'FALSE'} "
                                            f"needs a boolean operand, not {t}")
                truth = x if rhs.this else ~x
                return pc.if_else(x.is_valid(), truth, pc.scalar(False))
            raise self.fail(node)
        if isinstance(node, (exp.ArrayContainsAll, exp.ArrayContains, exp.Anonymous)):
            return self.list_match(node)
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
        comp.resolved = resolve_literals(comp, parsed.tree, parsed.in_lists)
        expr = comp.visit(parsed.tree)
    except RecursionError:  # pragma: no cover - nesting is bounded by parse_filter
        raise InvalidInputError(f"filter {comp.text!r} nests too deeply") from None
    fast = plan_fast(comp, parsed.tree, parsed.in_lists) if USE_KERNELS else None
    conditions = conditions_of_tree(comp, parsed.tree)
    return CompiledFilter(expr, frozenset(comp.columns), filter, fast, conditions, parsed)


def _constant(node: exp.Expression) -> bool:
    """True when ``node`` reads no column."""
    return next(node.find_all(exp.Column), None) is None


def _strip(node: exp.Expression) -> exp.Expression:
    while isinstance(node, exp.Paren):
        node = node.this
    return node


def _key(side: Side, compiled: pc.Expression, ftype: pa.DataType, fold_zero: bool) -> pc.Expression:
    """The total-order key of a float comparison operand (see :mod:`.floats`), ``compiled``
    already in the comparison's float type ``ftype``."""
    value = side.constant
    if isinstance(value, pa.Scalar) and value.is_valid and fold_zero and (
            pa.types.is_integer(value.type) or pa.types.is_floating(value.type)):
        if side.type != ftype and ftype != pa.float64():
            value = _rounded(value, ftype)
        return literal_key(float(value.as_py()))
    return float_key(compiled, fold_zero)


def _rounded(value: pa.Scalar, ftype: pa.DataType) -> pa.Scalar:
    """A numeric constant rounded to the float type ``ftype`` (one rounding)."""
    from .literals import SqlLiteral, convert_literal

    v = value.as_py()
    kind = FLOAT64 if isinstance(v, float) else (UINT64 if v > (1 << 63) - 1 else INT64)
    got = convert_literal(SqlLiteral(kind, v), ftype)
    return got[0] if got is not None else value.cast(ftype, safe=False)


def _equality_literal(comp: "_Compiler", node: exp.Expression) -> tuple[tuple[str, ...], exp.Expression, pa.Array] | None:
    """``(column path, column node, value)`` when ``node`` is ``column = literal`` (either side)
    with the literal converted to the column's type (a one-value array)."""
    node = _strip(node)
    if type(node) is not exp.EQ:
        return None
    for col, lit in ((node.this, node.expression), (node.expression, node.this)):
        parts = comp.column_parts(col)
        if parts is None:
            continue
        got = comp.resolved.values.get(id(lit))
        if got is None:
            return None
        return _resolve(parts, comp.schema, comp.text), col, got
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
        if isinstance(compiled.root, ListMatch):
            return evaluate_tree(BoolNode("and", (compiled.root,)), table)
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
    for text in ("i > 3 AND n <= 7 AND b = 1", "x >= 0.5 OR y < -1", "NOT (i >= 2.5)", "n % 7 = 3",
                 "i IN (1, 5, 9)", "i IN (1, 9223372036854775807)", "x IN (0.5, 1)", "s LIKE 'w1%'",
                 "l LIKE 'w12345678%'", "n IS NULL", "x IS NOT NULL", "s = 'w1' OR l IN ('w2', 'w3')"):
        compiled = compile_filter(text, table.schema)
        assert compiled.fast is not None, text
        fast_positions(compiled.fast, table)
