"""Byte ranges and the read protocol that format code sees.

Format code (``encoding``, ``file``, ``table``) never touches a store directly: it asks a
:class:`RangeReader` for byte ranges of one file.  ``lancejit.io`` implements it with the
coalescing scheduler; tests may implement it over an in-memory ``bytes``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, Sequence, runtime_checkable


@dataclass(frozen=True, slots=True)
class ByteRange:
    """A half-open byte range ``[start, end)`` of one file, in bytes from the file start."""

    start: int
    end: int

    def __post_init__(self) -> None:
        if self.start < 0 or self.end < self.start:
            raise ValueError(f"invalid byte range [{self.start}, {self.end})")

    @property
    def length(self) -> int:
        return self.end - self.start


@runtime_checkable
class RangeReader(Protocol):
    """Reads byte ranges of one file.  Implemented by ``lancejit.io.FileScheduler``."""

    @property
    def path(self) -> str:
        """The file's path or URI, for error messages."""
        ...

    async def size(self) -> int:
        """The file size in bytes."""
        ...

    async def read_ranges(
        self, ranges: Sequence[tuple[int, int]], *, priority: int = 0
    ) -> list[memoryview]:
        """Read half-open ``(start, end)`` byte ranges; one buffer per range, in order.

        ``priority`` is the first row position the request serves (lower = sooner).  Ranges
        may overlap, repeat and come in any order.  A range past the end of the file raises
        :class:`lancejit.core.errors.CorruptFileError`.
        """
        ...

    async def read_tail(self, nbytes: int) -> tuple[int, memoryview]:
        """Read the last ``nbytes`` bytes (fewer if the file is smaller) in one request.

        Returns ``(file_size, data)``; ``data`` starts at ``file_size - len(data)``.
        """
        ...
