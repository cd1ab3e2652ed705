"""The hash join (``encoding/kernels/hash_join.py``) against a Python dictionary join."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from lancejit.encoding.kernels import hash_join


def _py_join(bk, bv, pk, pv):
    rows: dict[int, list[int]] = {}
    for i, (k, v) in enumerate(zip(bk, bv)):
        if v:
            rows.setdefault(k, []).append(i)
    pairs = [(b, t) for t, (k, v) in enumerate(zip(pk, pv)) if v for b in rows.get(k, [])]
    return [b for b, _ in pairs], [t for _, t in pairs]


keys = st.lists(st.integers(-2**63, 2**63 - 1) | st.integers(-5, 5), max_size=300)


@settings(max_examples=80, deadline=None)
@given(keys, keys, st.data())
def test_hash_join_matches_python(build_keys, probe_keys, data):
    bv = data.draw(st.lists(st.booleans(), min_size=len(build_keys), max_size=len(build_keys)))
    pv = data.draw(st.lists(st.booleans(), min_size=len(probe_keys), max_size=len(probe_keys)))
    got_b, got_p = hash_join.join(np.array(build_keys, np.int64), np.array(bv, bool),
                                  np.array(probe_keys, np.int64), np.array(pv, bool))
    eb, ep = _py_join(build_keys, bv, probe_keys, pv)
    assert got_b.tolist() == eb and got_p.tolist() == ep


def test_hash_join_many_keys_unique_and_repeated():
    rng = np.random.default_rng(1)
    for build_keys in (rng.permutation(50_000) * 40, rng.integers(0, 3_000, 20_000)):
        probe_keys = rng.integers(0, 2_000_000, 200_000)
        bv, pv = np.ones(len(build_keys), bool), rng.random(len(probe_keys)) < 0.9
        got_b, got_p = hash_join.join(build_keys.astype(np.int64), bv, probe_keys.astype(np.int64), pv)
        eb, ep = _py_join(build_keys.tolist(), bv.tolist(), probe_keys.tolist(), pv.tolist())
        assert got_b.tolist() == eb and got_p.tolist() == ep
