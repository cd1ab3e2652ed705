"""The common type of a comparison's two sides where Arrow's own casts differ from the reference.

Literals next to a column mostly arrive already in the column's type (:mod:`.resolve`); the
rest (under ``NOT``, casts such as ``TIMESTAMP '...'``, expressions, column against column) is
compared in a common type the way the reference's engine (DataFusion) coerces.  Arrow's implicit
casts agree for most pairs; :func:`coerce_sides` handles those where they do not (checked against
pylance 14, ``tests/table/test_filter_types.py``):

* **temporal against a constant** (``TIMESTAMP '...'``, ``DATE '...'``, or text): the constant
  becomes the other side's type.  A timestamp without a zone (or text without an offset) is wall
  time in the column's zone; a coarser unit truncates toward zero (``ts_s = TIMESTAMP
  '2020-01-01 00:00:00.5'`` matches ``00:00:00``), a finer one is exact.
* **timestamp against timestamp**: the coarser unit (truncating toward zero); a side without a
  zone is wall time in the other side's zone.
* **uint64 against a signed integer** (either a column or a literal): ``decimal128(20, 0)``,
  where every value of both is exact (Arrow would cast uint64 to int64 and fail past 2**63).
* **decimal against a number**: one decimal type holding both (integers exactly, float64 with
  15 digits after the point, float32 with 7; a float too large for it is an error).
* **text against a number**: the text parsed as the number's type (an error when it is not one);
* **text against a time of day**: ``HH:MM[:SS[.fraction]]``, or digits as the stored value;
* **a date against a 32- or 64-bit integer**: the date's stored days (date32) or milliseconds
  (date64);
* **values of different families** (numbers, text, binary, booleans, dates and timestamps,
  times, durations...) other than the pairs above and text with binary: an error, as the
  reference refuses them;
* **floats**: an integer compared with a float32 (float16) becomes float32 (float16) first;
  integers become doubles by rounding (past 2**53 too) before the total-order keys of
  :mod:`.floats`.

Each side is ``(expression, type, constant)``: ``constant`` is the side's value when it is known
at compile time (a literal or a cast of one), else None.
"""

from __future__ import annotations

import datetime as _dt
import re
from typing import NamedTuple

import numpy as np
import pyarrow as pa

from lancejit.core import arrow_compute as pc
from lancejit.core.errors import InvalidInputError

_UNIT_NS = {"s": 10**9, "ms": 10**6, "us": 10**3, "ns": 1}
_DATETIME = re.compile(
    r"\s*(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?)?"
    r"\s*(Z|[+-]\d{2}(?::?\d{2})?)?\s*$", re.IGNORECASE)
_EPOCH = _dt.date(1970, 1, 1)


class Side(NamedTuple):
    """One side of a comparison: its compiled ``expr``, Arrow ``type`` (None: unknown) and
    ``constant`` value (a scalar, or the text of a string literal; None when not constant)."""

    expr: pc.Expression
    type: pa.DataType | None
    constant: object = None


def _is_temporal(t: pa.DataType | None) -> bool:
    return t is not None and (pa.types.is_timestamp(t) or pa.types.is_date(t))


def _trunc_div(v: int, d: int) -> int:
    q = abs(v) // d
    return q if v >= 0 else -q


def _raw_value(raw: int, t: pa.DataType) -> pa.Array:
    """A one-value array of the fixed-width type ``t`` from its stored integer."""
    dtype = np.int32 if pa.types.is_date32(t) else np.int64
    return pa.Array.from_buffers(t, 1, [None, pa.py_buffer(np.array([raw], dtype=dtype))])


def _offset_seconds(tz: str, wall: _dt.datetime) -> int:
    """UTC offset in seconds of the zone ``tz`` (a name or ``+HH:MM``) at wall time ``wall``."""
    m = re.fullmatch(r"([+-])(\d{2}):?(\d{2})", tz)
    if m:
        secs = int(m.group(2)) * 3600 + int(m.group(3)) * 60
        return secs if m.group(1) == "+" else -secs
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    try:
        zone = ZoneInfo(tz)
    except (ZoneInfoNotFoundError, ValueError):
        raise InvalidInputError(f"unknown time zone {tz!r}") from None
    off = wall.replace(tzinfo=zone).utcoffset()
    return int(off.total_seconds()) if off is not None else 0


def _instant_ns(wall_ns: int, offset: int | None, tz: str | None) -> int:
    """The instant (ns since the epoch, UTC) of wall time ``wall_ns`` with ``offset`` seconds
    (text that named one), else read in zone ``tz`` (None: as UTC)."""
    if offset is not None:
        return wall_ns - offset * 10**9
    if tz is None:
        return wall_ns
    secs = wall_ns // 10**9
    wall = _dt.datetime(1970, 1, 1) + _dt.timedelta(seconds=secs)
    return wall_ns - _offset_seconds(tz, wall) * 10**9


