"""The run decode kernels of multi-file scans (``encoding/kernels/scan.py``: ``runs_fixed``,
``runs_offsets`` + ``runs_copy``, ``runs_fsst_bound`` + ``runs_fsst``, ``runs_bitpacked``)
against plain NumPy / Python on mini-block chunks built here: random chunk sizes, run starts
and lengths, 4- and 8-byte offsets, FSST tables with escapes and raw (disabled) tables; damaged
offsets and codes are reported, never read past."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from lancejit.encoding.kernels.scan import (runs_bitpacked, runs_copy, runs_fixed, runs_fsst, runs_fsst_bound,
                                            runs_offsets)
from lancejit.encoding.kernels.take import TAKE_BAD_CHUNK, TAKE_BAD_OFFSETS

SZW = 2  # value-buffer size field width of the chunks built here (no def levels)


def _chunk(values: bytes) -> bytes:
    """A mini-block chunk (u16 level count, u16 value-buffer size, padding to 8) holding ``values``."""
    head = np.array([0, len(values)], dtype="<u2").tobytes()
    return head + bytes(8 - len(head)) + values + bytes(-len(values) % 8)


def _layout(chunks: list[bytes], counts: list[int]) -> tuple:
    """The data buffer and per-segment arrays (one chunk per segment) of ``chunks``."""
    pos, data = [], b""
    for c in chunks:
        data += bytes(8)  # something between chunks
        pos.append(len(data))
        data += c
    n = len(chunks)
    return (np.frombuffer(data + bytes(8), dtype=np.uint8), np.array(pos, np.int64),
            np.full(n, SZW, np.int64), np.array([len(c) for c in chunks], np.int64), np.array(counts, np.int64),
            np.zeros(n, np.int64))


def _runs(draw, counts: list[int], pos: np.ndarray) -> tuple:
    """Runs over the segments in order: each segment's rows [a, b) for a drawn sub-range."""
    seg, rin, rlen, rpos = [], [], [], []
    for g, c in enumerate(counts):
        if not draw(st.booleans()) and g:
            continue
        a = draw(st.integers(0, c))
        b = draw(st.integers(a, c))
        if b > a:
            seg.append(g), rin.append(a), rlen.append(b - a), rpos.append(int(pos[g]))
    return tuple(np.array(x, np.int64) for x in (seg, rin, rlen, rpos))


def _var_chunk(vals: list[bytes], owidth: int) -> bytes:
    """A plain variable-width value buffer: ``count + 1`` offsets (from the buffer's start), then the bytes."""
    lo = (len(vals) + 1) * owidth
    offs = np.cumsum([lo] + [len(v) for v in vals]).astype(f"<u{owidth}")
    return offs.tobytes() + b"".join(vals)


@st.composite
def _var_cases(draw):
    owidth = draw(st.sampled_from([4, 8]))
    nseg = draw(st.integers(1, 5))
    vals = [draw(st.lists(st.binary(max_size=12), min_size=1, max_size=40)) for _ in range(nseg)]
    data, pos, szw, seg_len, counts, sdef = _layout([_chunk(_var_chunk(v, owidth)) for v in vals],
                                                    [len(v) for v in vals])
    runs = _runs(draw, [len(v) for v in vals], pos)
    want = [vals[g][a:a + n] for g, a, n in zip(*(r.tolist() for r in runs[:3]))]
    return owidth, data, runs, szw, seg_len, counts, sdef, [v for w in want for v in w]


@settings(max_examples=200, deadline=None)
@given(_var_cases())
def test_runs_offsets_and_copy_match_python(case):
    owidth, data, runs, szw, seg_len, counts, sdef, want = case
    k = len(want)
    offsets = np.empty(k + 1, np.int64)
    nbytes = runs_offsets(data, *runs, szw, seg_len, counts, sdef, owidth, offsets)
    assert nbytes == sum(map(len, want))
    assert offsets.tolist() == np.cumsum([0] + [len(v) for v in want]).tolist()
    values = np.empty(nbytes, np.uint8)
    runs_copy(data, *runs, szw, seg_len, sdef, owidth, offsets, values)
    assert values.tobytes() == b"".join(want)


