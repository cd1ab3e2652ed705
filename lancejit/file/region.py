"""A window of a file's bytes held in memory (the metadata tail, possibly extended backwards),
addressed by absolute file positions, for the v2 and legacy metadata parsers."""

from __future__ import annotations

from lancejit.core.errors import CorruptFileError


class MetadataRegion:
    """Bytes ``[start, start + len(data))`` of the file (absolute byte positions, half-open)."""

    __slots__ = ("start", "data", "path")

    def __init__(self, start: int, data: memoryview, path: str = "") -> None:
        self.start = start
        self.data = data
        self.path = path

    @property
    def end(self) -> int:
        """One past the last file position held."""
        return self.start + len(self.data)

    def covers(self, start: int, end: int) -> bool:
        """Whether ``[start, end)`` is a range (``start <= end``) held in this region."""
        return self.start <= start <= end <= self.end

    def get(self, start: int, end: int) -> memoryview:
        """Bytes ``[start, end)`` without a bounds check (callers checked :meth:`covers`)."""
        return self.data[start - self.start : end - self.start]

    def slice(self, start: int, end: int, what: str) -> memoryview:
        """Bytes ``[start, end)``; :class:`CorruptFileError` naming ``what`` when not held."""
        if not self.covers(start, end):
            raise CorruptFileError(
                f"{what} at bytes [{start}, {end}) lies outside the metadata region "
                f"[{self.start}, {self.end})",
                path=self.path,
            )
        return self.get(start, end)


__all__ = ["MetadataRegion"]
