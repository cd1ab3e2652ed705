"""Schema evolution: ``add_columns`` (Merge), ``drop_columns`` and ``alter_columns`` renames (Project).

``add_columns(transforms)`` accepts, like the reference:

* ``{name: SQL expression}`` evaluated over each row (the filter library's expressions);
* a function ``fn(batch) -> RecordBatch | Table | dict | DataFrame`` of the new columns, called
  per fragment on the columns ``read_columns`` (default: all);
* a ``pyarrow.Table`` / ``RecordBatchReader`` of the new columns aligned with the dataset's rows
  (scan order, after deletions);
* ``pyarrow.Field`` / list of fields / ``Schema``: all-null columns (schema only, no data written).

Each fragment gets one new data file holding the new fields (deleted rows stored as nulls); new
field ids continue after the largest id the schema or any data file uses.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Iterator, Mapping, Sequence

import numpy as np
import pyarrow as pa

from lancejit.core.errors import InvalidInputError, NotSupportedError
from lancejit.core.schema import LanceField, LanceSchema, parse_field_path
from lancejit.pb import table_pb2

from ..commit import Merge, Project
from ..filter.compile import compile_filter
from ..filter.evaluate import project
from ..read.fragment import ROWADDR
from .data_files import FragmentFileWriter, normalize_storage_version
from .mutate import WRITE_BATCH_ROWS
from .on_version import commit_on, loaded_manifest, open_data_files_of
from .sources import from_pandas, is_pandas, is_polars

if TYPE_CHECKING:  # pragma: no cover
    from ..read.dataset_reader import DatasetReader

#: Fragments (or groups of small ones) computed and written at once.
CONCURRENT_FRAGMENTS = 4
#: Consecutive fragments of fewer rows than this together are read and evaluated together.
GROUP_ROWS = 1 << 16


def _groups(frags: list[table_pb2.DataFragment], rows: int) -> list[list[table_pb2.DataFragment]]:
    """Consecutive ``frags`` in runs of at most ``rows`` physical rows (a bigger one alone)."""
    out: list[list[table_pb2.DataFragment]] = []
    cur: list[table_pb2.DataFragment] = []
    n = 0
    for f in frags:
        if cur and n + f.physical_rows > rows:
            out.append(cur)
            cur, n = [], 0
        cur.append(f)
        n += f.physical_rows
    if cur:
        out.append(cur)
    return out


def next_field_id(manifest: table_pb2.Manifest) -> int:
    """The id a new field gets: after the largest id the schema or any data file uses."""
    top = max((f.id for f in manifest.fields), default=-1)
    for frag in manifest.fragments:
        for df in frag.files:
            if len(df.fields):
                top = max(top, max(df.fields))
    return top + 1


def _to_table(out: Any, n: int, names: Sequence[str] | None = None) -> pa.Table:
    if isinstance(out, pa.RecordBatch):
        out = pa.Table.from_batches([out])
    elif isinstance(out, dict):
        out = pa.table(out)
    elif type(out).__module__.startswith("pandas"):
        out = pa.Table.from_pandas(out, preserve_index=False)
    if not isinstance(out, pa.Table):
        raise InvalidInputError(f"add_columns function must return a RecordBatch/Table/dict/DataFrame, got {type(out).__name__}")
    if out.num_rows != n:
        raise InvalidInputError(f"add_columns produced {out.num_rows} rows for {n} input rows")
    return out


class _AlignedSource:
    """Pulls rows in order from a table or batch reader aligned with the dataset's rows."""

    def __init__(self, data: pa.Table | pa.RecordBatchReader) -> None:
        self.schema = data.schema
        self._it: Iterator[pa.RecordBatch] = iter(data.to_batches() if isinstance(data, pa.Table) else data)
        self._pending: list[pa.RecordBatch] = []
        self._have = 0

    def take(self, n: int) -> pa.Table:
        while self._have < n:
            b = next(self._it, None)
            if b is None:
                raise InvalidInputError("add_columns data has fewer rows than the dataset")
            self._pending.append(b)
            self._have += b.num_rows
        t = pa.Table.from_batches(self._pending, schema=self.schema)
        out, rest = t.slice(0, n), t.slice(n)
        self._pending = rest.to_batches()
        self._have -= n
        return out

    def check_exhausted(self) -> None:
        if self._have or next(self._it, None) is not None:
            raise InvalidInputError("add_columns data has more rows than the dataset")


