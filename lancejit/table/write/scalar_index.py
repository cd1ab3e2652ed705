"""Building, replacing, dropping and updating scalar indices (BTREE, BITMAP, LABEL_LIST), as the
reference does, so that each library uses the indices the other built.

:func:`create_scalar_index_async` reads the column's live values with their row ids (row
addresses, or stable row ids), writes the index files (:mod:`..indices.scalar.writers`) under
``_indices/<new uuid>/`` and commits a ``CreateIndex`` transaction whose entry covers every
fragment of the version read.  Names: ``name`` (default ``<column>_idx``; when an index of
another type already has that name, ``<column>_idx_2``, ``_3``...); an index of the same name is
replaced unless ``replace`` is False.  A commit that a concurrent one makes retryable (see
:mod:`..commit.conflicts`) is redone on the new latest version.

:func:`drop_index_async` commits a ``CreateIndex`` removing every segment of the named index.
:func:`optimize_indices_async` rebuilds each scalar index whose coverage misses fragments of
the version over all of them (the new entry replaces the old ones).
"""

from __future__ import annotations

import time
import uuid as _uuid
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np
import pyarrow as pa

from lancejit.core.errors import (
    FieldNotFoundError, IndexStateError, InvalidTypeError, NotSupportedError, RetryableCommitError,
)
from lancejit.io.store import join_path

from ..commit import CreateIndex, commit
from ..indices.scalar import writers
from ..indices.scalar.catalog import index_entries
from ..indices.scalar.domain import kind_of
from ..indices.scalar.opened import details_kind
from ..read.fragment import ROWADDR, ROWID

if TYPE_CHECKING:  # pragma: no cover
    from ..read.dataset_reader import DatasetReader

SCALAR_KINDS = ("BTREE", "BITMAP", "LABEL_LIST")
#: Index types the reference builds that lancejit does not.
_OTHER_KINDS = ("NGRAM", "ZONEMAP", "INVERTED", "FTS", "BLOOMFILTER", "RTREE", "MINHASHLSH")
DEFAULT_MAX_RETRIES = 5


def _kind(index_type: Any) -> str:
    kind = str(index_type).upper()
    if kind not in SCALAR_KINDS:
        if kind in _OTHER_KINDS:
            raise NotSupportedError(f"building a {kind} index is not supported (lancejit builds {SCALAR_KINDS})")
        raise NotSupportedError(f"unknown scalar index type {index_type!r} (use one of {SCALAR_KINDS})")
    return kind


def check_column(schema: pa.Schema, column: str, kind: str) -> pa.DataType:
    """The type of top-level ``column``, checked for an index of ``kind``."""
    if not isinstance(column, str) or column not in schema.names:
        raise FieldNotFoundError(f"{column!r} not found in schema")
    t = schema.field(column).type
    if kind == "LABEL_LIST":
        if not (pa.types.is_list(t) or pa.types.is_large_list(t)) or kind_of(t.value_type) is None:
            raise InvalidTypeError(f"LABEL_LIST index column {column} must be a list of numbers, strings or booleans,"
                                   f" got {t}")
    elif kind_of(t) is None:
        raise InvalidTypeError(f"{kind} index column {column} must be a number, string, binary or boolean, got {t}")
    return t


async def _read_column(ds: "DatasetReader", column: str, kind: str) -> tuple[pa.ChunkedArray, np.ndarray, int]:
    """The column's live values, the ids the index lists for them and the index version: row
    addresses, except stable row ids in BITMAP and LABEL_LIST indices (the reference's BTREE of
    version 1 lists addresses on such datasets)."""
    stable = ds.has_stable_row_ids
    by_id = stable and kind != "BTREE"
    meta = ROWID if by_id else ROWADDR
    t = await ds.to_table_async(columns=[column], with_row_id=by_id, with_row_address=not by_id)
    version = 1 if (kind == "BTREE" and stable) else writers.INDEX_VERSIONS[kind]
    return t.column(column), np.ascontiguousarray(t.column(meta).to_numpy(), dtype=np.uint64), version


def _choose_name(entries: list[Any], column: str, field_id: int, kind: str, name: str | None) -> str:
    if name is not None:
        return name
    base = f"{column}_idx"
    taken = {ix.name: ix for ix in entries}
    cand, k = base, 1
    while cand in taken:
        ix = taken[cand]
        same = list(ix.fields) == [field_id] and details_kind(ix.index_details.type_url) == \
            writers.DETAILS_URLS[kind].rpartition(".")[2]
        if same:
            return cand
        k += 1
        cand = f"{base}_{k}"
    return cand


