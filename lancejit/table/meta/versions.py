"""Finding and reading the manifests of a dataset: version listing, tags, the version hint.

All functions take a :class:`lancejit.io.store.ObjectStore` and the dataset's root path in it.
The latest version is found with one listing of ``_versions/``; ``latest_version_hint.json``
is never trusted (it is only reported).  A given version is opened without listing: the V2
name is tried first, then the V1 name.
"""

from __future__ import annotations

import asyncio
import datetime as _dt
import json
import re
from dataclasses import dataclass, field
from operator import attrgetter
from typing import Any

from lancejit.core.errors import CorruptFileError, InvalidInputError, NotFoundError
from lancejit.io.scheduler import FileScheduler
from lancejit.io.stats import IOStats
from lancejit.io.sync import runs_inline
from lancejit.io.store import ObjectStore, join_path

from .manifest import MANIFEST_PREFETCH_BYTES, Manifest, decode_manifest, manifest_position
from .naming import (
    MIXED_SCHEMES,
    VERSIONS_DIR,
    U64_MAX,
    ManifestLocation,
    NamingScheme,
    manifest_name,
    parse_manifest_name,
)

HINT_NAME = "latest_version_hint.json"
#: Read size meaning "the whole object" for ``read_tail``.
WHOLE = 1 << 62
TAGS_DIR = "_refs/tags"


async def read_object(store: ObjectStore, path: str, stats: IOStats | None = None) -> memoryview:
    """A whole object in one request (counted in ``stats`` too when given)."""
    _, data = await FileScheduler(store, path, stats=stats).read_tail(WHOLE)
    return data


async def list_dir(store: ObjectStore, path: str, stats: IOStats | None = None) -> list:
    """Objects directly inside ``path`` (one listing, counted in ``stats`` too when given)."""
    infos = await store.list(path, recursive=False)
    if stats is not None:
        stats.record_list()
    return infos


_VERSION_OF = attrgetter("version")


@dataclass(frozen=True, slots=True)
class Tag:
    """A named reference to a version (``_refs/tags/<name>.json``)."""

    name: str
    version: int
    branch: str | None = None
    manifest_size: int | None = None
    created_at: str | None = None
    updated_at: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """The reference's shape (``ds.tags.list()[name]``)."""
        return {"version": self.version, "manifest_size": self.manifest_size, "branch": self.branch}


async def list_manifests(store: ObjectStore, root: str, stats: IOStats | None = None) -> list[ManifestLocation]:
    """All attached versions' manifests, sorted by version, from one listing of ``_versions/``.

    Raises :class:`CorruptFileError` if the directory mixes the V1 and V2 naming schemes.
    """
    vdir = join_path(root, VERSIONS_DIR)
    infos = await list_dir(store, vdir, stats)
    out = []
    for info in infos:
        parsed = parse_manifest_name(info.path.rsplit("/", 1)[-1])
        if parsed is not None and not parsed[2]:
            out.append(ManifestLocation(parsed[0], info.path, info.size, parsed[1]))
    if len(out) > 1 and any(loc.scheme is not out[0].scheme for loc in out):
        raise CorruptFileError(MIXED_SCHEMES, path=store.uri(vdir))
    out.sort(key=_VERSION_OF)
    return out


async def list_versions(store: ObjectStore, root: str) -> list[ManifestLocation]:
    """Every version's manifest, sorted: the listing of ``_versions/`` after the latest version
    of the external store (if any) was finalized, so the list ends with it."""
    from .external_store import resolve_latest

    latest = await resolve_latest(store, root)
    locs = await list_manifests(store, root)
    if latest is not None and (not locs or locs[-1].version < latest.version):
        locs.append(latest)
    return locs


async def latest_location(store: ObjectStore, root: str, stats: IOStats | None = None) -> ManifestLocation:
    """The newest version's manifest; :class:`NotFoundError` when there is none.

    ``s3+ddb://`` stores ask their external manifest store first (finalizing a staged version).
    """
    if store.external_manifest is not None:
        from .external_store import resolve_latest

        loc = await resolve_latest(store, root)
        if loc is not None:
            return loc
    list_names = getattr(store, "list_names", None)  # local stores: names without sizes
    if list_names is not None:
        vdir = join_path(root, VERSIONS_DIR)
        names = await list_names(vdir)
        if stats is not None:
            stats.record_list()
        loc = latest_of_names(names, vdir, store)
    else:
        locs = await list_manifests(store, root, stats)
        loc = locs[-1] if locs else None
    if loc is None:
        raise NotFoundError(f"dataset {store.uri(root)} not found: no manifests in {VERSIONS_DIR}/")
    return loc