def _scatter(table: pa.Table, live: np.ndarray, physical_rows: int) -> pa.Table:
    """``table`` (one row per live offset) spread over ``physical_rows`` rows, nulls elsewhere."""
    if len(live) == physical_rows:
        return table
    idx = np.full(physical_rows, -1, dtype=np.int64)
    idx[live] = np.arange(len(live))
    mask = idx < 0
    return table.take(pa.array(idx, mask=mask))


async def add_columns_async(
    ds: "DatasetReader",
    transforms: Any,
    read_columns: Sequence[str] | None = None,
    *,
    reader_schema: pa.Schema | None = None,
) -> "DatasetReader":
    """Add columns to every fragment (see the module docstring); returns the new version."""
    lm = await loaded_manifest(ds)
    staged = await stage_columns_async(ds, transforms, read_columns, reader_schema=reader_schema, loaded=lm)
    try:
        return await commit_on(ds, staged.operation(), loaded=lm)
    except BaseException:
        await staged.cleanup()
        raise


@dataclass
class StagedColumns:
    """New columns written for some fragments and not committed yet: the fragments with their
    new data files, and the schema after the merge (the reference's ``merge_columns`` result)."""

    fragments: tuple[table_pb2.DataFragment, ...]
    schema: LanceSchema
    new_schema: pa.Schema
    writers: list[FragmentFileWriter]

    def operation(self) -> Merge:
        fields, meta = self.schema.to_pb(), dict(self.schema.metadata)
        return Merge(self.fragments, tuple(fields), meta,
                     preserves_nullability=all(f.nullable for f in self.new_schema))

    async def cleanup(self) -> None:
        for w in self.writers:
            await w.cleanup()


