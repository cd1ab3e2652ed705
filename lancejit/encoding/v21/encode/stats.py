"""Statistics the encoding choice needs (as the reference's ``statistics.rs``)."""

from __future__ import annotations

import numpy as np

from lancejit.encoding.kernels.enc_rle import count_runs

from .data import FixedBlock, FslBlock, VarBlock

CHUNK = 1024


def bit_widths(words: np.ndarray) -> np.ndarray:
    """Bit length of the OR of each 1024-value chunk of unsigned ``words`` (int64 array)."""
    n = words.shape[0]
    if n == 0:
        return np.zeros(1, dtype=np.int64)
    ors = np.bitwise_or.reduceat(words, np.arange(0, n, CHUNK))
    bits = words.dtype.itemsize * 8
    out = np.zeros(ors.shape[0], dtype=np.int64)
    v = ors.astype(np.uint64)
    # bit length via repeated shifts (vectorised, <= 64 steps)
    for b in range(bits):
        out[(v >> np.uint64(b)) != 0] = b + 1
    return out


def run_count(words: np.ndarray) -> int:
    return int(count_runs(words)) if words.shape[0] else 0


def max_length(block) -> int:
    """Max bytes per value (fixed: the width in bytes)."""
    if isinstance(block, VarBlock):
        return block.max_length()
    return (block.bits_per_value + 7) // 8


def cardinality(block) -> int:
    """Number of distinct values (the reference estimates this with HyperLogLog)."""
    if isinstance(block, FixedBlock):
        if block.bits_per_value in (8, 16, 32, 64):
            return int(np.unique(block.data[: block.num_values]).shape[0])
        k = block.bits_per_value // 8
        rows = block.data[: k * block.num_values].reshape(block.num_values, k)
        return int(np.unique(rows, axis=0).shape[0])
    if isinstance(block, VarBlock):
        import pyarrow as pa
        import pyarrow.compute as pc

        arr = pa.LargeBinaryArray.from_buffers(
            pa.large_binary(),
            block.num_values,
            [None, pa.py_buffer(block.offsets.astype(np.int64)), pa.py_buffer(block.data)],
        )
        return int(pc.count_distinct(arr).as_py())
    raise TypeError(type(block))


def is_fsl(block) -> bool:
    return isinstance(block, FslBlock)