def parse_datetime(text: str) -> tuple[int, int | None] | None:
    """``(wall time in ns since the epoch, UTC offset in seconds or None)`` of ISO-8601 text
    (``YYYY-MM-DD[ T]HH:MM[:SS[.fraction]][Z|+HH[:MM]]``), None when it is not one."""
    m = _DATETIME.match(text)
    if m is None:
        return None
    y, mo, d, h, mi, s, frac, off = m.groups()
    try:
        day = (_dt.date(int(y), int(mo), int(d)) - _EPOCH).days
    except ValueError:
        return None
    secs = day * 86400 + int(h or 0) * 3600 + int(mi or 0) * 60 + int(s or 0)
    if int(h or 0) > 23 or int(mi or 0) > 59 or int(s or 0) > 59:
        return None
    ns = secs * 10**9 + (int(frac.ljust(9, "0")) if frac else 0)
    offset = None
    if off:
        if off.upper() == "Z":
            offset = 0
        else:
            digits = off[1:].replace(":", "")
            offset = int(digits[:2]) * 3600 + int(digits[2:4] or 0) * 60
            offset = offset if off[0] == "+" else -offset
    return ns, offset


def temporal_constant(value: object, t: pa.DataType) -> pa.Array | None:
    """A constant (timestamp or date scalar, or text) as a one-value array of the temporal type
    ``t`` (module docstring); None when this module does not convert it (Arrow's cast then
    applies)."""
    if isinstance(value, pa.Scalar):
        if not value.is_valid:
            return pa.nulls(1, t)
        if pa.types.is_date(value.type):  # midnight UTC of the day, exactly (as Arrow casts dates)
            raw = value.cast(pa.int32() if pa.types.is_date32(value.type) else pa.int64()).as_py()
            days = raw if pa.types.is_date32(value.type) else raw // 86400_000
            if pa.types.is_date(t):
                return _raw_value(days if pa.types.is_date32(t) else days * 86400_000, t)
            return _raw_value(days * 86400 * 10**9 // _UNIT_NS[t.unit], t)
        if not pa.types.is_timestamp(value.type) or not pa.types.is_timestamp(t):
            return None
        raw = value.cast(pa.int64()).as_py() * _UNIT_NS[value.type.unit]
        parsed: tuple[int, int | None] = (raw, 0 if value.type.tz is not None else None)
    elif isinstance(value, str):
        got = parse_datetime(value)
        if got is None:
            raise InvalidInputError(f"text {value[:40]!r} is not a {t} value")
        parsed = got
    else:
        return None
    wall_ns, offset = parsed
    if pa.types.is_date(t):
        ns = _instant_ns(wall_ns, offset, None)
        days = ns // (86400 * 10**9)
        return _raw_value(days if pa.types.is_date32(t) else days * 86400_000, t)
    ns = _instant_ns(wall_ns, offset, t.tz)
    return _raw_value(_trunc_div(ns, _UNIT_NS[t.unit]), t)


def time_constant(text: str, t: pa.DataType) -> pa.Array:
    """Text as a one-value array of the time type ``t``: ``HH:MM[:SS[.fraction]]``, or digits
    taken as the stored value in ``t``'s unit."""
    per = _UNIT_NS[t.unit]
    if text.strip().isdigit():
        raw = int(text)
    else:
        m = re.fullmatch(r"\s*(\d{1,2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?\s*", text)
        if m is None or int(m.group(1)) > 23 or int(m.group(2)) > 59 or int(m.group(3) or 0) > 59:
            raise InvalidInputError(f"text {text[:40]!r} is not a {t} value")
        ns = (int(m.group(1)) * 3600 + int(m.group(2)) * 60 + int(m.group(3) or 0)) * 10**9
        ns += int(m.group(4).ljust(9, "0")) if m.group(4) else 0
        raw = ns // per
    width = 32 if pa.types.is_time32(t) else 64
    if raw >= 1 << (width - 1):
        raise InvalidInputError(f"text {text[:40]!r} is not a {t} value")
    dtype = np.int32 if width == 32 else np.int64
    return pa.Array.from_buffers(t, 1, [None, pa.py_buffer(np.array([raw], dtype=dtype))])


def _family(t: pa.DataType) -> str:
    if pa.types.is_dictionary(t):
        return _family(t.value_type)
    if pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t):
        return "number"
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return "text"
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return "binary"
    if pa.types.is_fixed_size_binary(t):
        return "fixed_binary"
    if pa.types.is_timestamp(t) or pa.types.is_date(t):
        return "datetime"
    if pa.types.is_time(t):
        return "time"
    return "null" if pa.types.is_null(t) else str(t)


