"""Opening one version of a dataset: the store and root of a URI, the version's manifest (latest,
a number or a tag), its schemas (converted once per distinct schema bytes) and the
:class:`~.context.DatasetContext` every reader and writer of that version shares.
"""

from __future__ import annotations

import inspect
import os
from typing import Any

import pyarrow as pa

from lancejit.core.errors import InvalidInputError, LanceJitError, NotFoundError
from lancejit.core.schema import LanceSchema
from lancejit.io import open_store

from .context import DatasetContext, SharedCaches, with_context
from .features import check_reader_flags
from .fields import TopField, top_level_fields
from .manifest import Manifest
from .versions import latest_location, read_manifest_at, read_tag, read_version


async def open_store_root(uri: str, storage_options: dict[str, str] | None) -> tuple[Any, str]:
    """The store holding the dataset and the dataset root's path in it (no trailing slash)."""
    res = open_store(uri, storage_options)
    if inspect.isawaitable(res):
        res = await res
    store, path = res
    return store, path.rstrip("/")


async def load_manifest(
    store: Any, root: str, uri: str, version: int | str | None, stats: Any = None
) -> tuple[Manifest, str]:
    """Resolve ``version`` (None = latest, int, or tag name) and read its manifest."""
    if isinstance(version, str):
        tag = await read_tag(store, root, version, stats)
        version = tag.version
    if version is None:
        loc = await latest_location(store, root, stats)
        try:
            manifest, _, _ = await read_manifest_at(store, loc.path, stats, loc.size)
        except LanceJitError as exc:
            raise with_context(exc, f"dataset {uri} version {loc.version} file {store.uri(loc.path)}") from exc
        return manifest, loc.path
    if isinstance(version, bool) or not isinstance(version, int):
        raise InvalidInputError(f"version must be an int or a tag name, got {version!r}")
    try:
        manifest, loc = await read_version(store, root, version, stats)
    except NotFoundError as exc:
        raise NotFoundError(f"dataset {uri} has no version {version}") from exc
    except LanceJitError as exc:
        raise with_context(exc, f"dataset {uri} version {version}") from exc
    return manifest, loc.path


#: Schemas converted from manifests, by the bytes of the manifest's schema fields
#: (``Manifest.schema_key``): ``(LanceSchema, pyarrow.Schema, top-level fields)``.
_SCHEMAS: dict[bytes, tuple[LanceSchema, pa.Schema, tuple[TopField, ...]]] = {}
_SCHEMAS_MAX = 256


def schemas_of(manifest: Manifest, path: str) -> tuple[LanceSchema, pa.Schema, tuple[TopField, ...]]:
    """The Lance and Arrow schemas and top-level fields of ``manifest`` (converted once per
    distinct schema bytes; all immutable)."""
    key = manifest.schema_key
    found = _SCHEMAS.get(key) if key is not None else None
    if found is None:
        lschema = LanceSchema.from_pb(manifest.fields, manifest.schema_metadata, path=path)
        found = (lschema, lschema.to_arrow(dataset=True, path=path), tuple(top_level_fields(manifest.fields, path)))
        if key is not None:
            if len(_SCHEMAS) >= _SCHEMAS_MAX:
                _SCHEMAS.clear()
            _SCHEMAS[key] = found
    return found


def make_context(
    uri: str, store: Any, root: str, manifest: Manifest, manifest_path: str,
    caches: SharedCaches, storage_options: dict[str, str] | None,
) -> DatasetContext:
    check_reader_flags(manifest.reader_feature_flags, dataset=uri, version=manifest.version, path=store.uri(manifest_path))
    try:
        lschema, schema, tops = schemas_of(manifest, store.uri(manifest_path))
    except LanceJitError as exc:
        raise with_context(exc, f"dataset {uri} version {manifest.version} file {store.uri(manifest_path)}") from exc
    return DatasetContext(uri, store, root, manifest, manifest_path, schema, list(tops), caches, storage_options,
                          lschema)


def uri_string(uri: Any) -> str:
    """``uri`` as a string (a ``str`` or an ``os.PathLike``); else InvalidInputError."""
    if isinstance(uri, str):
        return uri
    try:
        out = os.fspath(uri)
    except TypeError:
        raise InvalidInputError(f"uri must be a str or path, got {type(uri).__name__}") from None
    if not isinstance(out, str):
        raise InvalidInputError(f"uri must be a str or path, got {type(uri).__name__}")
    return out


async def open_context(uri: Any, version: int | str | None = None,
                       storage_options: dict[str, str] | None = None) -> DatasetContext:
    """The context of ``uri`` at ``version`` (None = latest, a number, or a tag name)."""
    uri = uri_string(uri)
    store, root = await open_store_root(uri, storage_options)
    caches = SharedCaches()
    manifest, mpath = await load_manifest(store, root, uri, version, caches.stats)
    return make_context(uri, store, root, manifest, mpath, caches, storage_options)


async def checkout_context(ctx: DatasetContext, version: int | str | None) -> DatasetContext:
    """The context of ``ctx``'s dataset at ``version`` (None = latest), sharing ``ctx``'s caches."""
    manifest, mpath = await load_manifest(ctx.store, ctx.root, ctx.uri, version, ctx.stats)
    return make_context(ctx.uri, ctx.store, ctx.root, manifest, mpath, ctx.caches, ctx.storage_options)


def version_summary(m: Manifest) -> dict[str, str]:
    """The reference's per-version summary (string values) computed from the manifest alone."""
    data_files = sum(len(f.files) for f in m.fragments)
    deletion_files = sum(1 for f in m.fragments if f.deletion_file is not None)
    deleted = sum(f.num_deleted_rows or 0 for f in m.fragments)
    physical = sum(f.physical_rows for f in m.fragments)
    size = sum(df.file_size_bytes or 0 for f in m.fragments for df in f.files)
    return {
        "total_data_file_rows": str(physical),
        "total_data_files": str(data_files),
        "total_deletion_file_rows": str(deleted),
        "total_deletion_files": str(deletion_files),
        "total_files_size": str(size),
        "total_fragments": str(len(m.fragments)),
        "total_rows": str(physical - deleted),
    }


__all__ = ["checkout_context", "load_manifest", "make_context", "open_context", "open_store_root",
           "schemas_of", "uri_string", "version_summary"]
