"""Shared plain-Python FSST references for the kernel tests: the decoder, the symbol-table arrays
the kernels take, and a Hypothesis strategy of encoded values (some malformed)."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from lancejit.encoding.kernels import readonly as ro


def ref_fsst(codes: bytes, symbols: list[bytes]) -> bytes | None:
    """Decode ``codes`` with ``symbols`` (code 255 escapes one literal byte); ``None`` if malformed."""
    out, i = bytearray(), 0
    while i < len(codes):
        c = codes[i]
        if c == 255:
            if i + 1 >= len(codes):
                return None
            out.append(codes[i + 1])
            i += 2
        else:
            if c >= len(symbols):
                return None
            out += symbols[c]
            i += 1
    return bytes(out)


def symbol_table(symbols: list[bytes]) -> tuple[np.ndarray, np.ndarray]:
    """Read-only ``(sym_bytes (256, 8) uint8, sym_lens (256,) uint8)`` for up to 255 symbols."""
    sym_bytes = np.zeros((256, 8), np.uint8)
    sym_lens = np.zeros(256, np.uint8)
    for i, s in enumerate(symbols):
        sym_bytes[i, : len(s)] = np.frombuffer(s, np.uint8)
        sym_lens[i] = len(s)
    return ro(sym_bytes), ro(sym_lens)


@st.composite
def encoded_cases(draw):
    """``(symbols, encoded values, seed)``: up to 60 values of up to 40 codes with ~10% escapes,
    and sometimes one value made malformed (a dangling escape or an out-of-table code)."""
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    nsym = int(rng.integers(1, 255))
    symbols = [rng.integers(0, 256, int(rng.integers(1, 9)), dtype=np.uint8).tobytes() for _ in range(nsym)]
    nvals = int(rng.integers(0, 60))
    values = []
    for _ in range(nvals):
        n = int(rng.integers(0, 40))
        codes = rng.integers(0, nsym, n).astype(np.uint8)
        esc = rng.random(n) < 0.1
        codes[esc] = 255
        if n and codes[-1] == 255:
            codes[-1] = 0
        # after an escape comes a literal byte (any value)
        for j in np.flatnonzero(codes[:-1] == 255):
            codes[j + 1] = rng.integers(0, 256)
        values.append(codes.tobytes())
    if values and draw(st.booleans()):  # a malformed value somewhere
        k = int(rng.integers(0, len(values)))
        values[k] = values[k] + (b"\xff" if draw(st.booleans()) else bytes([min(254, nsym)]))
    return symbols, values, int(rng.integers(0, 2**31))
