"""Opening the destination of a file writer through ``lancejit.io``.

Every store ``open_store`` supports (local paths, ``file://``, ``memory://``, ``s3://``,
``gs://``) streams through ``store.open_writer``: multipart uploads on S3/GCS, a temporary file
renamed into place locally, so a failed or aborted write leaves nothing at the destination.
"""

from __future__ import annotations

from typing import Any

from lancejit.io import open_store
from lancejit.io.store import AsyncWriter


async def open_sink(uri: str, storage_options: dict[str, Any] | None) -> AsyncWriter:
    """A streaming writer for ``uri`` (published on ``close``, discarded on ``abort``)."""
    store, path = open_store(uri, storage_options)
    return await store.open_writer(path)
