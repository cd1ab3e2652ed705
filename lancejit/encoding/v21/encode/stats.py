"""Statistics the encoding choice needs (as the reference's ``statistics.rs``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from lancejit.encoding.kernels.enc_hll import distinct_bytes, estimate, hll_bytes, hll_fixed
from lancejit.encoding.kernels.enc_rle import count_runs

from .data import FixedBlock, FslBlock, VarBlock

if TYPE_CHECKING:
    import pyarrow as pa

CHUNK = 1024


def bit_widths(words: np.ndarray) -> np.ndarray:
    """Bit length of the OR of each 1024-value chunk of unsigned ``words`` (int64 array)."""
    n = words.shape[0]
    if n == 0:
        return np.zeros(1, dtype=np.int64)
    if n <= CHUNK:  # one chunk (a small page): no vector steps
        return np.array([int(np.bitwise_or.reduce(words).astype(np.uint64)).bit_length()], dtype=np.int64)
    ors = np.bitwise_or.reduceat(words, np.arange(0, n, CHUNK))
    out = np.zeros(ors.shape[0], dtype=np.int64)
    v = ors.astype(np.uint64)
    # bit length by halving (vectorised, 6 steps for 64 bits)
    for shift in (32, 16, 8, 4, 2, 1):
        big = v >= np.uint64(1 << shift)
        out[big] += shift
        v[big] >>= np.uint64(shift)
    out += v != 0
    return out


def run_count(words: np.ndarray) -> int:
    return int(count_runs(words)) if words.shape[0] else 0


def max_length(block) -> int:
    """Max bytes per value (fixed: the width in bytes)."""
    if isinstance(block, VarBlock):
        return block.max_length()
    return (block.bits_per_value + 7) // 8


def as_arrow(block) -> "pa.Array":
    """A hashable Arrow view of a block's values (unsigned ints, fixed-size binary or binary)."""
    import pyarrow as pa

    if isinstance(block, FixedBlock):
        bits = block.bits_per_value
        if bits in (8, 16, 32, 64):
            t = {8: pa.uint8(), 16: pa.uint16(), 32: pa.uint32(), 64: pa.uint64()}[bits]
            data = np.ascontiguousarray(block.data[: block.num_values])
            return pa.Array.from_buffers(t, block.num_values, [None, pa.py_buffer(data)])
        k = bits // 8
        data = np.ascontiguousarray(block.data.view(np.uint8)[: block.num_values * k])
        return pa.Array.from_buffers(pa.binary(k), block.num_values, [None, pa.py_buffer(data)])
    if isinstance(block, VarBlock):
        return pa.Array.from_buffers(
            pa.large_binary(), block.num_values,
            [None, pa.py_buffer(block.offsets.astype(np.int64)), pa.py_buffer(np.ascontiguousarray(block.data))])
    raise TypeError(type(block))


HLL_PRECISION = 14
EXACT_BELOW = 4096


def exact_cardinality(block) -> int:
    """Number of distinct values, exactly: fixed widths of 1, 2, 4 or 8 bytes by sorting, others
    by :func:`~lancejit.encoding.kernels.enc_hll.distinct_bytes` (by Arrow while that kernel is
    not compiled yet)."""
    n = block.num_values
    if n == 0:
        return 0
    if isinstance(block, FixedBlock) and block.bits_per_value in (8, 16, 32, 64):
        v = np.sort(block.data[:n])
        return 1 + int(np.count_nonzero(v[1:] != v[:-1]))
    from lancejit.encoding.kernels import jit

    jit.numba()  # (the writer's kernels need it anyway)
    if not jit.ready(distinct_bytes):
        import pyarrow.compute as pc

        return int(pc.count_distinct(as_arrow(block)).as_py())
    if isinstance(block, FixedBlock):
        k = block.bits_per_value // 8
        data = np.ascontiguousarray(block.data.view(np.uint8)[: n * k])
        offsets = np.arange(0, (n + 1) * k, k, dtype=np.int64)
    else:
        data = np.ascontiguousarray(block.data, dtype=np.uint8)
        offsets = np.ascontiguousarray(block.offsets[: n + 1], dtype=np.int64)
    slots = np.full(1 << (2 * n - 1).bit_length(), -1, dtype=np.int64)
    return int(distinct_bytes(data, offsets, slots))


def cardinality(block) -> int:
    """Number of distinct values: exact for small blocks, else a HyperLogLog estimate (as the
    reference; p = 14, about 1% error)."""
    if block.num_values <= EXACT_BELOW:
        return exact_cardinality(block)
    regs = np.zeros(1 << HLL_PRECISION, dtype=np.uint8)
    if isinstance(block, FixedBlock) and block.bits_per_value in (8, 16, 32, 64):
        hll_fixed(np.ascontiguousarray(block.data[: block.num_values]), HLL_PRECISION, regs)
    elif isinstance(block, FixedBlock):
        k = block.bits_per_value // 8
        data = np.ascontiguousarray(block.data.view(np.uint8)[: block.num_values * k])
        hll_bytes(data, np.arange(0, (block.num_values + 1) * k, k, dtype=np.int64), HLL_PRECISION, regs)
    else:
        hll_bytes(np.ascontiguousarray(block.data), block.offsets.astype(np.int64), HLL_PRECISION, regs)
    return int(round(estimate(regs)))


def is_fsl(block) -> bool:
    return isinstance(block, FslBlock)