async def stage_columns_async(
    ds: "DatasetReader",
    transforms: Any,
    read_columns: Sequence[str] | None = None,
    *,
    reader_schema: pa.Schema | None = None,
    fragment_ids: Sequence[int] | None = None,
    loaded: Any = None,
) -> StagedColumns:
    """Write the new columns of every fragment (of ``fragment_ids`` when given) without
    committing them (see the module docstring)."""
    c = ds.context
    lm = loaded if loaded is not None else await loaded_manifest(ds)
    m = lm.manifest
    lschema = LanceSchema.from_pb(m.fields, dict(m.schema_metadata))
    ds_schema = ds.schema

    compute: Callable[[pa.Table], pa.Table] | None = None
    source: _AlignedSource | None = None
    grouped = False
    if isinstance(transforms, pa.Field):
        transforms = [transforms]
    if isinstance(transforms, pa.Schema):
        transforms = list(transforms)
    if isinstance(transforms, list) and transforms and all(isinstance(f, pa.Field) for f in transforms):
        new_schema = pa.schema(transforms)
        null_only = True
    else:
        null_only = False
        if isinstance(transforms, Mapping):
            exprs = {str(k): compile_filter(v, ds_schema) for k, v in transforms.items()}
            if not exprs:
                raise InvalidInputError("add_columns needs at least one column")
            needed = sorted(set().union(*(e.columns for e in exprs.values())))
            read_columns = needed

            def compute(t: pa.Table) -> pa.Table:
                base = t if t.num_columns else pa.table({"__n": pa.nulls(t.num_rows)})
                try:
                    cols = project(base, [e.expression for e in exprs.values()])
                except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
                    raise InvalidInputError(f"add_columns expressions cannot be evaluated: {exc}") from None
                return pa.table(cols, names=list(exprs))

            probe = compute(ds.schema.empty_table().select(needed))
            new_schema = probe.schema
            grouped = True
        elif callable(transforms):
            fn = transforms
            cols = list(read_columns) if read_columns is not None else list(ds_schema.names)

            def compute(t: pa.Table) -> pa.Table:
                batch = t.combine_chunks().to_batches()
                rb = batch[0] if batch else pa.RecordBatch.from_pylist([], schema=t.schema)
                return _to_table(fn(rb), t.num_rows)

            read_columns = cols
            new_schema = None
        elif isinstance(transforms, (pa.Table, pa.RecordBatch, pa.RecordBatchReader)) or is_pandas(transforms) \
                or is_polars(transforms) or hasattr(transforms, "__arrow_c_stream__"):
            data = aligned_data(transforms, reader_schema)
            source = _AlignedSource(data)
            new_schema = data.schema
        else:
            raise InvalidInputError(f"unsupported add_columns transforms {type(transforms).__name__}")

    # Fragment by fragment: compute the new columns, write them, keep only the description
    # (fragments concurrently, each with its writer).  The function form learns its output
    # schema from the first fragment.
    storage = normalize_storage_version(m.data_format.version or "2.0")
    new_fields: tuple[LanceField, ...] = ()
    writers: list[FragmentFileWriter] = []

    def start(schema: pa.Schema) -> None:
        nonlocal new_fields
        clash = [f.name for f in schema if f.name in ds_schema.names]
        if clash:
            raise InvalidInputError(f"dataset {ds.uri} already has columns {clash}")
        counter = [next_field_id(m)]
        new_fields = tuple(LanceField.from_arrow(f, next_id=counter) for f in schema)

    def new_writer() -> FragmentFileWriter:
        w = FragmentFileWriter(c.store, c.root, new_fields, {}, storage, max_rows_per_file=1 << 62,
                               storage_options=c.storage_options)
        writers.append(w)
        return w

    async def live_offsets(frag: table_pb2.DataFragment) -> np.ndarray | None:
        """Physical offsets of the fragment's live rows (None: every row is live)."""
        if not frag.HasField("deletion_file"):
            return None
        t = await ds.to_table_async(columns=[], fragment_ids=[frag.id], with_row_address=True)
        return (t.column(ROWADDR).to_numpy() & np.uint64(0xFFFFFFFF)).astype(np.int64)

    async def computed(frag: table_pb2.DataFragment) -> tuple[pa.Table, np.ndarray | None]:
        """The new columns of the fragment's live rows, and their offsets (None: all rows)."""
        assert compute is not None  # (the expression and function forms)
        deleted = frag.HasField("deletion_file")
        t = await ds.to_table_async(columns=list(read_columns or []), fragment_ids=[frag.id],
                                    with_row_address=deleted, batch_size=WRITE_BATCH_ROWS)
        if not deleted:
            return compute(t), None
        live = (t.column(ROWADDR).to_numpy() & np.uint64(0xFFFFFFFF)).astype(np.int64)
        return compute(t.drop_columns([ROWADDR])), live

    async def write(frag: table_pb2.DataFragment, out: pa.Table, live: np.ndarray | None) -> table_pb2.DataFragment:
        writer = new_writer()
        table = out if live is None else _scatter(out, live, frag.physical_rows)
        table = table.select(new_schema.names).cast(writer.file_schema).combine_chunks()
        for b in table.to_batches():
            await writer.write(b)
        files = await writer.finish()
        nf = table_pb2.DataFragment()
        nf.CopyFrom(frag)
        if files:
            nf.files.append(writer.data_file(files[0]))
        return nf

    async def computed_group(group: list[table_pb2.DataFragment]) -> list[tuple[pa.Table, np.ndarray | None]]:
        """:func:`computed` of several (small) fragments by one scan and one evaluation."""
        assert compute is not None  # (the expression form)
        t = await ds.to_table_async(columns=list(read_columns or []), fragment_ids=[f.id for f in group],
                                    with_row_address=True, batch_size=WRITE_BATCH_ROWS)
        addrs = t.column(ROWADDR).to_numpy()
        out = compute(t.drop_columns([ROWADDR]))
        frag_of = addrs >> np.uint64(32)
        bounds = np.searchsorted(frag_of, np.array([f.id for f in group], dtype=np.uint64))
        ends = np.append(bounds[1:], len(addrs))
        if not (np.diff(frag_of.astype(np.int64)) >= 0).all() or not (np.diff(bounds) >= 0).all():
            return [await computed(f) for f in group]  # not in id order: one fragment at a time
        parts = []
        for f, a, b in zip(group, bounds.tolist(), ends.tolist()):
            live = None
            if f.HasField("deletion_file"):
                live = (addrs[a:b] & np.uint64(0xFFFFFFFF)).astype(np.int64)
            parts.append((out.slice(a, b - a), live))
        return parts

    limit = asyncio.Semaphore(CONCURRENT_FRAGMENTS)

    async def one(frag: table_pb2.DataFragment) -> table_pb2.DataFragment:
        async with limit:
            out, live = await computed(frag)
            return await write(frag, out, live)

    async def one_group(group: list[table_pb2.DataFragment]) -> list[table_pb2.DataFragment]:
        async with limit:
            parts = await computed_group(group) if len(group) > 1 else [await computed(group[0])]
            return [await write(f, out, live) for f, (out, live) in zip(group, parts)]

    try:
        if new_schema is not None:
            start(new_schema)
        if not null_only:
            await open_data_files_of(ds)
        wanted = None if fragment_ids is None else set(int(i) for i in fragment_ids)
        frags = [f for f in m.fragments if wanted is None or f.id in wanted]
        if null_only:
            fragments = frags
        elif source is not None:  # the source's rows go to the fragments in order
            fragments = []
            for frag in frags:
                live = await live_offsets(frag)
                out = source.take(frag.physical_rows if live is None else len(live))
                fragments.append(await write(frag, out, live))
            source.check_exhausted()
        else:
            fragments = []
            if new_schema is None and frags:  # the function's output schema, from the first fragment
                out, live = await computed(frags[0])
                new_schema = out.schema
                start(new_schema)
                fragments.append(await write(frags[0], out, live))
                frags = frags[1:]
            if grouped:  # small fragments are read and evaluated together (SQL expressions)
                for part in await asyncio.gather(*(one_group(g) for g in _groups(frags, GROUP_ROWS))):
                    fragments += part
            else:
                fragments += await asyncio.gather(*(one(f) for f in frags))
            if new_schema is None:  # a dataset without fragments: ask the function for its schema
                assert compute is not None  # (the function form)
                new_schema = compute(ds_schema.empty_table().select(read_columns or [])).schema
                start(new_schema)
        merged = LanceSchema(tuple(lschema.fields) + tuple(new_fields), dict(m.schema_metadata))
    except BaseException:
        for w in writers:
            await w.cleanup()
        raise
    return StagedColumns(tuple(fragments), merged, new_schema, writers)


