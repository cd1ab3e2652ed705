"""Manifest file names: the two naming schemes of ``_versions/`` and detached versions, and
:class:`ManifestLocation` (where one version's manifest lives).

* V1: ``{version}.manifest`` (legacy).
* V2: ``{u64::MAX - version:020}.manifest`` -- zero-padded to 20 digits and inverted so that a
  lexically ordered listing yields the newest version first.
* Detached versions (bit 63 set) are named ``d{version}.manifest`` in either scheme.

A directory mixing V1 and V2 names is invalid.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from lancejit.core.errors import CorruptFileError

U64_MAX = (1 << 64) - 1
DETACHED_VERSION_MASK = 1 << 63
MANIFEST_SUFFIX = ".manifest"
DETACHED_PREFIX = "d"
VERSIONS_DIR = "_versions"
_V2_STEM_LEN = 20


class NamingScheme(enum.Enum):
    """How manifest files of a dataset are named."""

    V1 = 1
    V2 = 2


@dataclass(frozen=True, slots=True)
class ManifestLocation:
    """Where one version's manifest lives: store ``path`` and ``size`` in bytes (None if unknown)."""

    version: int
    path: str
    size: int | None
    scheme: NamingScheme
    detached: bool = False


def is_detached(version: int) -> bool:
    """True for detached versions (bit 63 set): not part of the version history."""
    return bool(version & DETACHED_VERSION_MASK)


def manifest_name(version: int, scheme: NamingScheme) -> str:
    """File name (inside ``_versions/``) of ``version``'s manifest under ``scheme``."""
    if not 0 <= version <= U64_MAX:
        raise ValueError(f"version {version} is not a u64")
    if is_detached(version):
        return f"{DETACHED_PREFIX}{version}{MANIFEST_SUFFIX}"
    if scheme is NamingScheme.V1:
        return f"{version}{MANIFEST_SUFFIX}"
    return f"{U64_MAX - version:020d}{MANIFEST_SUFFIX}"


def detect_scheme(name: str) -> NamingScheme | None:
    """Scheme of a ``_versions/`` entry, or None when it is not a manifest name
    (temporary files, ``latest_version_hint.json``, staged ``N.manifest-uuid`` files...)."""
    parsed = parse_manifest_name(name)
    return None if parsed is None else parsed[1]


def parse_manifest_name(name: str) -> tuple[int, NamingScheme, bool] | None:
    """``(version, scheme, detached)`` for a manifest file name, None for other names."""
    if not name.endswith(MANIFEST_SUFFIX):
        return None
    stem = name[: -len(MANIFEST_SUFFIX)]
    if not stem.isascii():
        return None
    if stem.isdigit():
        number = int(stem)
        if number > U64_MAX:
            return None
        if len(stem) == _V2_STEM_LEN:
            return U64_MAX - number, NamingScheme.V2, False
        return number, NamingScheme.V1, False
    if stem.startswith(DETACHED_PREFIX) and stem[1:].isdigit():
        version = int(stem[1:])
        return (version, NamingScheme.V2, True) if version <= U64_MAX else None
    return None


#: Message of the error for a ``_versions/`` directory that mixes the naming schemes.
MIXED_SCHEMES = "found manifests in both naming schemes (V1 'N.manifest' and V2 20-digit inverted names)"


def check_single_scheme(names: list[str], where: str) -> NamingScheme | None:
    """The one scheme used by the (non-detached) manifest ``names``; raises
    :class:`CorruptFileError` naming ``where`` when V1 and V2 names are mixed."""
    found: set[NamingScheme] = set()
    for name in names:
        parsed = parse_manifest_name(name)
        if parsed is not None and not parsed[2]:
            found.add(parsed[1])
    if len(found) > 1:
        raise CorruptFileError(MIXED_SCHEMES, path=where)
    return found.pop() if found else None
