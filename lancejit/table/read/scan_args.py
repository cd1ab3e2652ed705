"""The reference's scanner arguments (``LanceDataset.scanner(columns, filter, limit, offset,
nearest, batch_size, ...)``) resolved into what lancejit's scan reads (:class:`~.spec.ScanSpec`)
and does afterwards (:class:`~.scan_post.ScanPost`).

Arguments that only tune the reference's own pipeline (``batch_size_bytes``, ``io_buffer_size``,
``batch_readahead``, ``scan_in_order``, ``late_materialization``, ``use_stats``,
``use_scalar_index``) are accepted; lancejit plans those itself.  Arguments for features it does
not have (full-text search, index segments, row-address allow/block lists, blob handling modes,
deleted rows) raise :class:`NotSupportedError` when given a value.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

import pyarrow as pa

from lancejit.core.errors import InvalidInputError, NotSupportedError

from ..meta.context import DatasetContext
from .fragment import ROWADDR, ROWID
from .scan_post import Ordering, ScanPost
from .spec import ScanSpec, compile_filter, output_columns, scan_spec

#: Meta columns a filter may name (read with the rows, then filtered: no pushdown).
META_FIELDS = (pa.field(ROWID, pa.uint64()), pa.field(ROWADDR, pa.uint64()))

#: Arguments that must be left unset (None / False) because lancejit has no such feature.
_UNSUPPORTED = ("index_segments", "full_text_query", "include_deleted_rows", "scan_stats_callback",
                "disable_scoring_autoprojection", "row_addr_allowlist", "row_addr_blocklist")


@dataclass(frozen=True, slots=True)
class ScanArgs:
    """The reference's scanner arguments (plus lancejit's ``fragment_ids`` and ``readahead``)."""

    columns: Any = None
    filter: Any = None
    limit: int | None = None
    offset: int | None = None
    nearest: Any = None
    batch_size: int | None = None
    batch_size_bytes: int | None = None
    batch_readahead: int | None = None
    fragment_readahead: int | None = None
    scan_in_order: bool | None = None
    fragments: Iterable[Any] | None = None
    index_segments: Any = None
    full_text_query: Any = None
    prefilter: bool | None = None
    with_row_id: bool | None = None
    with_row_address: bool | None = None
    use_stats: bool | None = None
    fast_search: bool | None = None
    io_buffer_size: int | None = None
    late_materialization: Any = None
    blob_handling: str | None = None
    use_scalar_index: bool | None = None
    include_deleted_rows: bool | None = None
    scan_stats_callback: Any = None
    strict_batch_size: bool | None = None
    order_by: Sequence[Any] | None = None
    disable_scoring_autoprojection: bool | None = None
    row_addr_allowlist: Any = None
    row_addr_blocklist: Any = None
    fragment_ids: Sequence[int] | None = None
    readahead: int | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def of(cls, defaults: Mapping[str, Any] | None, **kwargs: Any) -> "ScanArgs":
        """Arguments given (None = unset) over the dataset's ``default_scan_options``."""
        merged = dict(defaults or {})
        merged.update({k: v for k, v in kwargs.items() if v is not None})
        known = {f for f in cls.__dataclass_fields__ if f != "extra"}
        extra = {k: merged.pop(k) for k in list(merged) if k not in known}
        if extra:
            raise InvalidInputError(f"unknown scanner arguments: {sorted(extra)}")
        return cls(**merged)


def _fragment_ids(args: ScanArgs) -> Sequence[int] | None:
    if args.fragments is None:
        return args.fragment_ids
    ids = []
    for f in args.fragments:
        fid = getattr(f, "fragment_id", None)
        if fid is None:
            fid = getattr(f, "id", None)
        if fid is None:
            raise InvalidInputError(f"fragments must be LanceFragment or FragmentMetadata objects, got {type(f).__name__}")
        ids.append(int(fid))
    if args.fragment_ids is not None:
        keep = set(args.fragment_ids)
        ids = [i for i in ids if i in keep]
    return ids


def _orderings(order_by: Sequence[Any] | None) -> tuple[Ordering, ...]:
    if not order_by:
        return ()
    out = []
    for o in order_by:
        if isinstance(o, str):
            out.append(Ordering(o))
        elif isinstance(o, Ordering):
            out.append(o)
        elif hasattr(o, "column_name"):  # the reference's own ColumnOrdering
            out.append(Ordering(o.column_name, bool(getattr(o, "ascending", True)),
                                bool(getattr(o, "nulls_first", False))))
        else:
            raise InvalidInputError(f"order_by entries must be column names or ColumnOrdering, got {o!r}")
    return tuple(out)


def _meta_filter(ctx: DatasetContext, filt: Any) -> Any:
    """The compiled filter when it reads ``_rowid`` / ``_rowaddr`` (None otherwise)."""
    if filt is None:
        return None
    if isinstance(filt, str) and ROWID not in filt and ROWADDR not in filt:
        return None
    schema = pa.schema(list(ctx.schema) + [f for f in META_FIELDS if f.name not in ctx.schema.names])
    try:
        compiled = compile_filter(filt, schema)
    except InvalidInputError:
        return None  # the plain compile reports what is wrong
    return compiled if compiled.columns & {ROWID, ROWADDR} else None