def test_runs_offsets_rejects_damaged_offsets():
    for owidth in (4, 8):
        data, pos, szw, seg_len, counts, sdef = _layout([_chunk(_var_chunk([b"ab", b"cde", b"f"], owidth))], [3])
        runs = tuple(np.array([x], np.int64) for x in (0, 0, 3, int(pos[0])))
        offsets = np.empty(4, np.int64)
        assert runs_offsets(data, *runs, szw, seg_len, counts, sdef, owidth, offsets) == 6
        vb = int(pos[0]) + 8
        for at, value in ((2, 1), (3, 1000), (0, 0)):  # out of order, past the buffer, inside the offsets
            bad = data.copy()
            bad[vb + at * owidth:vb + (at + 1) * owidth] = np.frombuffer(
                np.array([value], f"<u{owidth}").tobytes(), np.uint8)
            assert runs_offsets(bad, *runs, szw, seg_len, counts, sdef, owidth, offsets) == -TAKE_BAD_OFFSETS
        short = tuple(np.array([x], np.int64) for x in (0, 1, 3, int(pos[0])))  # rows past the chunk's count
        assert runs_offsets(data, *short, szw, seg_len, counts, sdef, owidth, offsets) == -TAKE_BAD_CHUNK


@st.composite
def _fixed_cases(draw):
    width = draw(st.sampled_from([1, 2, 4, 8, 16]))
    nseg = draw(st.integers(1, 5))
    vals = [draw(st.binary(min_size=width, max_size=width * 30).map(lambda b: b[:len(b) // width * width]))
            for _ in range(nseg)]
    counts = [len(v) // width for v in vals]
    data, pos, szw, seg_len, counts_a, sdef = _layout([_chunk(v) for v in vals], counts)
    runs = _runs(draw, counts, pos)
    want = b"".join(vals[g][a * width:(a + n) * width] for g, a, n in zip(*(r.tolist() for r in runs[:3])))
    return width, data, runs, szw, seg_len, sdef, want


@settings(max_examples=200, deadline=None)
@given(_fixed_cases())
def test_runs_fixed_matches_python(case):
    width, data, runs, szw, seg_len, sdef, want = case
    out = np.empty(len(want), np.uint8)
    assert runs_fixed(data, *runs, szw, seg_len, sdef, width, out) == 0
    assert out.tobytes() == want


def _bitpacked_chunk(values: np.ndarray, width: int) -> bytes:
    """An inline bit-packed value buffer of uint32 words (T = 32): the width word, then one
    1024-value block packed by ``pack_blocks`` (values past ``len(values)`` zero)."""
    from lancejit.encoding.kernels.bitpack import pack_blocks

    block = np.zeros(1024, np.uint32)
    block[:len(values)] = values
    packed = np.zeros(32 * width, np.uint32)
    pack_blocks(block, width, 1, packed)
    return np.array([width], np.uint32).tobytes() + packed.tobytes()


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 3), st.integers(0, 32), st.data())
def test_runs_bitpacked_matches_numpy(nseg, width, data_st):
    rng = np.random.default_rng(nseg * 100 + width)
    counts = [data_st.draw(st.integers(1, 1024)) for _ in range(nseg)]
    hi = (1 << width) - 1 if width else 0
    vals = [rng.integers(0, hi + 1, c, dtype=np.uint64).astype(np.uint32) for c in counts]
    data, pos, szw, seg_len, counts_a, sdef = _layout([_chunk(_bitpacked_chunk(v, width)) for v in vals], counts)
    runs = _runs(data_st.draw, counts, pos)
    want = np.concatenate([vals[g][a:a + n] for g, a, n in zip(*(r.tolist() for r in runs[:3]))] or
                          [np.zeros(0, np.uint32)])
    buf = np.empty(2049 + len(want), np.uint32)
    tmpw = buf[:1025]
    assert runs_bitpacked(data, *runs, szw, seg_len, counts_a, sdef, tmpw, tmpw.view(np.uint8), buf[1025:2049],
                          buf[2049:]) == 0
    assert np.array_equal(buf[2049:], want)


# ---------------------------------------------------------------------------- FSST

def _tables(rng: np.random.Generator, ntab: int) -> tuple[np.ndarray, np.ndarray, list[list[bytes]]]:
    """``ntab`` symbol tables of 1-8 byte symbols (code 255 and a few others: escape/invalid)."""
    words = np.zeros((ntab, 256), np.uint64)
    lens = np.zeros((ntab, 256), np.uint64)
    syms = []
    for t in range(ntab):
        tab = []
        for c in range(256):
            if c == 255 or c % 37 == 36:
                tab.append(b"")
                continue
            s = rng.integers(0, 256, int(rng.integers(1, 9)), dtype=np.uint8).tobytes()
            tab.append(s)
            words[t, c] = int.from_bytes(s + bytes(8 - len(s)), "little")
            lens[t, c] = len(s)
        syms.append(tab)
    return words, lens, syms


def _encode(rng: np.random.Generator, syms: list[bytes], raw: bool) -> tuple[bytes, bytes]:
    """A random compressed value and what it decodes to (escapes included)."""
    codes, out = bytearray(), bytearray()
    for _ in range(int(rng.integers(0, 12))):
        if raw:
            b = int(rng.integers(0, 256))
            codes.append(b), out.append(b)
            continue
        c = int(rng.integers(0, 256))
        if syms[c]:
            codes.append(c), out.extend(syms[c])
        else:  # an escaped literal byte
            b = int(rng.integers(0, 256))
            codes.extend((255, b)), out.append(b)
    return bytes(codes), bytes(out)


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 10_000), st.sampled_from([4, 8]), st.integers(1, 4), st.data())
def test_runs_fsst_matches_python(seed, owidth, nseg, data_st):
    rng = np.random.default_rng(seed)
    words, lens, syms = _tables(rng, 2)
    enabled = np.array([True, False])
    seg_tab = rng.integers(0, 2, nseg).astype(np.int64)
    comp, plain = [], []
    for g in range(nseg):
        pairs = [_encode(rng, syms[seg_tab[g]], not enabled[seg_tab[g]]) for _ in range(int(rng.integers(1, 30)))]
        comp.append([c for c, _ in pairs]), plain.append([p for _, p in pairs])
    counts = [len(c) for c in comp]
    data, pos, szw, seg_len, counts_a, sdef = _layout([_chunk(_var_chunk(c, owidth)) for c in comp], counts)
    runs = _runs(data_st.draw, counts, pos)
    want = [v for g, a, n in zip(*(r.tolist() for r in runs[:3])) for v in plain[g][a:a + n]]
    bound = runs_fsst_bound(data, *runs, szw, seg_len, counts_a, sdef, owidth)
    assert bound == sum(len(c) for g, a, n in zip(*(r.tolist() for r in runs[:3])) for c in comp[g][a:a + n])
    offsets = np.empty(len(want) + 1, np.uint64)
    values = np.empty(8 * bound + 8, np.uint8)
    nbytes, bad = runs_fsst(data, *runs, szw, seg_len, sdef, owidth, seg_tab, words, lens, enabled, offsets, values)
    assert bad == -1 and nbytes == sum(map(len, want))
    assert offsets.tolist() == np.cumsum([0] + [len(v) for v in want]).tolist()
    assert values[:nbytes].tobytes() == b"".join(want)


