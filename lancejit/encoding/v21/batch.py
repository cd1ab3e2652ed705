"""Decoding many mini-block chunks at once.

* :func:`parse_chunk_headers` reads every chunk header of a contiguous run of chunks with
  NumPy (no per-chunk Python), checking every size against the chunk's length.
* :func:`fast_values` decodes the values of all chunks in one kernel call when the value
  encoding is plain (flat whole bytes, fixed-size lists of those, uncompressed variable).
* :func:`concat_values` joins per-chunk :mod:`values` results (the general path).

Offsets and sizes are bytes relative to the run buffer; ranges are half-open.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence, TypeVar

import numpy as np

from lancejit.core.errors import CorruptFileError
from lancejit.encoding.kernels import readonly
from lancejit.encoding.v21 import fsst as _fsst
from lancejit.encoding.v21.repdef_kernels import (
    gather_slices,
    gather_variable_chunks,
    unpack_inline_chunks,
    unpack_ool_chunks,
)
from lancejit.encoding.v21.values import (
    DecodedValues,
    FixedSizeListValues,
    FixedWidth,
    StructValues,
    VariableWidth,
)

ALIGN = 8

_V = TypeVar("_V", FixedWidth, VariableWidth, FixedSizeListValues, StructValues)


def _align(a: np.ndarray) -> np.ndarray:
    return (a + (ALIGN - 1)) & ~np.int64(ALIGN - 1)


@dataclass(frozen=True, slots=True)
class ChunkHeaders:
    """Per-chunk layout of a run of chunks (arrays indexed by chunk).

    ``rep``/``def_``: ``(offset, size)`` arrays or None; ``bufs``: list over value buffers of
    ``(offset, size)`` arrays.
    """

    num_levels: np.ndarray
    rep: tuple[np.ndarray, np.ndarray] | None
    def_: tuple[np.ndarray, np.ndarray] | None
    bufs: list[tuple[np.ndarray, np.ndarray]]


def _read_uint(data: np.ndarray, offs: np.ndarray, width: int) -> np.ndarray:
    out = np.zeros(offs.size, dtype=np.int64)
    for b in range(width):
        out |= data[offs + b].astype(np.int64) << (8 * b)
    return out


def parse_chunk_headers(
    data: np.ndarray,
    starts: np.ndarray,
    sizes: np.ndarray,
    *,
    has_rep: bool,
    has_def: bool,
    num_buffers: int,
    large: bool,
    path: str,
) -> ChunkHeaders:
    """Parse the headers of chunks at ``starts`` (``sizes`` bytes each) inside ``data``."""
    szw = 4 if large else 2
    header = 2 + 2 * has_rep + 2 * has_def + szw * num_buffers
    if starts.size and (np.any(sizes < header) or int((starts + sizes).max()) > data.size):
        raise CorruptFileError("mini-block chunk shorter than its header", path=path)
    num_levels = _read_uint(data, starts, 2)
    pos = 2
    rep_size = def_size = None
    if has_rep:
        rep_size = _read_uint(data, starts + pos, 2)
        pos += 2
    if has_def:
        def_size = _read_uint(data, starts + pos, 2)
        pos += 2
    buf_sizes = []
    for _ in range(num_buffers):
        buf_sizes.append(_read_uint(data, starts + pos, szw))
        pos += szw
    cur = starts + ((pos + ALIGN - 1) // ALIGN) * ALIGN
    ends = starts + sizes
    rep: tuple[np.ndarray, np.ndarray] | None = None
    def_: tuple[np.ndarray, np.ndarray] | None = None

    def take(size: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        nonlocal cur
        off = cur
        end = off + size
        if np.any(end > ends):
            raise CorruptFileError("mini-block buffer runs past its chunk", path=path)
        cur = _align(end)
        return off, size

    if rep_size is not None:
        rep = take(rep_size)
    if def_size is not None:
        def_ = take(def_size)
    bufs = [take(s) for s in buf_sizes]
    return ChunkHeaders(num_levels, rep, def_, bufs)


def plain_width_bits(enc: Any) -> int | None:
    """Bits per value when ``enc`` is plain fixed width (flat whole bytes or bools without
    buffer compression, or fixed-size lists of those without validity); else None."""
    mult = 1
    while enc is not None and enc.WhichOneof("compression") == "fixed_size_list":
        fsl = enc.fixed_size_list
        if fsl.has_validity:
            return None
        mult *= int(fsl.items_per_value)
        enc = fsl.values
    if enc is None or enc.WhichOneof("compression") != "flat":
        return None
    flat = enc.flat
    if flat.HasField("data") and flat.data.scheme:
        return None
    bits = int(flat.bits_per_value)
    if bits == 1 and mult == 1:
        return 1
    if bits <= 0 or bits % 8:
        return None
    return bits * mult


def plain_variable_width(enc: Any) -> int | None:
    """Offset width in bytes when ``enc`` is an uncompressed mini-block Variable, else None."""
    if enc is None or enc.WhichOneof("compression") != "variable":
        return None
    var = enc.variable
    if var.HasField("values") and var.values.scheme:
        return None
    off = var.offsets
    if off.WhichOneof("compression") != "flat" or (off.flat.HasField("data") and off.flat.data.scheme):
        return None
    bits = int(off.flat.bits_per_value)
    return bits // 8 if bits in (32, 64) else None


def _wrap_plain(enc: Any, data: np.ndarray, bits: int, n: int) -> DecodedValues:
    """Plain bytes -> FixedWidth, or nested FixedSizeListValues mirroring ``enc``."""
    dims = []
    e = enc
    while e.WhichOneof("compression") == "fixed_size_list":
        dims.append(int(e.fixed_size_list.items_per_value))
        e = e.fixed_size_list.values
    inner_bits = int(e.flat.bits_per_value)
    total = n
    for d in dims:
        total *= d
    out: DecodedValues = FixedWidth(data, inner_bits, total)
    counts = [n]
    for d in dims[:-1]:
        counts.append(counts[-1] * d)
    for d, c in zip(reversed(dims), reversed(counts)):
        out = FixedSizeListValues(out, d, None, c)
    return out


def fast_values(
    enc: Any, data: np.ndarray, hdr: ChunkHeaders, counts: np.ndarray, *, path: str
) -> DecodedValues | None:
    """All chunks' values in one call for plain encodings; None when no fast path applies."""
    if len(hdr.bufs) != 1:
        return None
    offs, sizes = hdr.bufs[0]
    n = int(counts.sum())
    bits = plain_width_bits(enc)
    if bits is not None:
        if bits == 1:
            if counts.size > 1 and np.any(counts[:-1] % 8):
                return None
            lens = (counts + 7) // 8
        else:
            lens = counts * (bits // 8)
        if np.any(lens > sizes):
            raise CorruptFileError("flat chunk buffer shorter than its values", path=path)
        out = np.empty(int(lens.sum()), dtype=np.uint8)
        if gather_slices(data, offs.astype(np.int64), lens.astype(np.int64), out) < 0:
            raise CorruptFileError("flat chunk buffer outside the page", path=path)
        if bits == 1:
            return FixedWidth(out, 1, n)
        return _wrap_plain(enc, out, bits, n)
    var = _plain_variable(enc, data, offs, sizes, counts, n, path)
    if var is not None:
        return var
    kind = enc.WhichOneof("compression")
    if kind == "inline_bitpacking":
        return _inline_bitpacked(enc, data, offs, sizes, counts, n, path)
    if kind == "fsst":
        return fsst_values(enc, data, hdr, counts, None, path=path)
    return None


def fsst_values(
    enc: Any, data: np.ndarray, hdr: ChunkHeaders, counts: np.ndarray, pick: np.ndarray | None, *, path: str
) -> DecodedValues | None:
    """FSST values of all chunks (``pick`` None) or only the values at sorted indices ``pick``
    (counted across the chunks), decoded from the chunk buffers in one pass; None when ``enc``
    is not FSST over an uncompressed Variable with one value buffer."""
    if len(hdr.bufs) != 1 or enc.WhichOneof("compression") != "fsst":
        return None
    width = plain_variable_width(enc.fsst.values)
    if width is None:
        return None
    offs, sizes = hdr.bufs[0]
    table = _fsst.parse_symbol_table(enc.fsst.symbol_table, path=path)
    return _fsst.decode_chunk_values(table, data, offs, sizes, counts, width, pick, path=path)


def _plain_variable(enc, data, offs, sizes, counts, n, path) -> VariableWidth | None:
    width = plain_variable_width(enc)
    if width is None:
        return None
    out_offsets = np.empty(n + 1, dtype=np.int64)
    out_data = np.empty(int(sizes.sum()), dtype=np.uint8)
    total, err = gather_variable_chunks(
        data, offs.astype(np.int64), sizes.astype(np.int64), counts.astype(np.int64), width, out_offsets, out_data
    )
    if err:
        raise CorruptFileError("variable chunk offsets out of order or out of bounds", path=path)
    return VariableWidth(out_offsets, out_data[:total], n)


_WORD_DTYPES = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}


