"""A JSON-friendly description of a dataset version and its text form, for ``lancejit inspect``.

The description lists everything (every fragment, version and tag) and adds
``fragment_stats``: fragment count, first and last ids, rows and bytes per fragment (minimum,
median, mean, maximum) and a histogram of fragments by live rows in power-of-two bins
(``[lo, hi)``, half-open).  The text form (:func:`render_text`) of a dataset with many
fragments, versions or fields shows those statistics and the first and last few of each, unless
asked for everything.
"""

from __future__ import annotations

from typing import Any

import numpy as np

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
        "fragment_stats": fragment_stats(fragments),
        "fragments": fragments,
    }


def _spread(values: list[int]) -> dict[str, float | int] | None:
    if not values:
        return None
    arr = np.asarray(values, dtype=np.int64)
    return {"min": int(arr.min()), "median": float(np.median(arr)), "mean": float(arr.mean()),
            "max": int(arr.max()), "total": int(arr.sum())}


def _live_rows(frag: dict[str, Any]) -> int | None:
    if frag["rows"] is not None:
        return int(frag["rows"])
    return None if frag["physical_rows"] is None else int(frag["physical_rows"])


def _bytes(frag: dict[str, Any]) -> int | None:
    sizes = [f["size_bytes"] for f in frag["files"]]
    return None if any(s is None for s in sizes) else int(sum(sizes))


def fragment_stats(fragments: list[dict[str, Any]]) -> dict[str, Any]:
    """Count, first and last ids, rows and bytes per fragment (``None`` where no fragment says)
    and the histogram of fragments by live rows: bins ``[0, 1)``, ``[1, 2)``, ``[2, 4)``, ...,
    non-empty ones only, each with its fragments and their bytes (those known)."""
    rows = [_live_rows(f) for f in fragments]
    sizes = [_bytes(f) for f in fragments]
    known = [(r, s or 0) for r, s in zip(rows, sizes) if r is not None]
    live = np.asarray([r for r, _ in known], dtype=np.int64)
    bins = np.frexp(live.astype(np.float64))[1].astype(np.int64)  # bit lengths: 0 for 0 rows
    counts = np.bincount(bins)
    bin_bytes = np.bincount(bins, weights=np.asarray([s for _, s in known], dtype=np.float64))
    histogram = [
        {"rows_from": 0 if k == 0 else 1 << (k - 1), "rows_to": 1 << k if k else 1,
         "fragments": int(counts[k]), "bytes": int(bin_bytes[k])}
        for k in range(len(counts)) if counts[k]
    ]
    return {
        "count": len(fragments),
        "first_id": fragments[0]["id"] if fragments else None,
        "last_id": fragments[-1]["id"] if fragments else None,
        "rows": _spread([r for r in rows if r is not None]),
        "rows_unknown": sum(1 for r in rows if r is None),
        "bytes": _spread([s for s in sizes if s is not None]),
        "histogram": histogram,
    }


def describe(ds: Any) -> dict[str, Any]:
    """Sync face of :func:`describe_async`."""
    return run_sync(describe_async(ds))