#: Pairs of different type families a comparison accepts (text is parsed as the other side).
_COMPARABLE = {frozenset(p) for p in (("number", "text"), ("datetime", "text"), ("time", "text"),
                                      ("binary", "text"), ("binary", "fixed_binary"))}


def _incomparable(a: pa.DataType, b: pa.DataType) -> bool:
    """Pairs the reference refuses to compare: values of different families (numbers, text,
    binary, booleans, dates and timestamps, times...) other than the pairs it converts (text
    with numbers, dates, times and binary; a date with an int32/int64, handled before)."""
    fa, fb = _family(a), _family(b)
    return fa != fb and "null" not in (fa, fb) and frozenset((fa, fb)) not in _COMPARABLE


def _coarser(a: str, b: str) -> str:
    return a if _UNIT_NS[a] >= _UNIT_NS[b] else b


def _timestamp_expr(expr: pc.Expression, t: pa.DataType, target: pa.DataType) -> pc.Expression:
    """``expr`` (of timestamp type ``t``) as ``target``: wall time read in the target's zone
    when ``t`` has none, units truncated toward zero."""
    if t.tz is None and target.tz is not None:
        expr = pc.assume_timezone(expr.cast(pa.timestamp(t.unit), safe=False), timezone=target.tz)
        t = pa.timestamp(t.unit, target.tz)
    return expr if t == target else expr.cast(target, safe=False)


def _decimal_of(t: pa.DataType) -> pa.DataType | None:
    """The decimal type a value of type ``t`` takes against a decimal: every integer exactly;
    float64 with 15 digits after the point, float32 with 7 (as the reference's engine)."""
    if pa.types.is_decimal(t):
        return t
    if pa.types.is_integer(t):
        digits = {8: 3, 16: 5, 32: 10, 64: 20}[t.bit_width]
        return pa.decimal128(digits, 0)
    if pa.types.is_float64(t):
        return pa.decimal128(30, 15)
    if pa.types.is_float32(t):
        return pa.decimal128(14, 7)
    return None


def _common_decimal(a: pa.DataType, b: pa.DataType) -> pa.DataType | None:
    scale = max(a.scale, b.scale)
    precision = max(a.precision - a.scale, b.precision - b.scale) + scale
    if precision <= 38 and not (isinstance(a, pa.Decimal256Type) or isinstance(b, pa.Decimal256Type)):
        return pa.decimal128(precision, scale)
    return pa.decimal256(precision, scale) if precision <= 76 else None


