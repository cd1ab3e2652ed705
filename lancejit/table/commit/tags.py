"""Creating, moving and deleting tags: ``_refs/tags/<name>.json`` in pylance 14's format.

The file is pretty-printed JSON (2-space indent) with camelCase keys::

    {"branch": null, "version": 3, "createdAt": "2026-...Z", "updatedAt": "2026-...Z",
     "manifestSize": 590, "metadata": {}}

``manifestSize`` is the size in bytes of the tagged version's manifest file.  Reading and listing
reuse :mod:`lancejit.table.meta.versions`.
"""

from __future__ import annotations

import datetime as _dt
import json
import time
from typing import Any

from lancejit.core.errors import AlreadyExistsError, InvalidInputError, NotFoundError
from lancejit.io.store import ObjectStore, join_path

from ..meta.versions import TAGS_DIR, Tag, list_tags, read_tag, read_version


def _check_name(name: str) -> None:
    if (not isinstance(name, str) or not name or "/" in name or "\\" in name or name in (".", "..")
            or name.endswith(".json") or name.endswith(".lock") or any(c.isspace() for c in name)):
        raise InvalidInputError(f"invalid tag name {name!r}")


def _now_iso() -> str:
    ns = time.time_ns()
    base = _dt.datetime.fromtimestamp(ns // 1_000_000_000, tz=_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S")
    return f"{base}.{ns % 1_000_000_000:09d}Z"


def tag_json(version: int, manifest_size: int, *, created_at: str | None = None,
             metadata: dict[str, Any] | None = None) -> bytes:
    """The bytes of a tag file pointing at ``version``."""
    now = _now_iso()
    obj = {
        "branch": None,
        "version": version,
        "createdAt": created_at or now,
        "updatedAt": now,
        "manifestSize": manifest_size,
        "metadata": metadata or {},
    }
    return json.dumps(obj, indent=2).encode()


def _path(root: str, name: str) -> str:
    return join_path(root, TAGS_DIR, f"{name}.json")


async def _manifest_size(store: ObjectStore, root: str, version: int) -> int:
    _, loc = await read_version(store, root, version)
    return loc.size if loc.size is not None else await store.size(loc.path)


async def create_tag(store: ObjectStore, root: str, name: str, version: int) -> Tag:
    """Tag ``version`` as ``name``; :class:`AlreadyExistsError` if the tag exists,
    :class:`NotFoundError` if the version does not."""
    _check_name(name)
    size = await _manifest_size(store, root, version)
    try:
        await store.put_if_absent(_path(root, name), tag_json(version, size))
    except AlreadyExistsError:
        raise AlreadyExistsError(f"tag {name!r} already exists in {store.uri(root)}") from None
    return await read_tag(store, root, name)


async def update_tag(store: ObjectStore, root: str, name: str, version: int) -> Tag:
    """Point the existing tag ``name`` at ``version``."""
    _check_name(name)
    old = await read_tag(store, root, name)
    size = await _manifest_size(store, root, version)
    await store.put(_path(root, name), tag_json(version, size, created_at=old.created_at, metadata=old.metadata))
    return await read_tag(store, root, name)


async def delete_tag(store: ObjectStore, root: str, name: str) -> None:
    """Remove the tag ``name``; :class:`NotFoundError` if it does not exist."""
    _check_name(name)
    path = _path(root, name)
    if not await store.exists(path):
        raise NotFoundError(f"dataset {store.uri(root)} has no tag {name!r}")
    await store.delete(path)


__all__ = ["Tag", "create_tag", "delete_tag", "list_tags", "read_tag", "tag_json", "update_tag"]
