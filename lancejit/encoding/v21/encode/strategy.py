"""Choosing the layout and compression of one page of one leaf column, as the reference does
(``PrimitiveStructuralEncoder::do_flush`` and ``DefaultCompressionStrategy``), honouring the
``lance-encoding:*`` field-metadata keys.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from lancejit.core.errors import InvalidInputError, NotSupportedError
from lancejit.encoding.kernels.enc_gather import gather_var_values

from . import allnull
from . import blocks
from . import general
from . import pbutil
from . import values as V
from .blob import encode_blob
from .fsst import fsst_compress, kernels_ready as fsst_kernels_ready
from .data import (FixedBlock, FslBlock, VarBlock, VarPackedBlock, block_from_arrow, packed_from_arrow,
                   uint_dtype)
from .fullzip import encode_fullzip
from .levels import Levels, LeafSlots, resolve
from .miniblock import encode_miniblock
from .page import EncodedPage
from .stats import as_arrow, bit_widths, cardinality, max_length, run_count

MINIBLOCK_MAX_VALUE_BYTES = 256
FSST_LEAST_INPUT_MAX_LENGTH = 5
FSST_LEAST_INPUT_SIZE = 32 * 1024
DICT_TOO_SMALL = 100
DICT_SIZE_RATIO = 0.8
PER_VALUE_GENERAL_MIN_LEN = 32 * 1024


@dataclass
class FieldParams:
    """Configuration keys of one field (``lance-encoding:<key>`` metadata)."""

    compression: str | None = None
    compression_level: int | None = None
    rle_threshold: float = 0.5
    bss: str = "auto"
    dict_divisor: int | None = None
    dict_size_ratio: float = DICT_SIZE_RATIO
    general: str | None = None
    structural: str | None = None
    blob: bool = False

    @classmethod
    def from_metadata(cls, md: dict[bytes, bytes] | None) -> "FieldParams":
        p = cls()
        if not md:
            return p
        g = {k.decode() if isinstance(k, bytes) else k: (v.decode() if isinstance(v, bytes) else v)
             for k, v in md.items()}
        pre = "lance-encoding:"
        if pre + "compression" in g:
            p.compression = g[pre + "compression"].strip().lower()
            general.parse_scheme(p.compression)  # validate
        if pre + "compression-level" in g:
            try:
                p.compression_level = int(g[pre + "compression-level"])
            except ValueError as e:
                raise InvalidInputError(f"bad compression-level {g[pre + 'compression-level']!r}") from e
        if pre + "rle-threshold" in g:
            p.rle_threshold = float(g[pre + "rle-threshold"])
        if pre + "bss" in g:
            v = g[pre + "bss"].strip().lower()
            if v in ("off", "on", "auto"):
                p.bss = v
        if pre + "dict-divisor" in g:
            p.dict_divisor = int(g[pre + "dict-divisor"])
        if pre + "dict-size-ratio" in g:
            p.dict_size_ratio = float(g[pre + "dict-size-ratio"])
        if pre + "general" in g:
            p.general = g[pre + "general"].strip().lower()
        if g.get(pre + "blob", "").strip().lower() in ("true", "1", "yes", "on"):
            p.blob = True
        if pre + "structural-encoding" in g:
            v = g[pre + "structural-encoding"].strip().lower()
            if v not in ("miniblock", "fullzip"):
                raise InvalidInputError(f"bad structural-encoding {v!r} (miniblock or fullzip)")
            p.structural = v
        return p

    @property
    def scheme(self) -> str | None:
        s = general.parse_scheme(self.compression)
        if s is None and self.general == "on":
            return "zstd"
        return s


# ----------------------------------------------------------------------------------- values


def _bss_auto(block: FixedBlock) -> bool:
    """The reference's heuristic: mean byte-position entropy of the first 64 values < 4 bits."""
    k = block.bits_per_value // 8
    m = min(block.num_values, 64)
    if m == 0:
        return False
    raw = block.data.view(np.uint8)[: m * k].reshape(m, k)
    total = 0.0
    for j in range(k):
        c = np.bincount(raw[:, j], minlength=256)
        p = c[c > 0] / m
        total += int(float(-(p * np.log2(p)).sum()) * 1000.0)
    return total / k / 1000.0 < 4.0