def _inline_bitpacked(enc, data, offs, sizes, counts, n, path) -> FixedWidth | None:
    ib = enc.inline_bitpacking
    if ib.HasField("values") and ib.values.scheme:
        return None
    bits = int(ib.uncompressed_bits_per_value)
    dt = _WORD_DTYPES.get(bits)
    if dt is None:
        return None
    ws = bits // 8
    if np.any(offs % ws) or np.any(counts > 1024):
        return None
    if data.ctypes.data % 8:
        data = data.copy()
    words = readonly(data[: data.size - data.size % ws].view(dt))  # (one specialization per word size)
    out = np.empty(n, dtype=dt)
    tmp = np.empty(1024, dtype=dt)
    err = unpack_inline_chunks(
        words, (offs // ws).astype(np.int64), ((offs + sizes) // ws).astype(np.int64), counts.astype(np.int64), out, tmp
    )
    if err:
        raise CorruptFileError("inline bit-packed chunk has an invalid width or size", path=path)
    return FixedWidth(out.view(np.uint8), bits, n)


def _same_kind(parts: Sequence[DecodedValues], kind: type[_V]) -> list[_V]:
    """``parts``, each checked to be a ``kind``."""
    same = [p for p in parts if isinstance(p, kind)]
    if len(same) != len(parts):
        raise CorruptFileError("chunks decoded to different value kinds")
    return same


def concat_values(parts: Sequence[DecodedValues]) -> DecodedValues:
    """Concatenate decoded values of the same shape, in order."""
    if len(parts) == 1:
        return parts[0]
    first = parts[0]
    n = sum(p.num_values for p in parts)
    if isinstance(first, FixedWidth):
        bits = first.bits_per_value
        fixed = _same_kind(parts, FixedWidth)
        if any(p.bits_per_value != bits for p in fixed):
            raise CorruptFileError("chunks decoded to different value widths")
        if bits == 1:
            bools = np.concatenate(
                [np.unpackbits(p.data, bitorder="little")[: p.num_values] for p in fixed]
            )
            return FixedWidth(np.packbits(bools, bitorder="little"), 1, n)
        w = bits // 8
        return FixedWidth(np.concatenate([p.data[: p.num_values * w] for p in fixed]), bits, n)
    if isinstance(first, VariableWidth):
        datas, offs, base = [], [np.zeros(1, np.int64)], 0
        for v in _same_kind(parts, VariableWidth):
            o = np.asarray(v.offsets, dtype=np.int64)
            datas.append(v.data[o[0] : o[-1]])
            offs.append(o[1:] - o[0] + base)
            base += int(o[-1] - o[0])
        return VariableWidth(np.concatenate(offs), np.concatenate(datas) if datas else np.zeros(0, np.uint8), n)
    if isinstance(first, FixedSizeListValues):
        lists = _same_kind(parts, FixedSizeListValues)
        items = concat_values([p.items for p in lists])
        validity = None
        if any(p.validity is not None for p in lists):
            masks = []
            for p in lists:
                m = p.num_values * p.dimension
                if p.validity is None:
                    masks.append(np.ones(m, dtype=np.uint8))
                else:
                    masks.append(np.unpackbits(p.validity, bitorder="little")[:m])
            validity = np.packbits(np.concatenate(masks), bitorder="little")
        return FixedSizeListValues(items, first.dimension, validity, n)
    if isinstance(first, StructValues):
        structs = _same_kind(parts, StructValues)
        kids = tuple(concat_values([p.children[i] for p in structs]) for i in range(len(first.children)))
        return StructValues(kids, n)
    raise CorruptFileError(f"cannot concatenate {type(first).__name__}")


def batch_levels(enc: Any, data: np.ndarray, offs: np.ndarray, sizes: np.ndarray, counts: np.ndarray, *, path: str) -> np.ndarray | None:
    """Rep or def levels of all chunks (uint16, concatenated) in one kernel call when ``enc`` is
    16-bit out-of-line or inline bit-packing without buffer compression; else None."""
    kind = enc.WhichOneof("compression")
    n = int(counts.sum())
    if kind == "out_of_line_bitpacking":
        ool = enc.out_of_line_bitpacking
        if int(ool.uncompressed_bits_per_value) != 16:
            return None
        v = ool.values
        if v.WhichOneof("compression") != "flat" or (v.flat.HasField("data") and v.flat.data.scheme):
            return None
        width = int(v.flat.bits_per_value)
        if width < 0 or width > 16:
            raise CorruptFileError(f"out-of-line level width {width}", path=path)
        if np.any(offs % 2) or np.any(sizes % 2):
            return None
        if data.ctypes.data % 8:
            data = data.copy()
        words = readonly(data[: data.size - data.size % 2].view(np.uint16))
        out = np.empty(n, dtype=np.uint16)
        tmp = np.empty(1024, dtype=np.uint16)
        err = unpack_ool_chunks(
            words, (offs // 2).astype(np.int64), ((offs + sizes) // 2).astype(np.int64), counts.astype(np.int64), width, out, tmp
        )
        if err:
            raise CorruptFileError("out-of-line bit-packed levels truncated", path=path)
        return out
    if kind == "inline_bitpacking":
        if int(enc.inline_bitpacking.uncompressed_bits_per_value) != 16:
            return None
        fw = _inline_bitpacked(enc, data, offs, sizes, counts, n, path)
        return None if fw is None else fw.data.view(np.uint16)
    return None


def picked_values(
    enc: Any, data: np.ndarray, hdr: ChunkHeaders, counts: np.ndarray, pick: np.ndarray, *, path: str
) -> DecodedValues | None:
    """Only the values at sorted indices ``pick`` (counted across the chunks) for FSST and
    plain whole-byte encodings, read straight from the chunk buffers; None otherwise."""
    total = int(counts.sum())
    if pick.size and (int(pick[0]) < 0 or int(pick[-1]) >= total):
        raise CorruptFileError("selected values outside the chunks", path=path)
    got = fsst_values(enc, data, hdr, counts, pick, path=path)
    if got is not None or len(hdr.bufs) != 1:
        return got
    bits = plain_width_bits(enc)
    if bits is None or bits == 1:
        return None
    w = bits // 8
    offs, sizes = hdr.bufs[0]
    if np.any(counts * w > sizes):
        raise CorruptFileError("flat chunk buffer shorter than its values", path=path)
    base = np.zeros(counts.size + 1, dtype=np.int64)
    np.cumsum(counts, out=base[1:])
    chunk = np.searchsorted(base, pick, side="right") - 1
    pos = offs[chunk].astype(np.int64) + (pick - base[chunk]) * w
    out = np.empty(pick.size * w, dtype=np.uint8)
    if gather_slices(data, pos, np.full(pick.size, w, dtype=np.int64), out) < 0:
        raise CorruptFileError("flat chunk buffer outside the page", path=path)
    return _wrap_plain(enc, out, bits, int(pick.size))
