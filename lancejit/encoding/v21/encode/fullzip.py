"""Full-zip layout for wide values (the Lance file format specification).

Buffer 0 zips, per level slot: a control word ``(rep << bits_def) | def`` (0/1/2/4 bytes), then
for visible fixed-width slots the value bytes, for valid variable-width slots a u32/u64 length
and the bytes.  Buffer 1 (when there is repetition or the values are variable) holds one byte
offset per row plus the end offset, byte-packed to 1/2/4/8 bytes.
"""

from __future__ import annotations

import numpy as np

from lancejit.pb import encodings_v2_1_pb2 as pb21

from . import general
from . import pbutil
from .data import FixedBlock, FslBlock, VarBlock
from .levels import Levels
from .page import EncodedPage


def _bytepack(values: np.ndarray, max_value: int) -> bytes:
    dt: type[np.unsignedinteger]
    if max_value < 1 << 8:
        dt = np.uint8
    elif max_value < 1 << 16:
        dt = np.uint16
    elif max_value < 1 << 32:
        dt = np.uint32
    else:
        dt = np.uint64
    return values.astype(dt).tobytes()


def _control(levels: Levels) -> tuple[np.ndarray | None, int, int, int]:
    max_rep = int(levels.rep.max()) if levels.rep is not None and levels.rep.size else 0
    max_def = int(levels.deff.max()) if levels.deff is not None and levels.deff.size else 0
    bits_rep = max_rep.bit_length()
    bits_def = max_def.bit_length()
    total = bits_rep + bits_def
    width = 0 if total == 0 else 1 if total <= 8 else 2 if total <= 16 else 4
    if width == 0:
        return None, 0, 0, 0
    n = levels.num_slots
    word = np.zeros(n, dtype=np.uint32)
    if levels.rep is not None:
        word |= levels.rep.astype(np.uint32) << np.uint32(bits_def)
    if levels.deff is not None:
        word |= levels.deff.astype(np.uint32)
    dt = {1: np.uint8, 2: np.uint16, 4: np.uint32}[width]
    return word.astype(dt), bits_rep, bits_def, width


def _fixed_value_bytes(block) -> tuple[np.ndarray, int, pbutil.CE]:
    """(uint8 matrix of per-value bytes, bits per value, encoding) for fixed / FSL blocks."""
    if isinstance(block, FslBlock):
        dims = []
        b: FixedBlock | FslBlock = block
        while isinstance(b, FslBlock):
            dims.append((b.dimension, b.validity))
            b = b.child
        cum = 1
        for d, _ in dims:
            cum *= d
        k = b.bits_per_value * cum // 8
        vals = b.data.view(np.uint8)[: block.num_values * k].reshape(block.num_values, k)
        parts = []
        c = 1
        for d, v in dims:
            c *= d
            if v is not None:
                vb = np.packbits(v.reshape(block.num_values, c), axis=1, bitorder="little")
                parts.append(vb)
        parts.append(vals)
        mat = np.concatenate(parts, axis=1) if len(parts) > 1 else vals
        enc = pbutil.flat(b.bits_per_value)
        for d, v in reversed(dims):
            enc = pbutil.fsl(d, v is not None, enc)
        return mat, mat.shape[1] * 8, enc
    k = block.bits_per_value // 8
    vals = block.data.view(np.uint8)[: block.num_values * k].reshape(block.num_values, k)
    return vals, block.bits_per_value, pbutil.flat(block.bits_per_value)


