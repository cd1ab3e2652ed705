"""Assembling output rows: the scan's output schema and batches / tables from decoded top-level
arrays and meta columns (``_rowid``, ``_rowaddr``): struct paths (``st.x``) extracted, pruned
struct columns (the reference's take shape) built, zero-column results kept at their row count."""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from ..meta.context import DatasetContext
from .spec import OutColumn, ScanSpec, output_columns


def _pruned_type(t: pa.DataType, paths: tuple[tuple[str, ...], ...]) -> pa.DataType:
    if any(len(p) == 0 for p in paths):
        return t
    fields = []
    for f in t:
        sub = tuple(p[1:] for p in paths if p[0] == f.name)
        if sub:
            fields.append(f.with_type(_pruned_type(f.type, sub)))
    return pa.struct(fields)


def _prune_array(arr: pa.Array, paths: tuple[tuple[str, ...], ...]) -> pa.Array:
    if any(len(p) == 0 for p in paths):
        return arr
    children, fields = [], []
    for i, f in enumerate(arr.type):
        sub = tuple(p[1:] for p in paths if p[0] == f.name)
        if sub:
            child = _prune_array(arr.field(i), sub)
            children.append(child)
            fields.append(f.with_type(child.type))
    mask = arr.is_null() if arr.null_count else None
    return pa.StructArray.from_arrays(children, fields=fields, mask=mask)


def _out_field(ctx: DatasetContext, col: OutColumn) -> pa.Field:
    if col.top is None:
        return pa.field(col.name, pa.uint64())
    f = ctx.schema.field(col.top)
    if col.prune is not None:
        return f.with_type(_pruned_type(f.type, col.prune)).with_name(col.name)
    for part in col.path:
        f = f.type.field(part)
    return f.with_name(col.name)


#: Output schemas by (dataset schema, output columns): a scan or take builds the same one many
#: times (small: schemas are shared by every version with the same schema).
_SCHEMAS: dict[tuple, pa.Schema] = {}


def output_schema(ctx: DatasetContext, spec: ScanSpec) -> pa.Schema:
    cols = output_columns(spec)
    key = (ctx.schema, cols)
    cached = True
    try:
        got = _SCHEMAS.get(key)
    except TypeError:  # an unhashable column entry: no caching
        got, cached = None, False
    if got is None:
        got = pa.schema([_out_field(ctx, c) for c in cols], metadata=ctx.schema.metadata)
        if cached:
            if len(_SCHEMAS) >= 256:
                _SCHEMAS.clear()
            _SCHEMAS[key] = got
    return got


def _child(array: pa.Array, path: tuple[str, ...]) -> pa.Array:
    for part in path:
        array = array.flatten()[array.type.get_field_index(part)]
    return array


def assemble_batch(
    ctx: DatasetContext, spec: ScanSpec, by_top: dict[str, pa.Array], meta: dict[str, pa.Array], n: int
) -> pa.RecordBatch:
    """The output batch of ``n`` rows from top-level arrays and meta arrays."""
    schema = output_schema(ctx, spec)
    cols = []
    for c in output_columns(spec):
        if c.top is None:
            cols.append(meta[c.name])
        elif c.prune is not None:
            arr = by_top[c.top]
            if isinstance(arr, pa.ChunkedArray):
                arr = arr.combine_chunks()
            cols.append(_prune_array(arr, c.prune))
        else:
            cols.append(_child(by_top[c.top], c.path))
    if not cols:
        return _no_column_batch(n, schema)
    return pa.RecordBatch.from_arrays(cols, schema=schema)


def assemble_table(
    ctx: DatasetContext, spec: ScanSpec, by_top: dict[str, Any], meta: dict[str, pa.Array], n: int
) -> pa.Table:
    """The output rows (``n``) from top-level arrays (plain or chunked) and meta arrays."""
    schema = output_schema(ctx, spec)
    cols = []
    for c in output_columns(spec):
        if c.top is None:
            cols.append(meta[c.name])
        elif c.prune is not None:
            arr = by_top[c.top]
            if isinstance(arr, pa.ChunkedArray):
                arr = arr.combine_chunks()
            cols.append(_prune_array(arr, c.prune))
        else:
            cols.append(_child_chunked(by_top[c.top], c.path))
    if not cols:
        return pa.Table.from_batches([_no_column_batch(n, schema)])
    cols = [c if isinstance(c, pa.ChunkedArray) else pa.chunked_array([c], type=c.type) for c in cols]
    return pa.Table.from_arrays(cols, schema=schema)


def _child_chunked(array: Any, path: tuple[str, ...]) -> Any:
    if not path or not isinstance(array, pa.ChunkedArray):
        return _child(array, path)
    chunks = [_child(c, path) for c in array.chunks]
    t = array.type
    for part in path:
        t = t.field(part).type
    return pa.chunked_array(chunks, type=t)


def _no_column_batch(n: int, schema: pa.Schema) -> pa.RecordBatch:
    return pa.RecordBatch.from_struct_array(pa.nulls(n, pa.struct([])))


__all__ = ["assemble_batch", "assemble_table", "output_schema"]