def _chunks_size(c: V.MiniChunks) -> int:
    return c.total_bytes()


def _fixed_value_chunks(block: FixedBlock, params: FieldParams, is_float: bool,
                        smaller_of_rle: bool = False) -> V.MiniChunks:
    """``smaller_of_rle``: when RLE qualifies, keep it only if smaller than bit-packing (used for
    dictionary indices of pages with nulls, where the null slots' placeholder indices would
    otherwise make RLE look attractive)."""
    bits = block.bits_per_value
    if params.compression == "none":
        return V.flat_chunks(block)
    scheme = params.scheme
    base = None
    if scheme is not None and bits in (32, 64) and params.bss != "off":
        if params.bss == "on" or _bss_auto(block):
            base = V.bss_chunks(block)
    if base is None and bits in (8, 16, 32, 64):
        words = block.data[: block.num_values]
        if run_count(words) < block.num_values * params.rle_threshold:
            base = V.rle_chunks(block)
            if smaller_of_rle:
                alt = _fixed_value_chunks(block, FieldParams(rle_threshold=0.0, compression=params.compression),
                                          is_float)
                if _chunks_size(alt) < _chunks_size(base):
                    base = alt
        else:
            widths = bit_widths(words)
            too_small = len(widths) == 1 and (1024 * int(widths[0]) + 7) // 8 >= block.nbytes()
            full = bool((widths >= bits).all())
            if not too_small and not full:
                base = V.inline_bitpack_chunks(block, widths)
    if base is None:
        base = V.flat_chunks(block)
    if scheme is not None:
        base = V.wrap_general(base, scheme, params.compression_level)
    return base


def _use_fsst(block: VarBlock, params: FieldParams, is_text: bool) -> bool:
    """FSST for this page?  Asked for, or (as pylance 14, which applies it to utf8 pages
    only, never on its own to binary ones) text with long enough values and enough bytes."""
    if params.compression == "none":
        return False
    if params.compression == "fsst":
        return True
    if params.scheme is not None:
        return False  # pylance 14: general compression replaces FSST
    if not is_text:
        return False
    # the reference's DataSize statistic counts the offsets too
    data_size = block.nbytes() + block.offsets.dtype.itemsize * (block.num_values + 1)
    return (block.max_length() >= FSST_LEAST_INPUT_MAX_LENGTH and data_size >= FSST_LEAST_INPUT_SIZE
            and fsst_kernels_ready())


def _variable_value_chunks(block: VarBlock, params: FieldParams, is_text: bool) -> V.MiniChunks:
    if _use_fsst(block, params, is_text):
        comp, table = fsst_compress(block)
        base = V.variable_chunks(comp)
        base.encoding = pbutil.fsst(table, base.encoding)
    else:
        base = V.variable_chunks(block)
    scheme = params.scheme
    if scheme is not None and params.compression != "none":
        base = V.wrap_general(base, scheme, params.compression_level)
    return base


# ----------------------------------------------------------------------------------- dictionary


def _non_null_block(block, nulls: np.ndarray | None):
    """The block restricted to non-null values (statistics ignore null placeholders)."""
    if nulls is None or not nulls.any():
        return block
    keep = np.flatnonzero(~nulls)
    if isinstance(block, FixedBlock):
        if block.bits_per_value in (8, 16, 32, 64):
            return FixedBlock(block.data[: block.num_values][keep], block.bits_per_value, keep.size)
        k = block.bits_per_value // 8
        rows = block.data[: block.num_values * k].reshape(block.num_values, k)[keep]
        return FixedBlock(rows.reshape(-1), block.bits_per_value, keep.size)
    data, offs = gather_var_values(block.data, block.offsets[: block.num_values + 1], keep)
    return VarBlock(offs.astype(block.offsets.dtype), data, keep.size)


DICT_SAMPLE = 4096
DEFAULT_DICT_DIVISOR = 2


