"""``lancejit.spark.write(df, uri, mode=...)``: every Spark save mode, one version per job.

pyspark (4.1 - 4.3) hands a Python data source only ``append`` and ``overwrite``
(``DataSource.writer(schema, overwrite)``); ``df.write.format("lancejit").save(uri)`` in the
default ``errorifexists`` mode, or with ``ignore``, is refused by Spark before lancejit runs.  This
helper runs those modes through the data source as appends that know their mode (option
``write_mode``): ``errorifexists`` fails, without running the job, when the dataset exists and,
at commit, when one appeared meanwhile (the commit only creates); ``ignore`` writes nothing when
the dataset exists and drops its files when one appeared meanwhile.
"""

from __future__ import annotations

from typing import Any, Mapping

from lancejit.core.errors import AlreadyExistsError, InvalidInputError

from .options import STORAGE_PREFIX, WRITE_MODES

_ALIASES = {"error": "errorifexists", "default": "errorifexists"}


def dataset_exists(uri: str, storage_options: Mapping[str, str] | None = None) -> bool:
    """Whether ``uri`` holds a dataset (any version)."""
    from lancejit.io import open_store
    from lancejit.io.sync import run_sync
    from lancejit.table.commit import load_manifest

    store, root = open_store(uri, dict(storage_options) if storage_options else None)
    return run_sync(load_manifest(store, root.rstrip("/")), store=store) is not None


def write(df: Any, uri: str, mode: str = "errorifexists", *, merge_schema: bool = False,
          storage_options: Mapping[str, str] | None = None, **options: Any) -> None:
    """Write the Spark DataFrame ``df`` to the Lance dataset at ``uri`` as one new version.

    ``mode``: ``errorifexists`` (or ``error``; :class:`AlreadyExistsError` when the dataset
    exists), ``ignore`` (nothing written when it exists), ``append``, ``overwrite``.
    ``merge_schema``: an append may add (nullable) columns.  ``options``: other write options of
    the data source (``max_rows_per_file``, ``data_storage_version``...)."""
    from .session import register

    m = _ALIASES.get(str(mode).lower(), str(mode).lower())
    if m not in WRITE_MODES:
        raise InvalidInputError(f"mode must be one of {', '.join(WRITE_MODES)} (or 'error'), got {mode!r}")
    if m in ("errorifexists", "ignore") and dataset_exists(uri, storage_options):
        if m == "ignore":
            return
        raise AlreadyExistsError(f"dataset {uri} already exists; use mode 'append' or 'overwrite'")
    register(df.sparkSession)
    w = df.write.format("lancejit").mode("overwrite" if m == "overwrite" else "append")
    if m in ("errorifexists", "ignore"):
        w = w.option("write_mode", m)
    if merge_schema:
        w = w.option("mergeSchema", "true")
    for k, v in (storage_options or {}).items():
        w = w.option(STORAGE_PREFIX + k, str(v))
    for k, v in options.items():
        w = w.option(k, str(v))
    w.save(uri)


__all__ = ["dataset_exists", "write"]
