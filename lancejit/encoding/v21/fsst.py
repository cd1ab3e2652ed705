"""FSST symbol tables and decoding of FSST-compressed variable-width values (2.1/2.2).

Symbol table (stored in ``Fsst.symbol_table``, 2 312 bytes when written by Lance):
``u64 LE header`` = ``"FSST"`` magic in bits 32..63, encoder switch bit 24, suffix_lim bits
16..23, terminator bits 8..15, n_symbols bits 0..7; then ``n_symbols`` u64 symbols (byte k of a
symbol = bits 8k..8k+7); then ``n_symbols`` symbol lengths (one byte each, 1..8).  If the switch
bit is 0 the values were stored uncompressed.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from lancejit.core.errors import CorruptFileError
from lancejit.encoding.kernels import readonly
from lancejit.encoding.kernels.fsst import fsst_decode, fsst_decoded_lengths
from lancejit.encoding.v21.values import VariableWidth

_MAGIC = 0x46535354


@dataclass(frozen=True, slots=True)
class SymbolTable:
    """A parsed FSST symbol table: ``sym_bytes[c, :sym_lens[c]]`` is the expansion of code c."""

    enabled: bool
    n_symbols: int
    sym_bytes: np.ndarray  # uint8 (256, 8)
    sym_lens: np.ndarray  # uint8 (256,)


def parse_symbol_table(table: bytes, *, path: str) -> SymbolTable:
    """Parse and validate a serialized symbol table (parsed tables are cached by content)."""
    parsed = _parse_cached(bytes(table))
    if isinstance(parsed, str):
        raise CorruptFileError(parsed, path=path)
    return parsed


@lru_cache(maxsize=64)
def _parse_cached(table: bytes) -> SymbolTable | str:
    """The parsed table, or an error message (so the cache never stores exceptions)."""
    try:
        return _parse(table)
    except ValueError as exc:
        return str(exc)


def _parse(table: bytes) -> SymbolTable:
    if len(table) < 8:
        raise ValueError(f"FSST symbol table of {len(table)} bytes")
    header = int.from_bytes(table[:8], "little")
    if header >> 32 != _MAGIC:
        raise ValueError(f"FSST symbol table has bad magic {header >> 32:#x}")
    enabled = bool((header >> 24) & 1)
    n = header & 0xFF
    need = 8 + 9 * n
    if len(table) < need:
        raise ValueError(f"FSST symbol table of {len(table)} bytes too short for {n} symbols")
    sym_bytes = np.zeros((256, 8), dtype=np.uint8)
    sym_lens = np.zeros(256, dtype=np.uint8)
    raw = np.frombuffer(table, dtype=np.uint8, count=need)
    sym_bytes[:n] = raw[8 : 8 + 8 * n].reshape(n, 8)
    lens = raw[8 + 8 * n : need]
    if n and (lens.max() > 8 or lens.min() < 1):
        raise ValueError("FSST symbol length outside 1..8")
    sym_lens[:n] = lens
    return SymbolTable(enabled, int(n), readonly(sym_bytes), readonly(sym_lens))


def decode_values(table: SymbolTable, values: VariableWidth, *, path: str) -> VariableWidth:
    """Decompress every value of ``values`` (already validated offsets) with ``table``."""
    if not table.enabled:
        return values
    n = values.num_values
    offsets = readonly(values.offsets, np.int64)
    codes = readonly(values.data, np.uint8)
    lengths = np.empty(n, dtype=np.int64)
    bad = fsst_decoded_lengths(codes, offsets, n, table.sym_lens, table.n_symbols, lengths)
    if bad >= 0:
        raise CorruptFileError(f"FSST value {bad} uses an unknown code or ends in an escape", path=path)
    out_offsets = np.empty(n + 1, dtype=np.int64)
    out_offsets[0] = 0
    np.cumsum(lengths, out=out_offsets[1:])
    out = np.empty(int(out_offsets[-1]), dtype=np.uint8)
    fsst_decode(codes, offsets, n, table.sym_bytes, table.sym_lens, readonly(out_offsets), out)
    return VariableWidth(out_offsets, out, n)
