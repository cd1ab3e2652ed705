"""Opening the destination of a file writer through ``lancejit.io``.

Uses ``lancejit.io.open_store`` when the io package provides it; until then plain local paths
and ``file://`` URIs go to :class:`lancejit.io.local.LocalStore` (temp file + rename, so a
failed or aborted write leaves nothing at the destination).
"""

from __future__ import annotations

import os
from typing import Any

from lancejit.core.errors import InvalidInputError
from lancejit.io.store import AsyncWriter


async def open_sink(uri: str, storage_options: dict[str, Any] | None) -> AsyncWriter:
    """A streaming writer for ``uri`` (published on ``close``, discarded on ``abort``)."""
    try:
        from lancejit.io import open_store  # type: ignore[attr-defined]
    except ImportError:
        open_store = None
    if open_store is not None:
        store, path = open_store(uri, storage_options)
        return await store.open_writer(path)
    if "://" in uri and not uri.startswith("file://"):
        raise InvalidInputError(f"{uri}: no store available for this URI scheme yet")
    from lancejit.io.local import LocalStore

    path = uri[len("file://") :] if uri.startswith("file://") else uri
    path = os.path.abspath(os.path.expanduser(path))
    return await LocalStore().open_writer(path)
