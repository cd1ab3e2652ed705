"""What a scan reads (:class:`ScanSpec`, :class:`OutColumn`), and the scan a reader call describes:
user arguments (columns, filter, limit, offset, row ids, fragments) checked and resolved into a
:class:`ScanSpec` over one version's fields."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Iterable, Sequence

import numpy as np
import pyarrow as pa

from lancejit.core.config import settings
from lancejit.core.errors import InvalidInputError

from ..meta.context import DatasetContext
from ..meta.fields import TopField
from .fragment import ROWADDR, ROWID

if TYPE_CHECKING:  # pyarrow.compute is imported by the first filter, not by opening a dataset
    import pyarrow.compute as pc

    from ..filter.compile import CompiledFilter


@dataclass(frozen=True, slots=True)
class OutColumn:
    """One output column: ``name``; either a top-level field ``top`` (``path``: struct children
    to descend into, e.g. ``("x",)`` for ``st.x``) or a meta column (``_rowid``/``_rowaddr``)."""

    name: str
    top: str | None
    path: tuple[str, ...] = ()
    #: Keep only these struct sub-paths of ``top`` (the reference's take shape for ``st.x``).
    prune: tuple[tuple[str, ...], ...] | None = None


@dataclass(frozen=True, slots=True)
class ScanSpec:
    """What to read: top-level fields, filter, meta columns, output order and paging.

    ``outputs`` (None = the ``tops`` in order, then ``_rowid``, then ``_rowaddr``) names the
    result columns in order.
    """

    tops: tuple[TopField, ...]
    filter: CompiledFilter | None = None
    with_row_id: bool = False
    with_row_address: bool = False
    limit: int | None = None
    offset: int = 0
    batch_size: int = field(default_factory=lambda: settings().batch_size)
    readahead: int = field(default_factory=lambda: settings().scan_readahead)
    fragment_ids: tuple[int, ...] | None = None
    outputs: tuple[OutColumn, ...] | None = None


def output_columns(spec: ScanSpec) -> tuple[OutColumn, ...]:
    if spec.outputs is not None:
        return spec.outputs
    cols = [OutColumn(t.name, t.name) for t in spec.tops]
    if spec.with_row_id:
        cols.append(OutColumn(ROWID, None))
    if spec.with_row_address:
        cols.append(OutColumn(ROWADDR, None))
    return tuple(cols)


def compile_filter(*args: Any, **kwargs: Any) -> Any:
    """:func:`lancejit.table.filter.compile.compile_filter`, imported on the first filter (sqlglot
    is not loaded by opening a dataset or taking rows)."""
    from ..filter.compile import compile_filter as compile_

    return compile_(*args, **kwargs)


def _is_int(value: Any) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


def _check_count(name: str, value: Any, minimum: int) -> None:
    """``value`` (None allowed) must be an int >= ``minimum``; else InvalidInputError naming it."""
    if value is not None and (not _is_int(value) or value < minimum):
        raise InvalidInputError(f"{name} must be an int >= {minimum}, got {value!r}")


def _nest(outputs: list[OutColumn]) -> list[OutColumn]:
    """Merge ``st.x``-style columns into one pruned struct column per top-level field, at the
    first one's position (the shape the reference's take returns)."""
    paths: dict[str, list[tuple[str, ...]]] = {}
    for o in outputs:
        if o.top is not None:
            paths.setdefault(o.top, []).append(o.path)
    out, seen = [], set()
    for o in outputs:
        if o.top is None or not any(paths[o.top]):
            out.append(o)
        elif o.top not in seen:
            seen.add(o.top)
            out.append(OutColumn(o.top, o.top, (), tuple(paths[o.top])))
    return out


def _resolve_column(schema: pa.Schema, name: str) -> tuple[str | None, tuple[str, ...]]:
    """``(top-level field, struct path)`` for ``name`` (``"a"`` or a dotted ``"st.x"``)."""
    if name in schema.names:
        return name, ()
    parts = name.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        top = ".".join(parts[:cut])
        if top not in schema.names:
            continue
        t = schema.field(top).type
        ok = True
        for part in parts[cut:]:
            if not pa.types.is_struct(t) or t.get_field_index(part) < 0:
                ok = False
                break
            t = t.field(part).type
        if ok:
            return top, tuple(parts[cut:])
    return None, ()


def scan_spec(
    ctx: DatasetContext,
    columns: Sequence[str] | None = None,
    filter: str | pc.Expression | None = None,
    limit: int | None = None,
    offset: int | None = None,
    with_row_id: bool = False,
    with_row_address: bool = False,
    batch_size: int | None = None,
    fragment_ids: Sequence[int] | None = None,
    readahead: int | None = None,
    nested_as_struct: bool = False,
) -> ScanSpec:
    """The scan of ``ctx``'s version that the reader API's arguments describe (columns by name,
    ``_rowid``/``_rowaddr`` and dotted struct paths; a SQL or Arrow filter; limit/offset;
    fragments); InvalidInputError naming what is wrong."""
    c = ctx
    by_name = {t.name: t for t in c.top_fields}
    outputs: list[OutColumn] | None = None
    if columns is None:
        tops = list(c.top_fields)
    else:
        if isinstance(columns, str):
            columns = [columns]
        elif not isinstance(columns, (list, tuple)):
            raise InvalidInputError(f"columns must be a list of column names, got {type(columns).__name__}")
        needed: dict[str, TopField] = {}
        outputs = []
        for name in columns:
            if not isinstance(name, str):
                raise InvalidInputError(f"column names must be strings, got {name!r}")
            if name == ROWID:
                with_row_id = True
                outputs.append(OutColumn(ROWID, None))
                continue
            if name == ROWADDR:
                with_row_address = True
                outputs.append(OutColumn(ROWADDR, None))
                continue
            top, path = _resolve_column(c.schema, name)
            if top is None:
                raise InvalidInputError(f"dataset {c.uri} has no column {name!r} (columns: {list(by_name)})")
            needed.setdefault(top, by_name[top])
            outputs.append(OutColumn(name, top, path))
        tops = list(needed.values())
        if with_row_id and not any(o.name == ROWID for o in outputs):
            outputs.append(OutColumn(ROWID, None))
        if with_row_address and not any(o.name == ROWADDR for o in outputs):
            outputs.append(OutColumn(ROWADDR, None))
        if nested_as_struct:
            outputs = _nest(outputs)
    compiled = compile_filter(filter, c.schema) if filter is not None else None
    _check_count("limit", limit, 0)
    _check_count("offset", offset, 0)
    _check_count("batch_size", batch_size, 1)
    _check_count("readahead", readahead, 0)
    if fragment_ids is not None and (isinstance(fragment_ids, (str, bytes)) or not isinstance(fragment_ids, Iterable)
                                     or not all(_is_int(f) and f >= 0 for f in fragment_ids)):
        raise InvalidInputError(f"fragment_ids must be a list of non-negative ints, got {fragment_ids!r}")
    kwargs: dict[str, Any] = {}
    if batch_size is not None:
        kwargs["batch_size"] = int(batch_size)
    if readahead is not None:
        kwargs["readahead"] = max(1, int(readahead))
    return ScanSpec(
        tops=tuple(tops), filter=compiled, with_row_id=with_row_id,
        with_row_address=with_row_address, limit=limit, offset=offset or 0,
        fragment_ids=tuple(fragment_ids) if fragment_ids is not None else None,
        outputs=tuple(outputs) if outputs is not None else None, **kwargs,
    )


__all__ = ["OutColumn", "ScanSpec", "compile_filter", "output_columns", "scan_spec"]
