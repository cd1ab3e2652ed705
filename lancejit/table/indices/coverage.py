"""Index coverage: which fragments each index of a version may answer or prune.

Every entry of a manifest's index section (``IndexMetadata``) names the fields it indexes and,
in ``fragment_bitmap`` (a portable Roaring bitmap of fragment ids), the fragments whose rows it
describes.  The reference keeps that bitmap exact: appended fragments are not in it until the
index is optimized, and a fragment whose indexed column is rewritten in place (``merge_insert``
in ``rewrite_columns`` mode, a ``DataReplacement`` commit, an update in rewrite-columns mode) is
removed from it while the index files still hold its old statistics or rows.

The rule every index use follows (zone maps today; BTREE, BITMAP, LABEL_LIST and vector indices
the same way): **an index answers or prunes a fragment only when the fragment is in its bitmap;
every other fragment is scanned and filtered row by row.**  An entry without a bitmap (written
by writers older than the bitmap) covers nothing.

:func:`index_coverage` builds the :class:`IndexCoverage` of a version once (one read of the
manifest's index section, cached with the version's caches): its :class:`IndexSegment` entries
(one per ``IndexMetadata``: an index may have several segments, e.g. after optimizing with new
data, each covering its own fragments), and lookups by field, kind and fragment.  Planners ask
it, per fragment, which segment of a given kind covers a field there (:meth:`IndexCoverage.segment_for`)
or, vectorized, which fragments a set of segments covers (:meth:`IndexCoverage.covered`).
"""

from __future__ import annotations

import uuid as _uuid
from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Iterable

import numpy as np

from lancejit.core.errors import CorruptFileError

from ..meta.manifest import decode_index_section

if TYPE_CHECKING:  # pragma: no cover
    from ..meta.context import DatasetContext

_NO_FRAGMENTS = np.zeros(0, dtype=np.int64)
_NO_FRAGMENTS.setflags(write=False)


@dataclass(frozen=True, slots=True)
class IndexSegment:
    """One ``IndexMetadata`` entry: ``uuid`` (its directory under ``_indices/``), ``name``,
    ``fields`` (Lance field ids), ``kind`` (the details message name, e.g.
    ``"ZoneMapIndexDetails"``, ``"BTreeIndexDetails"``; ``""`` when absent), ``fragments`` (sorted
    int64 ids of the fragments it covers) and the raw protobuf ``metadata`` (files, details,
    versions: what a reader of the index's files needs)."""

    uuid: str
    name: str
    fields: tuple[int, ...]
    kind: str
    dataset_version: int
    base_id: int | None
    fragments: np.ndarray
    metadata: Any = None

    def covers(self, fragment_id: int) -> bool:
        """Whether the segment may answer or prune fragment ``fragment_id``."""
        f = self.fragments
        i = int(np.searchsorted(f, fragment_id))
        return i < len(f) and int(f[i]) == fragment_id

    def covered(self, fragment_ids: np.ndarray) -> np.ndarray:
        """Per id of ``fragment_ids`` (any int array): covered by this segment (bool array)."""
        ids = np.asarray(fragment_ids, dtype=np.int64)
        f = self.fragments
        if len(f) == 0 or len(ids) == 0:
            return np.zeros(len(ids), dtype=bool)
        i = np.minimum(np.searchsorted(f, ids), len(f) - 1)
        return f[i] == ids


@dataclass(frozen=True, slots=True)
class IndexCoverage:
    """The index segments of one version (see the module docstring)."""

    segments: tuple[IndexSegment, ...]

    def of_field(self, field_id: int, kind: str | None = None) -> tuple[IndexSegment, ...]:
        """Segments indexing exactly the one field ``field_id`` (of ``kind`` when given)."""
        return tuple(s for s in self.segments
                     if s.fields == (field_id,) and (kind is None or s.kind == kind))

    def segment_for(self, field_id: int, fragment_id: int, kind: str) -> IndexSegment | None:
        """The segment of ``kind`` on field ``field_id`` that covers ``fragment_id``, or None
        (then nothing of that kind may answer or prune the fragment: it is scanned)."""
        for s in self.of_field(field_id, kind):
            if s.covers(fragment_id):
                return s
        return None

    def covered(self, segments: Iterable[IndexSegment], fragment_ids: np.ndarray) -> np.ndarray:
        """Per id of ``fragment_ids``: covered by *every* one of ``segments`` (bool array; all
        True for no segment).  A query answered by several indices may use them only on the
        fragments all of them cover; the others are scanned."""
        ids = np.asarray(fragment_ids, dtype=np.int64)
        out = np.ones(len(ids), dtype=bool)
        for s in segments:
            out &= s.covered(ids)
        return out


