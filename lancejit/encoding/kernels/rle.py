"""Run-length expansion kernel.

Run ``r`` repeats the ``width``-byte value ``values[r*width:(r+1)*width]`` ``lengths[r]`` times.
Works on raw bytes so one specialization serves every value width.
"""

from __future__ import annotations

import numpy as np

from lancejit.encoding.kernels.jit import njit


@njit(cache=True, nogil=True, specs=("ro(u1[::1]), i8, ro(u1[::1]), i8, i8, u1[::1]",))
def rle_expand(values, width, lengths, num_runs, num_values, out):  # pragma: no cover
    """Write the first ``num_values`` expanded values (``num_values * width`` bytes) to ``out``.

    Runs past ``num_values`` are ignored.  Callers guarantee ``len(values) >= num_runs*width``,
    ``len(lengths) >= num_runs`` and that the run lengths sum to at least ``num_values``.
    Returns the number of values written.
    """
    o = 0
    for r in range(num_runs):
        n = np.int64(lengths[r])
        if o + n > num_values:
            n = num_values - o
        src = r * width
        for _ in range(n):
            dst = o * width
            for k in range(width):
                out[dst + k] = values[src + k]
            o += 1
        if o >= num_values:
            break
    return o
