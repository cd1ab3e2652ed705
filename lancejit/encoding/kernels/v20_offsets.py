"""2.0 end-offset decoding (binary indices and list offsets with a null adjustment).

Input: ``vals`` (uint64) holds, segment after segment, the stored end offsets of a run of rows
preceded by the stored end of the row before the run.  Segment ``j`` covers ``seg_rows[j]``
rows; when ``implicit_zero`` the first segment starts at row 0 and has no preceding value (its
start is 0).  A stored value ``v >= adjustment`` marks a null row whose end is
``v - adjustment``.  Callers check ``len(vals) == sum(seg_rows) + len(seg_rows) - implicit_zero``
before calling.
"""

from __future__ import annotations

from lancejit.encoding.kernels.jit import njit


@njit(cache=True, nogil=True, specs=(
    "ro(u8[::1]), ro(i8[::1]), i8, b1, u8, i8[::1], b1[::1], i8[::1], i8[::1]",
))
def decode_end_offsets(vals, seg_rows, num_segments, implicit_zero, adjustment,
                       out_lengths, out_valid, out_firsts, out_lasts):  # pragma: no cover
    """Fill per-row ``out_lengths`` (int64) / ``out_valid`` (bool) and per-segment
    ``out_firsts`` / ``out_lasts`` (int64, the segment's start and end).

    Returns -1 when every end is >= the previous one, else the index of the first row whose
    end decreases (outputs then partially filled).
    """
    pos = 0
    o = 0
    for j in range(num_segments):
        if j == 0 and implicit_zero:
            prev = 0
        else:
            v = vals[pos]
            pos += 1
            prev = v - adjustment if v >= adjustment else v
        out_firsts[j] = prev
        for _ in range(seg_rows[j]):
            v = vals[pos]
            pos += 1
            if v >= adjustment:
                cur = v - adjustment
                out_valid[o] = False
            else:
                cur = v
                out_valid[o] = True
            if cur < prev:
                return o
            out_lengths[o] = cur - prev
            prev = cur
            o += 1
        out_lasts[j] = prev
    return -1