def _sample_distinct_ok(block, nulls: np.ndarray | None, divisor: float) -> bool:
    """Distinct non-null values among the first 4096 slots < 4096 / divisor (pylance 14's
    cardinality test, reproduced from its choices; ``lance-encoding:dict-divisor``)."""
    m = min(block.num_values, DICT_SAMPLE)
    head: FixedBlock | VarBlock
    if isinstance(block, FixedBlock):
        if block.bits_per_value in (8, 16, 32, 64):
            head = FixedBlock(block.data[:m], block.bits_per_value, m)
        else:
            k = block.bits_per_value // 8
            head = FixedBlock(block.data[: m * k], block.bits_per_value, m)
    else:
        head = VarBlock(block.offsets[: m + 1], block.data, m)
    head = _non_null_block(head, None if nulls is None else nulls[:m])
    if head.num_values == 0:
        return True
    return cardinality(head) < m / divisor


def _should_dict(block, params: FieldParams, version: tuple[int, int],
                 nulls: np.ndarray | None = None) -> bool:
    """Dictionary-encode this page?  As pylance 14: enough rows, few distinct values in the
    first 4096, and the reference's size estimate (dictionary + u32 indices < ratio x raw data,
    over the non-null values)."""
    if isinstance(block, FslBlock) or block.num_values < DICT_TOO_SMALL:
        return False
    if isinstance(block, FixedBlock):
        if block.bits_per_value < 8 or (version < (2, 2) and block.bits_per_value < 128):
            return False
    divisor = params.dict_divisor or DEFAULT_DICT_DIVISOR
    if not _sample_distinct_ok(block, nulls, divisor):
        return False
    if params.dict_divisor is not None:
        return True
    block = _non_null_block(block, nulls)
    data_size = block.nbytes()
    if data_size == 0 or block.num_values == 0:
        return False
    n = block.num_values
    if isinstance(block, FixedBlock) and n * 4 >= params.dict_size_ratio * data_size:
        return False  # even one distinct value would not pay off
    card = cardinality(block)
    if isinstance(block, FixedBlock):
        est = card * (block.bits_per_value // 8) + n * 4
    else:
        width = block.offsets.dtype.itemsize
        avg = data_size // n
        est = card * avg + card * width + n * width
    return est / data_size < params.dict_size_ratio


def _dictionary_encode(block, nulls: np.ndarray | None = None):
    """(u32 indices block, dictionary block); dictionary items in first-seen order.

    Null slots (``nulls``) do not add their placeholder to the dictionary; they index item 0.
    """
    import pyarrow.compute as pc

    arr = as_arrow(block)
    if nulls is not None and nulls.any():
        arr = pa.Array.from_buffers(arr.type, len(arr), [pa.py_buffer(np.packbits(~nulls, bitorder="little"))]
                                    + arr.buffers()[1:])
    enc = pc.dictionary_encode(arr)
    idx = np.asarray(enc.indices.fill_null(0)).astype(np.uint32)
    d = enc.dictionary
    if isinstance(block, FixedBlock):
        raw = block_from_arrow(d)
        assert isinstance(raw, FixedBlock)  # the dictionary has the values' fixed-width type
        if block.bits_per_value in (8, 16, 32, 64):
            dblock = FixedBlock(raw.data.view(uint_dtype(block.bits_per_value)), block.bits_per_value, len(d))
        else:
            dblock = FixedBlock(raw.data, block.bits_per_value, len(d))
        return FixedBlock(idx, 32, block.num_values), dblock
    var = block_from_arrow(d)
    assert isinstance(var, VarBlock)  # the dictionary has the values' variable-width type
    offs = var.offsets.astype(block.offsets.dtype)
    return FixedBlock(idx, 32, block.num_values), VarBlock(offs, var.data, len(d))


# ----------------------------------------------------------------------------------- constant


def _constant_page(block, levels: Levels, values: pa.Array) -> EncodedPage | None:
    """2.2 constant layout when every non-null value is the same (no lists, not vectors)."""
    if levels.rep is not None or isinstance(block, FslBlock) or block.num_values == 0:
        return None
    nulls = levels.value_nulls
    if isinstance(block, FixedBlock):
        if block.bits_per_value == 1:
            v = np.unpackbits(block.data, bitorder="little")[: block.num_values]
            if nulls is not None:
                v = v[~nulls]
            if v.size == 0 or not (v == v[0]).all():
                return None
            return allnull.constant(levels, bytes([int(v[0])]), None)
        k = block.bits_per_value // 8
        rows = block.data.view(np.uint8)[: block.num_values * k].reshape(block.num_values, k)
        if nulls is None and rows.shape[0] > 64 and not (rows[:64] == rows[0]).all():
            return None  # cheap early exit: most pages differ within their first values
        if nulls is not None:
            rows = rows[~nulls]
        if rows.shape[0] == 0 or not (rows == rows[0]).all():
            return None
        val = rows[0].tobytes()
        if pa.types.is_fixed_size_binary(values.type):
            return allnull.constant(levels, None, allnull.scalar_buffers([val]))
        return allnull.constant(levels, val, None)
    offs = block.offsets
    if nulls is None and block.num_values > 64 and not (np.diff(offs[:65]) == offs[1] - offs[0]).all():
        return None  # cheap early exit, as for fixed widths
    lens = block.lengths()
    sel = np.flatnonzero(~nulls) if nulls is not None else np.arange(block.num_values)
    if sel.size == 0:
        return None
    l0 = int(lens[sel[0]])
    if not (lens[sel[:64]] == l0).all() or not (lens[sel] == l0).all():
        return None
    s0 = int(offs[sel[0]])
    first = block.data[s0 : s0 + l0]
    if l0:
        starts = offs[sel].astype(np.int64)
        mat = block.data[starts[:, None] + np.arange(l0)[None, :]]
        if not (mat == first[None, :]).all():
            return None
    odt = block.offsets.dtype
    offbuf = np.array([0, l0], dtype=odt).tobytes()
    return allnull.constant(levels, None, allnull.scalar_buffers([offbuf, first.tobytes()]))


# ----------------------------------------------------------------------------------- page


def _var_packed_encoding(block: VarPackedBlock) -> pbutil.CE:
    enc = pbutil.CE()
    for kind, bits in block.fields:
        fe = enc.variable_packed_struct.fields.add()
        if kind == "fixed":
            fe.value.CopyFrom(pbutil.flat(bits))
            fe.bits_per_value = bits
        else:
            fe.value.CopyFrom(pbutil.variable(bits))
            fe.bits_per_length = bits
    return enc


def _arrow_dictionary_page(values: pa.DictionaryArray, levels: Levels, params: FieldParams,
                           version: tuple[int, int]) -> EncodedPage:
    """Arrow dictionary input: its dictionary as the page dictionary, its indices as values."""
    idx = values.indices
    if idx.null_count:
        idx = idx.fill_null(0)
    bits = idx.type.bit_width
    raw = block_from_arrow(idx)
    assert isinstance(raw, FixedBlock)  # dictionary indices are integers
    indices = FixedBlock(raw.data.view(uint_dtype(bits)), bits, raw.num_values)
    dblock = block_from_arrow(values.dictionary)
    if isinstance(dblock, FslBlock):
        raise NotSupportedError("dictionaries of fixed-size lists are not supported")
    dict_bytes, dict_enc = blocks.compress_dictionary(dblock, version)
    chunks = _fixed_value_chunks(indices, FieldParams(rle_threshold=params.rle_threshold), False)
    return encode_miniblock(chunks, levels, version, (dict_bytes, dict_enc, dblock.num_values))



def _is_float(t: pa.DataType) -> bool:
    return pa.types.is_floating(t)


def _is_text(t: pa.DataType) -> bool:
    """utf8 values (the only ones pylance 14 compresses with FSST unasked)."""
    if isinstance(t, pa.BaseExtensionType):
        t = t.storage_type
    return pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t)


