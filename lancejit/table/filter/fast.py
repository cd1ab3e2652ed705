"""Kernel evaluation of simple filters: AND/OR/NOT trees of one-column predicates evaluated by
Numba kernels (:mod:`lancejit.encoding.kernels.filter`) straight on the decoded Arrow buffers,
without Arrow expressions or intermediate arrays beyond one byte per row per AND/OR level.

Leaves: ``col <op> number`` (either side), ``col [NOT] BETWEEN a AND b``, ``col [NOT] IN (...)``
(a literal list), ``col % k <op> int``, ``col [NOT] LIKE 'prefix%'`` and ``col IS [NOT] NULL``,
on top-level columns of integer (not uint64) or floating-point type (strings for LIKE).  NOTs
are pushed down to the leaves (De Morgan holds in SQL's three-valued logic); a leaf whose value
is NULL is then FALSE, which is exactly what a WHERE clause selects.  Floats compare in the
reference's total order (:mod:`.filter_floats`), integers against a float literal as doubles,
``%`` truncates (sign of the dividend), as the Arrow evaluation does.

:func:`plan_fast` returns None for anything else (the Arrow evaluation then runs);
:func:`fast_mask` returns None when a decoded chunk is not of the expected layout.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Union

import numpy as np
import pyarrow as pa
from sqlglot import expressions as exp

from lancejit.core import arrow_compute as pc
from lancejit.core.errors import InvalidInputError
from lancejit.encoding.arrow_build import numbers_of

from .columns import resolve_column
from .floats import key_set, total_keys
from .literals import f32_of_int

#: Most leaves of a kernel-evaluated filter (one pass over a column each).
MAX_LEAVES = 32
#: ``IN`` lists of at most this many strings become ORs of equality leaves.
MAX_STRING_IN = 8
#: ``IN`` lists on integers whose values span at most this many are tested with a bitmap.
BITMAP_SPAN = 1 << 26

_I64_MIN = -(1 << 63)
_I64_MAX = (1 << 63) - 1
# keyed by Arrow type id (hashing a DataType costs tens of microseconds)
_INT_TYPES: dict[int, type[np.number]] = {
    pa.int8().id: np.int8, pa.int16().id: np.int16, pa.int32().id: np.int32, pa.int64().id: np.int64,
    pa.uint8().id: np.uint8, pa.uint16().id: np.uint16, pa.uint32().id: np.uint32,
}
_FLOAT_TYPES: dict[int, type[np.number]] = {pa.float32().id: np.float32, pa.float64().id: np.float64}
_STRING_TYPES = {pa.string().id: np.int32, pa.large_string().id: np.int64}
_FLIP = {"eq": "eq", "ne": "ne", "lt": "gt", "le": "ge", "gt": "lt", "ge": "le"}
_OPS: dict[type[exp.Expression], str] = {exp.EQ: "eq", exp.NEQ: "ne", exp.LT: "lt", exp.LTE: "le", exp.GT: "gt", exp.GTE: "ge"}
_EMPTY = np.zeros(0, dtype=np.uint8)
_EMPTY.setflags(write=False)


@dataclass(frozen=True, slots=True)
class Leaf:
    """One kernel pass over ``column``.  ``kind``: "int" / "f64" (``lo <= key <= hi``),
    "dbl" (``flo <(=) double <(=) fhi``), "mod" (``lo <= col % k <= hi``), "bitmap" / "sorted"
    (set membership: ``members``, ``base``), "prefix" / "streq" (strings starting with / equal
    to the bytes in ``members``), "null"."""

    column: str
    kind: str
    negate: bool
    lo: int = 0
    hi: int = 0
    flo: float = 0.0
    fhi: float = 0.0
    lo_strict: bool = False
    hi_strict: bool = False
    k: int = 0
    base: int = 0
    members: Any = None
    f64: bool = False


@dataclass(frozen=True, slots=True)
class Junction:
    """``op`` ("and" / "or") over ``parts`` (leaves or junctions)."""

    op: str
    parts: tuple


FastNode = Union[Leaf, Junction]


class _Unsupported(Exception):
    pass


def _int_range(op: str, c: int) -> tuple[int, int, bool]:
    """``(lo, hi, negate)``: ``key <op> c`` as an inclusive range (empty when lo > hi)."""
    lo, hi, negate = {
        "eq": (c, c, False), "ne": (c, c, True), "lt": (_I64_MIN, c - 1, False),
        "le": (_I64_MIN, c, False), "gt": (c + 1, _I64_MAX, False), "ge": (c, _I64_MAX, False),
    }[op]
    return (1, 0, negate) if lo > _I64_MAX or hi < _I64_MIN else (lo, hi, negate)


def _f64_key(value: float) -> int:
    return int(total_keys(np.array([float(value)]), True)[0])


def _is_literal(node: exp.Expression) -> bool:
    while isinstance(node, (exp.Neg, exp.Paren)):
        node = node.this
    return isinstance(node, exp.Literal)


def _number(node: exp.Expression) -> int | float:
    neg = False
    while isinstance(node, (exp.Neg, exp.Paren)):
        if isinstance(node, exp.Neg):
            neg = not neg
        node = node.this
    if not isinstance(node, exp.Literal) or node.is_string:
        raise _Unsupported
    text = node.this
    try:
        value: int | float = int(text) if text.lstrip("+-").isdigit() else float(text)
    except ValueError:
        raise _Unsupported from None
    value = -value if neg else value
    if isinstance(value, float) and math.isnan(value):
        raise _Unsupported
    if isinstance(value, int) and not (_I64_MIN <= value <= _I64_MAX):
        raise _Unsupported
    return value


def _prefix_words(prefix: bytes) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(bytes, words, masks)`` of a LIKE prefix for :func:`~lancejit.encoding.kernels.filter.prefix_match`."""
    q = max(1, (len(prefix) + 7) // 8)
    padded = prefix.ljust(8 * q, b"\0")
    words = np.frombuffer(padded, dtype="<u8").astype(np.uint64)
    masks = np.array([(1 << (8 * min(8, max(0, len(prefix) - 8 * w)))) - 1 for w in range(q)], dtype=np.uint64)
    arrays = (np.frombuffer(prefix, dtype=np.uint8).copy(), words, masks)
    for a in arrays:
        a.setflags(write=False)
    return arrays


class _Planner:
    def __init__(self, comp: Any, in_lists: dict) -> None:
        self.comp = comp
        self.in_lists = in_lists
        self.leaves = 0

    def column(self, node: exp.Expression) -> tuple[str, pa.DataType]:
        while isinstance(node, exp.Paren):
            node = node.this
        parts = self.comp.column_parts(node)
        if parts is None or len(parts) != 1:
            raise _Unsupported
        name = resolve_column(parts, self.comp.schema, self.comp.text)[0]
        return name, self.comp.schema.field(name).type

    def number(self, node: exp.Expression, t: pa.DataType | None = None) -> int | float:
        """The number ``node`` stands for: as converted to its column's type (:mod:`.resolve`),
        else the literal itself (an integer against a float32 column rounded to float32, as the
        comparison does)."""
        got = self.comp.resolved.scalar(node)
        if got is None:
            value = _number(node)
            if isinstance(value, int) and t is not None and pa.types.is_float32(t):
                return f32_of_int(value)
            return value
        known = got.as_py() if got.is_valid else None
        if isinstance(known, bool) or not isinstance(known, (int, float)):
            raise _Unsupported
        if isinstance(known, float) and math.isnan(known):
            raise _Unsupported
        if isinstance(known, int) and not (_I64_MIN <= known <= _I64_MAX):
            raise _Unsupported
        return known

    def leaf(self, leaf: Leaf) -> Leaf:
        self.leaves += 1
        if self.leaves > MAX_LEAVES:
            raise _Unsupported
        return leaf

    def compare(self, op: str, col: exp.Expression, lit: exp.Expression, negate: bool) -> Leaf:
        if isinstance(col, exp.Mod):
            return self.mod(op, col, lit, negate)
        name, t = self.column(col)
        if t.id in _STRING_TYPES and isinstance(lit, exp.Literal) and lit.is_string and op in ("eq", "ne"):
            words = _prefix_words(lit.this.encode("utf-8"))
            return self.leaf(Leaf(name, "streq", negate ^ (op == "ne"), members=words))
        value = self.number(lit, t)
        if t.id in _FLOAT_TYPES:
            lo, hi, neg = _int_range(op, _f64_key(value))
            return self.leaf(Leaf(name, "f64", negate ^ neg, lo, hi))
        if t.id not in _INT_TYPES:
            raise _Unsupported
        if isinstance(value, int):
            lo, hi, neg = _int_range(op, value)
            return self.leaf(Leaf(name, "int", negate ^ neg, lo, hi))
        inf = math.inf
        flo, los, fhi, his, neg = {
            "eq": (value, False, value, False, False), "ne": (value, False, value, False, True),
            "lt": (-inf, False, value, True, False), "le": (-inf, False, value, False, False),
            "gt": (value, True, inf, False, False), "ge": (value, False, inf, False, False),
        }[op]
        return self.leaf(Leaf(name, "dbl", negate ^ neg, flo=flo, fhi=fhi, lo_strict=los, hi_strict=his))

    def mod(self, op: str, node: exp.Mod, lit: exp.Expression, negate: bool) -> Leaf:
        name, t = self.column(node.this)
        k, value = _number(node.expression), _number(lit)
        if t.id not in _INT_TYPES or not isinstance(k, int) or not isinstance(value, int) or k in (0, -1):
            raise _Unsupported
        lo, hi, neg = _int_range(op, value)
        return self.leaf(Leaf(name, "mod", negate ^ neg, lo, hi, k=k))

    def in_list(self, node: exp.In, negate: bool) -> FastNode:
        items = node.expressions
        if len(items) != 1 or not isinstance(items[0], exp.Column) or items[0].name not in self.in_lists:
            raise _Unsupported
        values = self.in_lists[items[0].name]
        name, t = self.column(node.this)
        if values.has_null and negate:
            raise _Unsupported
        if t.id in _STRING_TYPES and values.kind == "str" and len(values.values) <= MAX_STRING_IN:
            leaves = tuple(self.leaf(Leaf(name, "streq", negate, members=_prefix_words(v.encode("utf-8"))))
                           for v in values.values)
            return leaves[0] if len(leaves) == 1 else Junction("and" if negate else "or", leaves)
        if t.id in _FLOAT_TYPES:
            keys = numbers_of(key_set(self.comp.value_set(values, t, node)))
            return self.leaf(Leaf(name, "sorted", negate, members=np.unique(keys), f64=True))
        if t.id not in _INT_TYPES or values.kind == "str":
            raise _Unsupported
        arr = pc.drop_null(self.comp.value_set(values, t, node))
        members = np.unique(numbers_of(arr).astype(np.int64))
        if len(members) and int(members[-1]) - int(members[0]) < BITMAP_SPAN:
            base = int(members[0])
            bits = np.zeros((int(members[-1]) - base) // 8 + 1, dtype=np.uint8)
            d = members - base
            np.bitwise_or.at(bits, d >> 3, (1 << (d & 7)).astype(np.uint8))
            bits.setflags(write=False)
            return self.leaf(Leaf(name, "bitmap", negate, base=base, members=bits))
        members.setflags(write=False)
        return self.leaf(Leaf(name, "sorted", negate, members=members))

    def like(self, node: exp.Like, negate: bool) -> Leaf:
        pattern = node.expression
        if not (isinstance(pattern, exp.Literal) and pattern.is_string):
            raise _Unsupported
        text = pattern.this
        prefix = text[:-1]
        if not text.endswith("%") or any(ch in prefix for ch in "%_\\"):
            raise _Unsupported
        name, t = self.column(node.this)
        if t.id not in _STRING_TYPES:
            raise _Unsupported
        if node.args.get("negate"):
            negate = not negate
        return self.leaf(Leaf(name, "prefix", negate, members=_prefix_words(prefix.encode("utf-8"))))

    def visit(self, node: exp.Expression, negate: bool) -> FastNode:
        while True:
            if isinstance(node, exp.Paren):
                node = node.this
            elif isinstance(node, exp.Not):
                negate, node = not negate, node.this
            else:
                break
        if isinstance(node, (exp.And, exp.Or)):
            junction = "and" if isinstance(node, exp.And) else "or"
            if negate:
                junction = "or" if junction == "and" else "and"
            return Junction(junction, tuple(self.visit(t, negate) for t in self.comp.chain(node)))
        op = _OPS.get(type(node))
        if op is not None:
            left, right = node.this, node.expression
            if _is_literal(left) and not _is_literal(right):
                left, right, op = right, left, _FLIP[op]
            return self.compare(op, left, right, negate)
        if isinstance(node, exp.Between):
            low, high = node.args["low"], node.args["high"]
            name, t = self.column(node.this)
            lv, hv = self.number(low, t), self.number(high, t)
            if t.id in _FLOAT_TYPES:
                return self.leaf(Leaf(name, "f64", negate, _f64_key(lv), _f64_key(hv)))
            if t.id in _INT_TYPES and isinstance(lv, int) and isinstance(hv, int):
                return self.leaf(Leaf(name, "int", negate, lv, hv))
            parts = (self.compare("ge", node.this, low, negate), self.compare("le", node.this, high, negate))
            return Junction("or" if negate else "and", parts)
        if isinstance(node, exp.In):
            if node.args.get("query") is not None:
                raise _Unsupported
            return self.in_list(node, negate)
        if isinstance(node, exp.Like):
            return self.like(node, negate)
        if isinstance(node, exp.Is) and isinstance(node.expression, exp.Null):
            name, t = self.column(node.this)
            if t.id not in _INT_TYPES and t.id not in _FLOAT_TYPES and t.id not in _STRING_TYPES:
                raise _Unsupported
            return self.leaf(Leaf(name, "null", negate))
        raise _Unsupported


def plan_fast(comp: Any, tree: exp.Expression, in_lists: dict) -> FastNode | None:
    """The kernel plan of a parsed filter (``comp``: the filter compiler, for column types and
    IN lists), or None when some part of it has no kernel."""
    try:
        return _Planner(comp, in_lists).visit(tree, False)
    except (_Unsupported, InvalidInputError):
        return None


def columns_of(node: FastNode) -> set[str]:
    out: set[str] = set()
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, Leaf):
            out.add(n.column)
        else:
            stack.extend(n.parts)
    return out


# ---------------------------------------------------------------------------------- evaluation
def _validity(chunk: pa.Array) -> np.ndarray:
    """The chunk's validity bitmap bytes (read-only: one kernel specialization)."""
    bits = np.frombuffer(chunk.buffers()[0], dtype=np.uint8)
    if len(bits) * 8 < chunk.offset + len(chunk):
        raise _Unsupported
    return _readonly(bits)


def _values(chunk: pa.Array, dtype: Any) -> np.ndarray:
    item = np.dtype(dtype).itemsize
    v = np.frombuffer(chunk.buffers()[1], dtype=dtype, count=len(chunk), offset=chunk.offset * item)
    v.setflags(write=False)
    return v


def _readonly(a: np.ndarray) -> np.ndarray:
    a.setflags(write=False)
    return a


def _run_leaf(leaf: Leaf, chunk: pa.Array, out: np.ndarray) -> None:
    """``leaf`` over one chunk into ``out`` (as long as the chunk), NULLs applied."""
    from lancejit.encoding.kernels import filter as fk

    t = chunk.type.id
    neg = np.uint8(leaf.negate)
    kind = leaf.kind
    if kind == "null":
        if chunk.null_count:
            out[:] = 1
            fk.and_validity(_validity(chunk), chunk.offset, out)
            np.bitwise_xor(out, np.uint8(1) ^ neg, out=out)
        else:
            out[:] = neg
        return
    if kind in ("prefix", "streq"):
        otype = _STRING_TYPES.get(t)
        if otype is None:
            raise _Unsupported
        bufs = chunk.buffers()
        offsets = np.frombuffer(bufs[1], dtype=otype, count=len(chunk) + 1,
                                offset=chunk.offset * np.dtype(otype).itemsize)
        offsets.setflags(write=False)
        data = _EMPTY if bufs[2] is None else _readonly(np.frombuffer(bufs[2], dtype=np.uint8))
        if offsets[0] < 0 or offsets[-1] > len(data) or (len(offsets) > 1 and np.any(offsets[1:] < offsets[:-1])):
            raise _Unsupported  # never read outside the buffer (Arrow validates the same way)
        words = np.ndarray(shape=(max(0, len(data) - 7),), dtype="<u8", buffer=data, strides=(1,))
        fk.prefix_match(offsets, words, data, leaf.members[1], leaf.members[2], leaf.members[0],
                         kind == "streq", neg, out)
    elif kind == "f64" or (kind == "sorted" and leaf.f64):
        dt = _FLOAT_TYPES.get(t)
        if dt is None:
            raise _Unsupported
        v = _values(chunk, dt)
        bits = (v if dt is np.float64 else _readonly(v.astype(np.float64))).view(np.int64)
        if kind == "f64":
            fk.range_f64(bits, leaf.lo, leaf.hi, neg, out)
        else:
            fk.in_sorted(bits, True, leaf.members, neg, out)
    else:
        dt = _INT_TYPES.get(t)
        if dt is None:
            raise _Unsupported
        v = _values(chunk, dt)
        if dt is not np.int64:
            v = _readonly(v.astype(np.int64))
        if kind == "int":
            fk.range_int(v, leaf.lo, leaf.hi, neg, out)
        elif kind == "dbl":
            fk.range_int_as_double(v, leaf.flo, leaf.lo_strict, leaf.fhi, leaf.hi_strict, neg, out)
        elif kind == "mod":
            fk.mod_range(v, leaf.k, leaf.lo, leaf.hi, neg, out)
        elif kind == "bitmap":
            fk.in_bitmap(v, leaf.base, leaf.members, neg, out)
        else:
            fk.in_sorted(v, False, leaf.members, neg, out)
    if chunk.null_count:
        fk.and_validity(_validity(chunk), chunk.offset, out)


def _eval(node: FastNode, columns: dict[str, list[pa.Array]], out: np.ndarray) -> None:
    """``node`` over every row into ``out`` (uint8, 1 = TRUE)."""
    if isinstance(node, Leaf):
        start = 0
        for chunk in columns[node.column]:
            n = len(chunk)
            if start + n > len(out):
                raise _Unsupported
            if n:
                _run_leaf(node, chunk, out[start:start + n])
            start += n
        if start != len(out):
            raise _Unsupported
        return
    combine = np.bitwise_and if node.op == "and" else np.bitwise_or
    _eval(node.parts[0], columns, out)
    tmp = np.empty(len(out), dtype=np.uint8)
    for part in node.parts[1:]:
        _eval(part, columns, tmp)
        combine(out, tmp, out=out)


def fast_mask(node: FastNode, columns: dict[str, list[pa.Array]], num_rows: int) -> np.ndarray | None:
    """uint8 mask (1 = selected) of ``num_rows`` rows whose columns are given as lists of
    chunks, or None when a chunk is not of a layout the kernels read (the caller falls back)."""
    out = np.empty(num_rows, dtype=np.uint8)
    try:
        _eval(node, columns, out)
    except (_Unsupported, ValueError):  # ValueError: a buffer shorter than its array
        return None
    return out


def fast_positions(node: FastNode, table: pa.Table) -> np.ndarray | None:
    """Positions (int64, ascending) of the rows of ``table`` selected by ``node``; None when the
    kernels cannot read a column (see :func:`fast_mask`)."""
    cols = {}
    for name in columns_of(node):
        if name not in table.column_names:
            return None
        cols[name] = table.column(name).chunks
    mask = fast_mask(node, cols, table.num_rows)
    return None if mask is None else positions(mask)


def positions(mask: np.ndarray) -> np.ndarray:
    """Positions (int64, ascending) of the 1s of a uint8 0/1 ``mask``: a branch-free kernel
    (NumPy's ``flatnonzero`` branches per row: several times slower on masks of mixed density)."""
    from lancejit.encoding.kernels import filter as fk

    count = int(np.count_nonzero(mask.view(np.bool_)))
    if count == 0:
        return np.zeros(0, dtype=np.int64)
    out = np.empty(count + 1, dtype=np.int64)
    fk.mask_positions(mask, out)
    return out[:count]