def aligned_data(data: Any, schema: pa.Schema | None = None) -> pa.Table | pa.RecordBatchReader:
    """New columns given as data (a table, batch, reader, pandas / polars frame or Arrow stream)
    as a table or reader (cast to ``schema`` when given)."""
    if is_pandas(data):
        data = from_pandas(data, schema)
    elif is_polars(data):
        data = data.to_arrow()
    elif isinstance(data, pa.RecordBatch):
        data = pa.Table.from_batches([data])
    elif not isinstance(data, (pa.Table, pa.RecordBatchReader)):
        data = pa.RecordBatchReader.from_stream(data)
    if schema is not None and not data.schema.equals(schema):
        data = data.cast(schema)
    return data


def _drop_paths(lschema: LanceSchema, paths: list[list[str]]) -> LanceSchema:
    drop_ids = set()
    for p in paths:
        try:
            drop_ids.add(lschema.field(p).id)
        except KeyError:
            raise InvalidInputError(f"no column {'.'.join(p)!r} to drop") from None

    def prune(f: LanceField) -> LanceField | None:
        if f.id in drop_ids:
            return None
        if not f.children:
            return f
        kids = tuple(k for k in (prune(ch) for ch in f.children) if k is not None)
        if not kids and f.is_struct:
            return None  # a struct left with no field goes too
        from dataclasses import replace

        return replace(f, children=kids)

    out = tuple(k for k in (prune(f) for f in lschema.fields) if k is not None)
    return LanceSchema(out, dict(lschema.metadata))