def _computed(ctx: DatasetContext, columns: Mapping[str, Any]) -> tuple[list[str], list[tuple[str, Any]]]:
    """``(columns read, (name, Arrow expression) outputs)`` of ``columns={name: SQL}``."""
    schema = pa.schema(list(ctx.schema) + list(META_FIELDS))
    outputs: list[tuple[str, Any]] = []
    needed: list[str] = []
    for name, sql in columns.items():
        if not isinstance(name, str):
            raise InvalidInputError(f"output column names must be strings, got {name!r}")
        compiled = compile_filter(sql, schema) if isinstance(sql, str) else None
        if compiled is None:
            import pyarrow.compute as pc

            if not isinstance(sql, pc.Expression):
                raise InvalidInputError(f"column {name!r}: expected a SQL expression string, got {type(sql).__name__}")
            compiled = compile_filter(sql, schema)
        outputs.append((name, compiled.expression))
        needed.extend(c for c in sorted(compiled.columns) if c not in needed)
    return needed, outputs


def resolve(ctx: DatasetContext, args: ScanArgs) -> tuple[ScanSpec, ScanPost | None]:
    """``(what to read, what to do with it afterwards)`` for ``args``."""
    for name in _UNSUPPORTED:
        if getattr(args, name):
            raise NotSupportedError(f"scanner argument {name} is not supported by lancejit")
    if args.nearest is not None:
        raise NotSupportedError("vector search (nearest=) is not supported by this lancejit build")
    if args.blob_handling not in (None, "all_binary", "blobs_descriptions"):
        raise NotSupportedError(f"blob_handling={args.blob_handling!r} is not supported by lancejit")
    if args.batch_size is not None and (isinstance(args.batch_size, bool) or not isinstance(args.batch_size, int)
                                        or args.batch_size < 1):
        raise InvalidInputError(f"batch_size must be an int >= 1, got {args.batch_size!r}")
    readahead = args.readahead if args.readahead is not None else args.fragment_readahead
    frag_ids = _fragment_ids(args)
    with_row_id, with_row_address = bool(args.with_row_id), bool(args.with_row_address)
    orderings = _orderings(args.order_by)
    strict = args.batch_size if args.strict_batch_size and args.batch_size else None
    meta = _meta_filter(ctx, args.filter)
    columns = args.columns
    if meta is None and not isinstance(columns, Mapping):
        spec = scan_spec(ctx, columns, args.filter, args.limit, args.offset, with_row_id, with_row_address,
                         args.batch_size, frag_ids, readahead)
        if not orderings and strict is None:
            return spec, None
        schema = _schema_of(ctx, spec)
        return spec, ScanPost(schema, order_by=orderings, strict_batch_size=strict)
    # read the needed columns (and row ids), filter / compute afterwards
    outputs: list[tuple[str, Any]] | None = None
    if isinstance(columns, Mapping):
        needed, outputs = _computed(ctx, columns)
        if with_row_id:
            import pyarrow.compute as pc

            outputs.append((ROWID, pc.field(ROWID)))
            needed.append(ROWID)
        if with_row_address:
            import pyarrow.compute as pc

            outputs.append((ROWADDR, pc.field(ROWADDR)))
            needed.append(ROWADDR)
        out_spec = None
    else:
        out_spec = scan_spec(ctx, columns, None, None, None, with_row_id, with_row_address)
        needed = [c.name for c in output_columns(out_spec)]
    read_cols = list(needed)
    if meta is not None:
        read_cols.extend(c for c in sorted(meta.columns) if c not in read_cols)
    inner = scan_spec(ctx, [c for c in read_cols if c not in (ROWID, ROWADDR)],
                      None if meta is not None else args.filter,
                      None if meta is not None else args.limit, None if meta is not None else args.offset,
                      ROWID in read_cols, ROWADDR in read_cols, args.batch_size, frag_ids, readahead)
    inner_schema = _schema_of(ctx, inner)
    if outputs is not None:
        types = [_expr_type(inner_schema, e) for _, e in outputs]
        out_schema = pa.schema([pa.field(n, t) for (n, _), t in zip(outputs, types)])
        keep = None
    else:
        assert out_spec is not None  # the columns are names, not a mapping
        out_schema = _schema_of(ctx, out_spec)
        keep = tuple(out_schema.names)
    post = ScanPost(out_schema, meta, (args.offset or 0) if meta is not None else 0,
                    args.limit if meta is not None else None, tuple(outputs) if outputs is not None else None,
                    keep, orderings, strict)
    return inner, post


def _schema_of(ctx: DatasetContext, spec: ScanSpec) -> pa.Schema:
    from .assemble import output_schema

    return output_schema(ctx, spec)


def _expr_type(schema: pa.Schema, expr: Any) -> pa.DataType:
    from ..filter.evaluate import project

    try:
        return project(schema.empty_table(), [expr])[0].type
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
        raise InvalidInputError(f"output expression {expr} cannot be evaluated: {exc}") from None


__all__ = ["META_FIELDS", "ScanArgs", "resolve"]
