"""The fragment-index kernel against the NumPy rules it replaces (``fragment_list.apply_trust``
and the checks of ``table/index.py``), on random counts: trusted and untrusted statistics,
deletion files with unknown, zero, huge and valid counts, fragments without data files, ids
in and out of order."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from lancejit.encoding.kernels.frag_index import index_arrays
from lancejit.table.meta.fragment_list import UNKNOWN, apply_trust

MAX = 1 << 32
U64 = (1 << 64) - 1


def reference(ids, physical, deleted, has_del, num_files, trusted):
    """``(too_big, no_files, increasing, unknown, out, starts)`` with NumPy."""
    ids64, phys, dele, has_files = apply_trust(ids.astype(np.int64), physical, num_files > 0, has_del, deleted, trusted)
    big = np.flatnonzero(phys > MAX)
    if len(big):
        return int(big[0]), None, None, None, None, None
    phys = phys.astype(np.int64)
    empty = np.flatnonzero(~has_files)
    no_files = int(empty[0]) if len(empty) else -1
    increasing = bool(len(ids64) < 2 or (ids64[1:] > ids64[:-1]).all())
    unknown = bool((dele == UNKNOWN).any() or ((phys == 0) & has_files).any())
    live = phys - dele
    starts = np.concatenate([[0], np.cumsum(live)]).astype(np.int64)
    return -1, no_files, increasing, unknown, np.stack([ids64, phys, dele, live]), starts


counts = st.one_of(st.integers(0, 50), st.sampled_from([0, MAX, MAX + 1, U64, 1 << 63]))


@settings(max_examples=300, deadline=None)
@given(frags=st.lists(st.tuples(st.one_of(st.integers(0, 20), st.integers(0, U64)), counts, counts,
                                st.booleans(), st.integers(0, 2)), max_size=12),
       trusted=st.booleans(), sort=st.booleans())
def test_index_kernel_matches_numpy(frags, trusted, sort):
    if sort:
        frags = sorted(frags)
    n = len(frags)
    ids = np.array([f[0] for f in frags], dtype=np.uint64)
    physical = np.array([f[1] for f in frags], dtype=np.uint64)
    deleted = np.array([f[2] for f in frags], dtype=np.uint64)
    has_del = np.array([f[3] for f in frags], dtype=np.bool_)
    num_files = np.array([f[4] for f in frags], dtype=np.int64)
    out = np.empty((4, n), dtype=np.int64)
    starts = np.empty(n + 1, dtype=np.int64)
    got = index_arrays(ids, physical, deleted, has_del, num_files, trusted, MAX, out, starts)
    want = reference(ids, physical, deleted, has_del, num_files, trusted)
    assert got[0] == want[0]
    if want[0] >= 0:
        return
    assert tuple(got[1:]) == want[1:4]
    np.testing.assert_array_equal(out[:3], want[4][:3])
    if not want[3]:  # live rows and prefix sums are meaningful only when every count is known
        np.testing.assert_array_equal(out[3], want[4][3])
        np.testing.assert_array_equal(starts, want[5])
