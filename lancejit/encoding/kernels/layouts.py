"""Constants of the bit layouts shared by kernels and their interpreted (NumPy) versions, and the
error codes the take kernels return for chunks that break them."""

from __future__ import annotations

import numpy as np

#: Lane-row order of the FastLanes transposed layout (see :mod:`.bitpack`).
FL_ORDER = np.array([0, 4, 2, 6, 1, 5, 3, 7], dtype=np.int64)

#: Error codes of the take and decode kernels (:mod:`.take`, :mod:`.scan`).
TAKE_OK = 0
TAKE_BAD_CHUNK = 1
TAKE_BAD_OFFSETS = 2
TAKE_BAD_WIDTH = 3

__all__ = ["FL_ORDER", "TAKE_BAD_CHUNK", "TAKE_BAD_OFFSETS", "TAKE_BAD_WIDTH", "TAKE_OK"]
