"""FSST decoding kernels: a size pass (decoded length of every value, with validation) and a
fill pass (write decoded bytes into a preallocated buffer).

Code stream rule: byte ``c != 255`` emits symbol ``c`` (``sym_lens[c]`` bytes, taken from
``sym_bytes[c, :len]``); ``255`` (escape) emits the following byte literally.
Value ``i`` of the input is ``codes[offsets[i]:offsets[i+1]]`` (half-open, offsets int64).
Callers validate ``offsets`` (monotonic, within ``codes``) before calling.
"""

from __future__ import annotations

from numba import njit

#: The escape code: the next byte is a literal.
FSST_ESCAPE = 255


@njit(cache=True, nogil=True)
def fsst_decoded_lengths(codes, offsets, num_values, sym_lens, n_symbols, out_lengths):  # pragma: no cover
    """Fill ``out_lengths[i]`` with the decoded byte length of value i.

    Returns -1 if every value is well formed, else the index of the first value that uses a
    code ``>= n_symbols`` or ends with a dangling escape byte.
    """
    for i in range(num_values):
        pos = offsets[i]
        end = offsets[i + 1]
        total = 0
        while pos < end:
            c = codes[pos]
            if c == 255:
                if pos + 1 >= end:
                    return i
                total += 1
                pos += 2
            else:
                if c >= n_symbols:
                    return i
                total += sym_lens[c]
                pos += 1
        out_lengths[i] = total
    return -1


@njit(cache=True, nogil=True)
def fsst_decode(codes, offsets, num_values, sym_bytes, sym_lens, out_offsets, out_data):  # pragma: no cover
    """Decode values into ``out_data`` at ``out_offsets`` (computed from the size pass;
    ``out_offsets[i]`` is where value i starts).  The input must have passed
    :func:`fsst_decoded_lengths`."""
    for i in range(num_values):
        pos = offsets[i]
        end = offsets[i + 1]
        o = out_offsets[i]
        while pos < end:
            c = codes[pos]
            if c == 255:
                out_data[o] = codes[pos + 1]
                o += 1
                pos += 2
            else:
                n = sym_lens[c]
                for k in range(n):
                    out_data[o + k] = sym_bytes[c, k]
                o += n
                pos += 1