def test_runs_fsst_reports_damage():
    rng = np.random.default_rng(3)
    words, lens, syms = _tables(rng, 1)
    enabled = np.array([True])
    vals = [bytes([0, 1]), bytes([2]), bytes([3, 4])]
    data, pos, szw, seg_len, counts, sdef = _layout([_chunk(_var_chunk(vals, 4))], [3])
    runs = tuple(np.array([x], np.int64) for x in (0, 0, 3, int(pos[0])))
    seg_tab = np.zeros(1, np.int64)
    offsets, values = np.empty(4, np.uint64), np.empty(64, np.uint8)
    vb = int(pos[0]) + 8

    def run(d):
        return runs_fsst(d, *runs, szw, seg_len, sdef, 4, seg_tab, words, lens, enabled, offsets, values)

    assert run(data)[1] == -1
    bad = data.copy()
    bad[vb + 4 * 2] = 3  # value 1 ends before it starts
    assert runs_fsst_bound(bad, *runs, szw, seg_len, counts, sdef, 4) == 5  # (ends only)
    assert run(bad) == (-TAKE_BAD_OFFSETS, 1)
    bad = data.copy()
    bad[vb + 4 * 3] = 200  # the run's last offset past the buffer
    assert runs_fsst_bound(bad, *runs, szw, seg_len, counts, sdef, 4) == -TAKE_BAD_OFFSETS
    bad = data.copy()
    bad[vb + 16 + 2] = 36  # value 1's code has no symbol
    assert run(bad) == (0, 1)
    bad = data.copy()
    bad[vb + 16 + 2] = 255  # value 1 ends in an escape
    assert run(bad) == (0, 1)
    short = tuple(np.array([x], np.int64) for x in (0, 2, 2, int(pos[0])))  # rows past the chunk's count
    assert runs_fsst_bound(data, *short, szw, seg_len, counts, sdef, 4) == -TAKE_BAD_CHUNK
