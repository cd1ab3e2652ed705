"""Numba structural kernels against plain NumPy/Python references (hypothesis)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from lancejit.encoding.v21.repdef_kernels import UNZIP_OK, fullzip_unzip, gather_slices


def ref_unzip(data: bytes, cw, bits_def, fixed, len_bytes, max_visible):
    pos, reps, defs, starts, lens = 0, [], [], [], []
    while pos < len(data):
        word = int.from_bytes(data[pos : pos + cw], "little") if cw else 0
        if pos + cw > len(data):
            return None
        pos += cw
        reps.append(word >> bits_def)
        defs.append(word & ((1 << bits_def) - 1))
        d = defs[-1]
        if d <= max_visible:
            if fixed >= 0:
                if pos + fixed > len(data):
                    return None
                starts.append(pos); lens.append(fixed); pos += fixed
            elif d == 0:
                if pos + len_bytes > len(data):
                    return None
                ln = int.from_bytes(data[pos : pos + len_bytes], "little")
                pos += len_bytes
                if ln > len(data) - pos:
                    return None
                starts.append(pos); lens.append(ln); pos += ln
            else:
                starts.append(pos); lens.append(0)
    return reps, defs, starts, lens


@st.composite
def zipped(draw):
    cw = draw(st.sampled_from([1, 2, 4]))
    bits_def = draw(st.integers(0, min(8 * cw, 6)))
    fixed = draw(st.sampled_from([-1, 0, 1, 4, 8]))
    len_bytes = draw(st.sampled_from([4, 8]))
    max_visible = draw(st.integers(0, 3))
    levels = draw(st.lists(st.tuples(st.integers(0, 3), st.integers(0, (1 << bits_def) - 1), st.binary(max_size=12)), max_size=40))
    out = bytearray()
    for rep, d, payload in levels:
        word = (rep << bits_def) | d
        if word >= 1 << (8 * cw):
            continue
        out += word.to_bytes(cw, "little")
        if d <= max_visible:
            if fixed >= 0:
                out += (payload * 8)[:fixed].ljust(fixed, b"\0")
            elif d == 0:
                out += len(payload).to_bytes(len_bytes, "little") + payload
    if draw(st.booleans()) and out:
        cut = draw(st.integers(0, len(out)))
        out = out[:cut]
    return bytes(out), cw, bits_def, fixed, len_bytes, max_visible


@settings(max_examples=300, deadline=None)
@given(zipped())
def test_fullzip_unzip_matches_reference(case):
    data, cw, bits_def, fixed, len_bytes, max_visible = case
    cap = len(data) + 1
    arr = np.frombuffer(data, dtype=np.uint8)
    o_rep, o_def = np.empty(cap, np.uint16), np.empty(cap, np.uint16)
    o_start, o_len = np.empty(cap, np.int64), np.empty(cap, np.int64)
    nl, nv, err = fullzip_unzip(arr, cw, bits_def, fixed, len_bytes, max_visible, o_rep, o_def, o_start, o_len)
    ref = ref_unzip(data, cw, bits_def, fixed, len_bytes, max_visible)
    if ref is None:
        assert err != UNZIP_OK
        return
    assert err == UNZIP_OK
    reps, defs, starts, lens = ref
    assert o_rep[:nl].tolist() == reps
    assert o_def[:nl].tolist() == defs
    assert o_start[:nv].tolist() == starts
    assert o_len[:nv].tolist() == lens


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=200), st.data())
def test_gather_slices_matches_numpy(src, data):
    arr = np.frombuffer(src, dtype=np.uint8)
    k = data.draw(st.integers(0, 10))
    starts, lens = [], []
    for _ in range(k):
        s = data.draw(st.integers(0, len(src)))
        ln = data.draw(st.integers(0, len(src) - s))
        starts.append(s); lens.append(ln)
    starts_a, lens_a = np.asarray(starts, np.int64), np.asarray(lens, np.int64)
    out = np.empty(int(lens_a.sum()), np.uint8)
    assert gather_slices(arr, starts_a, lens_a, out) == out.size
    expect = np.concatenate([arr[s : s + ln] for s, ln in zip(starts, lens)]) if k else np.empty(0, np.uint8)
    assert np.array_equal(out, expect)