EMPTY = IndexCoverage(())


def _kind(type_url: str) -> str:
    """``"/lance.table.ZoneMapIndexDetails"`` -> ``"ZoneMapIndexDetails"``."""
    return type_url.rpartition("/")[2].rpartition(".")[2]


def _fragments(raw: bytes, where: str) -> np.ndarray:
    """The ids of a serialized portable Roaring bitmap (empty bytes: none)."""
    if not raw:
        return _NO_FRAGMENTS
    from pyroaring import BitMap

    try:
        ids = np.array(BitMap.deserialize(raw).to_array(), dtype=np.int64)
    except (ValueError, OverflowError) as exc:
        raise CorruptFileError(f"index fragment bitmap does not decode: {exc}", path=where) from None
    ids.setflags(write=False)
    return ids


def coverage_of_section(section: Any, where: str) -> IndexCoverage:
    """The coverage of a decoded ``IndexSection`` (None: no index)."""
    if section is None:
        return EMPTY
    out = []
    for ix in section.indices:
        try:
            name = str(_uuid.UUID(bytes=bytes(ix.uuid.uuid)))
        except ValueError:
            continue  # an entry we cannot locate covers nothing
        out.append(IndexSegment(
            uuid=name, name=ix.name, fields=tuple(int(f) for f in ix.fields),
            kind=_kind(ix.index_details.type_url) if ix.HasField("index_details") else "",
            dataset_version=int(ix.dataset_version),
            base_id=int(ix.base_id) if ix.HasField("base_id") else None,
            fragments=_fragments(bytes(ix.fragment_bitmap), where), metadata=ix))
    return IndexCoverage(tuple(out))


async def _load(ctx: "DatasetContext") -> IndexCoverage:
    _, data = await ctx.reader(ctx.store, ctx.manifest_path).read_tail(1 << 62)
    where = ctx.store.uri(ctx.manifest_path)
    return coverage_of_section(decode_index_section(data, ctx.manifest, where), where)


class PerVersion:
    """Values computed once per version and process: kept by manifest URI (a manifest and the
    index files it names never change, so datasets opened again reuse them), at most
    ``max_entries`` versions; a value is loaded once (single flight) through the dataset's
    caches."""

    def __init__(self, tag: str, max_entries: int = 64) -> None:
        self.tag = tag
        self.max_entries = max_entries
        self._cache: "OrderedDict[str, Any]" = OrderedDict()

    async def get(self, ctx: "DatasetContext", load: Callable[[], Awaitable[Any]]) -> Any:
        key = ctx.store.uri(ctx.manifest_path)
        got = self._cache.get(key)
        if got is None:
            got = await ctx.caches.indexes.get((self.tag, ctx.manifest_path), load)
            self._cache[key] = got
            while len(self._cache) > self.max_entries:
                self._cache.popitem(last=False)
        else:
            self._cache.move_to_end(key)
        return got


_COVERAGE = PerVersion("coverage")


async def index_coverage(ctx: "DatasetContext") -> IndexCoverage:
    """The index coverage of the version ``ctx`` holds (built once per version and process)."""
    if ctx.manifest.index_section is None:
        return EMPTY
    return await _COVERAGE.get(ctx, lambda: _load(ctx))


__all__ = ["EMPTY", "IndexCoverage", "IndexSegment", "PerVersion", "coverage_of_section", "index_coverage"]
