"""A JSON-friendly description of a dataset version, for ``lancejit inspect``."""

from __future__ import annotations

from typing import Any

from lancejit.io.sync import run_sync

from .meta.features import flag_names
from .meta.versions import list_manifests, list_tags, read_version_hint


async def describe_async(ds: Any) -> dict[str, Any]:
    """Versions, tags, fragments, files, deletions and row counts of ``ds`` (a ``Dataset``)."""
    from .meta.open import version_summary

    ctx = ds.context
    m = ctx.manifest
    locs = await list_manifests(ctx.store, ctx.root, ctx.stats)
    tags = await list_tags(ctx.store, ctx.root, ctx.stats)
    hint = await read_version_hint(ctx.store, ctx.root, ctx.stats)
    fragments = []
    for f in m.fragments:
        d = f.deletion_file
        # None: the manifest does not say (old writers); reads take it from the data file
        physical = f.physical_rows if f.physical_rows or not f.files else None
        fragments.append({
            "id": f.id,
            "physical_rows": physical,
            "deleted_rows": f.num_deleted_rows,
            "rows": None if f.num_deleted_rows is None or physical is None else physical - f.num_deleted_rows,
            "deletion_file": None if d is None else {
                "path": d.relative_path(f.id),
                "type": "arrow" if d.file_type == 0 else "bitmap",
                "read_version": d.read_version,
                "num_deleted_rows": d.num_deleted_rows,
            },
            "row_ids": None if f.row_ids is None else ("inline" if isinstance(f.row_ids, bytes) else f.row_ids.path),
            "files": [
                {
                    "path": "data/" + df.path,
                    "fields": list(df.fields),
                    "column_indices": list(df.column_indices),
                    "file_version": df.version_string,
                    "size_bytes": df.file_size_bytes,
                }
                for df in f.files
            ],
        })
    return {
        "uri": ctx.uri,
        "version": m.version,
        "latest_version": locs[-1].version if locs else None,
        "version_hint": hint,
        "naming_scheme": locs[-1].scheme.name if locs else None,
        "manifest": ctx.store.uri(ctx.manifest_path),
        "data_storage_version": m.data_storage_version,
        "writer": f"{m.writer_library} {m.writer_version}".strip(),
        "reader_feature_flags": flag_names(m.reader_feature_flags),
        "writer_feature_flags": flag_names(m.writer_feature_flags),
        "schema": [f"{fld.name}: {fld.type}" for fld in ctx.schema],
        "summary": version_summary(m),
        "versions": [{"version": loc.version, "manifest_size": loc.size} for loc in locs],
        "tags": [{"name": t.name, "version": t.version} for t in tags],
        "fragments": fragments,
    }


def describe(ds: Any) -> dict[str, Any]:
    """Sync face of :func:`describe_async`."""
    return run_sync(describe_async(ds))