def _cast_side(side: Side, target: pa.DataType) -> pc.Expression:
    """``side`` in the decimal type ``target`` (floats rounded; a float too large for it: an
    error, as in the reference)."""
    if side.type == target:
        return side.expr
    const = side.constant
    if isinstance(const, pa.Scalar) and const.is_valid:
        v = const.as_py()
        if isinstance(v, int):  # an exact decimal of an integer constant (no pandas, no float)
            raw = (v * 10**target.scale).to_bytes(target.bit_width // 8, "little", signed=True)
            return pc.scalar(pa.Array.from_buffers(target, 1, [None, pa.py_buffer(raw)])[0])
        if isinstance(v, float) and pa.types.is_floating(const.type):
            dtype = {16: np.float16, 32: np.float32, 64: np.float64}[const.type.bit_width]
            arr = pa.Array.from_buffers(const.type, 1, [None, pa.py_buffer(np.array([v], dtype=dtype))])
            try:
                return pc.scalar(arr.cast(target, safe=True)[0])
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                raise InvalidInputError(f"{v!r} does not fit {target}") from None
    return side.expr.cast(target, safe=not (side.type is not None and pa.types.is_integer(side.type)))


def coerce_sides(left: Side, right: Side) -> tuple[pc.Expression, pc.Expression, pa.DataType | None]:
    """Both sides of a comparison in their common type where lancejit must cast them itself
    (module docstring), with the float type to compare in (None: not a float comparison)."""
    lt, rt = left.type, right.type
    a, b = left.expr, right.expr
    if lt is None or rt is None:
        return a, b, None
    # temporal: a constant takes the other side's type
    for this, other, swap in ((left, right, False), (right, left, True)):
        if _is_temporal(other.type) and other.constant is None and this.constant is not None and (
                _is_temporal(this.type) or pa.types.is_string(this.type) or pa.types.is_large_string(this.type)):
            got = temporal_constant(this.constant, other.type)
            if got is not None:
                return (other.expr, pc.scalar(got[0]), None) if swap else (pc.scalar(got[0]), other.expr, None)
    # text against a number: the text parsed as the other side's type
    for this, other, swap in ((left, right, False), (right, left, True)):
        if isinstance(this.constant, str) and (pa.types.is_integer(other.type) or pa.types.is_floating(other.type)
                                               or pa.types.is_decimal(other.type)):
            try:
                got = pa.array([this.constant], pa.string()).cast(other.type)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                raise InvalidInputError(f"text {this.constant[:40]!r} is not a {other.type} value") from None
            this = Side(pc.scalar(got[0]), other.type, got[0])
            left, right = (other, this) if swap else (this, other)
            a, b = left.expr, right.expr
            break
    lt, rt = left.type, right.type
    assert lt is not None and rt is not None  # both known above
    # text against a time of day: ``HH:MM[:SS[.fraction]]``, or digits for the raw value
    for this, other, swap in ((left, right, False), (right, left, True)):
        if isinstance(this.constant, str) and (pa.types.is_time32(other.type) or pa.types.is_time64(other.type)):
            got = time_constant(this.constant, other.type)
            return (other.expr, pc.scalar(got[0]), None) if swap else (pc.scalar(got[0]), other.expr, None)
    # a date against an integer: the date's stored days (date32) or milliseconds (date64)
    for this, other, swap in ((left, right, False), (right, left, True)):
        if pa.types.is_date(this.type) and other.type in (pa.int32(), pa.int64()):
            raw = this.expr.cast(pa.int32() if pa.types.is_date32(this.type) else pa.int64())
            return (other.expr, raw, None) if swap else (raw, other.expr, None)
    if _incomparable(lt, rt):
        raise InvalidInputError(f"cannot compare {lt} with {rt}")
    if pa.types.is_timestamp(lt) and pa.types.is_timestamp(rt) and lt != rt:
        target = pa.timestamp(_coarser(lt.unit, rt.unit), lt.tz if lt.tz is not None else rt.tz)
        return _timestamp_expr(a, lt, target), _timestamp_expr(b, rt, target), None
    # integers of both signs with uint64; decimals with integers or other decimals
    if pa.types.is_integer(lt) and pa.types.is_integer(rt):
        if (pa.types.is_uint64(lt) and pa.types.is_signed_integer(rt)) or (
                pa.types.is_uint64(rt) and pa.types.is_signed_integer(lt)):
            target = pa.decimal128(20, 0)
            return _cast_side(left, target), _cast_side(right, target), None
        return a, b, None
    if pa.types.is_decimal(lt) or pa.types.is_decimal(rt):
        da, db = _decimal_of(lt), _decimal_of(rt)
        if da is not None and db is not None and lt != rt:
            target = _common_decimal(da, db)
            if target is not None:
                return _cast_side(left, target), _cast_side(right, target), None
        if not (pa.types.is_floating(lt) or pa.types.is_floating(rt)):
            return a, b, None
    if not (pa.types.is_floating(lt) or pa.types.is_floating(rt)):
        return a, b, None
    widths = [t.bit_width for t in (lt, rt) if pa.types.is_floating(t)]
    others = [t for t in (lt, rt) if not pa.types.is_floating(t)]
    width = 64 if 64 in widths else max(widths)
    if width < 64 and others and not all(pa.types.is_integer(t) for t in others):
        width = 64
    ftype = {16: pa.float16(), 32: pa.float32(), 64: pa.float64()}[width]
    if width < 64:
        a = a if lt == ftype else a.cast(ftype, safe=False)
        b = b if rt == ftype else b.cast(ftype, safe=False)
    return a, b, ftype


def arithmetic_sides(left: Side, right: Side) -> tuple[pc.Expression, pc.Expression]:
    """The operands of ``+ - * / %``: a uint64 side with a signed integer literal takes the
    literal as uint64 when it fits (``u64 + 0``; Arrow would compute in int64 and fail past
    2**63); other pairs as Arrow casts them."""
    for this, other, swap in ((left, right, False), (right, left, True)):
        if (other.type is not None and pa.types.is_uint64(other.type) and isinstance(this.constant, pa.Scalar)
                and this.constant.is_valid and pa.types.is_signed_integer(this.constant.type)
                and this.constant.as_py() >= 0):
            got = pc.scalar(this.constant.cast(pa.uint64()))
            return (other.expr, got) if swap else (got, other.expr)
    return left.expr, right.expr


__all__ = ["Side", "arithmetic_sides", "coerce_sides", "parse_datetime", "temporal_constant", "time_constant"]
