"""NumPy versions of kernels for tier 0 (lancejit/encoding/kernels/tier0_numpy.py): same outputs
and return values as the compiled kernels, on random inputs of every word size and bit width,
bad slices included."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from lancejit.encoding.kernels import readonly, tier0_numpy
from lancejit.encoding.kernels.bitpack import unpack_blocks
from lancejit.encoding.kernels.gather import copy_slices
from lancejit.encoding.v21.repdef_kernels import gather_slices

DTYPES = [np.uint8, np.uint16, np.uint32, np.uint64]


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 3), st.integers(0, 64), st.integers(1, 3), st.integers(0, 2**32 - 1))
def test_unpack_blocks(dti, width, nblocks, seed):
    dt = DTYPES[dti]
    t = np.dtype(dt).itemsize * 8
    width = width % (t + 1)
    rng = np.random.default_rng(seed)
    packed = readonly(rng.integers(0, np.iinfo(dt).max, nblocks * (1024 // t) * max(width, 1) + 3, dtype=dt,
                                   endpoint=True))
    want = np.full(nblocks * 1024 + 5, 7, dtype=dt)
    got = want.copy()
    unpack_blocks(packed, width, nblocks, want)
    assert tier0_numpy.unpack_blocks(packed, width, nblocks, got) is None
    np.testing.assert_array_equal(got, want)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(-3, 60), st.integers(-2, 12)), max_size=12), st.integers(0, 80),
       st.integers(0, 2**32 - 1))
def test_gather_and_copy_slices(slices, out_len, seed):
    rng = np.random.default_rng(seed)
    src = readonly(rng.integers(0, 256, 64, dtype=np.uint8))
    starts = np.array([s for s, _ in slices], dtype=np.int64)
    lens = np.array([n for _, n in slices], dtype=np.int64)
    want = np.zeros(out_len, dtype=np.uint8)
    got = want.copy()
    assert tier0_numpy.gather_slices(src, starts, lens, got) == gather_slices(src, starts, lens, want)
    np.testing.assert_array_equal(got, want)
    ok = (starts >= 0) & (lens >= 0) & (starts + lens <= src.shape[0])
    s, n = starts[ok], lens[ok]
    offs = (np.cumsum(n) - n).astype(np.int64)
    want = np.zeros(int(n.sum()) + 2, dtype=np.uint8)
    got = want.copy()
    copy_slices(src, s, n, len(s), offs, want)
    tier0_numpy.copy_slices(src, s, n, len(s), offs, got)
    np.testing.assert_array_equal(got, want)


def test_fastlanes_order_is_the_kernels():
    from lancejit.encoding.kernels.bitpack import FL_ORDER

    assert FL_ORDER.tolist() == list(tier0_numpy.FL_ORDER)


def test_copy_range():
    src = np.arange(50, dtype=np.float64)
    a = np.zeros(20)
    b = np.zeros(20)
    a[3:10] = src[10:17]
    tier0_numpy.copy_range(b, 3, src, 10, 7)
    tier0_numpy.copy_range(b, 0, src, 0, 0)
    np.testing.assert_array_equal(a, b)
    assert "lancejit.encoding.kernels.scan.copy_range" in tier0_numpy.VERSIONS