def encode_fullzip(block, levels: Levels, per_value: str | None = None, level: int | None = None,
                   fsst: bool = False, value_encoding: pbutil.CE | None = None) -> EncodedPage:
    """Zip control words and values.  ``per_value``: general scheme applied to each value;
    ``fsst``: FSST-compress the (variable-width) values with one page symbol table."""
    fsst_table = None
    if fsst and isinstance(block, VarBlock):
        from .fsst import fsst_compress

        block, fsst_table = fsst_compress(block)
    ctrl, bits_rep, bits_def, width = _control(levels)
    n_slots = levels.num_slots
    layout = pb21.PageLayout()
    fz = layout.full_zip_layout
    fz.bits_rep = bits_rep
    fz.bits_def = bits_def
    if levels.deff is not None:
        visible = levels.deff <= levels.max_visible_def
        valid = levels.deff == 0
    else:
        visible = np.ones(n_slots, dtype=bool)
        valid = visible
    n_visible = int(visible.sum())
    fz.num_items = n_slots
    fz.num_visible_items = n_visible
    fz.layers.extend(levels.layers)
    new_row = (levels.rep == levels.max_rep) if levels.rep is not None else None

    if isinstance(block, VarBlock):
        offs = block.offsets.astype(np.int64)
        width_off = block.offsets.dtype.itemsize
        data = block.data
        payloads: list[bytes] | None
        lens = np.diff(offs)
        enc = pbutil.variable(width_off * 8)
        if per_value is not None:
            payloads = [general.compress(data[offs[i] : offs[i + 1]].tobytes(), per_value, level)
                        for i in range(block.num_values)]
            lens = np.array([len(p) for p in payloads], dtype=np.int64)
            enc = pbutil.general(per_value, level, enc)
        elif fsst_table is not None:
            enc = pbutil.fsst(fsst_table, enc)
            payloads = None
        else:
            payloads = None
        fz.bits_per_offset = width_off * 8
        fz.value_compression.CopyFrom(value_encoding if value_encoding is not None else enc)
        # per-slot sizes
        slot_val = np.full(n_slots, -1, dtype=np.int64)
        slot_val[visible] = np.arange(n_visible)
        has_val = visible & valid
        slot_size = np.full(n_slots, width, dtype=np.int64)
        slot_size[has_val] += width_off + lens[slot_val[has_val]]
        ends = np.cumsum(slot_size)
        starts = ends - slot_size
        out = bytearray(int(ends[-1]) if n_slots else 0)
        mv = np.frombuffer(out, dtype=np.uint8)
        if ctrl is not None:
            cb = ctrl.view(np.uint8).reshape(n_slots, width)
            for j in range(width):
                mv[starts + j] = cb[:, j]
        idxs = np.flatnonzero(has_val)
        if idxs.size:
            vis = slot_val[idxs]
            lpos = starts[idxs] + width
            lb = lens[vis].astype(f"<u{width_off}").view(np.uint8).reshape(-1, width_off)
            mv[lpos[:, None] + np.arange(width_off)[None, :]] = lb
            if payloads is not None:
                src_bytes = np.frombuffer(b"".join(payloads[v] for v in vis), dtype=np.uint8)
                src_starts = np.concatenate([[0], np.cumsum(lens[vis])[:-1]]).astype(np.int64)
            else:
                src_bytes = np.asarray(data)
                src_starts = offs[vis]
            ln = lens[vis].astype(np.int64)
            total = int(ln.sum())
            if total:
                rel = np.arange(total, dtype=np.int64) - np.repeat(np.cumsum(ln) - ln, ln)
                mv[np.repeat(lpos + width_off, ln) + rel] = src_bytes[np.repeat(src_starts, ln) + rel]
        row_starts = starts[new_row] if new_row is not None else starts
        est = len(data) + width * n_slots + width_off * block.num_values
        rep_idx = np.concatenate([row_starts, [len(out)]]).astype(np.uint64)
        bufs = [bytes(out), _bytepack(rep_idx, max(est, len(out)))]
        return EncodedPage(bufs, layout, levels.num_rows)

    mat, bits, enc = _fixed_value_bytes(block)
    k = mat.shape[1]
    fz.bits_per_value = bits
    fz.value_compression.CopyFrom(enc)
    if ctrl is None and new_row is None:
        return EncodedPage([np.ascontiguousarray(mat).tobytes()], layout, levels.num_rows)
    slot_size = np.full(n_slots, width, dtype=np.int64)
    slot_size[visible] += k
    ends = np.cumsum(slot_size)
    starts = ends - slot_size
    total = int(ends[-1]) if n_slots else 0
    zipped = np.zeros(total, dtype=np.uint8)
    if ctrl is not None:
        cb = ctrl.view(np.uint8).reshape(n_slots, width)
        for j in range(width):
            zipped[starts + j] = cb[:, j]
    vstarts = starts[visible] + width
    if k:
        idx = vstarts[:, None] + np.arange(k)[None, :]
        zipped[idx] = mat
    bufs = [zipped.tobytes()]
    if new_row is not None:
        rep_idx = np.concatenate([starts[new_row], [total]]).astype(np.uint64)
        bufs.append(_bytepack(rep_idx, total))
    return EncodedPage(bufs, layout, levels.num_rows)
