"""Mini-block chunk kernels (``encoding/kernels/enc_chunks.py``) against plain Python / NumPy
versions: variable chunks (the doubling search), inline bit-packing of a whole page, and the
mini-block layout of packed chunks equal to the per-chunk layout of the same chunks."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lancejit.encoding.kernels import enc_chunks, readonly
from lancejit.encoding.kernels.bitpack import pack_blocks
from lancejit.encoding.v21.encode import pbutil
from lancejit.encoding.v21.encode.data import FixedBlock, VarBlock
from lancejit.encoding.v21.encode.levels import Levels
from lancejit.encoding.v21.encode.miniblock import encode_miniblock
from lancejit.encoding.v21.encode.values import (VARIABLE_CHUNK_BYTES, MiniChunks, flat_chunks,
                                                 inline_bitpack_chunks, variable_chunks)


def _py_variable_chunks(offs: np.ndarray, data: bytes, width: int, max_bytes: int) -> tuple[list[bytes], list[int]]:
    """The reference's doubling search, one chunk at a time, in Python."""
    n_off = len(offs)
    last = n_off - 1
    bufs, counts = [], []
    start = 0
    while True:
        num, new = 1, 2
        while True:
            if start + new >= n_off:
                size = int(offs[-1] - offs[start]) + (n_off - start) * width
                end = last if size <= max_bytes else start + num
                break
            size = int(offs[start + new] - offs[start]) + (new + 1) * width
            if size <= max_bytes:
                num, new = new, new * 2
            else:
                end = start + new
                break
        end = min(end, last)
        m = end - start
        hdr = (m + 1) * width
        local = b"".join(int(o - offs[start] + hdr).to_bytes(width, "little") for o in offs[start:end + 1])
        chunk = local + data[int(offs[start]):int(offs[end])]
        chunk += b"\x48" * ((-len(chunk)) % width)
        bufs.append(chunk)
        counts.append(m)
        if end == last:
            return bufs, counts
        start = end


@settings(max_examples=60, deadline=None)
@given(st.lists(st.binary(max_size=3000), min_size=1, max_size=80), st.sampled_from([4, 8]),
       st.sampled_from([64, 300, VARIABLE_CHUNK_BYTES]))
def test_variable_chunks_match_python(values, width, max_bytes):
    data = b"".join(values)
    offs = np.concatenate([[0], np.cumsum([len(v) for v in values])]).astype(np.int64)
    n = len(values)
    body = np.empty(len(data) + 3 * (n + 1) * width + 16, np.uint8)
    sizes, counts = np.empty(n, np.int64), np.empty(n, np.int64)
    k, used = enc_chunks.variable_chunks(readonly(offs), readonly(np.frombuffer(data, np.uint8) if data else
                                                                  np.zeros(0, np.uint8)),
                                         width, max_bytes, body, sizes, counts)
    exp_bufs, exp_counts = _py_variable_chunks(offs, data, width, max_bytes)
    assert counts[:k].tolist() == exp_counts
    assert sizes[:k].tolist() == [len(b) for b in exp_bufs]
    assert body[:used].tobytes() == b"".join(exp_bufs)


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 5000), st.sampled_from([8, 16, 32, 64]), st.integers(0, 2**32 - 1))
def test_inline_bitpack_all_matches_per_block(n, bits, seed):
    rng = np.random.default_rng(seed)
    dt = np.dtype(f"u{bits // 8}")
    top = min(bits, int(rng.integers(0, bits + 1)))
    words = (rng.integers(0, 2**63, n, dtype=np.uint64) & np.uint64((1 << top) - 1 if top < 64 else 2**64 - 1)).astype(dt)
    got = inline_bitpack_chunks(FixedBlock(words, bits, n))
    # per block in NumPy: width word, then pack_blocks of the zero-padded block
    nblocks = (n + 1023) // 1024
    padded = np.zeros(nblocks * 1024, dt)
    padded[:n] = words
    lanes = 1024 // bits
    exp = []
    for i in range(nblocks):
        blk = padded[i * 1024:(i + 1) * 1024]
        w = int(np.bitwise_or.reduce(blk.astype(np.uint64))).bit_length()
        out = np.zeros(lanes * w + 1, dt)
        out[0] = w
        if w:
            pack_blocks(blk, w, 1, out[1:])
        exp.append(out.tobytes())
    assert [b[0] for b in got.buffers] == exp
    assert got.counts == [min(1024, n - 1024 * i) for i in range(nblocks)]


def _levels(n: int) -> Levels:
    return Levels(rep=None, deff=None, max_rep=0, max_visible_def=0, num_slots=n, num_rows=n, layers=[0],
                  value_nulls=None)


@pytest.mark.parametrize("version", [(2, 1), (2, 2)])
@pytest.mark.parametrize("kind", ["flat", "bitpack", "variable"])
@pytest.mark.parametrize("n", [1, 1000, 70_000])
def test_packed_miniblock_equals_per_chunk_layout(kind, n, version):
    rng = np.random.default_rng(n)
    if kind == "variable":
        values = [bytes(rng.integers(97, 123, int(rng.integers(0, 40)), dtype=np.uint8)) for _ in range(n)]
        offs = np.concatenate([[0], np.cumsum([len(v) for v in values])]).astype(np.int32)
        chunks = variable_chunks(VarBlock(offs, np.frombuffer(b"".join(values), np.uint8), n))
    elif kind == "flat":
        chunks = flat_chunks(FixedBlock(rng.standard_normal(n).view(np.uint64), 64, n))
    else:
        chunks = inline_bitpack_chunks(FixedBlock(rng.integers(0, 5000, n).astype(np.uint32), 32, n))
    assert chunks.packed is not None
    listed = MiniChunks([list(c) for c in chunks.buffers], list(chunks.counts), chunks.encoding)
    a = encode_miniblock(chunks, _levels(n), version)
    b = encode_miniblock(listed, _levels(n), version)
    assert [bytes(x) for x in a.buffers] == [bytes(x) for x in b.buffers]
    assert a.layout == b.layout


def test_packed_miniblock_refuses_oversized_21_chunks():
    body = np.zeros(70_000, np.uint8)
    chunks = MiniChunks(None, [1], pbutil.flat(8), (body, np.array([70_000], np.int64)))
    from lancejit.core.errors import InvalidInputError

    with pytest.raises(InvalidInputError):
        encode_miniblock(chunks, _levels(1), (2, 1))
