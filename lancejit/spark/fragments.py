"""The driver/worker split Spark jobs write through, the reference's distributed-write layer:
data files written by tasks with ``lance.fragment.write_fragments``, their ``FragmentMetadata``
handed back to the driver, ONE ``LanceDataset.commit(uri, LanceOperation..., read_version=...)``.

* :class:`WritePlan` (made once, on the driver side): where and what to write -- the dataset's
  Lance fields the data files hold (their field ids, new columns included), the data storage
  version, file limits, the version the job read and the job's file name prefix.  Picklable:
  it travels to every task.
* :func:`write_task` (a task): conforms Spark's batches to the plan's columns and calls
  :func:`lancejit.fragment.write_fragments` with the plan's Lance schema and ``name_prefix``;
  returns the new fragments' ``FragmentMetadata`` (ids 0: numbered at commit).  A failing task
  removes its files.
* :func:`commit_write` (the driver): one ``LanceOperation.Append`` / ``Overwrite`` / ``Merge``
  (an append that adds columns) through :func:`lancejit.table.commit_api.commit_async` (what
  ``LanceDataset.commit`` runs), with its conflict rules.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

import pyarrow as pa

from lancejit.core.errors import (
    AlreadyExistsError,
    CommitConflictError,
    InvalidInputError,
    RetryableCommitError,
    SchemaMismatchError,
)

#: How many times a schema-adding append is planned again after concurrent commits.
MERGE_RETRIES = 5


@dataclass(frozen=True)
class WritePlan:
    """What a job writes (see the module docstring).

    ``fields``: serialized ``lance.file.Field`` messages of the fields the files hold (dataset
    ids), ``new_fields``: those the dataset does not have yet (an append with ``mergeSchema``),
    ``read_version``: the version the job planned against (0: no dataset).  ``action``:
    ``append``, ``overwrite``, ``create`` (fail when a dataset appeared meanwhile), or
    ``create_or_append`` (an append to a dataset that did not exist at planning), ``ignore``
    (write nothing: the dataset exists) or ``ignore_if_exists`` (create unless one appeared)."""

    uri: str
    storage_options: dict[str, str] | None
    fields: tuple[bytes, ...]
    schema_metadata: Mapping[str, bytes]
    storage_version: str
    read_version: int
    action: str
    new_fields: tuple[bytes, ...] = ()
    max_rows_per_file: int = 1 << 20
    max_bytes_per_file: int = 90 * 1024**3
    max_page_bytes: int | None = None
    name_prefix: str = ""

    def lance_schema(self) -> Any:
        """The Lance schema (fields with their ids) of the data files."""
        from lancejit.core.schema import LanceSchema

        return LanceSchema.from_pb(_field_pbs(self.fields), dict(self.schema_metadata))


def _pb_bytes(fields: Iterable[Any]) -> tuple[bytes, ...]:
    return tuple(f.SerializeToString() for f in fields)


def _lance_schema_bytes(lschema: Any) -> tuple[bytes, ...]:
    return _pb_bytes(lschema.to_pb())


def _store(uri: str, storage_options: Mapping[str, str] | None):
    from lancejit.io import open_store

    store, root = open_store(uri, dict(storage_options) if storage_options else None)
    return store, root.rstrip("/")


def match_columns(data_names: Sequence[str], dataset_names: Sequence[str]) -> dict[str, str]:
    """Data column -> dataset column: exact names first, else one case-insensitive match."""
    exact = set(dataset_names)
    lower: dict[str, list[str]] = {}
    for n in dataset_names:
        lower.setdefault(n.lower(), []).append(n)
    out = {}
    for n in data_names:
        if n in exact:
            out[n] = n
        elif len(lower.get(n.lower(), [])) == 1:
            out[n] = lower[n.lower()][0]
    return out


def plan_write(
    uri: str,
    data_schema: pa.Schema,
    *,
    overwrite: bool,
    mode: str | None = None,
    merge_schema: bool = False,
    storage_options: Mapping[str, str] | None = None,
    data_storage_version: str | None = None,
    max_rows_per_file: int = 1 << 20,
    max_bytes_per_file: int = 90 * 1024**3,
    max_page_bytes: int | None = None,
    name_prefix: str = "",
) -> WritePlan:
    """Plan a write of data shaped ``data_schema`` into ``uri``.

    ``mode``: ``errorifexists`` / ``ignore`` (pyspark never passes these to a data source:
    :func:`lancejit.spark.write` does), else ``overwrite`` decides between append and overwrite.
    Appends keep the dataset's field ids and storage version; data columns are matched by name
    (case-insensitively when unambiguous); missing nullable columns are read back as nulls; new
    columns are refused unless ``merge_schema`` (then added as nullable fields, the reference's
    schema evolution: existing rows read them as nulls)."""
    from lancejit.core.schema import LanceField, LanceSchema
    from lancejit.io.sync import run_sync
    from lancejit.table.commit import load_manifest
    from lancejit.table.write.evolve import next_field_id
    from lancejit.table.write.data_files import normalize_storage_version

    store, root = _store(uri, storage_options)
    lm = run_sync(load_manifest(store, root), store=store)
    so = dict(storage_options) if storage_options else None
    plan = functools.partial(WritePlan, uri, so, max_rows_per_file=max_rows_per_file,
                             max_bytes_per_file=max_bytes_per_file, max_page_bytes=max_page_bytes,
                             name_prefix=name_prefix)
    if mode in ("errorifexists", "ignore") and overwrite:
        raise InvalidInputError(f"write mode {mode!r} cannot be combined with Spark's overwrite mode")
    if lm is not None and mode == "errorifexists":
        raise AlreadyExistsError(f"dataset {uri} already exists (version {lm.manifest.version}); "
                                 "use mode 'append' or 'overwrite'")
    if lm is not None and mode == "ignore":
        lschema = LanceSchema.from_arrow(data_schema)
        return plan(fields=_lance_schema_bytes(lschema), schema_metadata={}, storage_version="2.2",
                    read_version=int(lm.manifest.version), action="ignore")
    if lm is None or overwrite:
        lschema = LanceSchema.from_arrow(data_schema)
        default = (lm.manifest.data_format.version or "2.2") if lm is not None else "2.2"
        storage = normalize_storage_version(data_storage_version, default)
        action = ("overwrite" if lm is not None else
                  {"errorifexists": "create", "ignore": "ignore_if_exists"}.get(mode or "", "create_or_append"))
        return plan(fields=_lance_schema_bytes(lschema),
                    schema_metadata={k: bytes(v) for k, v in lschema.metadata.items()},
                    storage_version=storage, read_version=int(lm.manifest.version) if lm else 0, action=action)
    m = lm.manifest
    lschema = LanceSchema.from_pb(m.fields, dict(m.schema_metadata), path=store.uri(root))
    storage = normalize_storage_version(m.data_format.version or "2.0")
    if data_storage_version is not None and normalize_storage_version(data_storage_version) != storage:
        raise InvalidInputError(f"dataset {uri} stores version {storage} files; cannot append "
                                f"{data_storage_version} files")
    match = match_columns(data_schema.names, [f.name for f in lschema.fields])
    extra = [n for n in data_schema.names if n not in match]
    missing = [f for f in lschema.fields if f.name not in set(match.values())]
    required = [f.name for f in missing if not f.nullable]
    if required:
        raise SchemaMismatchError(f"cannot append to dataset {uri}: its non-nullable columns {required} "
                                  f"are missing from the data (columns {data_schema.names})")
    if extra and not merge_schema:
        raise SchemaMismatchError(
            f"cannot append columns {data_schema.names} to dataset {uri} with columns "
            f"{[f.name for f in lschema.fields]}: {extra} are new (option mergeSchema=true adds them "
            "as nullable columns)")
    kept = tuple(f for f in lschema.fields if f.name in set(match.values()))
    new: tuple = ()
    if extra:
        counter = [next_field_id(m)]
        new = tuple(LanceField.from_arrow(data_schema.field(n).with_nullable(True), next_id=counter)
                    for n in extra)
    written = LanceSchema(kept + new, dict(lschema.metadata))
    return plan(fields=_lance_schema_bytes(written),
                schema_metadata={k: bytes(v) for k, v in lschema.metadata.items()},
                storage_version=storage, read_version=int(m.version),
                action="append", new_fields=_lance_schema_bytes(LanceSchema(new)) if new else ())


def conform(batch: pa.RecordBatch, target: pa.Schema) -> pa.RecordBatch:
    """``batch`` as ``target``: columns matched by name (case-insensitively when unambiguous),
    cast to the target's types."""
    from .types import cast_array

    match = match_columns(batch.schema.names, target.names)
    by_target = {v: k for k, v in match.items()}
    cols = []
    for f in target:
        src = by_target.get(f.name)
        if src is None:
            raise SchemaMismatchError(f"data has no column {f.name!r} (has {batch.schema.names})")
        cols.append(cast_array(batch.column(batch.schema.get_field_index(src)), f.type, name=f.name))
    return pa.RecordBatch.from_arrays(cols, schema=target)