def encode_leaf_page(slots: LeafSlots, params: FieldParams, version: tuple[int, int]) -> EncodedPage:
    """Encode one page of one leaf column."""
    levels = resolve(slots)
    values = slots.values
    n_values = len(values)
    if n_values == 0:
        return allnull.complex_all_null(levels, version)
    n_nulls = int(levels.value_nulls.sum()) if levels.value_nulls is not None else 0
    if pa.types.is_null(values.type) or n_nulls == n_values:
        simple = levels.rep is None and (levels.layers == [3] or levels.deff is None)
        if simple:
            return allnull.simple_all_null(levels.num_rows)
        return allnull.complex_all_null(levels, version)
    if pa.types.is_dictionary(values.type):
        return _arrow_dictionary_page(values, levels, params, version)
    if pa.types.is_struct(values.type):
        block = packed_from_arrow(values, allow_variable=version >= (2, 2))
        if isinstance(block, VarPackedBlock):
            return encode_fullzip(block.rows, levels, value_encoding=_var_packed_encoding(block))
        return encode_miniblock(V.packed_chunks(block), levels, version)
    block = block_from_arrow(values)
    if params.blob and isinstance(block, VarBlock) and levels.rep is None:
        return encode_blob(block, levels, version)
    if version >= (2, 2):
        page = _constant_page(block, levels, values)
        if page is not None:
            return page
    if params.structural != "fullzip":
        nulls = levels.value_nulls
        has_nulls = nulls is not None and bool(nulls.any())
        if _should_dict(block, params, version, nulls):
            return _dictionary_page(block, levels, params, version)
        if has_nulls and params.dict_divisor is None and _dict_plausible(block, version, nulls):
            # pylance 14's rule differs for pages with nulls (not reproducible from its
            # statistics): encode both ways and keep the smaller page
            with_dict = _dictionary_page(block, levels, params, version)
            without = _plain_page(block, levels, params, version, values)
            return with_dict if _page_size(with_dict) < _page_size(without) else without
    return _plain_page(block, levels, params, version, values)


