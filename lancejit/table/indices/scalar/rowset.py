"""Sets of rows as sorted arrays, and the reference's serialized row-id sets.

A *row set* is a sorted, duplicate-free ``uint64`` NumPy array of row addresses (``fragment id
<< 32 | offset``) or, with stable row ids, of row ids.  Set algebra on them is a merge of two
sorted arrays (:func:`union`, :func:`intersect`, :func:`difference`: one Numba kernel call
each, linear in the sizes); many small sets are united by one sort (:func:`union_many`), and ids
in any order become a set by a sort (:func:`of`).

``RowIdTreeMap`` (the reference's serialized form, used in bitmap and label-list index files):
``u32`` number of entries, then per entry ``u32`` fragment (high 32 bits of the rows), ``u32``
byte size and that many bytes of a portable Roaring bitmap of the low 32 bits; size 0 means
"every row of the fragment".  All integers little-endian.
"""

from __future__ import annotations

import struct

import numpy as np

from lancejit.core.errors import CorruptFileError
from lancejit.encoding.kernels import readonly
from lancejit.encoding.kernels.jit import njit

EMPTY: np.ndarray = np.zeros(0, dtype=np.uint64)
EMPTY.setflags(write=False)

_SET3 = ("ro(u8[::1]), ro(u8[::1]), u8[::1]",)


@njit(cache=True, nogil=True, specs=_SET3)
def _union(a, b, out):  # pragma: no cover - compiled
    i = j = n = 0
    na, nb = a.shape[0], b.shape[0]
    while i < na and j < nb:
        x, y = a[i], b[j]
        if x < y:
            out[n] = x
            i += 1
        elif y < x:
            out[n] = y
            j += 1
        else:
            out[n] = x
            i += 1
            j += 1
        n += 1
    while i < na:
        out[n] = a[i]
        i += 1
        n += 1
    while j < nb:
        out[n] = b[j]
        j += 1
        n += 1
    return n


@njit(cache=True, nogil=True, specs=_SET3)
def _intersect(a, b, out):  # pragma: no cover - compiled
    i = j = n = 0
    na, nb = a.shape[0], b.shape[0]
    while i < na and j < nb:
        x, y = a[i], b[j]
        if x < y:
            i += 1
        elif y < x:
            j += 1
        else:
            out[n] = x
            n += 1
            i += 1
            j += 1
    return n


@njit(cache=True, nogil=True, specs=_SET3)
def _difference(a, b, out):  # pragma: no cover - compiled
    i = j = n = 0
    na, nb = a.shape[0], b.shape[0]
    while i < na:
        x = a[i]
        while j < nb and b[j] < x:
            j += 1
        if j >= nb or b[j] != x:
            out[n] = x
            n += 1
        i += 1
    return n


#: Below this many rows in total, set operations use NumPy (no kernel load for tiny sets).
SMALL = 64


