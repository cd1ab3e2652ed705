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
from lancejit.encoding.kernels.fsst import (
    FSST_BAD_OFFSETS,
    SPANS_OK,
    fsst_decode_chunks,
    fsst_decode,
    fsst_decode_spans,
    fsst_decoded_lengths,
    variable_chunk_spans,
)
from lancejit.encoding.v21.repdef_kernels import gather_slices
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


def decode_chunk_values(
    table: SymbolTable,
    data: np.ndarray,
    offs: np.ndarray,
    sizes: np.ndarray,
    counts: np.ndarray,
    width: int,
    pick: np.ndarray | None,
    *,
    path: str,
) -> VariableWidth:
    """FSST values stored as mini-block Variable buffers (one per chunk: ``data[offs[k]:
    offs[k]+sizes[k]]``, ``counts[k]`` values, ``width``-byte offsets), decoded straight from
    the chunks (no copy of the codes) in one validating pass.

    ``pick``: sorted value indices (across the chunks) to decode, or None for all.  Callers
    have checked that every chunk buffer lies inside ``data``.
    """
    total = int(counts.sum())
    if pick is not None and pick.size and (int(pick[0]) < 0 or int(pick[-1]) >= total):
        raise CorruptFileError("selected FSST values outside the chunks", path=path)
    # kernel inputs read-only and int64 so each kernel compiles once
    data = readonly(data, np.uint8)
    offs, sizes, counts = (readonly(a, np.int64) for a in (offs, sizes, counts))
    if pick is None and table.enabled:
        # every value: one kernel walks the chunks' offsets and decodes as it goes
        max_len = _max_symbol_len(table)
        out = np.empty(max_len * int(sizes.sum()) + 8, dtype=np.uint8)
        out_offsets = np.empty(total + 1, dtype=np.int64)
        written, bad = fsst_decode_chunks(
            data, offs, sizes, counts, int(width), table.sym_bytes, table.sym_lens,
            table.n_symbols, out_offsets, out,
        )
        if bad == FSST_BAD_OFFSETS:
            raise CorruptFileError("variable chunk offsets out of order or out of bounds", path=path)
        if bad >= 0:
            raise CorruptFileError(f"FSST value {bad} uses an unknown code or ends in an escape", path=path)
        return VariableWidth(out_offsets, out[: int(written)], total)
    m = total if pick is None else int(pick.size)
    starts = np.empty(m, dtype=np.int64)
    ends = np.empty(m, dtype=np.int64)
    pick_arr = readonly(np.zeros(0, dtype=np.int64) if pick is None else pick, np.int64)
    err = variable_chunk_spans(data, offs, sizes, counts, int(width), pick_arr, pick is not None, starts, ends)
    if err != SPANS_OK:
        raise CorruptFileError("variable chunk offsets out of order or out of bounds", path=path)
    if not table.enabled:
        lens = ends - starts
        out_offsets = np.zeros(m + 1, dtype=np.int64)
        np.cumsum(lens, out=out_offsets[1:])
        out = np.empty(int(out_offsets[-1]), dtype=np.uint8)
        if gather_slices(data, starts, lens, out) < 0:
            raise CorruptFileError("variable chunk values outside the page", path=path)
        return VariableWidth(out_offsets, out, m)
    code_bytes = int((ends - starts).sum())
    max_len = _max_symbol_len(table)
    out = np.empty(max_len * code_bytes + 8, dtype=np.uint8)
    out_offsets = np.empty(m + 1, dtype=np.int64)
    written, bad = fsst_decode_spans(
        data, readonly(starts), readonly(ends), table.sym_bytes, table.sym_lens, table.n_symbols, out_offsets, out
    )
    if bad >= 0:
        raise CorruptFileError(f"FSST value {bad} uses an unknown code or ends in an escape", path=path)
    return VariableWidth(out_offsets, out[: int(written)], m)


def _max_symbol_len(table: SymbolTable) -> int:
    """Longest symbol of ``table`` in bytes (at least 1)."""
    return max(1, int(table.sym_lens[: table.n_symbols].max())) if table.n_symbols else 1
