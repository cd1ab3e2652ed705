"""Test helpers for the 2.0 / legacy decoders: an in-memory RangeReader and pylance comparisons."""

from __future__ import annotations

import asyncio
from typing import Sequence

import numpy as np
import pyarrow as pa

from lancejit.core.errors import CorruptFileError


class BytesReader:
    """A RangeReader over ``bytes`` that counts ``read_ranges`` calls and ranges."""

    def __init__(self, data: bytes, path: str = "mem://test.lance") -> None:
        self.data = bytes(data)
        self._view = memoryview(self.data)
        self._path = path
        self.calls = 0
        self.ranges = 0
        self.bytes_read = 0

    @property
    def path(self) -> str:
        return self._path

    async def size(self) -> int:
        return len(self.data)

    async def read_ranges(self, ranges: Sequence[tuple[int, int]], *, priority: int = 0) -> list[memoryview]:
        self.calls += 1
        size = len(self.data)
        view = self._view
        out = []
        for s, e in ranges:
            if s < 0 or e < s or e > size:
                raise CorruptFileError(f"range [{s}, {e}) outside {size} bytes", path=self._path)
            self.bytes_read += e - s
            out.append(view[s:e])
        self.ranges += len(out)
        return out

    async def read_tail(self, nbytes: int) -> tuple[int, memoryview]:
        self.calls += 1
        n = min(nbytes, len(self.data))
        return len(self.data), memoryview(self.data)[len(self.data) - n :]

    def reset(self) -> None:
        self.calls = self.ranges = self.bytes_read = 0


def run(coro):
    return asyncio.run(coro)


def arrays_equal(a: pa.Array | pa.ChunkedArray, b: pa.Array | pa.ChunkedArray) -> bool:
    """Equality as pylance reads it; dictionary arrays compare by value (pylance concatenates
    page dictionaries per batch, so their layout depends on the batch size)."""
    if a.type != b.type or len(a) != len(b):
        return False
    if _has_dictionary(a.type):
        return a.to_pylist() == b.to_pylist()
    if isinstance(a, pa.ChunkedArray):
        a = a.combine_chunks() if a.num_chunks else pa.array([], a.type)
    if isinstance(b, pa.ChunkedArray):
        b = b.combine_chunks() if b.num_chunks else pa.array([], b.type)
    if a.type != b.type or len(a) != len(b):
        return False
    if _has_dictionary(a.type):
        return a.to_pylist() == b.to_pylist()
    return a.equals(b)


def _has_dictionary(t: pa.DataType) -> bool:
    if pa.types.is_dictionary(t):
        return True
    return any(_has_dictionary(t.field(i).type) for i in range(t.num_fields))


def random_sorted_indices(rng: np.random.Generator, n: int, k: int) -> np.ndarray:
    k = min(k, n)
    return np.sort(rng.choice(n, size=k, replace=False)).astype(np.int64)


def flip_random_bytes(data: bytes, seed: int) -> bytes:
    """``data`` with ``1 + seed % 8`` bytes at random positions XOR-ed with a non-zero byte."""
    rng = np.random.default_rng(seed)
    out = bytearray(data)
    for pos in rng.integers(0, len(out), 1 + seed % 8):
        out[int(pos)] ^= int(rng.integers(1, 256))
    return bytes(out)


# ------------------------------------------------------------------------------------------
# data generation
# ------------------------------------------------------------------------------------------


def _mask(rng: np.random.Generator, n: int, p: float) -> np.ndarray:
    return rng.random(n) < p


def _ints(rng, n, typ, nulls):
    info = np.iinfo(typ.to_pandas_dtype())
    lo, hi = max(info.min, -(10**6)), min(info.max, 10**6)
    vals = rng.integers(lo, hi, n, endpoint=True).astype(typ.to_pandas_dtype())
    return pa.array(vals, typ, mask=_mask(rng, n, 0.2) if nulls else None)


def _strings(rng, n, nulls=True, alphabet=None, max_len=12):
    out = []
    for _ in range(n):
        if nulls and rng.random() < 0.15:
            out.append(None)
        elif alphabet is not None:
            out.append(alphabet[int(rng.integers(len(alphabet)))])
        else:
            ln = int(rng.integers(0, max_len))
            out.append("".join(chr(97 + int(c)) for c in rng.integers(0, 26, ln)))
    return out


