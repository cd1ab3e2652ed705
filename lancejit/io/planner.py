"""Coalescing read planner: pure functions, no I/O.

Given the byte ranges a caller wants (half-open ``(start, end)``, any order, overlapping,
repeated or empty), :func:`plan_reads` chooses the physical requests:

1. non-empty ranges are sorted by start and merged while the gap to the current merged run is
   at most ``block_size`` bytes (``next.start <= run.end + block_size``; overlaps always merge);
2. a merged run longer than ``max_request_size`` is split into ``ceil(len / max)`` parts of
   near-equal length (lengths differ by at most one byte), so no request exceeds the maximum.

For every requested range the plan records where its bytes are: one physical read and an
offset (a zero-copy ``memoryview`` slice) when the range lies inside one read, several
:class:`Slice` s (concatenated by :func:`assemble`) only when it spans split parts.  Empty
ranges need no slice and no request.

Planning is vectorised with NumPy above :data:`VECTOR_MIN` ranges (a take of a thousand rows
plans a thousand ranges), and plain Python below it (cheaper for a handful).
"""

from __future__ import annotations

from bisect import bisect_right
from itertools import chain
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from lancejit.core.errors import InvalidInputError

#: At or above this many ranges the planner works on NumPy arrays.
VECTOR_MIN = 24

#: Up to this many ranges, an ``(n, 2)`` int64 array sorted by start is planned with scalars.
FEW_SORTED = 16

#: Marks, in :attr:`ReadPlan.req_read`, an empty range (-1) or one spanning split parts (-2).
_EMPTY = -1
_SPANS = -2


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


class ReadPlan:
    """Physical reads (sorted, disjoint) and where each requested range's bytes are.

    ``read_starts`` / ``read_ends``: the physical reads (lists of ints, bytes).
    Per requested range (request order): ``req_read`` (read index, -1 empty, -2 spans parts),
    ``req_off`` (offset inside that read) and ``req_len`` (bytes).
    """

    __slots__ = ("requested", "read_starts", "read_ends", "req_read", "req_off", "req_len", "_multi", "_reads")

    def __init__(self, requested, read_starts: list[int], read_ends: list[int], req_read: list[int],
                 req_off: list[int], req_len: list[int], multi: dict[int, tuple[Slice, ...]]) -> None:
        self.requested = requested
        self.read_starts = read_starts
        self.read_ends = read_ends
        self.req_read = req_read
        self.req_off = req_off
        self.req_len = req_len
        self._multi = multi
        self._reads: tuple[PhysicalRead, ...] | None = None

    @property
    def reads(self) -> tuple[PhysicalRead, ...]:
        if self._reads is None:
            self._reads = tuple(PhysicalRead(s, e) for s, e in zip(self.read_starts, self.read_ends))
        return self._reads

    @property
    def slices(self) -> tuple[tuple[Slice, ...], ...]:
        """Per requested range, the slices of physical reads that make it up."""
        out: list[tuple[Slice, ...]] = []
        for i, (r, off, ln) in enumerate(zip(self.req_read, self.req_off, self.req_len)):
            if r >= 0:
                out.append((Slice(r, off, off + ln),))
            elif r == _EMPTY:
                out.append(())
            else:
                out.append(self._multi[i])
        return tuple(out)

    @property
    def num_requests(self) -> int:
        return len(self.read_starts)

    @property
    def bytes_read(self) -> int:
        return sum(self.read_ends) - sum(self.read_starts)

    @property
    def bytes_requested(self) -> int:
        return sum(self.req_len)

    @property
    def max_end(self) -> int:
        """The largest end of any physical read (0 when there is none)."""
        return self.read_ends[-1] if self.read_ends else 0

    def __repr__(self) -> str:
        return f"ReadPlan({len(self.req_len)} ranges -> {self.num_requests} reads, {self.bytes_read} bytes)"


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


def range_array(ranges: Any) -> np.ndarray:
    """Half-open byte ranges (pairs, ``ByteRange`` s or an ``(n, 2)`` array) as a checked
    ``(n, 2)`` int64 array; :class:`InvalidInputError` unless ``0 <= start <= end`` ints."""
    if isinstance(ranges, np.ndarray):
        arr = ranges
        if arr.dtype.kind not in "iu":
            raise InvalidInputError(f"byte ranges must be integers, got dtype {arr.dtype}")
        arr = arr.astype(np.int64, copy=False).reshape(-1, 2)
    else:
        n = len(ranges)
        try:
            arr = np.fromiter(chain.from_iterable(ranges), dtype=np.int64)
        except (TypeError, ValueError, OverflowError):
            arr = None
        if arr is None or arr.size != 2 * n:
            arr = np.array(_pairs(ranges), dtype=np.int64)
        arr = arr.reshape(-1, 2)
    if arr.size and (bool((arr[:, 0] < 0).any()) or bool((arr[:, 1] < arr[:, 0]).any())):
        bad = np.flatnonzero((arr[:, 0] < 0) | (arr[:, 1] < arr[:, 0]))[0]
        raise InvalidInputError(f"invalid byte range [{int(arr[bad, 0])}, {int(arr[bad, 1])})")
    return arr


