"""Writer-side Numba kernels against plain NumPy/Python versions (property tests)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from lancejit.encoding.kernels.enc_fsst import compress_bulk, padded_words
from lancejit.encoding.v21.encode.fsst import SymbolTable
from lancejit.encoding.kernels.enc_rle import count_runs, rle_encode_chunks


def _np_runs(words: np.ndarray) -> int:
    if words.size == 0:
        return 0
    return int((words[1:] != words[:-1]).sum()) + 1


def _np_rle(words: np.ndarray, start: int, end: int) -> tuple[list[int], list[int]]:
    vals, lens = [], []
    i = start
    while i < end:
        j = i
        while j < end and words[j] == words[i] and j - i < 255:
            j += 1
        vals.append(int(words[i]))
        lens.append(j - i)
        i = j
    return vals, lens


words_st = st.sampled_from([np.uint8, np.uint16, np.uint32, np.uint64]).flatmap(
    lambda dt: st.lists(st.integers(0, 3), min_size=0, max_size=3000).map(
        lambda xs: np.repeat(np.array(xs, dtype=dt), 7)[: len(xs) * 3]))


@settings(max_examples=60, deadline=None)
@given(words_st, st.sampled_from([64, 256, 4096]), st.sampled_from([40, 300, 8186]))
def test_rle_encode_chunks_matches_numpy(words, max_values, max_bytes):
    n = words.shape[0]
    cap = max(n, 1)
    ov, ol = np.empty(cap, words.dtype), np.empty(cap, np.uint8)
    cv, cr = np.empty(cap, np.int64), np.empty(cap, np.int64)
    nch = rle_encode_chunks(words, max_values, max_bytes, ov, ol, cv, cr)
    assert int(cv[:nch].sum()) == n
    pos = r = 0
    item = words.dtype.itemsize
    for c in range(nch):
        m = int(cv[c])
        if c < nch - 1:
            assert m & (m - 1) == 0 and m <= max_values  # power of two
        vals, lens = _np_rle(words, pos, pos + m)
        assert int(cr[c]) == len(vals)
        assert ov[r : r + len(vals)].tolist() == vals
        assert ol[r : r + len(vals)].tolist() == lens
        assert m == 1 or len(vals) * (item + 1) <= max_bytes
        pos += m
        r += len(vals)
    assert count_runs(words) == _np_runs(words)


def _py_fsst(data: bytes, offsets, symbols: list[bytes]) -> tuple[bytes, list[int]]:
    """Greedy longest match, escapes as (255, byte)."""
    code_of = {s: i for i, s in enumerate(symbols)}
    out = bytearray()
    outo = [0]
    for a, b in zip(offsets[:-1], offsets[1:]):
        i = a
        while i < b:
            for ln in range(min(8, b - i), 0, -1):
                c = code_of.get(data[i : i + ln])
                if c is not None:
                    out.append(c)
                    i += ln
                    break
            else:
                out += bytes([255, data[i]])
                i += 1
        outo.append(len(out))
    return bytes(out), outo


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.text(alphabet="abcde", min_size=0, max_size=30).map(str.encode), min_size=1, max_size=40),
    st.lists(st.text(alphabet="abcd", min_size=1, max_size=8).map(str.encode), min_size=0, max_size=60, unique=True),
)
@example([b"aaaaaaaaaaaaaaaaaaa", b"abcabcabcab", b"ab"], [b"aaaaaaaa", b"aaa", b"abcabcab", b"abcab", b"abc", b"ab", b"a"])
@example([b"str-1-12", b"str-12-345", b"str-999-1000000", b"st"],
         [b"str-1", b"str-12", b"str-123", b"str-1234", b"str-9", b"str-99", b"str-999-", b"str", b"-1"])
def test_fsst_compress_bulk_matches_python(values, symbols):
    data = b"".join(values)
    offsets = np.concatenate([[0], np.cumsum([len(v) for v in values])]).astype(np.int64)
    vals = np.array([int.from_bytes(s, "little") for s in symbols], dtype=np.uint64)
    lens = np.array([len(s) for s in symbols], dtype=np.int64)
    table = SymbolTable(vals, lens, 0)
    arr = np.frombuffer(data, dtype=np.uint8) if data else np.zeros(0, np.uint8)
    out = np.empty(2 * len(data) + 8, np.uint8)
    outo = np.empty(len(offsets), np.int64)
    n = compress_bulk(padded_words(arr), offsets, *table.bulk_lookups(), out, outo)
    exp, expo = _py_fsst(data, offsets.tolist(), symbols)
    assert out[:n].tobytes() == exp
    assert outo.tolist() == expo


# --------------------------------------------------------------------------- HyperLogLog

from lancejit.encoding.kernels.enc_hll import estimate, hll_bytes, hll_fixed  # noqa: E402

M64 = (1 << 64) - 1


def _py_fmix(k: int) -> int:
    k ^= k >> 33
    k = (k * 0xFF51AFD7ED558CCD) & M64
    k ^= k >> 33
    k = (k * 0xC4CEB9FE1A85EC53) & M64
    k ^= k >> 33
    return k


def _py_update(regs: np.ndarray, h: int, p: int) -> None:
    idx = h >> (64 - p)
    w = (h << p) & M64
    rank = 1
    while rank < 64 - p + 1 and not (w >> 63):
        w = (w << 1) & M64
        rank += 1
    regs[idx] = max(regs[idx], rank)


def _np_fmix(k: np.ndarray) -> np.ndarray:
    k = k.astype(np.uint64)
    k ^= k >> np.uint64(33)
    k *= np.uint64(0xFF51AFD7ED558CCD)
    k ^= k >> np.uint64(33)
    k *= np.uint64(0xC4CEB9FE1A85EC53)
    k ^= k >> np.uint64(33)
    return k


def _np_hll_fixed(words: np.ndarray, p: int) -> np.ndarray:
    h = _np_fmix(words)
    idx = (h >> np.uint64(64 - p)).astype(np.int64)
    w = h << np.uint64(p)
    rank = np.ones(h.shape[0], dtype=np.int64)
    for _ in range(64 - p):
        top = (w >> np.uint64(63)) == 0
        step = top & (rank < 64 - p + 1)
        if not step.any():
            break
        rank[step] += 1
        w = np.where(step, w << np.uint64(1), w)
    regs = np.zeros(1 << p, dtype=np.uint8)
    np.maximum.at(regs, idx, rank.astype(np.uint8))
    return regs


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(0, (1 << 64) - 1), min_size=0, max_size=3000), st.sampled_from([4, 10, 14]))
def test_hll_fixed_matches_numpy(values, p):
    words = np.array(values, dtype=np.uint64)
    regs = np.zeros(1 << p, dtype=np.uint8)
    hll_fixed(words, p, regs)
    assert np.array_equal(regs, _np_hll_fixed(words, p))


@settings(max_examples=30, deadline=None)
@given(st.lists(st.binary(max_size=30), min_size=0, max_size=200), st.sampled_from([4, 12]))
def test_hll_bytes_matches_python(values, p):
    data = np.frombuffer(b"".join(values), dtype=np.uint8) if values and any(values) else np.zeros(0, np.uint8)
    offsets = np.concatenate([[0], np.cumsum([len(v) for v in values])]).astype(np.int64)
    regs = np.zeros(1 << p, dtype=np.uint8)
    hll_bytes(data, offsets, p, regs)
    exp = np.zeros(1 << p, dtype=np.uint8)
    for v in values:
        h = 0xCBF29CE484222325
        for j in range(0, len(v), 8):
            h = ((h ^ int.from_bytes(v[j : j + 8], "little")) * 0x100000001B3) & M64
            h ^= h >> 29
        h ^= len(v)
        _py_update(exp, _py_fmix(h), p)
    assert np.array_equal(regs, exp)


@pytest.mark.parametrize("card", [1, 50, 3000, 60000])
def test_hll_estimate_close_to_exact(card):
    rng = np.random.default_rng(card)
    words = rng.integers(0, card, 200_000).astype(np.uint64) * np.uint64(2654435761)
    regs = np.zeros(1 << 14, dtype=np.uint8)
    hll_fixed(words, 14, regs)
    exact = len(np.unique(words))
    assert abs(estimate(regs) - exact) <= max(2, 0.03 * exact)


# --------------------------------------------------------------------------- gather

from lancejit.core.errors import InvalidInputError  # noqa: E402
from lancejit.encoding.kernels.enc_gather import gather_var_values  # noqa: E402


@settings(max_examples=40, deadline=None)
@given(st.lists(st.binary(max_size=20), min_size=1, max_size=60), st.data())
def test_gather_var_matches_numpy(values, data):
    buf = np.frombuffer(b"".join(values), dtype=np.uint8) if any(values) else np.zeros(0, np.uint8)
    offsets = np.concatenate([[0], np.cumsum([len(v) for v in values])]).astype(np.int32)
    keep = np.array(sorted(data.draw(st.sets(st.integers(0, len(values) - 1)))), dtype=np.int64)
    got, goffs = gather_var_values(buf, offsets, keep)
    lens = np.diff(offsets)[keep]
    exp_offs = np.concatenate([[0], np.cumsum(lens)])
    idx = np.repeat(offsets[keep] - exp_offs[:-1], lens) + np.arange(int(lens.sum()))
    assert got.tobytes() == buf[idx.astype(np.int64)].tobytes()
    assert goffs.tolist() == exp_offs.tolist()


def test_gather_var_rejects_bad_indices():
    with pytest.raises(InvalidInputError):
        gather_var_values(np.zeros(4, np.uint8), np.array([0, 2, 4]), np.array([2]))
    with pytest.raises(InvalidInputError):
        gather_var_values(np.zeros(4, np.uint8), np.array([0, 2, 9]), np.array([1]))


@pytest.mark.parametrize("card", [1, 50, 3000, 60000])
def test_hll_bytes_estimate_close_to_exact(card):
    rng = np.random.default_rng(card)
    ids = rng.integers(0, card, 100_000)
    values = [f"value-{i}-suffix".encode() for i in ids]
    data = np.frombuffer(b"".join(values), dtype=np.uint8)
    offsets = np.concatenate([[0], np.cumsum([len(v) for v in values])]).astype(np.int64)
    regs = np.zeros(1 << 14, dtype=np.uint8)
    hll_bytes(data, offsets, 14, regs)
    exact = len(set(ids.tolist()))
    assert abs(estimate(regs) - exact) <= max(2, 0.03 * exact)


# --------------------------------------------------------------------------- batched level packing

from lancejit.encoding.v21.encode.blocks import BlockCompressor  # noqa: E402


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(0, 1023), min_size=1, max_size=30), st.integers(1, 15), st.integers(0, 2**32 - 1),
       st.booleans())
def test_compress_fixed_many_matches_per_piece(lens, width, seed, one_long):
    if one_long:  # a piece of 1024+ values: the per-piece path
        lens = lens + [1500]
    rng = np.random.default_rng(seed)
    n = int(sum(lens))
    words = rng.integers(0, 1 << width, n).astype(np.uint16)
    cuts = np.concatenate([[0], np.cumsum(lens)])
    bounds = [(int(a), int(b)) for a, b in zip(cuts[:-1], cuts[1:])]
    comp = BlockCompressor("ool", 16, width=width)
    assert comp.compress_fixed_many(words, bounds) == [comp.compress_fixed(words[a:b]) for a, b in bounds]


# --------------------------------------------------------------------------- distinct counts

from lancejit.encoding.kernels.enc_hll import distinct_bytes  # noqa: E402
from lancejit.encoding.v21.encode.data import FixedBlock, VarBlock  # noqa: E402
from lancejit.encoding.v21.encode.stats import exact_cardinality  # noqa: E402


@settings(max_examples=60, deadline=None)
@given(st.lists(st.binary(max_size=12).map(lambda b: bytes(x % 3 for x in b)), min_size=0, max_size=300),
       st.integers(0, 5))
def test_distinct_bytes_matches_python(values, skip):
    data = np.frombuffer(b"\x07" * skip + b"".join(values), dtype=np.uint8)
    offsets = skip + np.concatenate([[0], np.cumsum([len(v) for v in values])]).astype(np.int64)
    slots = np.full(1 << max(1, (2 * len(values)).bit_length()), -1, dtype=np.int64)
    assert distinct_bytes(data, offsets, slots) == len(set(values))


@settings(max_examples=40, deadline=None)
@given(st.sampled_from([8, 16, 32, 64, 128, 24]), st.lists(st.integers(0, 6), min_size=0, max_size=500))
def test_exact_cardinality_matches_numpy(bits, picks):
    k = bits // 8
    rng = np.random.default_rng(len(picks))
    items = rng.integers(0, 256, size=(7, k), dtype=np.uint8)
    rows = items[np.array(picks, dtype=np.int64)] if picks else np.zeros((0, k), np.uint8)
    raw = np.ascontiguousarray(rows).reshape(-1)
    data = raw.view({1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[k]) if k in (1, 2, 4, 8) else raw
    expected = len(np.unique(rows, axis=0)) if picks else 0
    assert exact_cardinality(FixedBlock(data, bits, len(picks))) == expected
    strings = [bytes(r) for r in rows]
    offs = np.concatenate([[0], np.cumsum([len(s) for s in strings])]).astype(np.int32)
    assert exact_cardinality(VarBlock(offs, raw, len(picks))) == expected