def latest_of_names(names: list[str], vdir: str, store: ObjectStore) -> ManifestLocation | None:
    """The newest attached version among the entry ``names`` of ``vdir`` (size unknown), None
    when there is none; :class:`CorruptFileError` when V1 and V2 names are mixed.  The names
    are matched by one regular expression per scheme over all of them ("/" never occurs in a
    name); only the newest is parsed (V2 names sort newest first)."""
    text = "/".join(names)
    # names of numbers above u64 name no version (ignored, as by parse_manifest_name)
    v2 = _V2_NAMES.findall(text)
    newest_v2 = min(v2) if v2 else None
    if newest_v2 is not None and newest_v2 > _MAX_V2_STEM:
        newest_v2 = None
    v1 = _V1_NAMES.findall(text)
    if v1 and int(max(v1, key=int)) > U64_MAX:
        v1 = [x for x in v1 if int(x) <= U64_MAX]
    newest_v1 = max(v1, key=int) if v1 else None  # (the name as written: "007" is version 7)
    if newest_v2 is not None:
        if newest_v1 is not None:
            raise CorruptFileError(MIXED_SCHEMES, path=store.uri(vdir))
        return ManifestLocation(U64_MAX - int(newest_v2), join_path(vdir, f"{newest_v2}.manifest"), None,
                                NamingScheme.V2)
    if newest_v1 is not None:
        return ManifestLocation(int(newest_v1), join_path(vdir, f"{newest_v1}.manifest"), None, NamingScheme.V1)
    return None


_V2_NAMES = re.compile(r"(?:^|/)([0-9]{20})\.manifest(?=/|$)")
_V1_NAMES = re.compile(r"(?:^|/)([0-9]{1,19}|[0-9]{21,})\.manifest(?=/|$)")
#: The largest V2 manifest number (version 0).
_MAX_V2_STEM = f"{U64_MAX:020d}"


#: A manifest file of at most this many bytes is read whole in one request when its size is
#: known (from a listing) or the store reads locally (else its last 64 KiB first, then the rest
#: of the manifest if needed).
WHOLE_MANIFEST_BYTES = 1 << 20


async def read_manifest_at(
    store: ObjectStore, path: str, stats: IOStats | None = None, size: int | None = None
) -> tuple[Manifest, memoryview, int]:
    """Read and decode the manifest at ``path``: one request when it is at most
    :data:`WHOLE_MANIFEST_BYTES` and its ``size`` (bytes) is known or the store reads locally,
    else a 64 KiB tail request and at most one more.

    Returns ``(manifest, tail_bytes, file_size)``.
    """
    reader = FileScheduler(store, path, stats=stats)
    if size is None and runs_inline(store):  # local disk, memory: the whole file up to 1 MiB
        first = WHOLE_MANIFEST_BYTES
    elif size is not None and MANIFEST_PREFETCH_BYTES < size <= WHOLE_MANIFEST_BYTES:
        first = size
    else:
        first = MANIFEST_PREFETCH_BYTES
    size, tail = await reader.read_tail(first)
    uri = store.uri(path)
    pos = manifest_position(tail, size, uri)
    tail_start = size - len(tail)
    if pos >= tail_start:
        section = tail[pos - tail_start :]
    else:
        (head,) = await reader.read_ranges([(pos, tail_start)])
        section = memoryview(bytes(head) + bytes(tail))
    return decode_manifest(section, size, uri), tail, size


