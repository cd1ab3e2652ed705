"""Row scanner for the 2.2 variable packed struct: each row is its fields in order, a fixed field
as ``width`` raw bytes, a variable field as a little-endian u32 or u64 length then that many bytes.
"""

from __future__ import annotations

from lancejit.encoding.kernels.jit import njit

#: Field kinds understood by :func:`scan_rows`.
KIND_FIXED = 0
KIND_LEN32 = 1
KIND_LEN64 = 2


@njit(cache=True, nogil=True, specs=(
    "ro(u1[::1]), ro(i8[::1]), i8, ro(i8[::1]), ro(i8[::1]), i8[:, ::1], i8[:, ::1]",
))
def scan_rows(data, row_offsets, num_rows, kinds, widths, out_starts, out_lengths):  # pragma: no cover
    """Locate every field of every row.

    Row ``r`` is ``data[row_offsets[r]:row_offsets[r+1]]`` (callers check those offsets lie in
    ``data``).  ``out_starts[r, f]``/``out_lengths[r, f]`` receive the byte range of field ``f``'s
    payload (the length prefix excluded).  Every read is checked against the row end here, since
    positions depend on the data.  Returns -1 on success, else the first malformed row.
    """
    num_fields = kinds.shape[0]
    for r in range(num_rows):
        pos = row_offsets[r]
        end = row_offsets[r + 1]
        for f in range(num_fields):
            kind = kinds[f]
            if kind == 0:
                n = widths[f]
            else:
                nb = 4 if kind == 1 else 8
                if pos + nb > end:
                    return r
                n = 0
                for k in range(nb):
                    n |= data[pos + k] << (8 * k)
                if n < 0:
                    return r
                pos += nb
            if n > end - pos:
                return r
            out_starts[r, f] = pos
            out_lengths[r, f] = n
            pos += n
        if pos != end:
            return r
    return -1
