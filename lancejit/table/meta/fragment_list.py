"""The fragments of a manifest as a lazy sequence: converted from protobuf on first access.

Opening a dataset of many fragments must not build a :class:`~.manifest.Fragment` per fragment:
``count_rows()`` and the dataset index only need ids and row counts, which
:meth:`FragmentList.counts` reads straight from the decoded protobuf messages.  Indexing or
iterating converts (and keeps) the fragments asked for; the sequence compares equal to the
tuple of its fragments and pickles as that tuple.
"""

from __future__ import annotations

from operator import attrgetter, methodcaller
from typing import Any, Callable, Iterator, Sequence, overload

import numpy as np

#: ``counts()`` value for a deletion file whose count the manifest does not give.
UNKNOWN = -1


class FragmentList(Sequence):
    """A read-only sequence of :class:`~.manifest.Fragment` over ``repeated DataFragment``
    messages, converted one by one by ``convert(message, stats_trusted)``."""

    __slots__ = ("_pb", "_trusted", "_convert", "_items", "_arrays")

    def __init__(self, messages: Any, stats_trusted: bool, convert: Callable[[Any, bool], Any],
                 arrays: Any = None) -> None:
        self._pb = messages
        self._trusted = stats_trusted
        self._convert = convert
        self._items: list[Any] = [None] * len(messages)
        #: The messages' values as arrays when already known (a
        #: :class:`~.manifest_scan.FragmentArrays`), else None.
        self._arrays = arrays

    def __len__(self) -> int:
        return len(self._items)

    @property
    def arrays(self) -> Any:
        """The fragments' values as stored, read by the wire-format kernels (a
        :class:`~.manifest_scan.FragmentArrays`), or None."""
        return self._arrays

    @property
    def stats_trusted(self) -> bool:
        """False when the manifest's statistics are not trusted (no writer version)."""
        return self._trusted

    def _at(self, i: int) -> Any:
        item = self._items[i]
        if item is None:
            item = self._items[i] = self._convert(self._pb[i], self._trusted)
        return item

    @overload
    def __getitem__(self, i: int) -> Any: ...
    @overload
    def __getitem__(self, i: slice) -> tuple: ...

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return tuple(self._at(j) for j in range(*i.indices(len(self))))
        n = len(self._items)
        if i < -n or i >= n:
            raise IndexError("fragment index out of range")
        return self._at(i % n if i < 0 else i)

    def __iter__(self) -> Iterator[Any]:
        return (self._at(i) for i in range(len(self._items)))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (FragmentList, tuple, list)):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other))
        return NotImplemented

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __add__(self, other: Sequence) -> tuple:
        return tuple(self) + tuple(other)

    def __radd__(self, other: Sequence) -> tuple:
        return tuple(other) + tuple(self)

    def __reduce__(self) -> Any:
        return (tuple, (tuple(self),))

    def __repr__(self) -> str:
        return f"FragmentList({len(self)} fragments)"

    def counts(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(ids, physical_rows, num_deleted, has_files)`` (int64, uint64 as stored, int64, bool)
        of every fragment without converting any: the same values the converted fragments hold
        (``physical_rows`` 0 when unknown, ``num_deleted`` 0 without a deletion file and
        :data:`UNKNOWN` when the deletion file's count is unknown)."""
        a = self._arrays
        if a is not None:
            return apply_trust(a.ids.astype(np.int64), a.physical_rows, a.num_files > 0, a.has_deletion,
                               a.num_deleted, self._trusted)
        return fragment_counts(self._pb, self._trusted)


def fragment_counts(messages: Any, trusted: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """See :meth:`FragmentList.counts` (the rules of :func:`.manifest._fragment`: untrusted
    statistics read as unknown; a deleted count above the physical rows is unknown)."""
    n = len(messages)
    if n == 0:
        z = np.zeros(0, dtype=np.int64)
        return z, z.copy(), z.copy(), np.zeros(0, dtype=bool)
    # the element wrappers built once (list), then C-level passes (attrgetter), no Python loop
    # except over fragments with a deletion file; uint64 as stored (hostile values must not
    # overflow), checked by the caller
    items = list(messages)
    ids = np.fromiter(map(attrgetter("id"), items), dtype=np.uint64, count=n).astype(np.int64)
    physical = np.fromiter(map(attrgetter("physical_rows"), items), dtype=np.uint64, count=n)
    has_files = np.fromiter(map(len, map(attrgetter("files"), items)), dtype=np.int64, count=n) > 0
    has_del = np.fromiter(map(methodcaller("HasField", "deletion_file"), items), dtype=bool, count=n)
    deleted = np.zeros(n, dtype=np.uint64)
    with_del = np.flatnonzero(has_del) if trusted else None
    if with_del is not None and len(with_del):
        deleted[with_del] = np.fromiter(
            (items[i].deletion_file.num_deleted_rows for i in with_del.tolist()), dtype=np.uint64, count=len(with_del)
        )
    return apply_trust(ids, physical, has_files, has_del, deleted, trusted)


def apply_trust(ids: np.ndarray, physical: np.ndarray, has_files: np.ndarray, has_del: np.ndarray,
                deleted: np.ndarray, trusted: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """:meth:`FragmentList.counts` from the values as stored (``physical`` and ``deleted``
    uint64, ``deleted`` 0 without a deletion file)."""
    if not trusted:
        return ids, np.zeros(len(ids), dtype=np.uint64), np.where(has_del, UNKNOWN, 0), has_files
    if not has_del.any():
        return ids, physical, np.zeros(len(ids), dtype=np.int64), has_files
    unknown = has_del & ((deleted == 0) | ((physical != 0) & (deleted > physical)))
    # an unknown physical_rows (0) is resolved later from the data file: keep the count as is
    known = np.where(has_del & ~unknown, np.where(physical != 0, np.minimum(deleted, physical), deleted),
                     0).astype(np.int64)
    return ids, physical, np.where(unknown, UNKNOWN, known), has_files
