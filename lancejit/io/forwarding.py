"""A :class:`~lancejit.core.ranges.RangeReader` wrapper that forwards everything to the reader
it wraps; subclasses override what they observe or change (usually ``read_ranges``)."""

from __future__ import annotations

from typing import Any


class ForwardingReader:
    """Forwards ``path``, ``size()``, ``read_tail()``, ``read_ranges()`` and every other
    attribute (``store``, ``stats``, ``uri``...) to ``inner``."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def __getattr__(self, name: str) -> Any:
        if name == "inner":  # not set yet (copying): no recursion
            raise AttributeError(name)
        return getattr(self.inner, name)

    @property
    def path(self) -> str:
        return self.inner.path

    async def size(self) -> int:
        """The object's size in bytes."""
        return await self.inner.size()

    async def read_tail(self, nbytes: int) -> tuple[int, memoryview]:
        """``(object size, its last min(nbytes, size) bytes)``."""
        return await self.inner.read_tail(nbytes)


__all__ = ["ForwardingReader"]
