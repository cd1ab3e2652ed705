"""Versions and files: ``restore``, tags (:class:`Tags`), ``cleanup_old_versions``.

Cleanup follows the reference: a version is removed when its manifest is older than the cutoff
and it is neither the latest version nor tagged (a tagged old version raises unless
``error_if_tagged_old_versions=False``, which keeps it).  Files referenced by a removed version
and by no kept version (data files, deletion files, transaction files, index directories) are
deleted with the removed manifests.  Files no manifest references at all (left by failed or
in-flight writes) are deleted only when older than the cutoff and either older than 7 days or
``delete_unverified=True``.  A file any kept version needs is never deleted.
"""

from __future__ import annotations

import datetime as _dt
import time
import uuid as _uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterator

from lancejit.core.errors import InvalidInputError, NotSupportedError
from lancejit.io.store import join_path
from lancejit.io.sync import run_sync
from lancejit.pb import table_pb2

from ..commit import Restore, commit, latest_version
from ..commit import tags as _tags
from ..commit.manifest_writer import parse_manifest_file
from ..meta.versions import Tag, list_manifests, list_tags

if TYPE_CHECKING:  # pragma: no cover
    from ..read.dataset_reader import DatasetReader

#: Unreferenced files younger than this are kept unless ``delete_unverified`` (the reference's 7 days).
UNVERIFIED_GRACE_S = 7 * 24 * 3600


async def restore_async(ds: "DatasetReader", version: int | str | None = None) -> "DatasetReader":
    """Make ``version`` (default: the checked-out one; a number or tag name) the latest again."""
    c = ds.context
    if version is None:
        version = ds.version
    if isinstance(version, str):
        version = (await _tags.read_tag(c.store, c.root, version)).version
    latest = await latest_version(c.store, c.root)
    v = await commit(c.store, c.root, Restore(int(version)), latest)
    return await ds.checkout_version_async(v)


class Tags:
    """A dataset's tags: iterate for :class:`Tag` values (sorted by name); ``create``, ``update``,
    ``delete``; ``list()`` gives ``{name: {"version", "manifest_size", ...}}`` like the reference."""

    def __init__(self, ds: "DatasetReader") -> None:
        self._ds = ds

    @property
    def _where(self):
        c = self._ds.context
        return c.store, c.root

    async def list_async(self) -> list[Tag]:
        store, root = self._where
        return await list_tags(store, root)

    async def _version_of(self, reference: Any) -> int:
        """A version from the reference's ``reference``: a number, a tag name or ``(branch,
        number)`` (main branch only); None is the checked-out version."""
        if reference is None:
            return self._ds.version
        if isinstance(reference, tuple):
            branch, number = reference
            if branch not in (None, "main"):
                raise NotSupportedError("branches are not supported by lancejit")
            return self._ds.version if number is None else int(number)
        if isinstance(reference, str):
            store, root = self._where
            return (await _tags.read_tag(store, root, reference)).version
        return int(reference)

    async def create_async(self, tag: str, reference: Any = None) -> Tag:
        store, root = self._where
        return await _tags.create_tag(store, root, tag, await self._version_of(reference))

    async def update_async(self, tag: str, reference: Any = None) -> Tag:
        store, root = self._where
        return await _tags.update_tag(store, root, tag, await self._version_of(reference))

    async def delete_async(self, tag: str) -> None:
        store, root = self._where
        await _tags.delete_tag(store, root, tag)

    def create(self, tag: str, reference: Any = None) -> Tag:
        """Tag ``reference`` (a version number, a tag name or ``(branch, number)``; default: the
        checked-out version) as ``tag``."""
        return run_sync(self.create_async(tag, reference))

    def update(self, tag: str, reference: Any = None) -> Tag:
        """Point ``tag`` at ``reference`` (as in :meth:`create`)."""
        return run_sync(self.update_async(tag, reference))

    def delete(self, tag: str) -> None:
        run_sync(self.delete_async(tag))

    def get_version(self, tag: str) -> int:
        return self[tag].version

    def replace_metadata(self, tag: str, metadata: dict[str, str]) -> None:
        raise NotSupportedError("tag metadata is not supported by lancejit")

    def list_ordered(self, order: str | None = None) -> list[tuple[str, dict[str, Any]]]:
        """``(name, tag)`` pairs by version: newest first (``order`` None or "desc") or oldest first ("asc")."""
        if order not in (None, "asc", "desc"):
            raise InvalidInputError(f"order must be 'asc' or 'desc', got {order!r}")
        tags = sorted(run_sync(self.list_async()), key=lambda t: (t.version, t.name), reverse=order != "asc")
        return [(t.name, t.to_dict()) for t in tags]

    def list(self) -> dict[str, dict[str, Any]]:
        return {t.name: t.to_dict() for t in run_sync(self.list_async())}

    def __iter__(self) -> Iterator[Tag]:
        return iter(run_sync(self.list_async()))

    def __len__(self) -> int:
        return len(run_sync(self.list_async()))

    def __getitem__(self, key: int | str) -> Tag:
        tags = run_sync(self.list_async())
        if isinstance(key, int):
            return tags[key]
        for t in tags:
            if t.name == key:
                return t
        raise KeyError(key)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, list):
            return list(self) == other
        return NotImplemented

    def __repr__(self) -> str:
        return f"Tags({[t.name for t in self]})"


