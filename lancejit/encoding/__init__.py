"""Layer 1: page decoders/encoders and their Numba kernels.

Sees I/O only through :class:`lancejit.core.ranges.RangeReader`.
"""