def _metadata(name: str, field_id: int, version: int, fragments: Sequence[int], kind: str,
              uid: _uuid.UUID, files: list[tuple[str, int]], created_ms: int, index_version: int) -> Any:
    from google.protobuf import any_pb2
    from pyroaring import BitMap

    from lancejit.pb import table_pb2

    meta = table_pb2.IndexMetadata(name=name, fields=[field_id], dataset_version=version,
                                   fragment_bitmap=BitMap(list(fragments)).serialize(),
                                   index_version=index_version, created_at=created_ms)
    meta.uuid.uuid = uid.bytes
    meta.index_details.CopyFrom(any_pb2.Any(type_url=writers.DETAILS_URLS[kind], value=b""))
    for path, size in sorted(files):
        meta.files.add(path=path, size_bytes=size)
    return meta


async def build_index_files(ds: "DatasetReader", column: str, kind: str) -> tuple[_uuid.UUID, list[tuple[str, int]],
                                                                                  int]:
    """Write the files of an index of ``kind`` on ``column`` over every live row of ``ds``;
    ``(uuid, [(file name, bytes)], index version)``."""
    values, ids, version = await _read_column(ds, column, kind)
    files = writers.index_files(kind, values, ids)
    uid = _uuid.uuid4()
    c = ds.context
    written = await writers.write_index(c.store, join_path(c.root, "_indices", str(uid)), files, c.storage_options)
    return uid, written, version


async def create_scalar_index_async(ds: "DatasetReader", column: str, index_type: Any, name: str | None = None, *,
                                    replace: bool = True, fragment_ids: Sequence[int] | None = None,
                                    max_retries: int = DEFAULT_MAX_RETRIES, **kwargs: Any) -> "DatasetReader":
    """Build a scalar index of ``index_type`` (``BTREE``, ``BITMAP``, ``LABEL_LIST``) on the
    top-level ``column`` and commit it; returns the new version (see the module docstring)."""
    kind = _kind(index_type)
    if fragment_ids is not None:
        raise NotSupportedError("building an index over some fragments (fragment_ids) is not supported")
    if kwargs:
        raise NotSupportedError(f"scalar index options {sorted(kwargs)} are not supported")
    current = ds
    for attempt in range(max_retries + 1):
        c = current.context
        check_column(c.schema, column, kind)
        field_id = next(t.id for t in c.top_fields if t.name == column)
        entries = await index_entries(c)
        chosen = _choose_name(entries, column, field_id, kind, name)
        existing = [ix for ix in entries if ix.name == chosen]
        if existing and not replace:
            raise IndexStateError(f"Index name {chosen!r} already exists, please specify a different name or "
                                  "use replace=True")
        t0 = time.time()
        uid, files, index_version = await build_index_files(current, column, kind)
        frag_ids = [f.id for f in c.manifest.fragments]
        meta = _metadata(chosen, field_id, c.version, frag_ids, kind, uid, files, int(t0 * 1000), index_version)
        try:
            version = await commit(c.store, c.root, CreateIndex((meta,), tuple(existing)), c.version)
        except RetryableCommitError:
            if attempt >= max_retries:
                raise
            current = await current.latest_async()
            continue
        return await current.checkout_version_async(version)
    raise AssertionError("unreachable")  # pragma: no cover


async def drop_index_async(ds: "DatasetReader", name: str) -> "DatasetReader":
    """Remove every segment of the index named ``name``; returns the new version."""
    c = ds.context
    gone = [ix for ix in await index_entries(c) if ix.name == name]
    if not gone:
        raise IndexStateError(f"Lance index not found: name={name}")
    version = await commit(c.store, c.root, CreateIndex((), tuple(gone)), c.version)
    return await ds.checkout_version_async(version)


async def optimize_indices_async(ds: "DatasetReader", index_names: Sequence[str] | None = None,
                                 **kwargs: Any) -> "DatasetReader":
    """Bring each scalar index (all, or those named) over every fragment of the version: an
    index missing some fragment is rebuilt over all of them and replaces its segments.
    Returns the new version (``ds`` itself when nothing changed)."""
    from ..indices.scalar.catalog import scalar_segments

    current = ds
    c = current.context
    segs = await scalar_segments(c)
    frag_ids = np.array(sorted(f.id for f in c.manifest.fragments), dtype=np.int64)
    names = sorted({s.name for s in segs if index_names is None or s.name in index_names})
    for nm in names:
        mine = [s for s in segs if s.name == nm]
        covered = np.unique(np.concatenate([s.fragments for s in mine])) if mine else frag_ids[:0]
        if np.isin(frag_ids, covered).all():
            continue
        kind = mine[0].kind or (await _inferred(current, mine[0]))
        if kind not in SCALAR_KINDS:
            continue
        current = await create_scalar_index_async(current, mine[0].column, kind, nm, replace=True)
    return current


async def _inferred(ds: "DatasetReader", seg: Any) -> str:
    from ..indices.scalar.opened import infer_kind

    return await infer_kind(ds.context, seg.uuid, seg.column_type)


__all__ = ["SCALAR_KINDS", "build_index_files", "check_column", "create_scalar_index_async", "drop_index_async",
           "optimize_indices_async"]