async def drop_columns_async(ds: "DatasetReader", columns: Sequence[str]) -> "DatasetReader":
    """Remove columns (top-level names or dotted nested paths); data files are kept as is."""
    if isinstance(columns, str):
        columns = [columns]
    lm = await loaded_manifest(ds)
    m = lm.manifest
    lschema = LanceSchema.from_pb(m.fields, dict(m.schema_metadata))
    new = _drop_paths(lschema, [parse_field_path(x) for x in columns])
    if not new.fields:
        raise InvalidInputError("cannot drop every column of a dataset")
    return await commit_on(ds, Project(tuple(new.to_pb())), loaded=lm)


async def alter_columns_async(ds: "DatasetReader", *alterations: Mapping[str, Any]) -> "DatasetReader":
    """Rename columns / relax nullability: each alteration is ``{"path": "a" or "st.x",
    "name": new name, "nullable": True}`` (type changes are not supported)."""
    from dataclasses import replace

    lm = await loaded_manifest(ds)
    m = lm.manifest
    lschema = LanceSchema.from_pb(m.fields, dict(m.schema_metadata))
    changes: dict[int, dict[str, Any]] = {}
    tightens = False
    for alt in alterations:
        if not isinstance(alt, Mapping) or "path" not in alt:
            raise InvalidInputError(f"an alteration is a dict with a 'path', got {alt!r}")
        unknown = set(alt) - {"path", "name", "nullable", "data_type"}
        if unknown:
            raise InvalidInputError(f"unknown alteration keys {sorted(unknown)}")
        if alt.get("data_type") is not None:
            raise NotSupportedError("alter_columns cannot change a column's type in lancejit")
        try:
            f = lschema.field(alt["path"])
        except KeyError:
            raise InvalidInputError(f"no column {alt['path']!r} to alter") from None
        ch: dict[str, Any] = {}
        if alt.get("name") is not None:
            ch["name"] = str(alt["name"])
        if alt.get("nullable") is not None:
            ch["nullable"] = bool(alt["nullable"])
            if f.nullable and not ch["nullable"]:
                tightens = True
                t = await ds.to_table_async(columns=[alt["path"]], filter=f"{_quoted(alt['path'])} IS NULL")
                if t.num_rows:
                    raise InvalidInputError(f"column {alt['path']!r} has nulls; it cannot become non-nullable")
        changes[f.id] = ch

    def apply(f: LanceField) -> LanceField:
        kids = tuple(apply(k) for k in f.children)
        return replace(f, children=kids, **changes.get(f.id, {}))

    new = LanceSchema(tuple(apply(f) for f in lschema.fields), dict(lschema.metadata))
    for parent in [new.fields] + [f.children for f in new.walk()]:
        names = [f.name for f in parent]
        if len(set(names)) != len(names):
            raise InvalidInputError(f"alter_columns would give duplicate names {names}")
    return await commit_on(ds, Project(tuple(new.to_pb()), preserves_nullability=not tightens), loaded=lm)


def _quoted(path: str) -> str:
    return ".".join(f"`{p}`" for p in parse_field_path(path))


__all__ = ["StagedColumns", "add_columns_async", "aligned_data", "alter_columns_async", "drop_columns_async",
           "stage_columns_async"]
