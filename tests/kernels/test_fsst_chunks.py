"""One-pass FSST decoding straight from mini-block Variable chunks: ``variable_chunk_spans``
(locate values, all or a sorted selection, validating the chunk offsets) and
``fsst_decode_spans`` (validate + decode in one pass), against plain Python/NumPy references."""

from __future__ import annotations

import numpy as np
from hypothesis import example, given, settings
from hypothesis import strategies as st

from fsst_ref import encoded_cases as cases
from fsst_ref import ref_fsst
from fsst_ref import symbol_table as _table
from lancejit.encoding.kernels import readonly as ro
from lancejit.encoding.kernels.fsst import (
    SPANS_BAD_OFFSETS,
    SPANS_OK,
    fsst_decode_spans,
    variable_chunk_spans,
)

def build_chunks(values: list[bytes], counts: list[int], width: int, rng) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Mini-block Variable buffers (offsets table, then the bytes, padded to 8) for
    consecutive groups of ``counts`` values; returns ``(data, offs, sizes)``."""
    parts, offs, sizes, pos, v = [], [], [], 0, 0
    for c in counts:
        vals = values[v : v + c]
        v += c
        start = (c + 1) * width
        o = np.concatenate([[0], np.cumsum([len(x) for x in vals])]).astype(np.int64) + start
        buf = o.astype(f"<u{width}").tobytes() + b"".join(vals)
        buf += bytes(int(rng.integers(0, 9)))  # slack after the values (padding)
        parts.append(buf)
        offs.append(pos)
        sizes.append(len(buf))
        pos += len(buf)
    data = np.frombuffer(b"".join(parts), np.uint8) if parts else np.zeros(0, np.uint8)
    return ro(data), np.asarray(offs, np.int64), np.asarray(sizes, np.int64)


def ref_spans(data: np.ndarray, offs, sizes, counts, width, picks) -> list[tuple[int, int]] | None:
    """Plain NumPy reference: every value's absolute span, or None if any chunk is bad."""
    spans = []
    for o, z, c in zip(offs, sizes, counts):
        table = data[o : o + (c + 1) * width]
        if len(table) < (c + 1) * width or (c + 1) * width > z:
            return None
        pos = table.view(f"<u{width}").astype(np.int64)
        spans.extend((int(o + pos[i]), int(o + pos[i + 1])) for i in range(c))
        if np.any(pos < (c + 1) * width) or np.any(pos > z) or np.any(np.diff(pos) < 0):
            return None
    return [spans[p] for p in picks]


@settings(max_examples=60, deadline=None)
@given(cases(), st.sampled_from([4, 8]), st.integers(0, 2**31))
@example(([b"ab"], [b"\x00", b""], 1), 4, 0)
def test_spans_and_one_pass_decode_match_reference(case, width, seed):
    symbols, values, _ = case
    rng = np.random.default_rng(seed)
    n = len(values)
    counts, left = [], n
    while left:
        c = int(rng.integers(1, left + 1))
        counts.append(c)
        left -= c
    data, offs, sizes = build_chunks(values, counts, width, rng)
    cnt = np.asarray(counts, np.int64)
    sym_bytes, sym_lens = _table(symbols)
    for use_pick in (False, True):
        picks = np.sort(rng.integers(0, n, int(rng.integers(0, n + 1)))) if (use_pick and n) else np.arange(n)
        m = picks.size
        starts = np.empty(m, np.int64)
        ends = np.empty(m, np.int64)
        pick_arg = picks.astype(np.int64) if use_pick else np.zeros(0, np.int64)
        err = variable_chunk_spans(data, offs, sizes, cnt, width, pick_arg, use_pick, starts, ends)
        assert err == SPANS_OK
        assert list(zip(starts.tolist(), ends.tolist())) == ref_spans(data, offs, sizes, counts, width, picks)
        expected = [ref_fsst(values[p], symbols) for p in picks]
        cap = 8 * int((ends - starts).sum()) + 8
        out = np.empty(cap, np.uint8)
        out_offsets = np.empty(m + 1, np.int64)
        written, bad = fsst_decode_spans(data, starts, ends, sym_bytes, sym_lens, len(symbols), out_offsets, out)
        first_bad = next((i for i, e in enumerate(expected) if e is None), -1)
        assert bad == first_bad
        if bad < 0:
            assert written == out_offsets[-1]
            assert [out[out_offsets[i] : out_offsets[i + 1]].tobytes() for i in range(m)] == expected


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**31), st.sampled_from([4, 8]), st.sampled_from(["before", "past", "down", "table"]))
def test_bad_chunk_offsets_are_reported(seed, width, how):
    rng = np.random.default_rng(seed)
    values = [rng.integers(0, 256, int(rng.integers(0, 6)), dtype=np.uint8).tobytes() for _ in range(12)]
    data, offs, sizes = build_chunks(values, [5, 7], width, rng)
    raw = bytearray(data.tobytes())
    k = int(rng.integers(0, 2))
    c = [5, 7][k]
    i = int(rng.integers(0, c + 1))
    at = int(offs[k]) + i * width
    cur = int.from_bytes(raw[at : at + width], "little")
    sizes = sizes.copy()
    if how == "before":
        new = int(rng.integers(0, (c + 1) * width))
    elif how == "past":
        new = int(sizes[k]) + 1 + int(rng.integers(0, 100))
    elif how == "down":
        i = max(i, 1)
        at = int(offs[k]) + i * width
        prev = int.from_bytes(raw[at - width : at], "little")
        new = prev - 1
        if new < (c + 1) * width:
            new = 2**31  # also invalid (past the buffer)
    else:
        sizes[k] = (c + 1) * width - 1  # offsets table longer than the chunk
        new = cur
    raw[at : at + width] = int(new).to_bytes(width, "little")
    bad = ro(np.frombuffer(bytes(raw), np.uint8))
    cnt = np.asarray([5, 7], np.int64)
    starts = np.empty(12, np.int64)
    ends = np.empty(12, np.int64)
    err = variable_chunk_spans(bad, offs, sizes, cnt, width, np.zeros(0, np.int64), False, starts, ends)
    assert err == SPANS_BAD_OFFSETS
    # a selection of one value whose span reads the damaged offset is caught too
    v = k * 5 + (i - 1 if how == "down" else min(i, c - 1))
    err = variable_chunk_spans(bad, offs, sizes, cnt, width, np.asarray([v], np.int64), True, starts[:1], ends[:1])
    assert err == SPANS_BAD_OFFSETS


def test_pick_outside_the_chunks_is_reported():
    data, offs, sizes = build_chunks([b"a", b"b"], [2], 4, np.random.default_rng(0))
    starts = np.empty(1, np.int64)
    ends = np.empty(1, np.int64)
    err = variable_chunk_spans(data, offs, sizes, np.asarray([2], np.int64), 4, np.asarray([2], np.int64), True, starts, ends)
    assert err == SPANS_BAD_OFFSETS
