"""``read_gathered`` (2.0/legacy takes): merged reads cut apart locally equal the plain
per-range reads, with far fewer ranges asked for."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from lancejit.encoding.v20.rowranges import GATHER_GAP, GATHER_MIN, read_gathered

DATA = np.random.default_rng(5).integers(0, 256, 300_000, dtype=np.uint8).tobytes()


def drive(gen):
    asked = []
    try:
        req = next(gen)
        while True:
            asked.append(list(req))
            req = gen.send([memoryview(DATA)[s:e] for s, e in req])
    except StopIteration as stop:
        return stop.value, asked


@settings(max_examples=80, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(0, 400), span=st.integers(1, 20_000), sort=st.booleans())
def test_gathered_equals_plain_concatenation(seed, n, span, sort):
    rng = np.random.default_rng(seed)
    starts = rng.integers(0, len(DATA) - span, n)
    if sort:
        starts = np.sort(starts)
    ends = starts + rng.integers(0, span, n)
    out, asked = drive(read_gathered(starts, ends))
    want = b"".join(DATA[s:e] for s, e in zip(starts.tolist(), ends.tolist()))
    assert out.tobytes() == want
    if n == 0:
        assert asked == []
    else:
        assert len(asked) == 1
        if sort and n >= GATHER_MIN:
            runs = asked[0]
            assert len(runs) <= n
            # merged runs are disjoint and further apart than the gap
            assert all(b[0] - a[1] > GATHER_GAP for a, b in zip(runs, runs[1:]))