def union(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a | b`` of two row sets."""
    if len(a) == 0:
        return b
    if len(b) == 0:
        return a
    if len(a) + len(b) <= SMALL:
        return np.union1d(a, b).astype(np.uint64, copy=False)
    out = np.empty(len(a) + len(b), dtype=np.uint64)
    n = _union(readonly(a, np.uint64), readonly(b, np.uint64), out)
    return out[:n]


def intersect(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a & b`` of two row sets."""
    if len(a) == 0 or len(b) == 0:
        return EMPTY
    if len(a) + len(b) <= SMALL:
        return np.intersect1d(a, b, assume_unique=True).astype(np.uint64, copy=False)
    out = np.empty(min(len(a), len(b)), dtype=np.uint64)
    n = _intersect(readonly(a, np.uint64), readonly(b, np.uint64), out)
    return out[:n]


def difference(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a - b`` of two row sets."""
    if len(a) == 0 or len(b) == 0:
        return a
    if len(a) + len(b) <= SMALL:
        return np.setdiff1d(a, b, assume_unique=True).astype(np.uint64, copy=False)
    out = np.empty(len(a), dtype=np.uint64)
    n = _difference(readonly(a, np.uint64), readonly(b, np.uint64), out)
    return out[:n]


@njit(cache=True, nogil=True, specs=("ro(u8[::1]), i8, i8, u1[::1]",))
def _mark(rows, first, stride, mask):  # pragma: no cover - compiled
    """``mask[(fragment - first) * stride + offset] = 1`` for every address of ``rows`` (the
    caller sized ``mask`` for every fragment and offset of ``rows``)."""
    for i in range(rows.shape[0]):
        v = rows[i]
        mask[(np.int64(v >> np.uint64(32)) - first) * stride + np.int64(v & np.uint64(0xFFFFFFFF))] = 1


@njit(cache=True, nogil=True, specs=("ro(u1[::1]), i8, i8, u8[::1]",))
def _emit(mask, first, stride, out):  # pragma: no cover - compiled
    """The addresses :func:`_mark` marked, ascending, into ``out`` (room for one more: written
    without a branch); returns their count."""
    n = 0
    for f in range(mask.shape[0] // stride):
        base = np.uint64(first + f) << np.uint64(32)
        at = f * stride
        for j in range(stride):
            out[n] = base | np.uint64(j)
            n += mask[at + j]
    return n


#: Unions of at least this many rows in all go through a mask when it is small enough.
DENSE_MIN = 1 << 14
#: ... at most this many mask bytes per row united.
DENSE_SPAN = 8


def _union_mask(sets: list[np.ndarray], total: int) -> np.ndarray | None:
    """The union of ``sets`` through a mask of their fragments' offsets (one marking pass, one
    pass over the mask: no sort), or None when the mask would be large for the rows."""
    first = min(int(s[0]) >> 32 for s in sets)
    last = max(int(s[-1]) >> 32 for s in sets)
    stride = 0
    for s in sets:  # the highest offset: the last row of each fragment's run
        ids, bounds = fragment_runs(s)
        stride = max(stride, int((s[bounds[1:] - 1] & np.uint64(0xFFFFFFFF)).max()) + 1)
    size = (last - first + 1) * stride
    if size > DENSE_SPAN * total:
        return None
    mask = np.zeros(size, dtype=np.uint8)
    _mark(readonly(np.concatenate(sets), np.uint64), first, stride, mask)
    out = np.empty(total + 1, dtype=np.uint64)
    return out[:_emit(readonly(mask), first, stride, out)]


def union_many(sets: list[np.ndarray]) -> np.ndarray:
    """The union of any number of row sets: merges for two or three; for many, a mask when they
    are dense in their fragments (:func:`_union_mask`), else one sort."""
    sets = [s for s in sets if len(s)]
    if not sets:
        return EMPTY
    if len(sets) <= 3:
        out = sets[0]
        for s in sets[1:]:
            out = union(out, s)
        return out
    total = sum(len(s) for s in sets)
    if total >= DENSE_MIN:
        got = _union_mask(sets, total)
        if got is not None:
            return got
    return of(np.concatenate(sets))


#: :func:`fragment_runs` finds at most this many runs by binary search before one pass over the rows.
_GALLOP = 32


def fragment_runs(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(fragment ids, bounds)`` of a row set of addresses: its runs of one fragment each, run
    ``i`` being ``rows[bounds[i]:bounds[i + 1]]`` (ids int64 ascending, bounds int64 of one
    more).  A few runs are found by binary search (no pass over the rows), many by one."""
    n = len(rows)
    if not n:
        return np.zeros(0, dtype=np.int64), np.zeros(1, dtype=np.int64)
    last = int(rows[-1]) >> 32
    ids: list[int] = []
    bounds = [0]
    at = 0
    while len(ids) < _GALLOP:
        h = int(rows[at]) >> 32
        ids.append(h)
        at = n if h == last else int(np.searchsorted(rows, np.uint64((h + 1) << 32)))
        bounds.append(at)
        if at == n:
            return np.array(ids, dtype=np.int64), np.array(bounds, dtype=np.int64)
    high = rows >> np.uint64(32)
    cuts = np.flatnonzero(high[1:] != high[:-1]) + 1
    bounds_all = np.concatenate([[0], cuts, [n]]).astype(np.int64)
    return high[bounds_all[:-1]].astype(np.int64), bounds_all


def span_positions(starts: np.ndarray, stops: np.ndarray) -> slice | np.ndarray:
    """The positions of the half-open spans ``[starts[i], stops[i])`` one after the other: a
    slice when they follow each other without a gap, else an int64 index array."""
    starts = np.asarray(starts, dtype=np.int64)
    counts = np.maximum(np.asarray(stops, dtype=np.int64) - starts, 0)
    keep = np.flatnonzero(counts)
    starts, counts = starts[keep], counts[keep]
    total = int(counts.sum())
    if not total:
        return slice(0, 0)
    if len(keep) == 1 or bool((starts[1:] == (starts + counts)[:-1]).all()):
        return slice(int(starts[0]), int(starts[0]) + total)
    return np.repeat(starts - (np.cumsum(counts) - counts), counts) + np.arange(total, dtype=np.int64)


def of(values: np.ndarray, unique: bool = False) -> np.ndarray:
    """A row set from row ids in any order, duplicates allowed (``unique``: the caller knows
    there are none).  A sort, then repeats dropped: NumPy's ``unique`` hashes first and costs
    many times a sort of the same ids."""
    arr = np.asarray(values, dtype=np.uint64)
    if len(arr) < 2:
        return arr
    if bool((arr[1:] > arr[:-1]).all()):
        return arr
    arr = np.sort(arr)
    if unique:
        return arr
    new = np.empty(len(arr), dtype=bool)
    new[0] = True
    np.not_equal(arr[1:], arr[:-1], out=new[1:])
    return arr if bool(new.all()) else arr[new]


# ------------------------------------------------------------------------- RowIdTreeMap
def _bitmap(low: np.ndarray):
    """A Roaring bitmap of uint32 values (filled from an ``array.array``: pyroaring's fast path)."""
    import array

    from pyroaring import BitMap

    values = array.array("I")
    values.frombytes(np.ascontiguousarray(low, dtype=np.uint32).tobytes())
    bm = BitMap()
    bm.update(values)
    return bm


_U32 = struct.Struct("<I")
_U32X2 = struct.Struct("<II")


def decode_treemap(data: bytes | memoryview, where: str | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``(rows, full fragments)`` of a serialized ``RowIdTreeMap``: the row set of its partial
    entries and the (uint32-valued, int64) high words of its "every row" entries."""
    from pyroaring import BitMap

    buf = memoryview(data).cast("B")
    size = len(buf)
    if size < 4:
        raise CorruptFileError(f"row-id set of {size} bytes has no entry count", path=where)
    (count,) = _U32.unpack_from(buf, 0)
    if count * 8 > size - 4:
        raise CorruptFileError(f"row-id set claims {count} entries in {size} bytes", path=where)
    off = 4
    parts: list[np.ndarray] = []
    full: list[int] = []
    prev = -1
    for _ in range(count):
        if off + 8 > size:
            raise CorruptFileError("row-id set ends inside an entry header", path=where)
        frag, nbytes = _U32X2.unpack_from(buf, off)
        off += 8
        if frag <= prev:
            raise CorruptFileError("row-id set entries are not in increasing order", path=where)
        prev = frag
        if nbytes == 0:
            full.append(frag)
            continue
        if off + nbytes > size:
            raise CorruptFileError(f"row-id set entry of {nbytes} bytes runs past its {size} bytes", path=where)
        try:
            low = np.frombuffer(BitMap.deserialize(bytes(buf[off:off + nbytes])).to_array(), dtype=np.uint32)
        except (ValueError, OverflowError) as exc:
            raise CorruptFileError(f"row-id set bitmap does not decode: {exc}", path=where) from None
        off += nbytes
        parts.append(low.astype(np.uint64) | np.uint64(frag << 32))
    rows = np.concatenate(parts) if len(parts) > 1 else (parts[0] if parts else EMPTY)
    return rows, np.asarray(full, dtype=np.int64)


def encode_treemap(rows: np.ndarray) -> bytes:
    """The serialized ``RowIdTreeMap`` of a row set (partial entries only)."""
    rows = np.asarray(rows, dtype=np.uint64)
    high = (rows >> np.uint64(32)).astype(np.int64)
    cuts = np.flatnonzero(high[1:] != high[:-1]) + 1 if len(rows) else np.zeros(0, dtype=np.int64)
    bounds = [0, *cuts.tolist(), len(rows)] if len(rows) else [0]
    out = [_U32.pack(len(bounds) - 1)]
    low = (rows & np.uint64(0xFFFFFFFF)).astype(np.uint32)
    for a, b in zip(bounds[:-1], bounds[1:]):
        data = _bitmap(low[a:b]).serialize()  # (no run containers: the reference writes none)
        out.append(_U32X2.pack(int(high[a]), len(data)))
        out.append(data)
    return b"".join(out)


__all__ = ["EMPTY", "decode_treemap", "difference", "encode_treemap", "fragment_runs", "intersect", "of",
           "span_positions", "union", "union_many"]
