"""Gathering selected variable-width values into a new buffer (writer side).

Used to drop null slots before statistics and dictionary encoding without materialising a
per-byte index array.
"""

from __future__ import annotations

import numpy as np
from lancejit.encoding.kernels.jit import njit


@njit(cache=True, nogil=True, specs=("u1[::1], i8[::1], i8[::1], u1[::1], i8[::1]",))
def gather_var(data, offsets, keep, out_data, out_offsets):  # pragma: no cover - compiled
    """Copy the values ``data[offsets[k]:offsets[k+1]]`` (half-open) for each ``k`` in ``keep``,
    in order, to ``out_data``; ``out_offsets`` (``len(keep) + 1`` entries, int64) receives their
    offsets from 0.  ``out_data`` must hold the total length.  Returns bytes written."""
    o = 0
    out_offsets[0] = 0
    for i in range(keep.shape[0]):
        k = keep[i]
        s = offsets[k]
        e = offsets[k + 1]
        for j in range(s, e):
            out_data[o] = data[j]
            o += 1
        out_offsets[i + 1] = o
    return o


def gather_var_values(data: np.ndarray, offsets: np.ndarray, keep: np.ndarray
                      ) -> tuple[np.ndarray, np.ndarray]:
    """``(bytes, int64 offsets)`` of the values at indices ``keep`` (bounds checked here)."""
    from lancejit.core.errors import InvalidInputError

    offsets = np.ascontiguousarray(offsets, dtype=np.int64)
    keep = np.ascontiguousarray(keep, dtype=np.int64)
    n = offsets.shape[0] - 1
    if keep.size and (keep.min() < 0 or keep.max() >= n):
        raise InvalidInputError("gather_var_values: index out of range")
    if n > 0 and (offsets[0] < 0 or offsets[-1] > data.shape[0] or np.any(np.diff(offsets) < 0)):
        raise InvalidInputError("gather_var_values: offsets out of range")
    lens = offsets[keep + 1] - offsets[keep]
    out = np.empty(int(lens.sum()), dtype=np.uint8)
    out_offs = np.empty(keep.shape[0] + 1, dtype=np.int64)
    gather_var(np.ascontiguousarray(data, dtype=np.uint8), offsets, keep, out, out_offs)
    return out, out_offs
