"""FastLanes bit-packing kernels vs a plain NumPy/Python reference."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from lancejit.encoding.kernels import readonly
from lancejit.encoding.kernels.bitpack import FL_ORDER, pack_blocks, packed_words_per_block, unpack_blocks

DTYPES = [np.uint8, np.uint16, np.uint32, np.uint64]


def reference_unpack(packed: np.ndarray, width: int, num_blocks: int) -> np.ndarray:
    """Spec-level reference: bit streams per lane, read bit by bit with NumPy."""
    dt = packed.dtype
    t = dt.itemsize * 8
    lanes = 1024 // t
    out = np.zeros(num_blocks * 1024, dtype=np.uint64)
    if width == 0:
        return out.astype(dt)
    # bits[word, bit] little-endian bit order within each word
    words = packed[: num_blocks * lanes * width].astype(np.uint64)
    bitpos = np.arange(t, dtype=np.uint64)
    bits = ((words[:, None] >> bitpos[None, :]) & np.uint64(1)).astype(np.uint64)
    bits = bits.reshape(num_blocks, width, lanes, t)  # [block, k, lane, bit]
    # lane stream: for lane l, concat word k bits 0..t-1 for k in 0..width-1
    stream = bits.transpose(0, 2, 1, 3).reshape(num_blocks, lanes, width * t)
    weights = np.uint64(1) << np.arange(width, dtype=np.uint64)
    for row in range(t):
        vals = (stream[:, :, row * width : (row + 1) * width] * weights).sum(axis=2, dtype=np.uint64)
        idx = FL_ORDER[row // 8] * 16 + (row % 8) * 128 + np.arange(lanes)
        for b in range(num_blocks):
            out[b * 1024 + idx] = vals[b]
    return out.astype(dt)


def _values(draw_seed: int, dt, width: int, nblocks: int) -> np.ndarray:
    rng = np.random.default_rng(draw_seed)
    t = np.dtype(dt).itemsize * 8
    raw = rng.integers(0, np.iinfo(np.uint64).max, nblocks * 1024, dtype=np.uint64, endpoint=True)
    if width < 64:
        raw &= np.uint64((1 << width) - 1)
    return raw.astype(dt) if t == 64 else (raw & np.uint64((1 << t) - 1)).astype(dt)


@settings(max_examples=60, deadline=None)
@given(
    dti=st.integers(0, 3),
    frac=st.floats(0, 1),
    nblocks=st.integers(1, 3),
    seed=st.integers(0, 2**32 - 1),
)
def test_pack_unpack_roundtrip_and_reference(dti, frac, nblocks, seed):
    dt = np.dtype(DTYPES[dti])
    t = dt.itemsize * 8
    width = int(round(frac * t))
    vals = _values(seed, dt, width, nblocks)
    packed = np.empty(nblocks * packed_words_per_block(t, width), dtype=dt)
    pack_blocks(vals, width, nblocks, packed)
    np.testing.assert_array_equal(reference_unpack(packed, width, nblocks), vals)
    out = np.empty(nblocks * 1024, dtype=dt)
    unpack_blocks(readonly(packed), width, nblocks, out)
    np.testing.assert_array_equal(out, vals)


@settings(max_examples=30, deadline=None)
@given(dti=st.integers(0, 3), frac=st.floats(0, 1), seed=st.integers(0, 2**32 - 1))
def test_unpack_matches_reference_on_random_words(dti, frac, seed):
    """Arbitrary packed words (not produced by our packer) decode like the reference."""
    dt = np.dtype(DTYPES[dti])
    t = dt.itemsize * 8
    width = int(round(frac * t))
    rng = np.random.default_rng(seed)
    nwords = packed_words_per_block(t, width)
    packed = rng.integers(0, np.iinfo(dt).max, nwords, dtype=dt, endpoint=True)
    out = np.empty(1024, dtype=dt)
    unpack_blocks(readonly(packed), width, 1, out)
    np.testing.assert_array_equal(out, reference_unpack(packed, width, 1))


def test_pack_drops_high_bits():
    vals = np.full(1024, 0xFF, dtype=np.uint8)
    packed = np.empty(packed_words_per_block(8, 3), dtype=np.uint8)
    pack_blocks(vals, 3, 1, packed)
    out = np.empty(1024, dtype=np.uint8)
    unpack_blocks(readonly(packed), 3, 1, out)
    assert (out == 7).all()
