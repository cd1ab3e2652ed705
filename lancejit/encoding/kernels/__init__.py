"""Every Numba kernel of lancejit: ``@njit(cache=True, nogil=True)`` functions that fill
preallocated output arrays.  Callers validate all lengths/offsets before calling; kernels do not
bounds-check.  One module per concept (bitpack, fsst, rle, bss, gather)."""