def write_task(batches: Iterable[pa.RecordBatch], plan: WritePlan) -> list[Any]:
    """One task's data files: ``batches`` conformed to the plan's columns (Spark's names and
    types to the dataset's) and written by :func:`lancejit.fragment.write_fragments` with the
    plan's Lance schema (its field ids) and name prefix.  Returns the new fragments'
    ``FragmentMetadata`` (ids 0: numbered at commit); a failing task removes its files."""
    from lancejit.fragment import write_fragments

    schema = plan.lance_schema()
    target = schema.to_arrow()
    conformed = (conform(b, target) for b in batches if b.num_rows)
    return write_fragments(
        conformed, plan.uri, schema, mode="append" if plan.action == "append" else "overwrite",
        max_rows_per_file=plan.max_rows_per_file, max_bytes_per_file=plan.max_bytes_per_file,
        max_page_bytes=plan.max_page_bytes, data_storage_version=plan.storage_version,
        storage_options=plan.storage_options, name_prefix=plan.name_prefix,
    )


def fragment_files(fragments: Iterable[Any]) -> list[str]:
    """The data file names (under ``data/``) of ``FragmentMetadata`` values."""
    return [df.path for frag in fragments for df in frag.data_files()]


async def commit_write_async(plan: WritePlan, fragments: Sequence[Any]) -> int | None:
    """Commit the fragments tasks wrote (``FragmentMetadata``) as ONE new version through
    ``LanceDataset.commit``'s layer (:func:`lancejit.table.commit_api.commit_async`):
    ``LanceOperation.Append`` at the planned read version, ``LanceOperation.Overwrite`` (only
    creating for a new dataset), or for new columns fragment ids reserved then one
    ``LanceOperation.Merge``.  Returns the version, or None when nothing was committed
    (``ignore``; see :class:`WritePlan` for the actions)."""
    from lancejit.table.commit_api import commit_async
    from lancejit.table.commit import load_manifest
    from lancejit.table.operation import LanceOperation

    if plan.action == "ignore":
        return None
    frags = list(fragments)
    so = plan.storage_options
    if plan.action == "append":
        if plan.new_fields:
            return await _commit_merge(plan, frags)
        return (await commit_async(plan.uri, LanceOperation.Append(frags), plan.read_version,
                                   storage_options=so))[1]
    op = LanceOperation.Overwrite(plan.lance_schema(), frags)
    if plan.action == "overwrite":
        return (await commit_async(plan.uri, op, plan.read_version, storage_options=so,
                                   data_storage_version=plan.storage_version))[1]
    try:
        return (await commit_async(plan.uri, op, 0, storage_options=so, create_only=True,
                                   data_storage_version=plan.storage_version))[1]
    except AlreadyExistsError:
        if plan.action == "create":
            raise
        if plan.action == "ignore_if_exists":
            return None
    # an append to a dataset created meanwhile by another writer: append to it if alike
    store, root = _store(plan.uri, so)
    lm = await load_manifest(store, root)
    assert lm is not None
    theirs = [(f.id, f.name, f.parent_id, f.logical_type) for f in lm.manifest.fields]
    mine = [(f.id, f.name, f.parent_id, f.logical_type) for f in _field_pbs(plan.fields)]
    if theirs != mine:
        raise SchemaMismatchError(f"dataset {plan.uri} was created concurrently with a different schema") from None
    return (await commit_async(plan.uri, LanceOperation.Append(frags), int(lm.manifest.version),
                               storage_options=so))[1]


