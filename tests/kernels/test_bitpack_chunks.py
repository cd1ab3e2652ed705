"""Batched chunk unpacking (``unpack_inline_chunks`` / ``unpack_ool_chunks``) vs the NumPy
reference of ``test_bitpack``: full chunks (unpacked straight into ``out``), partial chunks,
widths 0 and T, all four word widths; and the kernels' Python source (run by tier 0) vs Numba."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from lancejit.encoding.kernels.bitpack import packed_words_per_block, unpack_blocks
from lancejit.encoding.v21.repdef_kernels import unpack_inline_chunks, unpack_ool_chunks
from tests.kernels.test_bitpack import DTYPES, reference_unpack

_WIDTH = st.one_of(st.just(0), st.just(-1), st.integers(0, 64))  # -1: width == T
_COUNT = st.one_of(st.just(1024), st.integers(1, 1024))


def _width(w: int, t: int) -> int:
    return t if w < 0 else min(w, t)


def _inline_case(data):
    """Random words laid out as inline chunks: (words, starts, ends, counts, expected)."""
    dt = np.dtype(DTYPES[data.draw(st.integers(0, 3), label="dtype")])
    t = dt.itemsize * 8
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1), label="seed"))
    parts, starts, ends, counts, expect = [], [], [], [], []
    pos = 0
    for _ in range(data.draw(st.integers(1, 5), label="chunks")):
        w = _width(data.draw(_WIDTH, label="width"), t)
        c = data.draw(_COUNT, label="count")
        packed = rng.integers(0, np.iinfo(dt).max, packed_words_per_block(t, w), dtype=dt, endpoint=True)
        pad = int(rng.integers(0, 3))  # chunks may be followed by padding words
        parts += [np.array([w], dt), packed, np.zeros(pad, dt)]
        starts.append(pos)
        ends.append(pos + 1 + packed.size + pad)
        pos = ends[-1]
        counts.append(c)
        expect.append(reference_unpack(packed, w, 1)[:c])
    return (np.concatenate(parts), np.asarray(starts, np.int64), np.asarray(ends, np.int64),
            np.asarray(counts, np.int64), np.concatenate(expect))


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_inline_chunks_match_reference(data):
    words, starts, ends, counts, expect = _inline_case(data)
    out = np.full(expect.size + 3, 7, words.dtype)
    assert unpack_inline_chunks(words, starts, ends, counts, out, np.empty(1024, words.dtype)) == 0
    np.testing.assert_array_equal(out[: expect.size], expect)
    assert (out[expect.size:] == 7).all()  # nothing written past the values


@settings(max_examples=60, deadline=None)
@given(dti=st.integers(0, 3), w=_WIDTH, n=st.integers(1, 3500), raw=st.booleans(), seed=st.integers(0, 2**32 - 1))
def test_ool_chunks_match_reference(dti, w, n, raw, seed):
    """Whole blocks, then a tail packed as a padded block or stored raw."""
    dt = np.dtype(DTYPES[dti])
    t = dt.itemsize * 8
    w = _width(w, t)
    rng = np.random.default_rng(seed)
    whole, tail = divmod(n, 1024)
    wpb = packed_words_per_block(t, w)
    packed = rng.integers(0, np.iinfo(dt).max, whole * wpb, dtype=dt, endpoint=True)
    expect = [reference_unpack(packed, w, whole)] if whole else []
    if tail:
        if raw and tail != wpb:  # the kernel tells a raw tail by the buffer length
            extra = rng.integers(0, np.iinfo(dt).max, tail, dtype=dt, endpoint=True)
            expect.append(extra)
        else:
            extra = rng.integers(0, np.iinfo(dt).max, wpb, dtype=dt, endpoint=True)
            expect.append(reference_unpack(extra, w, 1)[:tail])
        packed = np.concatenate([packed, extra])
    expect = np.concatenate(expect)
    words = np.concatenate([np.zeros(2, dt), packed])  # the chunk starts at word 2
    out = np.full(n + 2, 7, dt)
    err = unpack_ool_chunks(words, np.asarray([2]), np.asarray([words.size]), np.asarray([n]), w, out,
                            np.empty(1024, dt))
    assert err == 0
    np.testing.assert_array_equal(out[:n], expect)
    assert (out[n:] == 7).all()


@settings(max_examples=12, deadline=None)
@given(st.data())
def test_python_source_equals_compiled(data):
    """Tier 0 may run the kernels' Python source with NumPy scalars: same results."""
    words, starts, ends, counts, expect = _inline_case(data)
    out = np.empty(expect.size, words.dtype)
    assert unpack_inline_chunks.__wrapped__(words, starts, ends, counts, out, np.empty(1024, words.dtype)) == 0
    np.testing.assert_array_equal(out, expect)
    w = int(words[0])
    one = np.empty(1024, words.dtype)
    unpack_blocks.__wrapped__(words[1 : 1 + packed_words_per_block(words.itemsize * 8, w)], w, 1, one)
    np.testing.assert_array_equal(one[: counts[0]], expect[: counts[0]])
