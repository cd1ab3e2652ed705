"""Constants of the bit layouts shared by kernels and their interpreted (NumPy) versions."""

from __future__ import annotations

import numpy as np

#: Lane-row order of the FastLanes transposed layout (see :mod:`.bitpack`).
FL_ORDER = np.array([0, 4, 2, 6, 1, 5, 3, 7], dtype=np.int64)

__all__ = ["FL_ORDER"]