def _page_size(page: EncodedPage) -> int:
    return sum(len(b) for b in page.buffers)


def _dict_plausible(block, version: tuple[int, int], nulls: np.ndarray | None) -> bool:
    """Fewer distinct non-null values than half of them (dictionary might pay off)."""
    if isinstance(block, FslBlock) or block.num_values < DICT_TOO_SMALL:
        return False
    if isinstance(block, FixedBlock) and (block.bits_per_value < 8 or
                                          (version < (2, 2) and block.bits_per_value < 128)):
        return False
    nn = _non_null_block(block, nulls)
    if nn.num_values == 0:
        return False
    return cardinality(nn) < nn.num_values / 2


def _dictionary_page(block, levels: Levels, params: FieldParams, version: tuple[int, int]) -> EncodedPage:
    indices, dblock = _dictionary_encode(block, levels.value_nulls)
    dict_bytes, dict_enc = blocks.compress_dictionary(dblock, version)
    has_nulls = levels.value_nulls is not None and bool(levels.value_nulls.any())
    chunks = _fixed_value_chunks(indices, FieldParams(rle_threshold=params.rle_threshold), False,
                                 smaller_of_rle=has_nulls)
    return encode_miniblock(chunks, levels, version, (dict_bytes, dict_enc, dblock.num_values))


def _plain_page(block, levels: Levels, params: FieldParams, version: tuple[int, int],
                values: pa.Array) -> EncodedPage:
    narrow = max_length(block) < MINIBLOCK_MAX_VALUE_BYTES
    use_mini = params.structural == "miniblock" or (params.structural is None and narrow)
    if use_mini:
        if isinstance(block, VarBlock):
            chunks = _variable_value_chunks(block, params, _is_text(values.type))
        elif isinstance(block, FslBlock):
            chunks = V.fsl_chunks(block)
        else:
            chunks = _fixed_value_chunks(block, params, _is_float(values.type))
        return encode_miniblock(chunks, levels, version)
    per_value = None
    if isinstance(block, VarBlock) and params.compression != "none":
        requested = params.scheme is not None
        if (block.max_length() > PER_VALUE_GENERAL_MIN_LEN or requested) and block.nbytes() >= FSST_LEAST_INPUT_SIZE:
            per_value = params.scheme or "zstd"
        if per_value is None and _use_fsst(block, params, _is_text(values.type)):
            return encode_fullzip(block, levels, None, None, fsst=True)
    level = params.compression_level
    if per_value is not None and params.scheme is None:
        level = 0  # the reference's default per-value zstd (level 0 = library default)
    return encode_fullzip(block, levels, per_value, level)


__all__ = ["FieldParams", "encode_leaf_page", "uint_dtype"]
