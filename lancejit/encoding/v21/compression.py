"""Decoders for 2.1/2.2 ``lance.encodings21.CompressiveEncoding`` messages.

Four contexts, matching how the structural layouts store values:

* mini-block: :func:`decode_miniblock` gets the value buffers of one chunk (rep/def excluded),
  exactly as sliced by the chunk header sizes;
* block: :func:`decode_block` gets one whole buffer (a dictionary, block rep/def levels);
  :func:`decode_levels` is the rep/def convenience on top of it;
* full-zip fixed: :func:`decode_fullzip_fixed` gets the concatenated fixed-size values
  (control words already removed), :func:`bytes_per_value` tells their size;
* full-zip variable: :func:`decode_fullzip_variable` gets the per-value payloads.

Every length, offset and bit width read from the data is checked here before any kernel runs;
malformed input raises :class:`CorruptFileError` carrying ``path``, unsupported encodings
:class:`NotSupportedError`.  Returned arrays never alias the input buffers (the one exception:
:func:`decode_fullzip_variable` of a plain ``variable`` encoding returns its argument unchanged).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from lancejit.core.bounds import claim_items, word_bits
from lancejit.core.errors import CorruptFileError, NotSupportedError
from lancejit.encoding.kernels import readonly
from lancejit.encoding.kernels.bss import bss_join
from lancejit.encoding.kernels.rle import rle_expand
from lancejit.encoding.v21 import fsst as _fsst
from lancejit.encoding.v21.bitpacking import unpack_inline, unpack_out_of_line
from lancejit.encoding.v21.general import decompress_buffer
from lancejit.encoding.v21.packed import decode_variable_packed, split_packed_rows
from lancejit.encoding.v21.values import (
    DecodedValues,
    FixedSizeListValues,
    FixedWidth,
    VariableWidth,
)
from lancejit.pb.encodings_v2_1_pb2 import CompressiveEncoding

# A single value wider than this (bits) is certainly a corrupt message.
_MAX_BITS_PER_VALUE = 1 << 34


def _kind(enc, path: str) -> str:
    kind = enc.WhichOneof("compression") if enc is not None else None
    if kind is None:
        raise CorruptFileError("compressive encoding has no compression set", path=path)
    return kind


def _u8(buf) -> np.ndarray:
    """A uint8 view of a memoryview/bytes/array (no copy)."""
    if isinstance(buf, np.ndarray):
        return buf.view(np.uint8) if buf.dtype != np.uint8 else buf
    return np.frombuffer(buf, dtype=np.uint8)


def _check_bits(bits: int, path: str) -> int:
    bits = int(bits)
    if bits < 0 or bits > _MAX_BITS_PER_VALUE or (bits % 8 and bits != 1):
        raise CorruptFileError(f"invalid bits_per_value {bits}", path=path)
    return bits


def _fixed_nbytes(bits: int, n: int) -> int:
    return (bits * n + 7) // 8


def _flat(bits: int, buf: np.ndarray, n: int, path: str) -> FixedWidth:
    bits = _check_bits(bits, path)
    need = _fixed_nbytes(bits, n)
    if len(buf) < need:
        raise CorruptFileError(
            f"flat buffer of {len(buf)} bytes too short for {n} values of {bits} bits", path=path
        )
    return FixedWidth(buf[:need], bits, n)  # a view: read buffers are immutable and kept alive


def _flat_enc(enc, buf: np.ndarray, n: int, path: str) -> FixedWidth:
    flat = enc.flat
    if flat.HasField("data") and flat.data.scheme:
        buf = decompress_buffer(flat.data.scheme, buf, path=path)
    return _flat(flat.bits_per_value, buf, n, path)


def _inner_flat_bits(enc, what: str, path: str) -> int:
    if enc is None or enc.WhichOneof("compression") != "flat":
        raise NotSupportedError(f"{path}: {what} must wrap a flat encoding")
    return int(enc.flat.bits_per_value)


def _constant(enc, n: int, path: str) -> FixedWidth:
    const = enc.constant
    if not const.HasField("value"):
        return FixedWidth(np.zeros(0, dtype=np.uint8), 0, n)
    value = np.frombuffer(const.value, dtype=np.uint8)
    return FixedWidth(np.tile(value, n), 8 * len(value), n)


def _check_offsets(offsets: np.ndarray, lo: int, hi: int, path: str) -> None:
    """Offsets must be non-decreasing and lie in ``[lo, hi]``."""
    if len(offsets) == 0:
        raise CorruptFileError("empty offsets", path=path)
    if offsets[0] < lo or offsets[-1] > hi or (len(offsets) > 1 and np.any(np.diff(offsets) < 0)):
        raise CorruptFileError(
            f"offsets out of order or outside [{lo}, {hi}]", path=path
        )


def _no_buffer_compression(msg, field: str, what: str, path: str) -> None:
    """Reject a set-but-unknown per-buffer compression rather than misreading the bytes."""
    if msg.HasField(field) and getattr(msg, field).scheme:
        raise NotSupportedError(f"{path}: {what} with buffer compression {getattr(msg, field).scheme}")


def _variable_miniblock(enc, buf: np.ndarray, n: int, path: str, *, copy: bool = True) -> VariableWidth:
    """Mini-block Variable: ``n + 1`` u32/u64 offsets that are byte positions inside ``buf``.

    With ``copy=False`` the result indexes ``buf`` itself (offsets absolute, no copy); used when
    another decoder (FSST) consumes the bytes immediately.
    """
    _no_buffer_compression(enc.variable, "values", "variable encoding", path)
    bits = _inner_flat_bits(enc.variable.offsets, "variable offsets", path)
    if bits not in (32, 64):
        raise CorruptFileError(f"variable offsets of {bits} bits", path=path)
    w = bits // 8
    if len(buf) < (n + 1) * w:
        raise CorruptFileError(f"variable chunk of {len(buf)} bytes too short for {n} offsets", path=path)
    dt = np.dtype("<u4") if w == 4 else np.dtype("<u8")
    raw = np.frombuffer(buf[: (n + 1) * w].tobytes(), dtype=dt)
    if w == 8 and raw.max(initial=0) > np.iinfo(np.int64).max:
        raise CorruptFileError("variable offset overflows int64", path=path)
    offsets = raw.astype(np.int64)
    _check_offsets(offsets, (n + 1) * w, len(buf), path)
    if not copy:
        return VariableWidth(offsets, buf, n)
    data = buf[offsets[0] : offsets[-1]]  # a view (read buffers are immutable)
    return VariableWidth(offsets - offsets[0], data, n)


def _variable_block(buf: np.ndarray, n: int, path: str) -> VariableWidth:
    if len(buf) < 8:
        raise CorruptFileError(f"variable block of {len(buf)} bytes has no header", path=path)
    bits = int.from_bytes(buf[:4].tobytes(), "little")
    dt: np.dtype
    if bits == 32:
        hdr, dt = 8, np.dtype("<u4")
        start = int.from_bytes(buf[4:8].tobytes(), "little")
    elif bits == 64:
        if len(buf) < 16:
            raise CorruptFileError("variable block truncated header", path=path)
        hdr, dt = 16, np.dtype("<u8")
        start = int.from_bytes(buf[8:16].tobytes(), "little")
    else:
        raise CorruptFileError(f"variable block header says {bits} bits per offset", path=path)
    if start != hdr + (n + 1) * dt.itemsize or start > len(buf):
        raise CorruptFileError(
            f"variable block data start {start} does not match {n} values ({len(buf)} bytes)", path=path
        )
    raw = np.frombuffer(buf[hdr:start].tobytes(), dtype=dt)
    if dt.itemsize == 8 and raw.max(initial=0) > np.iinfo(np.int64).max:
        raise CorruptFileError("variable offset overflows int64", path=path)
    offsets = raw.astype(np.int64)
    data = buf[start:]
    _check_offsets(offsets, 0, len(data), path)
    return VariableWidth(offsets - offsets[0], data[offsets[0] : offsets[-1]], n)


def _rle(enc, values_buf: np.ndarray, lengths_buf: np.ndarray, n: int, path: str) -> FixedWidth:
    rle = enc.rle
    bits = _check_bits(_inner_flat_bits(rle.values, "rle values", path), path)
    word_bits(_inner_flat_bits(rle.run_lengths, "rle run lengths", path), (8,), "rle run lengths", path)
    if bits % 8 or bits == 0:
        raise CorruptFileError(f"rle values of {bits} bits", path=path)
    w = bits // 8
    nruns = len(values_buf) // w
    if len(values_buf) % w or len(lengths_buf) < nruns:
        raise CorruptFileError(
            f"rle buffers disagree: {len(values_buf)} value bytes, {len(lengths_buf)} lengths", path=path
        )
    lengths = readonly(lengths_buf[:nruns], np.uint8)
    if int(lengths.sum(dtype=np.int64)) < n:
        raise CorruptFileError(f"rle runs cover fewer than {n} values", path=path)
    out = np.empty(n * w, dtype=np.uint8)
    rle_expand(readonly(values_buf, np.uint8), w, lengths, nruns, n, out)
    return FixedWidth(out, bits, n)


def _bss(enc, buf: np.ndarray, n: int, path: str) -> FixedWidth:
    bits = _check_bits(_inner_flat_bits(enc.byte_stream_split.values, "byte stream split", path), path)
    if bits % 8 or bits == 0:
        raise CorruptFileError(f"byte stream split of {bits}-bit values", path=path)
    w = bits // 8
    if len(buf) < n * w:
        raise CorruptFileError(f"byte stream split buffer of {len(buf)} bytes too short", path=path)
    out = np.empty(n * w, dtype=np.uint8)
    bss_join(readonly(buf, np.uint8), n, w, out)
    return FixedWidth(out, bits, n)


def _fsst_table(enc, path: str) -> _fsst.SymbolTable:
    return _fsst.parse_symbol_table(enc.fsst.symbol_table, path=path)


def _expect_variable(v: DecodedValues, what: str, path: str) -> VariableWidth:
    if not isinstance(v, VariableWidth):
        raise CorruptFileError(f"{what} did not decode to variable-width values", path=path)
    return v


def _fsl_layers(enc: CompressiveEncoding) -> tuple[list[tuple[int, bool]], CompressiveEncoding]:
    """[(dimension, has_validity) outermost first], innermost non-FSL encoding."""
    layers = []
    while enc is not None and enc.WhichOneof("compression") == "fixed_size_list":
        layers.append((int(enc.fixed_size_list.items_per_value), bool(enc.fixed_size_list.has_validity)))
        enc = enc.fixed_size_list.values
    return layers, enc


def _check_dims(layers, path: str) -> None:
    for dim, _ in layers:
        if dim <= 0 or dim > (1 << 31):
            raise CorruptFileError(f"fixed size list dimension {dim}", path=path)


def _wrap_fsl(layers, items: DecodedValues, validities: list, n: int) -> DecodedValues:
    """Rebuild nested FixedSizeListValues from the innermost items outward."""
    counts = [n]
    for dim, _ in layers[:-1]:
        counts.append(counts[-1] * dim)
    out = items
    for (dim, _), validity, count in zip(reversed(layers), reversed(validities), reversed(counts)):
        out = FixedSizeListValues(out, dim, validity, count)
    return out


def _bitmap(buf: np.ndarray, nbits: int, path: str) -> np.ndarray:
    need = (nbits + 7) // 8
    if len(buf) < need:
        raise CorruptFileError(f"validity bitmap of {len(buf)} bytes for {nbits} items", path=path)
    return buf[:need]


# ---------------------------------------------------------------------------------------------
# mini-block


def decode_miniblock(
    enc: CompressiveEncoding, buffers: Sequence, num_values: int, *, path: str
) -> DecodedValues:
    """Decode the value buffers of one mini-block chunk holding ``num_values`` values.

    ``buffers``: the chunk's value buffers in order (``MiniBlockLayout.num_buffers`` of them,
    rep/def excluded), each exactly as long as its size in the chunk header.
    """
    kind = _kind(enc, path)
    bufs = [_u8(b) for b in buffers]
    n = int(num_values)

    def one() -> np.ndarray:
        if len(bufs) < 1:
            raise CorruptFileError(f"{kind} mini-block chunk has no value buffer", path=path)
        return bufs[0]

    if kind == "flat":
        return _flat_enc(enc, one(), n, path)
    if kind == "variable":
        return _variable_miniblock(enc, one(), n, path)
    if kind == "constant":
        return _constant(enc, n, path)
    if kind == "inline_bitpacking":
        _no_buffer_compression(enc.inline_bitpacking, "values", "inline bitpacking", path)
        bits = int(enc.inline_bitpacking.uncompressed_bits_per_value)
        vals = unpack_inline(one(), bits, n, path=path)
        return FixedWidth(vals.view(np.uint8), bits, n)
    if kind == "out_of_line_bitpacking":
        return _out_of_line(enc, one(), n, path)
    if kind == "fsst":
        table = _fsst_table(enc, path)
        inner: DecodedValues
        if enc.fsst.values.WhichOneof("compression") == "variable" and table.enabled:
            inner = _variable_miniblock(enc.fsst.values, one(), n, path, copy=False)
        else:
            inner = decode_miniblock(enc.fsst.values, bufs, n, path=path)
        return _fsst.decode_values(table, _expect_variable(inner, "fsst values", path), path=path)
    if kind == "rle":
        if n == 0:
            return FixedWidth(np.zeros(0, np.uint8), _inner_flat_bits(enc.rle.values, "rle values", path), 0)
        if len(bufs) < 2:
            raise CorruptFileError("rle mini-block chunk needs 2 buffers", path=path)
        return _rle(enc, bufs[0], bufs[1], n, path)
    if kind == "byte_stream_split":
        return _bss(enc, one(), n, path)
    if kind == "general":
        comp = enc.general.compression
        first = decompress_buffer(comp.scheme, one(), path=path)
        return decode_miniblock(enc.general.values, [first, *bufs[1:]], n, path=path)
    if kind == "fixed_size_list":
        layers, fsl_inner = _fsl_layers(enc)
        _check_dims(layers, path)
        nvalid = sum(1 for _, v in layers if v)
        if len(bufs) < nvalid + 1:
            raise CorruptFileError(f"fixed size list chunk needs {nvalid + 1} buffers", path=path)
        validities: list[np.ndarray | None] = []
        count, vi = n, 0
        for dim, has_validity in layers:
            count *= dim
            if has_validity:
                validities.append(_bitmap(bufs[vi], count, path))
                vi += 1
            else:
                validities.append(None)
        items = decode_miniblock(fsl_inner, bufs[nvalid:], count, path=path)
        return _wrap_fsl(layers, items, validities, n)
    if kind == "packed_struct":
        ps = enc.packed_struct
        rows = decode_miniblock(ps.values, bufs, n, path=path)
        return split_packed_rows(rows, list(ps.bits_per_value), path=path)
    if kind == "dictionary":
        raise NotSupportedError(f"{path}: a Dictionary compressive encoding inside a mini-block chunk")
    raise NotSupportedError(f"{path}: {kind} is not supported in a mini-block chunk")


def _out_of_line(enc, buf: np.ndarray, n: int, path: str) -> FixedWidth:
    ool = enc.out_of_line_bitpacking
    bits = int(ool.uncompressed_bits_per_value)
    width = _inner_flat_bits(ool.values, "out-of-line bitpacking", path)
    vals = unpack_out_of_line(buf, bits, width, n, path=path)
    return FixedWidth(vals.view(np.uint8), bits, n)


# ---------------------------------------------------------------------------------------------
# block


def decode_block(enc: CompressiveEncoding, buffer, num_values: int, *, path: str) -> DecodedValues:
    """Decode one whole buffer holding ``num_values`` values (dictionary items, block levels)."""
    kind = _kind(enc, path)
    buf = _u8(buffer)
    n = int(num_values)
    if kind == "flat":
        return _flat_enc(enc, buf, n, path)
    if kind == "variable":
        _no_buffer_compression(enc.variable, "values", "variable encoding", path)
        return _variable_block(buf, n, path)
    if kind == "constant":
        return _constant(enc, n, path)
    if kind == "inline_bitpacking":
        _no_buffer_compression(enc.inline_bitpacking, "values", "inline bitpacking", path)
        bits = int(enc.inline_bitpacking.uncompressed_bits_per_value)
        vals = unpack_inline(buf, bits, n, path=path)
        return FixedWidth(vals.view(np.uint8), bits, n)
    if kind == "out_of_line_bitpacking":
        return _out_of_line(enc, buf, n, path)
    if kind == "general":
        inner = decompress_buffer(enc.general.compression.scheme, buf, path=path)
        return decode_block(enc.general.values, inner, n, path=path)
    if kind == "rle":
        if len(buf) < 8:
            raise CorruptFileError("block rle buffer has no values length", path=path)
        vlen = int.from_bytes(buf[:8].tobytes(), "little")
        if vlen > len(buf) - 8:
            raise CorruptFileError(f"block rle values length {vlen} exceeds buffer", path=path)
        return _rle(enc, buf[8 : 8 + vlen], buf[8 + vlen :], n, path)
    if kind == "byte_stream_split":
        return _bss(enc, buf, n, path)
    if kind == "fsst":
        compressed = _expect_variable(decode_block(enc.fsst.values, buf, n, path=path), "fsst values", path)
        return _fsst.decode_values(_fsst_table(enc, path), compressed, path=path)
    if kind in ("fixed_size_list", "packed_struct"):
        return decode_fullzip_fixed(enc, buf, n, path=path)
    raise NotSupportedError(f"{path}: {kind} is not supported as a block encoding")


def decode_levels(
    enc: CompressiveEncoding | None, buffer, num_levels: int, *, path: str
) -> np.ndarray:
    """Decode ``num_levels`` rep or def levels to a new uint16 array.

    ``enc`` None means raw little-endian u16 levels (2.1 all-null pages, 2.2 def without
    compression).
    """
    n = int(num_levels)
    buf = _u8(buffer)
    if enc is None or enc.WhichOneof("compression") is None:
        if len(buf) < 2 * n:
            raise CorruptFileError(f"level buffer of {len(buf)} bytes for {n} u16 levels", path=path)
        return np.frombuffer(buf[: 2 * n].tobytes(), dtype="<u2").astype(np.uint16)
    vals = decode_block(enc, buf, n, path=path)
    if not isinstance(vals, FixedWidth):
        raise CorruptFileError("levels did not decode to fixed-width values", path=path)
    if vals.bits_per_value == 0:  # constant without a value
        return np.zeros(n, dtype=np.uint16)
    dt = {8: "<u1", 16: "<u2", 32: "<u4", 64: "<u8"}.get(vals.bits_per_value)
    if dt is None:
        raise CorruptFileError(f"levels of {vals.bits_per_value} bits", path=path)
    out = vals.view(dt)
    if out.dtype.itemsize > 2 and len(out) and out.max() > 0xFFFF:
        raise CorruptFileError("level value exceeds u16", path=path)
    return out.astype(np.uint16)


# ---------------------------------------------------------------------------------------------
# full-zip


def bytes_per_value(enc: CompressiveEncoding) -> int | None:
    """Size in bytes of one full-zip value (validity bytes included), None if variable width."""
    kind = enc.WhichOneof("compression") if enc is not None else None
    if kind == "flat":
        bits = int(enc.flat.bits_per_value)
        return bits // 8 if bits % 8 == 0 else None
    if kind == "constant":
        return len(enc.constant.value) if enc.constant.HasField("value") else 0
    if kind == "packed_struct":
        return sum(int(b) for b in enc.packed_struct.bits_per_value) // 8
    if kind == "fixed_size_list":
        layers, inner = _fsl_layers(enc)
        item = bytes_per_value(inner)
        if item is None:
            return None
        total, cum = 0, 1
        for dim, has_validity in layers:
            cum *= dim
            if has_validity:
                total += (cum + 7) // 8
        return total + item * cum
    return None


def decode_fullzip_fixed(enc: CompressiveEncoding, data, num_values: int, *, path: str) -> DecodedValues:
    """Decode ``num_values`` concatenated fixed-width full-zip values (``bytes_per_value`` each)."""
    kind = _kind(enc, path)
    buf = _u8(data)
    n = int(num_values)
    if kind == "flat":
        return _flat_enc(enc, buf, n, path)
    if kind == "constant":
        return _constant(enc, n, path)
    if kind == "packed_struct":
        ps = enc.packed_struct
        rows = decode_fullzip_fixed(ps.values, buf, n, path=path)
        return split_packed_rows(rows, list(ps.bits_per_value), path=path)
    if kind == "fixed_size_list":
        layers, inner = _fsl_layers(enc)
        _check_dims(layers, path)
        row_bytes = bytes_per_value(enc)
        item_bytes = bytes_per_value(inner)
        if row_bytes is None or item_bytes is None:
            cum = int(np.prod([dim for dim, _ in layers], dtype=np.int64)) if layers else 1
            item_bits = inner.flat.bits_per_value if _kind(inner, path) == "flat" else 1
            claim_items(n * cum, item_bits, len(buf), "full-zip fixed size list items", path)
            raise NotSupportedError(f"{path}: full-zip fixed size list of non byte-aligned items")
        if len(buf) < row_bytes * n:
            raise CorruptFileError(f"full-zip buffer of {len(buf)} bytes too short for {n} rows", path=path)
        cum = 1
        for dim, _ in layers:
            cum *= dim
        if not any(v for _, v in layers):
            items = decode_fullzip_fixed(inner, buf[: row_bytes * n], n * cum, path=path)
            return _wrap_fsl(layers, items, [None] * len(layers), n)
        matrix = buf[: row_bytes * n].reshape(n, row_bytes) if n else np.zeros((0, row_bytes), np.uint8)
        validities: list[np.ndarray | None] = []
        col, count = 0, 1
        for dim, has_validity in layers:
            count *= dim
            if has_validity:
                nb = (count + 7) // 8
                bits = np.unpackbits(matrix[:, col : col + nb], axis=1, bitorder="little")[:, :count]
                validities.append(np.packbits(bits.reshape(-1), bitorder="little"))
                col += nb
            else:
                validities.append(None)
        values = np.ascontiguousarray(matrix[:, col:]).reshape(-1)
        items = decode_fullzip_fixed(inner, values, n * cum, path=path)
        return _wrap_fsl(layers, items, validities, n)
    raise NotSupportedError(f"{path}: {kind} is not supported for fixed-width full-zip values")


def decode_fullzip_variable(
    enc: CompressiveEncoding, values: VariableWidth, *, path: str
) -> DecodedValues:
    """Decode per-value full-zip payloads (``values``: payload i = ``data[offsets[i]:offsets[i+1]]``)."""
    kind = _kind(enc, path)
    _check_offsets(np.asarray(values.offsets), 0, len(values.data), path)
    if len(values.offsets) != values.num_values + 1:
        raise CorruptFileError("full-zip offsets count does not match the value count", path=path)
    if kind == "variable":
        return values
    if kind == "fsst":
        inner = decode_fullzip_variable(enc.fsst.values, values, path=path)
        inner = _expect_variable(inner, "fsst values", path)
        return _fsst.decode_values(_fsst_table(enc, path), inner, path=path)
    if kind == "general":
        scheme = enc.general.compression.scheme
        data = _u8(values.data)
        offs = np.asarray(values.offsets, dtype=np.int64)
        parts = [
            decompress_buffer(scheme, data[offs[i] : offs[i + 1]], path=path)
            for i in range(values.num_values)
        ]
        new_offsets = np.zeros(values.num_values + 1, dtype=np.int64)
        if parts:
            np.cumsum([len(p) for p in parts], out=new_offsets[1:])
        joined = np.concatenate(parts) if parts else np.zeros(0, dtype=np.uint8)
        return VariableWidth(new_offsets, joined, values.num_values)
    if kind == "variable_packed_struct":
        return decode_variable_packed(
            enc.variable_packed_struct, values, decode_fullzip_fixed, decode_fullzip_variable, path=path
        )
    raise NotSupportedError(f"{path}: {kind} is not supported for variable-width full-zip values")


__all__ = [
    "bytes_per_value",
    "decode_block",
    "decode_fullzip_fixed",
    "decode_fullzip_variable",
    "decode_levels",
    "decode_miniblock",
]
