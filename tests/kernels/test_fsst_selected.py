"""FSST kernels on longer values (8-byte store path and the byte-wise tail) and the selected-value
variants (``*_at``), against a plain Python reference."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings

from fsst_ref import encoded_cases as cases
from fsst_ref import ref_fsst
from fsst_ref import symbol_table as _table
from lancejit.encoding.kernels import readonly as ro
from lancejit.encoding.kernels.fsst import (
    fsst_decode,
    fsst_decode_at,
    fsst_decoded_lengths,
    fsst_decoded_lengths_at,
)


@settings(max_examples=60, deadline=None)
@given(cases())
def test_whole_and_selected_decoding_match_reference(case):
    symbols, values, seed = case
    sym_bytes, sym_lens = _table(symbols)
    expected = [ref_fsst(v, symbols) for v in values]
    codes = b"".join(values)
    data = ro(np.frombuffer(codes, np.uint8) if codes else np.zeros(0, np.uint8))
    offsets = np.zeros(len(values) + 1, np.int64)
    np.cumsum([len(v) for v in values], out=offsets[1:])
    lengths = np.empty(len(values), np.int64)
    bad = fsst_decoded_lengths(data, ro(offsets), len(values), sym_lens, len(symbols), lengths)
    assert bad == next((i for i, e in enumerate(expected) if e is None), -1)
    if bad < 0:
        out_offsets = np.zeros(len(values) + 1, np.int64)
        np.cumsum(lengths, out=out_offsets[1:])
        out = np.empty(int(out_offsets[-1]), np.uint8)
        fsst_decode(data, ro(offsets), len(values), sym_bytes, sym_lens, ro(out_offsets), out)
        assert [out[out_offsets[i]:out_offsets[i + 1]].tobytes() for i in range(len(values))] == expected
    # selected values (sorted subset with repeats), decoded on their own
    rng = np.random.default_rng(seed)
    sel = np.sort(rng.integers(0, len(values), int(rng.integers(0, 30)))) if values else np.zeros(0, np.int64)
    starts, ends = ro(offsets[:-1][sel]), ro(offsets[1:][sel])
    sel_lengths = np.empty(sel.size, np.int64)
    bad_at = fsst_decoded_lengths_at(data, starts, ends, sym_lens, len(symbols), sel_lengths)
    want = [expected[i] for i in sel]
    assert bad_at == next((k for k, e in enumerate(want) if e is None), -1)
    if bad_at >= 0:
        return
    out_offsets = np.zeros(sel.size + 1, np.int64)
    np.cumsum(sel_lengths, out=out_offsets[1:])
    out = np.empty(int(out_offsets[-1]), np.uint8)
    fsst_decode_at(data, starts, ends, sym_bytes, sym_lens, ro(out_offsets), out)
    assert [out[out_offsets[k]:out_offsets[k + 1]].tobytes() for k in range(sel.size)] == want
