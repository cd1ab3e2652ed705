"""Every Numba kernel of lancejit: ``@njit(cache=True, nogil=True)`` functions that fill
preallocated output arrays.  Callers validate all lengths/offsets before calling; kernels do not
bounds-check (except where positions depend on the data itself, e.g. ``varpacked.scan_rows`` and
the FSST size pass, which report the first bad value instead).  One module per concept:
``bitpack`` (FastLanes pack/unpack), ``fsst`` (decode), ``rle`` (expand), ``bss`` (byte stream
split), ``gather`` (byte-slice copies), ``varpacked`` (packed-struct row scan); ``enc_*`` hold
writer-side kernels.  Pass kernel inputs through :func:`readonly` to keep one specialization
per dtype."""

from __future__ import annotations

import numpy as np


def readonly(a: np.ndarray, dtype: np.dtype | type | None = None) -> np.ndarray:
    """A C-contiguous, read-only view of ``a`` (copied only if not contiguous or of another dtype).

    Kernel *inputs* always go through this so Numba compiles a single specialization per dtype
    (it otherwise compiles separate versions for writable and read-only arrays).
    """
    v = np.ascontiguousarray(a, dtype=dtype).view()
    v.flags.writeable = False
    return v