@dataclass(frozen=True, slots=True)
class CleanupStats:
    """What a cleanup removed: ``bytes_removed`` and the number of ``old_versions`` deleted."""

    bytes_removed: int
    old_versions: int


def _manifest_files(root: str, m: table_pb2.Manifest, index_section: bytes | None) -> set[str]:
    """Store paths of the files (and ``_indices/<uuid>/`` prefixes) a manifest needs."""
    out: set[str] = set()
    for f in m.fragments:
        for df in f.files:
            if not df.HasField("base_id"):
                out.add(join_path(root, "data", df.path))
        if f.HasField("deletion_file") and not f.deletion_file.HasField("base_id"):
            d = f.deletion_file
            suffix = "arrow" if d.file_type == table_pb2.DeletionFile.ARROW_ARRAY else "bin"
            out.add(join_path(root, "_deletions", f"{f.id}-{d.read_version}-{d.id}.{suffix}"))
        if f.HasField("external_row_ids"):
            out.add(join_path(root, f.external_row_ids.path))
    if m.transaction_file:
        out.add(join_path(root, "_transactions", m.transaction_file))
    if index_section is not None:
        sec = table_pb2.IndexSection()
        sec.ParseFromString(index_section)
        for idx in sec.indices:
            out.add(join_path(root, "_indices", str(_uuid.UUID(bytes=bytes(idx.uuid.uuid)))) + "/")
    return out


def _needed(path: str, needed: set[str]) -> bool:
    if path in needed:
        return True
    parts = path.split("/")
    for i in range(1, len(parts)):
        if "/".join(parts[:i]) + "/" in needed:
            return True
    return False


async def cleanup_old_versions_async(
    ds: "DatasetReader",
    older_than: _dt.timedelta | None = None,
    *,
    delete_unverified: bool = False,
    error_if_tagged_old_versions: bool = True,
) -> CleanupStats:
    """Remove versions older than ``older_than`` (default 14 days) and the files only they use."""
    c = ds.context
    store, root = c.store, c.root
    if older_than is None:
        older_than = _dt.timedelta(days=14)
    if not isinstance(older_than, _dt.timedelta):
        raise InvalidInputError("older_than must be a datetime.timedelta")
    now = time.time()
    cutoff_ns = int((now - older_than.total_seconds()) * 1e9)
    locs = await list_manifests(store, root)
    if not locs:
        return CleanupStats(0, 0)
    tagged = {t.version for t in await list_tags(store, root)}
    latest = locs[-1].version
    keep_files: set[str] = set()
    drop_files: set[str] = set()
    removed_manifests: list[str] = []
    for loc in locs:
        lm = parse_manifest_file(await store.read_all(loc.path), store.uri(loc.path))
        m = lm.manifest
        ts = m.timestamp.seconds * 1_000_000_000 + m.timestamp.nanos
        files = _manifest_files(root, m, lm.index_section)
        old = ts < cutoff_ns and loc.version != latest
        if old and loc.version in tagged:
            if error_if_tagged_old_versions:
                raise InvalidInputError(
                    f"version {loc.version} of {ds.uri} is tagged and older than the cutoff; delete the tag "
                    "or pass error_if_tagged_old_versions=False"
                )
            old = False
        if old:
            removed_manifests.append(loc.path)
            drop_files |= files
        else:
            keep_files |= files
    referenced = keep_files | drop_files
    bytes_removed = 0
    to_delete: list[str] = []
    grace_cutoff = now - (0 if delete_unverified else UNVERIFIED_GRACE_S)
    for prefix in ("data", "_deletions", "_transactions", "_indices"):
        for info in await store.list(join_path(root, prefix)):
            if _needed(info.path, keep_files):
                continue
            if _needed(info.path, drop_files):
                to_delete.append(info.path)
                bytes_removed += info.size
                continue
            if _needed(info.path, referenced):
                continue
            # unverified: no manifest references it (failed or in-flight write)
            if info.mtime is not None and info.mtime * 1e9 < cutoff_ns and info.mtime < grace_cutoff:
                to_delete.append(info.path)
                bytes_removed += info.size
    for path in removed_manifests:
        try:
            bytes_removed += await store.size(path)
        except Exception:  # noqa: BLE001
            pass
    # manifests first: a reader never finds a version whose files are gone
    await store.delete_many(removed_manifests)
    await store.delete_many(to_delete)
    return CleanupStats(bytes_removed, len(removed_manifests))


__all__ = ["CleanupStats", "Tags", "cleanup_old_versions_async", "restore_async"]