def _pairs(ranges: Any) -> list[tuple[int, int]]:
    from lancejit.core.ranges import ByteRange

    out = []
    for rng in ranges:
        try:
            if isinstance(rng, ByteRange):
                start, end = rng.start, rng.end
            else:
                start, end = rng
            out.append((int(start), int(end)))
        except (TypeError, ValueError, OverflowError):
            raise InvalidInputError(f"byte range must be a (start, end) pair of ints, got {rng!r}") from None
    return out


def _check_config(block_size: int, max_request_size: int) -> None:
    if block_size < 0:
        raise InvalidInputError(f"block_size must be >= 0, got {block_size}")
    if max_request_size < 1:
        raise InvalidInputError(f"max_request_size must be >= 1, got {max_request_size}")


def plan_reads(ranges: Any, block_size: int, max_request_size: int) -> ReadPlan:
    """Plan the physical reads for ``ranges`` (see the module docstring).

    ``block_size`` >= 0 and ``max_request_size`` >= 1 are in bytes.  Ranges (pairs or an
    ``(n, 2)`` int array) must satisfy ``0 <= start <= end`` (else :class:`InvalidInputError`).
    """
    _check_config(block_size, max_request_size)
    if isinstance(ranges, np.ndarray):
        if ranges.shape[0] <= FEW_SORTED and ranges.dtype == np.int64 and ranges.ndim == 2:
            plan = _plan_sorted_few(ranges.tolist(), block_size, max_request_size)
            if plan is not None:
                return plan
        return _plan_vector(range_array(ranges), block_size, max_request_size)
    if len(ranges) >= VECTOR_MIN:
        return _plan_vector(range_array(ranges), block_size, max_request_size)
    return _plan_small(_pairs(ranges), block_size, max_request_size)


def _plan_sorted_few(requested: list[list[int]], block_size: int, max_request_size: int) -> ReadPlan | None:
    """The plan of a few non-empty ranges sorted by start (a take's chunk ranges) with scalar
    work only; None when they are not sorted, one is empty or invalid, or a run needs
    splitting (the general paths handle those)."""
    n = len(requested)
    rs: list[int] = []
    re_: list[int] = []
    req_read = [0] * n
    req_off = [0] * n
    req_len = [0] * n
    prev = -1
    run = -1
    for i, (s, e) in enumerate(requested):
        if s < prev or e <= s or s < 0:
            return None
        prev = s
        if run >= 0 and s <= re_[run] + block_size:
            if e > re_[run]:
                re_[run] = e
        else:
            rs.append(s)
            re_.append(e)
            run += 1
        req_read[i] = run
        req_off[i] = s - rs[run]
        req_len[i] = e - s
    for a, b in zip(rs, re_):
        if b - a > max_request_size:
            return None
    return ReadPlan(requested, rs, re_, req_read, req_off, req_len, {})


def _plan_small(requested: list[tuple[int, int]], block_size: int, max_request_size: int) -> ReadPlan:
    for start, end in requested:
        if start < 0 or end < start:
            raise InvalidInputError(f"invalid byte range [{start}, {end})")
    reads: list[PhysicalRead] = []
    for start, end in merge_ranges(requested, block_size):
        reads.extend(_split(start, end, max_request_size))
    starts = [r.start for r in reads]
    ends = [r.end for r in reads]
    req_read: list[int] = []
    req_off: list[int] = []
    req_len: list[int] = []
    multi: dict[int, tuple[Slice, ...]] = {}
    for k, (start, end) in enumerate(requested):
        req_len.append(end - start)
        if end == start:
            req_read.append(_EMPTY)
            req_off.append(0)
            continue
        i = bisect_right(starts, start) - 1
        if end <= ends[i]:
            req_read.append(i)
            req_off.append(start - starts[i])
            continue
        req_read.append(_SPANS)
        req_off.append(0)
        multi[k] = _spanning(starts, ends, i, start, end)
    plan = ReadPlan(tuple(requested), starts, ends, req_read, req_off, req_len, multi)
    plan._reads = tuple(reads)
    return plan


