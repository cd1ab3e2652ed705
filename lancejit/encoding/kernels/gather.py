"""Kernels that copy variable-length byte slices (dictionary lookups, unpacking packed rows).

Slice ``i`` is ``data[starts[i] : starts[i] + lengths[i]]`` (half-open); it is written to
``out[out_offsets[i] : out_offsets[i] + lengths[i]]``.  Callers compute ``out_offsets`` as the
exclusive prefix sum of ``lengths`` and validate every slice against ``len(data)`` first.
"""

from __future__ import annotations

from lancejit.encoding.kernels.jit import njit


@njit(cache=True, nogil=True, specs=(
    "{ro(u1[::1])|u1[::1]}, i8[::1], i8[::1], i8, i8[::1], u1[::1]",
    "{ro(u1[::1])|u1[::1]}, ro(i8[::1]), ro(i8[::1]), i8, ro(i8[::1]), u1[::1]",
))
def copy_slices(data, starts, lengths, num_slices, out_offsets, out):  # pragma: no cover
    """Copy ``num_slices`` byte slices of ``data`` back to back into ``out``."""
    for i in range(num_slices):
        s = starts[i]
        o = out_offsets[i]
        for k in range(lengths[i]):
            out[o + k] = data[s + k]


@njit(cache=True, nogil=True, specs=("i8[::1], i8, i8[::1]",))
def offsets_from_lengths(lengths, num_values, out_offsets):  # pragma: no cover
    """``out_offsets[0] = 0``, ``out_offsets[i+1] = out_offsets[i] + lengths[i]`` (int64)."""
    acc = 0
    out_offsets[0] = 0
    for i in range(num_values):
        acc += lengths[i]
        out_offsets[i + 1] = acc
