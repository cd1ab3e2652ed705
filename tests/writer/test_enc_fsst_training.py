"""FSST training kernels against plain Python/NumPy versions: the per-code counts of
``compress_count``, the candidate table of ``_make_table`` (``gather_candidates``), sampling."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from lancejit.encoding.kernels.enc_fsst import compress_count
from lancejit.encoding.v21.encode import fsst as F


def _table(symbols: list[bytes], terminator: int = 0) -> F.SymbolTable:
    vals = np.array([int.from_bytes(s, "little") for s in symbols], dtype=np.uint64)
    lens = np.array([len(s) for s in symbols], dtype=np.int64)
    return F.SymbolTable(vals, lens, terminator)


def _py_count(data: bytes, offsets, symbols: list[bytes], pairs: bool):
    """Greedy longest match with training codes (byte b -> b, symbol i -> 256 + i)."""
    code_of = {s: i for i, s in enumerate(symbols)}
    c1 = np.zeros(512, np.int64)
    c2 = np.zeros((512, 512), np.int64)
    gain = 0
    for a, b in zip(offsets[:-1], offsets[1:]):
        i, prev = a, -1
        while i < b:
            code, ln = data[i], 1
            for k in range(min(8, b - i), 0, -1):
                c = code_of.get(data[i : i + k])
                if c is not None:
                    code, ln = 256 + c, k
                    break
            gain += ln - 1 if code >= 256 else -1
            if prev >= 0:
                c1[prev] += 1
                if prev >= 256 and len(symbols[prev - 256]) != 1:
                    c1[data[i]] += 1
                if pairs:
                    c2[prev, code] += 1
                    if ln > 1:
                        c2[prev, data[i]] += 1
            prev = code
            i += ln
        if prev >= 0:
            c1[prev] += 1
    return gain, c1, c2


_values = st.lists(st.binary(min_size=0, max_size=30).map(lambda b: bytes(x % 6 + 97 for x in b)),
                   min_size=1, max_size=40)
_symbols = st.lists(st.text(alphabet="abcdef", min_size=1, max_size=8).map(str.encode),
                    min_size=0, max_size=60, unique=True)


@settings(max_examples=40, deadline=None)
@given(_values, _symbols, st.booleans())
def test_compress_count_matches_python(values, symbols, pairs):
    data = b"".join(values)
    offsets = np.concatenate([[0], np.cumsum([len(v) for v in values])]).astype(np.int64)
    t = _table(symbols)
    arr = np.frombuffer(data, dtype=np.uint8) if data else np.zeros(0, np.uint8)
    c1 = np.zeros(512, np.int64)
    c2 = np.zeros((512, 512), np.int64)
    gain = compress_count(arr, offsets, *t.lookups(), c1, c2, pairs)
    eg, e1, e2 = _py_count(data, offsets.tolist(), symbols, pairs)
    assert gain == eg
    assert np.array_equal(c1, e1)
    assert np.array_equal(c2, e2)


def _py_make_table(st_: F.SymbolTable, count1, count2, frac, n_sym, terminator):
    """The candidate selection written with a dict (insertion order breaks ties)."""
    count1 = count1.copy()
    count1[terminator] = 65535
    min_count = (5 * frac) // 128

    def sym(code):
        return (code, 1) if code < 256 else (int(st_.vals[code - 256]), int(st_.lens[code - 256]))

    cand: dict = {}
    ncodes = 256 + n_sym
    for p1 in range(ncodes):
        if count1[p1] == 0:
            continue
        v1, l1 = sym(p1)
        boosted = int(count1[p1]) * (8 if l1 == 1 else 1)
        if boosted >= min_count:
            cand[(v1, l1)] = cand.get((v1, l1), 0) + boosted * l1
        if (v1 & 0xFF) == terminator or frac >= 128 or l1 == 8:
            continue
        for p2 in range(ncodes):
            if count2[p1, p2] < max(min_count, 1):
                continue
            v2, l2 = sym(p2)
            if (v2 & 0xFF) == terminator:
                continue
            l3 = min(l1 + l2, 8)
            v3 = (v1 | (v2 << (8 * l1))) & ((1 << (8 * l3)) - 1)
            cand[(v3, l3)] = cand.get((v3, l3), 0) + int(count2[p1, p2]) * l3
    items = sorted(cand.items(), key=lambda kv: (-kv[1], kv[0][0]))[:255]
    items.sort(key=lambda kv: (kv[0][1] == 1, kv[0][1]))
    return [k for k, _ in items]


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 2**32 - 1), _symbols, st.sampled_from([8, 38, 68, 128]), st.integers(0, 255))
def test_make_table_matches_python(seed, symbols, frac, terminator):
    rng = np.random.default_rng(seed)
    t = _table(symbols, terminator)
    n = 256 + len(symbols)
    c1 = np.zeros(512, np.int64)
    c2 = np.zeros((512, 512), np.int64)
    c1[:n] = rng.integers(0, 12, n) * (rng.random(n) < 0.5)
    c2[:n, :n] = rng.integers(0, 6, (n, n)) * (rng.random((n, n)) < 0.02)
    exp = _py_make_table(t, c1, c2, frac, len(symbols), terminator)
    got = F._make_table(t, c1.copy(), c2, frac, len(symbols), terminator)
    assert list(zip(got.vals.tolist(), got.lens.tolist())) == exp


@settings(max_examples=20, deadline=None)
@given(st.lists(st.integers(0, 3000), min_size=1, max_size=300))
def test_sample_takes_whole_values(lens):
    offsets = np.concatenate([[0], np.cumsum(lens)]).astype(np.int64)
    data = (np.arange(offsets[-1]) % 251).astype(np.uint8)
    s, so = F._sample(data, offsets)
    if data.size <= F.SAMPLE_TARGET:
        assert s is data
        return
    assert so[0] == 0 and so[-1] == s.size >= F.SAMPLE_TARGET
    assert so[-2] < F.SAMPLE_TARGET  # stops at the first value reaching the target
    whole = {data[a:b].tobytes() for a, b in zip(offsets[:-1], offsets[1:])}
    for a, b in zip(so[:-1], so[1:]):
        assert s[a:b].tobytes() in whole
    s2, so2 = F._sample(data, offsets)  # reproducible
    assert np.array_equal(s, s2) and np.array_equal(so, so2)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 6), st.integers(1, 3), st.integers(0, 50)), min_size=0, max_size=200))
def test_merge_candidates_matches_numpy(cands):
    from lancejit.encoding.kernels.enc_fsst import merge_candidates

    k = len(cands)
    cv = np.array([c[0] for c in cands], dtype=np.uint64)
    cl = np.array([c[1] for c in cands], dtype=np.int64)
    cg = np.array([c[2] for c in cands], dtype=np.int64)
    ov, ol, og = np.empty(k, np.uint64), np.empty(k, np.int64), np.empty(k, np.int64)
    m = merge_candidates(cv, cl, cg, k, ov, ol, og)
    # NumPy: unique (value, length) pairs in first-occurrence order, gains summed
    keys = np.stack([cv.astype(np.int64), cl], axis=1) if k else np.zeros((0, 2), np.int64)
    uniq, first, inverse = np.unique(keys, axis=0, return_index=True, return_inverse=True)
    sums = np.bincount(inverse.reshape(-1), weights=cg, minlength=len(uniq)).astype(np.int64)
    order = np.argsort(first, kind="stable")
    assert m == len(uniq)
    assert ov[:m].astype(np.int64).tolist() == uniq[order, 0].tolist()
    assert ol[:m].tolist() == uniq[order, 1].tolist()
    assert og[:m].tolist() == sums[order].tolist()
