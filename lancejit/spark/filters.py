"""Translating filters Spark pushes (``pyspark.sql.datasource.Filter``) into lancejit SQL.

Only filters whose lancejit evaluation is exactly Spark's are translated: top-level columns
of integer, string or boolean type compared with values of the same kind (no floats: Spark's
``NaN = NaN`` is true; no timestamps/decimals: zone and scale subtleties), strings without
backslashes (and not holding both quote kinds), column names without backticks.  Everything else returns ``None`` and is left to Spark.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

# pyspark >= 5.0 is expected to fix the stale-pushed-filters bug of 4.1-4.3
# (a reused DataFrame keeps the previous query's pushed filters).
FIRST_FIXED_PYSPARK = (5, 0)


def pyspark_version() -> tuple[int, int]:
    import pyspark

    parts = pyspark.__version__.split(".")
    try:
        return int(parts[0]), int("".join(ch for ch in parts[1] if ch.isdigit()) or 0)
    except (IndexError, ValueError):
        return (0, 0)


def accept_pushed_filters(mode: str) -> bool:
    """Whether the reader accepts pushed filters: ``true``/``false`` as told; ``auto`` only on
    pyspark versions that are not known to replay stale pushed filters."""
    if mode == "true":
        return True
    if mode == "false":
        return False
    return pyspark_version() >= FIRST_FIXED_PYSPARK


def _ident(name: str) -> str | None:
    if "`" in name:
        return None
    return f"`{name}`"


def _kind(t: pa.DataType) -> str | None:
    if pa.types.is_integer(t) and not pa.types.is_uint64(t):
        return "int"
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return "str"
    if pa.types.is_boolean(t):
        return "bool"
    return None


def _literal(value: Any, kind: str) -> str | None:
    if kind == "bool":
        return ("TRUE" if value else "FALSE") if isinstance(value, bool) else None
    if kind == "int":
        return str(int(value)) if isinstance(value, int) and not isinstance(value, bool) else None
    if kind == "str":
        if not isinstance(value, str) or "\\" in value:
            return None
        if "'" not in value:
            return f"'{value}'"
        if '"' not in value:
            return f'"{value}"'
        return None
    return None


def to_sql(flt: Any, schema: pa.Schema) -> str | None:
    """The lancejit SQL for one pushed filter, or None when it cannot be applied exactly."""
    from pyspark.sql import datasource as d

    if isinstance(flt, d.Not):
        inner = to_sql(flt.child, schema)
        # NOT over a null comparison stays null (not selected) in both engines.
        return None if inner is None else f"NOT ({inner})"
    attr = getattr(flt, "attribute", None)
    if not isinstance(attr, tuple) or len(attr) != 1:
        return None
    name = attr[0]
    if name not in schema.names:
        return None
    col = _ident(name)
    kind = _kind(schema.field(name).type)
    if col is None or kind is None:
        return None
    if isinstance(flt, d.IsNull):
        return f"{col} IS NULL"
    if isinstance(flt, d.IsNotNull):
        return f"{col} IS NOT NULL"
    if isinstance(flt, d.In):
        values = list(flt.value)
        if not values or any(v is None for v in values):
            return None
        lits = [lit for lit in (_literal(v, kind) for v in values) if lit is not None]
        if len(lits) != len(values):
            return None
        return f"{col} IN ({', '.join(lits)})"
    ops = {d.EqualTo: "=", d.GreaterThan: ">", d.GreaterThanOrEqual: ">=", d.LessThan: "<",
           d.LessThanOrEqual: "<="}
    if isinstance(flt, d.EqualNullSafe):
        if flt.value is None:
            return f"{col} IS NULL"
        lit = _literal(flt.value, kind)
        return None if lit is None else f"({col} IS NOT NULL AND {col} = {lit})"
    if isinstance(flt, (d.EqualTo, d.GreaterThan, d.GreaterThanOrEqual, d.LessThan, d.LessThanOrEqual)):
        op = ops.get(type(flt))
        if op is None or flt.value is None:
            return None
        lit = _literal(flt.value, kind)
        return None if lit is None else f"{col} {op} {lit}"
    return None


def combine(parts: list[str]) -> str | None:
    """``(a) AND (b) ...`` or None for no parts."""
    parts = [p for p in parts if p]
    if not parts:
        return None
    return " AND ".join(f"({p})" for p in parts)


__all__ = ["accept_pushed_filters", "combine", "pyspark_version", "to_sql"]
