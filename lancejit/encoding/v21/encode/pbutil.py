"""Small constructors for ``CompressiveEncoding`` messages."""

from __future__ import annotations

from lancejit.pb import encodings_v2_1_pb2 as pb21

CE = pb21.CompressiveEncoding


def flat(bits: int) -> CE:
    e = CE()
    e.flat.bits_per_value = bits
    return e


def variable(offset_bits: int) -> CE:
    e = CE()
    e.variable.offsets.CopyFrom(flat(offset_bits))
    return e


def inline_bitpacking(bits: int) -> CE:
    e = CE()
    e.inline_bitpacking.uncompressed_bits_per_value = bits
    return e


def out_of_line_bitpacking(bits: int, width: int) -> CE:
    e = CE()
    e.out_of_line_bitpacking.uncompressed_bits_per_value = bits
    e.out_of_line_bitpacking.values.CopyFrom(flat(width))
    return e


def rle(bits: int) -> CE:
    e = CE()
    e.rle.values.CopyFrom(flat(bits))
    e.rle.run_lengths.CopyFrom(flat(8))
    return e


def bss(bits: int) -> CE:
    e = CE()
    e.byte_stream_split.values.CopyFrom(flat(bits))
    return e


def fsl(dim: int, has_validity: bool, inner: CE) -> CE:
    e = CE()
    e.fixed_size_list.items_per_value = dim
    e.fixed_size_list.has_validity = has_validity
    e.fixed_size_list.values.CopyFrom(inner)
    return e


SCHEMES = {"lz4": pb21.COMPRESSION_ALGORITHM_LZ4, "zstd": pb21.COMPRESSION_ALGORITHM_ZSTD}


def general(scheme: str, level: int | None, inner: CE) -> CE:
    e = CE()
    e.general.compression.scheme = SCHEMES[scheme]
    if level is not None:
        e.general.compression.level = level
    e.general.values.CopyFrom(inner)
    return e


def constant(value: bytes | None = None) -> CE:
    e = CE()
    e.constant.SetInParent()
    if value is not None:
        e.constant.value = value
    return e


def fsst(symbol_table: bytes, inner: CE) -> CE:
    e = CE()
    e.fsst.symbol_table = symbol_table
    e.fsst.values.CopyFrom(inner)
    return e