async def read_version(
    store: ObjectStore, root: str, version: int, stats: IOStats | None = None
) -> tuple[Manifest, ManifestLocation]:
    """Open ``version`` by name (V2 first, then V1) without listing."""
    if isinstance(version, bool) or not isinstance(version, int):
        raise InvalidInputError(f"version must be an int, got {version!r}")
    if not 0 <= version <= U64_MAX:
        raise InvalidInputError(f"version must be in [0, 2^64), got {version}")
    vdir = join_path(root, VERSIONS_DIR)
    last_missing: NotFoundError | None = None
    for scheme in (NamingScheme.V2, NamingScheme.V1):
        path = join_path(vdir, manifest_name(version, scheme))
        try:
            manifest, _, size = await read_manifest_at(store, path, stats)
        except NotFoundError as exc:
            last_missing = exc
            continue
        return manifest, ManifestLocation(version, path, size, scheme)
    if store.external_manifest is not None:  # committed but still staged (s3+ddb://)
        from .external_store import resolve_version

        loc = await resolve_version(store, root, version)
        if loc is not None:
            manifest, _, size = await read_manifest_at(store, loc.path, stats)
            return manifest, ManifestLocation(version, loc.path, size, loc.scheme)
    raise NotFoundError(f"dataset {store.uri(root)} has no version {version}") from last_missing


async def read_version_hint(store: ObjectStore, root: str, stats: IOStats | None = None) -> int | None:
    """The version ``_versions/latest_version_hint.json`` claims is latest (None if absent/garbled)."""
    try:
        data = await read_object(store, join_path(root, VERSIONS_DIR, HINT_NAME), stats)
        value = json.loads(bytes(data))
        version = value.get("version") if isinstance(value, dict) else None
        return version if isinstance(version, int) and version >= 0 else None
    except (NotFoundError, ValueError, UnicodeDecodeError):
        return None


def _check_tag_name(name: str) -> None:
    if not name or "/" in name or "\\" in name or name in (".", "..") or name.endswith(".json"):
        raise InvalidInputError(f"invalid tag name {name!r}")


def parse_tag(name: str, data: bytes | memoryview, path: str) -> Tag:
    """Decode a tag file; accepts camelCase (pylance 14) and snake_case keys."""
    try:
        obj = json.loads(bytes(data))
    except (ValueError, UnicodeDecodeError) as exc:
        raise CorruptFileError(f"tag file is not JSON: {exc}", path=path) from None
    version = obj.get("version") if isinstance(obj, dict) else None
    if isinstance(version, bool) or not isinstance(version, int) or not 0 <= version <= U64_MAX:
        raise CorruptFileError("tag file has no 'version' in [0, 2^64)", path=path)

    def pick(*keys: str) -> Any:
        for k in keys:
            if k in obj:
                return obj[k]
        return None

    meta = pick("metadata")
    return Tag(
        name=name,
        version=obj["version"],
        branch=pick("branch"),
        manifest_size=pick("manifestSize", "manifest_size"),
        created_at=pick("createdAt", "created_at"),
        updated_at=pick("updatedAt", "updated_at"),
        metadata=meta if isinstance(meta, dict) else {},
    )


async def read_tag(store: ObjectStore, root: str, name: str, stats: IOStats | None = None) -> Tag:
    """The tag ``name``; :class:`NotFoundError` if it does not exist."""
    _check_tag_name(name)
    path = join_path(root, TAGS_DIR, f"{name}.json")
    try:
        data = await read_object(store, path, stats)
    except NotFoundError:
        raise NotFoundError(f"dataset {store.uri(root)} has no tag {name!r}") from None
    return parse_tag(name, data, store.uri(path))


async def list_tags(store: ObjectStore, root: str, stats: IOStats | None = None) -> list[Tag]:
    """All tags, sorted by name (one listing plus one read per tag)."""
    infos = await list_dir(store, join_path(root, TAGS_DIR), stats)
    names = []
    for info in infos:
        base = info.path.rsplit("/", 1)[-1]
        if base.endswith(".json"):
            names.append(base[: -len(".json")])
    tags = await asyncio.gather(*(read_tag(store, root, n, stats) for n in names))
    return sorted(tags, key=lambda t: t.name)


def timestamp_to_datetime(timestamp_ns: int) -> _dt.datetime:
    """A manifest timestamp as the reference's Python API shows it (naive local time, µs).

    The reference computes it in floating point; the same arithmetic gives the same microsecond.
    """
    return _dt.datetime.fromtimestamp(timestamp_ns // 1e9) + _dt.timedelta(
        microseconds=(timestamp_ns % 1e9) // 1e3
    )
