"""What a dataset tells about itself beyond its rows, with the reference's shapes: statistics
(``ds.stats.dataset_stats()`` / ``data_stats()``), its indices (``list_indices``), and the
transactions of its versions (``read_transaction`` / ``get_transactions``)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any, List

from lancejit.core.errors import NotFoundError, NotSupportedError
from lancejit.io.sync import run_sync

from .commit import Transaction as InternalTransaction
from .commit import load_manifest
from .meta.paths import confined_join

TRANSACTIONS_DIR = "_transactions"


@dataclass
class FieldStatistics:
    """Bytes a field's columns take in the data files."""

    id: int
    bytes_on_disk: int


@dataclass
class DataStatistics:
    """Per-field storage statistics, in the schema's pre-order."""

    fields: List[FieldStatistics]


class LanceStats:
    """``ds.stats``: statistics of one dataset version."""

    def __init__(self, ds: Any) -> None:
        self._ds = ds

    def dataset_stats(self, max_rows_per_group: int = 1024) -> dict[str, int]:
        """``{"num_deleted_rows", "num_fragments", "num_small_files"}``: a file is small when its
        fragment has fewer than ``max_rows_per_group`` physical rows."""
        frags = self._ds.manifest.fragments
        return {
            "num_deleted_rows": sum(f.num_deleted_rows for f in frags),
            "num_fragments": len(frags),
            "num_small_files": sum(1 for f in frags if f.physical_rows < max_rows_per_group),
        }

    def data_stats(self) -> DataStatistics:
        """Bytes on disk of every field (the pages of its columns in every data file)."""
        return run_sync(data_stats_async(self._ds.context), store=self._ds.store)

    def index_stats(self, index_name: str) -> dict[str, Any]:
        raise NotSupportedError("index statistics are not supported by lancejit")


async def data_stats_async(ctx: Any) -> DataStatistics:
    from lancejit.file.reader import AsyncLanceFileReader

    lschema = ctx.lance_schema
    ids = [f.id for f in lschema.walk()]
    sizes = {i: 0 for i in ids}

    async def one(df: Any) -> None:
        store, path = ctx.data_file_location(df)
        reader = await AsyncLanceFileReader.from_reader(ctx.reader(store, path), uri=store.uri(path), store=store)
        cols = reader.metadata().columns
        owner = {int(c): int(f) for f, c in zip(df.fields, df.column_indices)}
        current = None
        for i, col in enumerate(cols):
            current = owner.get(i, current)
            if current in sizes:
                sizes[current] += sum(p.num_bytes for p in col.pages)

    if ctx.manifest.data_storage_version not in ("0.1", "legacy"):
        files = [df for f in ctx.manifest.fragments for df in f.files]
        await asyncio.gather(*(one(df) for df in files))
    return DataStatistics([FieldStatistics(i, sizes[i]) for i in ids])


async def read_transaction_async(ctx: Any, version: int) -> InternalTransaction | None:
    """The transaction that made ``version`` (None when it left none)."""
    lm = await load_manifest(ctx.store, ctx.root, int(version))
    if lm.transaction is not None:
        return InternalTransaction.parse(lm.transaction, ctx.store.uri(ctx.manifest_path))
    name = lm.manifest.transaction_file
    if not name:
        return None
    path = confined_join(ctx.root, TRANSACTIONS_DIR, name, what="transaction file", where=ctx.uri)
    try:
        data = await ctx.store.read_all(path)
    except NotFoundError:
        return None
    return InternalTransaction.parse(data, ctx.store.uri(path))


async def get_transactions_async(ctx: Any, recent_transactions: int = 10) -> list[InternalTransaction | None]:
    """The transactions of the latest ``recent_transactions`` versions up to this one, newest first."""
    first = max(1, ctx.version - int(recent_transactions) + 1)
    versions = list(range(ctx.version, first - 1, -1))
    return list(await asyncio.gather(*(read_transaction_async(ctx, v) for v in versions)))


__all__ = ["DataStatistics", "FieldStatistics", "LanceStats", "data_stats_async", "get_transactions_async",
           "read_transaction_async"]
