"""Writing one index file (a Lance file under ``_indices/<uuid>/``), as the reference writes them."""

from __future__ import annotations

from typing import Any, Sequence

import pyarrow as pa


async def write_index_file(uri: str, table: pa.Table, metadata: dict[str, str],
                           buffers: Sequence[tuple[str, bytes]] = (),
                           storage_options: dict[str, Any] | None = None) -> int:
    """Write ``table`` (version 2.2) at ``uri`` with global buffers ``buffers`` (their positions,
    1, 2, ..., recorded under their keys in the schema metadata unless a key starts with ``_``)
    and schema metadata ``metadata``; returns the file's size in bytes.  Nothing is left at
    ``uri`` when the write fails."""
    from lancejit.file.writer import AsyncLanceFileWriter

    meta = dict(metadata)
    w = AsyncLanceFileWriter(uri, table.schema, version="2.2", storage_options=storage_options)
    try:
        for key, data in buffers:
            pos = await w.add_global_buffer(data)
            if not key.startswith("_"):
                meta[key] = str(pos)
        for k, v in meta.items():
            w.add_schema_metadata(k, v)
        if table.num_rows:
            await w.write_batch(table)
        await w.close()
        return w.bytes_written
    except BaseException:
        await w.abort()
        raise


__all__ = ["write_index_file"]
