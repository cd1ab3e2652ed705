"""One GCS JSON-API request through gcsfs, shared by the GCS store
(:mod:`lancejit.io.gcs_store`) and its resumable-upload writer (:mod:`lancejit.io.fsspec_writers`)."""

from __future__ import annotations

import json
from typing import Any


async def call_once(fs: Any, method: str, path: str, *args: Any, json_out: bool = False, **kwargs: Any) -> Any:
    """One HTTP request through gcsfs without its built-in retry loop (whose backoff sleeps
    1-32 s): :class:`~lancejit.io.fsspec_store.FsspecStore` retries transient failures itself,
    with bounded jittered backoff.  Returns the JSON body (``json_out``) or ``(headers, body)``."""
    request = getattr(type(fs)._request, "__wrapped__", None)
    if request is None:  # another gcsfs: keep its retries
        return await fs._call(method, path, *args, json_out=json_out, **kwargs)
    _, headers, _, contents = await request(fs, method, path, *args, **kwargs)
    return json.loads(contents) if json_out else (headers, contents)


__all__ = ["call_once"]