def v20_table(seed: int, n: int) -> pa.Table:
    """Every column type pylance 14 writes in 2.0 files (with nulls where it allows them)."""
    rng = np.random.default_rng(seed)
    cols: dict[str, pa.Array] = {}
    for t in (pa.int8(), pa.int16(), pa.int32(), pa.int64(), pa.uint8(), pa.uint16(), pa.uint32(), pa.uint64()):
        cols[f"c_{t}"] = _ints(rng, n, t, True)
    cols["c_i64_nonull"] = _ints(rng, n, pa.int64(), False)
    cols["c_f16"] = pa.array(rng.standard_normal(n).astype(np.float16), mask=_mask(rng, n, 0.1))
    cols["c_f32"] = pa.array(rng.standard_normal(n).astype(np.float32), mask=_mask(rng, n, 0.1))
    cols["c_f64"] = pa.array(rng.standard_normal(n), mask=_mask(rng, n, 0.1))
    cols["c_bool"] = pa.array(rng.random(n) < 0.5, mask=_mask(rng, n, 0.2))
    cols["c_bool_nonull"] = pa.array(rng.random(n) < 0.5)
    cols["c_all_null_i32"] = pa.nulls(n, pa.int32())
    cols["c_all_null_str"] = pa.nulls(n, pa.string())
    cols["c_null"] = pa.nulls(n)
    cols["c_dec128"] = pa.array([None if m else int(v) for m, v in zip(_mask(rng, n, 0.1), rng.integers(-10**9, 10**9, n))], pa.decimal128(12, 3))
    cols["c_dec256"] = pa.array([None if m else int(v) for m, v in zip(_mask(rng, n, 0.1), rng.integers(-10**9, 10**9, n))], pa.decimal256(40, 2))
    cols["c_date32"] = pa.array(rng.integers(0, 20000, n).astype(np.int32), pa.date32(), mask=_mask(rng, n, 0.1))
    cols["c_date64"] = pa.array(rng.integers(0, 2 * 10**12, n) // 86400000 * 86400000, pa.date64())
    cols["c_time32"] = pa.array(rng.integers(0, 86400, n).astype(np.int32), pa.time32("s"))
    cols["c_time64"] = pa.array(rng.integers(0, 86400 * 10**6, n), pa.time64("us"), mask=_mask(rng, n, 0.1))
    cols["c_ts"] = pa.array(rng.integers(0, 2 * 10**15, n), pa.timestamp("us", tz="America/New_York"), mask=_mask(rng, n, 0.1))
    cols["c_ts_s"] = pa.array(rng.integers(0, 2 * 10**9, n), pa.timestamp("s"))
    cols["c_dur"] = pa.array(rng.integers(-10**9, 10**9, n), pa.duration("ms"), mask=_mask(rng, n, 0.1))
    cols["c_fsb"] = pa.array([None if m else bytes(rng.integers(0, 256, 5).astype(np.uint8)) for m in _mask(rng, n, 0.1)], pa.binary(5))
    cols["c_str"] = pa.array(_strings(rng, n))
    cols["c_str_empty"] = pa.array(["" if rng.random() < 0.5 else None for _ in range(n)], pa.string())
    cols["c_lstr"] = pa.array(_strings(rng, n), pa.large_string())
    cols["c_bin"] = pa.array([None if s is None else s.encode() * 2 for s in _strings(rng, n)], pa.binary())
    cols["c_lbin"] = pa.array([None if s is None else s.encode() for s in _strings(rng, n)], pa.large_binary())
    cols["c_dictstr"] = pa.array(_strings(rng, n, alphabet=["red", "green", "blue", "", "yellow"]))
    cols["c_arrowdict"] = pa.array(_strings(rng, n, alphabet=["a", "bb", "ccc"])).dictionary_encode()
    fsl_vals = rng.standard_normal(n * 3).astype(np.float32)
    cols["c_fsl"] = pa.FixedSizeListArray.from_arrays(pa.array(fsl_vals, mask=_mask(rng, n * 3, 0.1)), 3, mask=pa.array(_mask(rng, n, 0.1)))
    cols["c_fsl_nonull"] = pa.FixedSizeListArray.from_arrays(pa.array(rng.integers(0, 100, n * 4).astype(np.int16)), 4)
    inner = pa.FixedSizeListArray.from_arrays(pa.array(rng.integers(0, 9, n * 4).astype(np.int32)), 2)
    cols["c_fsl_fsl"] = pa.FixedSizeListArray.from_arrays(inner, 2)
    cols["c_fsl_bool"] = pa.FixedSizeListArray.from_arrays(pa.array(rng.random(n * 3) < 0.5), 3)
    cols["c_list"] = _list_of(rng, n, lambda k: pa.array(rng.integers(0, 1000, k), pa.int64(), mask=_mask(rng, k, 0.1)))
    cols["c_llist_str"] = _list_of(rng, n, lambda k: pa.array(_strings(rng, k), pa.string()), large=True)
    cols["c_list_null"] = _list_of(rng, n, lambda k: pa.nulls(k))
    struct_items = lambda k: pa.StructArray.from_arrays(
        [pa.array(rng.integers(0, 50, k).astype(np.int32)), pa.array(_strings(rng, k))], names=["x", "y"]
    )
    cols["c_list_struct"] = _list_of(rng, n, struct_items)
    cols["c_list_list"] = _list_of(rng, n, lambda k: _list_of(rng, k, lambda j: pa.array(rng.integers(0, 9, j).astype(np.int32))))
    cols["c_list_fsl"] = _list_of(rng, n, lambda k: pa.FixedSizeListArray.from_arrays(pa.array(rng.standard_normal(2 * k).astype(np.float32)), 2))
    cols["c_struct"] = pa.StructArray.from_arrays(
        [pa.array(rng.integers(0, 9, n).astype(np.int32), mask=_mask(rng, n, 0.2)), pa.array(_strings(rng, n)),
         _list_of(rng, n, lambda k: pa.array(rng.standard_normal(k)))],
        names=["a", "b", "l"],
    )
    cols["c_struct_struct"] = pa.StructArray.from_arrays(
        [pa.StructArray.from_arrays([pa.array(rng.random(n) < 0.5)], names=["flag"]), pa.array(rng.integers(0, 5, n))],
        names=["inner", "v"],
    )
    return pa.table(cols)


def _list_of(rng, n, make_items, large=False):
    lengths = rng.integers(0, 5, n)
    nulls = _mask(rng, n, 0.15)
    lengths[nulls] = 0
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    items = make_items(int(offsets[-1]))
    cls = pa.LargeListArray if large else pa.ListArray
    off = pa.array(offsets if large else offsets.astype(np.int32))
    return cls.from_arrays(off, items, mask=pa.array(nulls))
