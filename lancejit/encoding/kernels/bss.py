"""Byte-stream-split kernel: undo the split of ``n`` values of ``k`` bytes each.

Encoded byte ``j*n + i`` is byte ``j`` of value ``i``; decoded byte ``i*k + j``.
"""

from __future__ import annotations

from lancejit.encoding.kernels.jit import njit


@njit(cache=True, nogil=True, specs=("ro(u1[::1]), i8, i8, u1[::1]",))
def bss_join(data, num_values, width, out):  # pragma: no cover
    """Fill ``out[:num_values*width]`` from the ``width`` byte streams in ``data`` (uint8)."""
    for j in range(width):
        base = j * num_values
        for i in range(num_values):
            out[i * width + j] = data[base + i]


@njit(cache=True, nogil=True, specs=("u1[::1], i8, i8, u1[::1]",))
def bss_split(data, num_values, width, out):  # pragma: no cover
    """Inverse of :func:`bss_join` (for the writer and tests)."""
    for j in range(width):
        base = j * num_values
        for i in range(num_values):
            out[base + i] = data[i * width + j]
