"""Read plans as generators: the way 2.0 and legacy decoders batch their I/O.

A *step generator* describes a multi-step read.  Each ``yield`` hands out a list of half-open
``(start, end)`` byte ranges (absolute file positions) and receives, through ``send``, one
``memoryview`` per range in the same order.  Its return value (``StopIteration.value``) is the
decoded result.  Multi-step reads (2.0 binary: end offsets, then bytes; lists: offsets, then item
ranges) are plain sequential ``yield`` s.

:func:`gather` runs several step generators in lockstep, merging the ranges of one step of all of
them into a single yield, and :func:`drive` runs a generator against a
:class:`~lancejit.core.ranges.RangeReader` with one ``read_ranges`` call per step, so the
scheduler sees (and coalesces) every range of a step at once.
"""

from __future__ import annotations

from typing import Any, Generator, Sequence

from lancejit.core.ranges import RangeReader

ByteRanges = list[tuple[int, int]]
Buffers = list[memoryview]
#: A step generator returning a value of type ``Any``.
Steps = Generator[ByteRanges, Buffers, Any]


def done(value: Any) -> Steps:
    """A step generator that reads nothing and returns ``value``."""
    return value
    yield  # pragma: no cover - makes this a generator


def read_once(ranges: ByteRanges) -> Steps:
    """One step reading ``ranges``; returns the buffers (no step when ``ranges`` is empty)."""
    if not ranges:
        return []
    bufs = yield list(ranges)
    return bufs


def gather(gens: Sequence[Steps]) -> Steps:
    """Run ``gens`` in lockstep; returns their results in order.

    Step k of the combined generator reads the union (concatenation) of step k of every
    generator still running.
    """
    results: list[Any] = [None] * len(gens)
    pending: dict[int, ByteRanges] = {}
    for i, g in enumerate(gens):
        try:
            pending[i] = next(g)
        except StopIteration as stop:
            results[i] = stop.value
    while pending:
        order = list(pending.items())
        merged: ByteRanges = []
        for _, req in order:
            merged.extend(req)
        bufs = (yield merged) if merged else []
        pos = 0
        pending = {}
        for i, req in order:
            part = bufs[pos : pos + len(req)]
            pos += len(req)
            try:
                pending[i] = gens[i].send(part)
            except StopIteration as stop:
                results[i] = stop.value
    return results


async def drive(reader: RangeReader, gen: Steps, *, priority: int = 0) -> Any:
    """Run ``gen`` against ``reader``: one ``read_ranges`` call per non-empty step."""
    try:
        req = next(gen)
        while True:
            bufs = await reader.read_ranges(req, priority=priority) if req else []
            req = gen.send(list(bufs))
    except StopIteration as stop:
        return stop.value


async def run_plans(reader: RangeReader, plans: Sequence[Steps], *, priority: int = 0, what: str = "") -> list[Any]:
    """Run several step generators together: one ``read_ranges`` call per step for all of them.

    This is how a caller reads many fields of one file with the fewest requests: pass each
    decoder's ``take_steps(indices)`` / ``range_steps(start, end)``.  Errors other than
    lancejit's own (malformed bytes surfacing as NumPy/pyarrow errors) become
    :class:`~lancejit.core.errors.CorruptFileError` naming the file.
    """
    import asyncio

    from lancejit.core.errors import CorruptFileError, LanceJitError

    try:
        return await drive(reader, gather(plans), priority=priority)
    except (LanceJitError, asyncio.CancelledError, OSError, MemoryError):
        raise
    except Exception as exc:
        detail = f" {what}" if what else ""
        raise CorruptFileError(f"cannot decode{detail} ({type(exc).__name__}: {exc})", path=reader.path) from exc
