"""Choosing the layout and compression of one page of one leaf column, as the reference does
(``PrimitiveStructuralEncoder::do_flush`` and ``DefaultCompressionStrategy``), honouring the
``lance-encoding:*`` field-metadata keys.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from lancejit.core.errors import InvalidInputError

from . import allnull, blocks, general, values as V
from .data import FixedBlock, FslBlock, VarBlock, block_from_arrow, uint_dtype
from .fullzip import encode_fullzip
from .levels import Levels, LeafSlots, resolve
from .miniblock import encode_miniblock
from .page import EncodedPage
from .stats import bit_widths, cardinality, max_length, run_count

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
    """Entropy heuristic: BSS helps floats whose high bytes are low-entropy."""
    k = block.bits_per_value // 8
    raw = block.data.view(np.uint8)[: block.num_values * k].reshape(block.num_values, k)
    if block.num_values == 0:
        return False
    ent = []
    for j in range(k):
        c = np.bincount(raw[:, j], minlength=256).astype(np.float64)
        p = c[c > 0] / block.num_values
        ent.append(float(-(p * np.log2(p)).sum()))
    return float(np.mean(ent)) < 7.0 and max(ent) - min(ent) > 1.0


def _fixed_value_chunks(block: FixedBlock, params: FieldParams, is_float: bool) -> V.MiniChunks:
    bits = block.bits_per_value
    if params.compression == "none":
        return V.flat_chunks(block)
    scheme = params.scheme
    base = None
    if scheme is not None and bits in (32, 64) and params.bss != "off":
        if params.bss == "on" or (is_float and _bss_auto(block)):
            base = V.bss_chunks(block)
    if base is None and bits in (8, 16, 32, 64):
        words = block.data[: block.num_values]
        if run_count(words) < block.num_values * params.rle_threshold:
            base = V.rle_chunks(block)
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


def _variable_value_chunks(block: VarBlock, params: FieldParams) -> V.MiniChunks:
    base = V.variable_chunks(block)
    scheme = params.scheme
    if scheme is not None and params.compression != "none":
        base = V.wrap_general(base, scheme, params.compression_level)
    return base


# ----------------------------------------------------------------------------------- dictionary


def _should_dict(block, params: FieldParams, version: tuple[int, int]) -> bool:
    if isinstance(block, FslBlock) or block.num_values < DICT_TOO_SMALL:
        return False
    if isinstance(block, FixedBlock):
        if block.bits_per_value < 8 or (version < (2, 2) and block.bits_per_value < 128):
            return False
        data_size = block.nbytes()
    else:
        data_size = block.nbytes()
    if data_size == 0:
        return False
    card = cardinality(block)
    if params.dict_divisor is not None:
        return card < block.num_values / params.dict_divisor
    n = block.num_values
    if isinstance(block, FixedBlock):
        est = card * (block.bits_per_value // 8) + n * 4
    else:
        width = block.offsets.dtype.itemsize
        avg = data_size // n
        est = card * avg + card * width + n * width
    return est / data_size < params.dict_size_ratio


def _dictionary_encode(block):
    """(u32 indices block, dictionary block); dictionary items in first-seen order."""
    if isinstance(block, FixedBlock):
        if block.bits_per_value in (8, 16, 32, 64):
            words = block.data[: block.num_values]
            uniq, first, inv = np.unique(words, return_index=True, return_inverse=True)
        else:
            k = block.bits_per_value // 8
            rows = block.data[: block.num_values * k].reshape(block.num_values, k)
            uniq, first, inv = np.unique(rows, axis=0, return_index=True, return_inverse=True)
        order = np.argsort(first, kind="stable")
        rank = np.empty_like(order)
        rank[order] = np.arange(order.shape[0])
        idx = rank[inv.reshape(-1)].astype(np.uint32)
        dvals = uniq[order]
        if block.bits_per_value in (8, 16, 32, 64):
            dblock = FixedBlock(np.ascontiguousarray(dvals), block.bits_per_value, dvals.shape[0])
        else:
            dblock = FixedBlock(np.ascontiguousarray(dvals).reshape(-1), block.bits_per_value, dvals.shape[0])
        return FixedBlock(idx, 32, block.num_values), dblock
    import pyarrow.compute as pc

    arr = pa.LargeBinaryArray.from_buffers(
        pa.large_binary(), block.num_values,
        [None, pa.py_buffer(block.offsets.astype(np.int64)), pa.py_buffer(block.data)])
    enc = pc.dictionary_encode(arr)
    idx = np.asarray(enc.indices).astype(np.uint32)
    d = enc.dictionary
    dblock = block_from_arrow(d)
    offs = dblock.offsets.astype(block.offsets.dtype)
    return FixedBlock(idx, 32, block.num_values), VarBlock(offs, dblock.data, len(d))


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
        if nulls is not None:
            rows = rows[~nulls]
        if rows.shape[0] == 0 or not (rows == rows[0]).all():
            return None
        val = rows[0].tobytes()
        if pa.types.is_fixed_size_binary(values.type):
            return allnull.constant(levels, None, allnull.scalar_buffers([val]))
        return allnull.constant(levels, val, None)
    lens = block.lengths()
    offs = block.offsets
    sel = np.flatnonzero(~nulls) if nulls is not None else np.arange(block.num_values)
    if sel.size == 0:
        return None
    l0 = int(lens[sel[0]])
    if not (lens[sel] == l0).all():
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


def _is_float(t: pa.DataType) -> bool:
    return pa.types.is_floating(t)


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
    block = block_from_arrow(values)
    if version >= (2, 2):
        page = _constant_page(block, levels, values)
        if page is not None:
            return page
    if params.structural != "fullzip" and _should_dict(block, params, version):
        indices, dblock = _dictionary_encode(block)
        dict_bytes, dict_enc = blocks.compress_dictionary(dblock, version)
        chunks = _fixed_value_chunks(indices, FieldParams(rle_threshold=params.rle_threshold), False)
        return encode_miniblock(chunks, levels, version, (dict_bytes, dict_enc, dblock.num_values))
    narrow = max_length(block) < MINIBLOCK_MAX_VALUE_BYTES
    use_mini = params.structural == "miniblock" or (params.structural is None and narrow)
    if use_mini:
        if isinstance(block, VarBlock):
            chunks = _variable_value_chunks(block, params)
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
    return encode_fullzip(block, levels, per_value, params.compression_level)


__all__ = ["FieldParams", "encode_leaf_page", "uint_dtype"]
