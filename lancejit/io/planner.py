"""Coalescing read planner: pure functions, no I/O.

Given the byte ranges a caller wants (half-open ``(start, end)``, any order, overlapping,
repeated or empty), :func:`plan_reads` chooses the physical requests:

1. non-empty ranges are sorted by start and merged while the gap to the current merged run is
   at most ``block_size`` bytes (``next.start <= run.end + block_size``; overlaps always merge);
2. a merged run longer than ``max_request_size`` is split into ``ceil(len / max)`` parts of
   near-equal length (lengths differ by at most one byte), so no request exceeds the maximum.

For every requested range the plan records the :class:`Slice` s of physical results that make
it up: one slice (a zero-copy ``memoryview``) when the range lies inside one physical read,
several (concatenated by :func:`assemble`) only when it spans split parts.  Empty ranges need
no slice and no request.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass
from typing import Sequence

from lancejit.core.errors import InvalidInputError


@dataclass(frozen=True, slots=True)
class PhysicalRead:
    """One request to the store: half-open byte range ``[start, end)``."""

    start: int
    end: int

    @property
    def length(self) -> int:
        return self.end - self.start


@dataclass(frozen=True, slots=True)
class Slice:
    """Bytes ``[start, end)`` (offsets inside the buffer) of physical read number ``read``."""

    read: int
    start: int
    end: int

    @property
    def length(self) -> int:
        return self.end - self.start


@dataclass(frozen=True, slots=True)
class ReadPlan:
    """Physical reads (sorted, disjoint) and, per requested range in request order, its slices."""

    requested: tuple[tuple[int, int], ...]
    reads: tuple[PhysicalRead, ...]
    slices: tuple[tuple[Slice, ...], ...]

    @property
    def num_requests(self) -> int:
        return len(self.reads)

    @property
    def bytes_read(self) -> int:
        return sum(r.length for r in self.reads)

    @property
    def bytes_requested(self) -> int:
        return sum(end - start for start, end in self.requested)


def _split(start: int, end: int, max_request_size: int) -> list[PhysicalRead]:
    length = end - start
    if length <= max_request_size:
        return [PhysicalRead(start, end)]
    parts = -(-length // max_request_size)
    base, extra = divmod(length, parts)
    out: list[PhysicalRead] = []
    pos = start
    for i in range(parts):
        size = base + (1 if i < extra else 0)
        out.append(PhysicalRead(pos, pos + size))
        pos += size
    return out


def merge_ranges(ranges: Sequence[tuple[int, int]], block_size: int) -> list[tuple[int, int]]:
    """Sorted, disjoint runs covering every non-empty range; runs closer than ``block_size`` merged."""
    runs: list[tuple[int, int]] = []
    for start, end in sorted(r for r in ranges if r[1] > r[0]):
        if runs and start <= runs[-1][1] + block_size:
            if end > runs[-1][1]:
                runs[-1] = (runs[-1][0], end)
        else:
            runs.append((start, end))
    return runs


def plan_reads(
    ranges: Sequence[tuple[int, int]], block_size: int, max_request_size: int
) -> ReadPlan:
    """Plan the physical reads for ``ranges`` (see the module docstring).

    ``block_size`` >= 0 and ``max_request_size`` >= 1 are in bytes.  Ranges must satisfy
    ``0 <= start <= end`` (else :class:`InvalidInputError`).
    """
    if block_size < 0:
        raise InvalidInputError(f"block_size must be >= 0, got {block_size}")
    if max_request_size < 1:
        raise InvalidInputError(f"max_request_size must be >= 1, got {max_request_size}")
    requested: list[tuple[int, int]] = []
    for rng in ranges:
        start, end = int(rng[0]), int(rng[1])
        if start < 0 or end < start:
            raise InvalidInputError(f"invalid byte range [{start}, {end})")
        requested.append((start, end))

    reads: list[PhysicalRead] = []
    for start, end in merge_ranges(requested, block_size):
        reads.extend(_split(start, end, max_request_size))
    starts = [r.start for r in reads]

    slices: list[tuple[Slice, ...]] = []
    for start, end in requested:
        if end == start:
            slices.append(())
            continue
        i = bisect_right(starts, start) - 1
        parts: list[Slice] = []
        pos = start
        while pos < end:
            read = reads[i]
            stop = min(end, read.end)
            parts.append(Slice(i, pos - read.start, stop - read.start))
            pos = stop
            i += 1
        slices.append(tuple(parts))
    return ReadPlan(tuple(requested), tuple(reads), tuple(slices))


def assemble(plan: ReadPlan, buffers: Sequence[memoryview]) -> list[memoryview]:
    """The requested ranges' bytes from the physical reads' ``buffers`` (one per ``plan.reads``).

    Zero-copy slices where possible; a range spanning several parts is copied into a new buffer.
    """
    if len(buffers) != len(plan.reads):
        raise InvalidInputError(f"plan has {len(plan.reads)} reads but got {len(buffers)} buffers")
    empty = memoryview(b"")
    out: list[memoryview] = []
    for parts in plan.slices:
        if not parts:
            out.append(empty)
        elif len(parts) == 1:
            s = parts[0]
            out.append(memoryview(buffers[s.read])[s.start:s.end])
        else:
            joined = bytearray(sum(s.length for s in parts))
            pos = 0
            for s in parts:
                joined[pos:pos + s.length] = memoryview(buffers[s.read])[s.start:s.end]
                pos += s.length
            out.append(memoryview(joined).toreadonly())
    return out