def _spanning(starts: list[int], ends: list[int], i: int, start: int, end: int) -> tuple[Slice, ...]:
    parts: list[Slice] = []
    pos = start
    while pos < end:
        stop = min(end, ends[i])
        parts.append(Slice(i, pos - starts[i], stop - starts[i]))
        pos = stop
        i += 1
    return tuple(parts)


def _plan_vector(arr: np.ndarray, block_size: int, max_request_size: int) -> ReadPlan:
    n = arr.shape[0]
    s_all, e_all = arr[:, 0], arr[:, 1]
    lengths = e_all - s_all
    nonempty = np.flatnonzero(lengths > 0)
    req_read = np.full(n, _EMPTY, dtype=np.int64)
    req_off = np.zeros(n, dtype=np.int64)
    multi: dict[int, tuple[Slice, ...]] = {}
    requested = _LazyPairs(arr)
    if nonempty.size == 0:
        return ReadPlan(requested, [], [], req_read.tolist(), req_off.tolist(), lengths.tolist(), multi)
    s, e = s_all[nonempty], e_all[nonempty]
    order = np.argsort(s, kind="stable")
    so, eo = s[order], e[order]
    reach = np.maximum.accumulate(eo)
    brk = np.empty(so.size, dtype=bool)
    brk[0] = True
    np.greater(so[1:], reach[:-1] + block_size, out=brk[1:])
    first = np.flatnonzero(brk)
    run_s = so[first]
    run_e = reach[np.append(first[1:], so.size) - 1]
    run_len = run_e - run_s
    parts = -(-run_len // max_request_size)
    if int(parts.max()) == 1:
        rs, re_ = run_s, run_e
    else:
        total = int(parts.sum())
        run_of = np.repeat(np.arange(run_s.size), parts)
        k = np.arange(total) - np.repeat(np.cumsum(parts) - parts, parts)
        base, extra = np.divmod(run_len, parts)
        b, x = base[run_of], extra[run_of]
        rs = run_s[run_of] + k * b + np.minimum(k, x)
        re_ = rs + b + (k < x)
    ri = np.searchsorted(rs, s, side="right") - 1
    fits = e <= re_[ri]
    req_read[nonempty] = np.where(fits, ri, _SPANS)
    req_off[nonempty] = s - rs[ri]
    starts, ends = rs.tolist(), re_.tolist()
    if not bool(fits.all()):
        for j in np.flatnonzero(~fits).tolist():
            k_req = int(nonempty[j])
            multi[k_req] = _spanning(starts, ends, int(ri[j]), int(s[j]), int(e[j]))
    return ReadPlan(requested, starts, ends, req_read.tolist(), req_off.tolist(), lengths.tolist(), multi)


class _LazyPairs(Sequence):
    """The requested ranges of a vector plan as ``(start, end)`` tuples, built on access."""

    __slots__ = ("_arr",)

    def __init__(self, arr: np.ndarray) -> None:
        self._arr = arr

    def __len__(self) -> int:
        return self._arr.shape[0]

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [tuple(p) for p in self._arr[i].tolist()]
        a, b = self._arr[i].tolist()
        return (a, b)

    def __eq__(self, other) -> bool:
        return list(self) == list(other)


def assemble(plan: ReadPlan, buffers: Sequence[Any]) -> list[memoryview]:
    """The requested ranges' bytes from the physical reads' ``buffers`` (one per ``plan.reads``).

    Zero-copy slices where possible; a range spanning several parts is copied into a new buffer.
    """
    if len(buffers) != plan.num_requests:
        raise InvalidInputError(f"plan has {plan.num_requests} reads but got {len(buffers)} buffers")
    views = [b if isinstance(b, memoryview) else memoryview(b) for b in buffers]
    empty = memoryview(b"")
    out: list[memoryview] = []
    append = out.append
    for k, (r, off, ln) in enumerate(zip(plan.req_read, plan.req_off, plan.req_len)):
        if r >= 0:
            append(views[r][off:off + ln])
        elif r == _EMPTY:
            append(empty)
        else:
            parts = plan._multi[k]
            joined = bytearray(sum(p.length for p in parts))
            pos = 0
            for p in parts:
                joined[pos:pos + p.length] = views[p.read][p.start:p.end]
                pos += p.length
            append(memoryview(joined).toreadonly())
    return out


__all__ = ["PhysicalRead", "ReadPlan", "Slice", "VECTOR_MIN", "assemble", "merge_ranges", "plan_reads", "range_array"]
