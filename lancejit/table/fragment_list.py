"""The fragments of a manifest as a lazy sequence: converted from protobuf on first access.

Opening a dataset of many fragments must not build a :class:`~.manifest.Fragment` per fragment:
``count_rows()`` and the dataset index only need ids and row counts, which
:meth:`FragmentList.counts` reads straight from the decoded protobuf messages.  Indexing or
iterating converts (and keeps) the fragments asked for; the sequence compares equal to the
tuple of its fragments and pickles as that tuple.
"""

from __future__ import annotations

from typing import Any, Callable, Iterator, Sequence, overload

import numpy as np

#: ``counts()`` value for a deletion file whose count the manifest does not give.
UNKNOWN = -1


class FragmentList(Sequence):
    """A read-only sequence of :class:`~.manifest.Fragment` over ``repeated DataFragment``
    messages, converted one by one by ``convert(message, stats_trusted)``."""

    __slots__ = ("_pb", "_trusted", "_convert", "_items")

    def __init__(self, messages: Any, stats_trusted: bool, convert: Callable[[Any, bool], Any]) -> None:
        self._pb = messages
        self._trusted = stats_trusted
        self._convert = convert
        self._items: list[Any] = [None] * len(messages)

    def __len__(self) -> int:
        return len(self._items)

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
        return fragment_counts(self._pb, self._trusted)


def fragment_counts(messages: Any, trusted: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """See :meth:`FragmentList.counts` (the rules of :func:`.manifest._fragment`: untrusted
    statistics read as unknown; a deleted count above the physical rows is unknown)."""
    n = len(messages)
    if n == 0:
        z = np.zeros(0, dtype=np.int64)
        return z, z.copy(), z.copy(), np.zeros(0, dtype=bool)
    # one pass over the messages (each access to a repeated message element builds a wrapper);
    # uint64 as stored (hostile values must not overflow), checked by the caller
    table = np.array(
        [(m.id, m.physical_rows, len(m.files), m.HasField("deletion_file"),
          m.deletion_file.num_deleted_rows) for m in messages],
        dtype=np.uint64,
    ).reshape(n, 5)
    ids, has_files, has_del = table[:, 0].astype(np.int64), table[:, 2] > 0, table[:, 3] > 0
    if not trusted:
        return ids, np.zeros(n, dtype=np.uint64), np.where(has_del, UNKNOWN, 0), has_files
    physical, deleted = table[:, 1], table[:, 4]
    unknown = has_del & ((deleted == 0) | ((physical != 0) & (deleted > physical)))
    known = np.where(has_del & ~unknown, np.minimum(deleted, physical), 0).astype(np.int64)
    return ids, physical, np.where(unknown, UNKNOWN, known), has_files
