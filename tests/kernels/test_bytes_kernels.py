"""FSST, RLE, byte-stream-split, gather and packed-row kernels vs plain NumPy/Python references."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from fsst_ref import ref_fsst
from fsst_ref import symbol_table as _table
from lancejit.encoding.kernels import readonly as ro
from lancejit.encoding.kernels.bss import bss_join, bss_split
from lancejit.encoding.kernels.fsst import fsst_decode, fsst_decoded_lengths
from lancejit.encoding.kernels.gather import copy_slices, offsets_from_lengths
from lancejit.encoding.kernels.rle import rle_expand
from lancejit.encoding.kernels.varpacked import scan_rows


# -- FSST ----------------------------------------------------------------------------------


@st.composite
def fsst_case(draw):
    nsym = draw(st.integers(0, 254))
    symbols = [draw(st.binary(min_size=1, max_size=8)) for _ in range(nsym)]
    values = draw(st.lists(st.binary(max_size=20), max_size=20))
    return symbols, values


@settings(max_examples=80, deadline=None)
@given(fsst_case())
def test_fsst_kernels_match_reference(case):
    symbols, values = case
    sym_bytes, sym_lens = _table(symbols)
    codes = b"".join(values)
    offsets = np.zeros(len(values) + 1, np.int64)
    np.cumsum([len(v) for v in values], out=offsets[1:])
    data = np.frombuffer(codes, np.uint8) if codes else np.zeros(0, np.uint8)
    lengths = np.empty(len(values), np.int64)
    data, offsets, sym_bytes, sym_lens = ro(data), ro(offsets), ro(sym_bytes), ro(sym_lens)
    bad = fsst_decoded_lengths(data, offsets, len(values), sym_lens, len(symbols), lengths)
    expected = [ref_fsst(v, symbols) for v in values]
    first_bad = next((i for i, e in enumerate(expected) if e is None), -1)
    assert bad == first_bad
    if bad >= 0:
        return
    out_offsets = np.zeros(len(values) + 1, np.int64)
    np.cumsum(lengths, out=out_offsets[1:])
    out = np.empty(int(out_offsets[-1]), np.uint8)
    fsst_decode(data, offsets, len(values), sym_bytes, sym_lens, ro(out_offsets), out)
    got = [out[out_offsets[i] : out_offsets[i + 1]].tobytes() for i in range(len(values))]
    assert got == expected


# -- RLE -----------------------------------------------------------------------------------


@settings(max_examples=80, deadline=None)
@given(
    width=st.sampled_from([1, 2, 4, 8, 16]),
    runs=st.lists(st.integers(0, 255), max_size=40),
    cut=st.floats(0, 1),
    seed=st.integers(0, 2**32 - 1),
)
def test_rle_expand_matches_numpy_repeat(width, runs, cut, seed):
    rng = np.random.default_rng(seed)
    values = rng.integers(0, 256, len(runs) * width, dtype=np.uint8)
    lengths = np.array(runs, dtype=np.uint8)
    total = int(lengths.sum(dtype=np.int64))
    n = int(total * cut)
    expected = np.repeat(values.reshape(-1, width), lengths.astype(np.int64), axis=0).reshape(-1)[: n * width]
    out = np.empty(n * width, np.uint8)
    written = rle_expand(ro(values), width, ro(lengths), len(runs), n, out)
    assert written == n
    np.testing.assert_array_equal(out, expected)


# -- BSS -----------------------------------------------------------------------------------


@settings(max_examples=50, deadline=None)
@given(n=st.integers(0, 3000), width=st.sampled_from([1, 2, 4, 8, 16]), seed=st.integers(0, 2**32 - 1))
def test_bss_matches_transpose(n, width, seed):
    rng = np.random.default_rng(seed)
    plain = rng.integers(0, 256, n * width, dtype=np.uint8)
    split_ref = plain.reshape(n, width).T.reshape(-1)
    split = np.empty_like(plain)
    bss_split(plain, n, width, split)
    np.testing.assert_array_equal(split, split_ref)
    joined = np.empty_like(plain)
    bss_join(ro(split_ref), n, width, joined)
    np.testing.assert_array_equal(joined, plain)


# -- gather --------------------------------------------------------------------------------


@settings(max_examples=50, deadline=None)
@given(
    items=st.lists(st.binary(max_size=12), min_size=1, max_size=20),
    picks=st.lists(st.integers(0, 10**6), max_size=50),
)
def test_copy_slices_is_dictionary_take(items, picks):
    idx = np.array([p % len(items) for p in picks], np.int64)
    offs = np.zeros(len(items) + 1, np.int64)
    np.cumsum([len(i) for i in items], out=offs[1:])
    data = np.frombuffer(b"".join(items) or b"\0", np.uint8)
    starts = offs[idx]
    lens = offs[idx + 1] - starts
    out_offsets = np.empty(len(idx) + 1, np.int64)
    offsets_from_lengths(lens, len(idx), out_offsets)
    np.testing.assert_array_equal(out_offsets[1:], np.cumsum(lens))
    out = np.empty(int(out_offsets[-1]), np.uint8)
    copy_slices(ro(data), ro(starts), ro(lens), len(idx), ro(out_offsets), out)
    assert out.tobytes() == b"".join(items[i] for i in idx)


# -- variable packed rows --------------------------------------------------------------------


@settings(max_examples=50, deadline=None)
@given(
    kinds=st.lists(st.sampled_from([(0, 1), (0, 4), (0, 8), (1, 0), (2, 0)]), min_size=1, max_size=4),
    nrows=st.integers(0, 10),
    seed=st.integers(0, 2**32 - 1),
    corrupt=st.booleans(),
)
def test_scan_rows_matches_python_parser(kinds, nrows, seed, corrupt):
    rng = np.random.default_rng(seed)
    rows, expect = [], []
    for _ in range(nrows):
        row, fields, pos = bytearray(), [], 0
        for kind, w in kinds:
            if kind == 0:
                payload = rng.integers(0, 256, w, dtype=np.uint8).tobytes()
                row += payload
                fields.append((pos, w))
                pos += w
            else:
                nb = 4 if kind == 1 else 8
                payload = rng.integers(0, 256, int(rng.integers(0, 6)), dtype=np.uint8).tobytes()
                row += len(payload).to_bytes(nb, "little") + payload
                fields.append((pos + nb, len(payload)))
                pos += nb + len(payload)
        rows.append(bytes(row))
        expect.append(fields)
    if corrupt and nrows:
        rows[-1] = rows[-1][:-1] if rows[-1] else b"\x01"
    offs = np.zeros(nrows + 1, np.int64)
    np.cumsum([len(r) for r in rows], out=offs[1:])
    data = np.frombuffer(b"".join(rows) or b"\0", np.uint8)
    k = np.array([a for a, _ in kinds], np.int64)
    w = np.array([b for _, b in kinds], np.int64)
    starts = np.zeros((nrows, len(kinds)), np.int64)
    lens = np.zeros((nrows, len(kinds)), np.int64)
    bad = scan_rows(ro(data), ro(offs), nrows, ro(k), ro(w), starts, lens)
    if corrupt and nrows:
        assert bad == nrows - 1
        return
    assert bad == -1
    for r in range(nrows):
        for f, (s, n) in enumerate(expect[r]):
            assert (starts[r, f] - offs[r], lens[r, f]) == (s, n)