def _field_pbs(raw: Sequence[bytes]) -> list:
    from lancejit.pb import file_pb2

    return [file_pb2.Field.FromString(b) for b in raw]


async def _commit_merge(plan: WritePlan, frags: list[Any]) -> int:
    """An append adding columns: fragment ids reserved (``ReserveFragments``, an operation the
    reference's Python API has no class for), then ONE ``LanceOperation.Merge`` of the dataset's
    fragments plus the new ones under the widened schema.  Concurrent appends or deletions are
    taken in (planned again on the latest version); a concurrent schema change fails."""
    import dataclasses

    from lancejit.core.schema import LanceSchema
    from lancejit.table.commit import ReserveFragments, Transaction, commit_transaction, latest_version, load_manifest
    from lancejit.table.commit_api import commit_async
    from lancejit.table.meta.fragment_meta import FragmentMetadata
    from lancejit.table.operation import LanceOperation

    store, root = _store(plan.uri, plan.storage_options)
    new_pb = _field_pbs(plan.new_fields)
    read_version = plan.read_version
    base = await load_manifest(store, root, read_version)
    base_fields = [f.SerializeToString() for f in base.manifest.fields]
    for attempt in range(MERGE_RETRIES + 1):
        lm = await load_manifest(store, root, read_version)
        if [f.SerializeToString() for f in lm.manifest.fields] != base_fields:
            raise CommitConflictError(f"the schema of {plan.uri} changed while columns were being added "
                                      f"(version {plan.read_version} -> {read_version})")
        res = await commit_transaction(store, root, Transaction(read_version, ReserveFragments(len(frags))))
        first = res.manifest.max_fragment_id + 1 - len(frags)
        numbered = [dataclasses.replace(f, id=first + i) for i, f in enumerate(frags)]
        existing = [FragmentMetadata.from_pb(f) for f in res.manifest.fragments]
        m = res.manifest
        widened = LanceSchema.from_pb(list(m.fields) + new_pb, dict(m.schema_metadata))
        op = LanceOperation.Merge(existing + numbered, widened, preserves_nullability=True)
        try:
            return (await commit_async(plan.uri, op, res.version, storage_options=plan.storage_options))[1]
        except RetryableCommitError:
            if attempt >= MERGE_RETRIES:
                raise
            read_version = await latest_version(store, root)
    raise AssertionError("unreachable")  # pragma: no cover


def commit_write(plan: WritePlan, fragments: Sequence[Any]) -> int | None:
    """Synchronous :func:`commit_write_async`."""
    from lancejit.io.sync import run_sync

    store, _ = _store(plan.uri, plan.storage_options)
    return run_sync(commit_write_async(plan, fragments), store=store)


__all__ = ["WritePlan", "match_columns", "commit_write", "commit_write_async", "conform", "fragment_files",
           "plan_write", "write_task"]
