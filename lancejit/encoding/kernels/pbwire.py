"""Protobuf wire-format kernels for the fragments of a table manifest (``lance.table.Manifest``).

Opening a dataset needs, per fragment, only its id, row counts and whether it has data and
deletion files; decoding thousands of ``DataFragment`` messages into Python objects to read
them costs far more than the rest of the open.  These kernels walk the manifest's protobuf
bytes once and fill preallocated arrays instead; the fragments themselves are decoded later,
one by one, only when touched.

Field numbers (``protos/table.proto``): ``Manifest.fragments = 2``; ``DataFragment``: ``id = 1``,
``files = 2`` (``DataFile``), ``deletion_file = 3`` (``DeletionFile``), ``physical_rows = 4``,
``inline_*`` bytes 5 / 7 / 9, ``external_*`` ``ExternalFile`` 6 / 8 / 10; ``DataFile``: ``path = 1``
(string), ``fields = 2`` / ``column_indices = 3`` (repeated int32, packed or not), 4..7 varints;
``DeletionFile``: 1..4 and 7 varints (``num_deleted_rows = 4``); ``ExternalFile``: ``path = 1``,
2 and 3 varints.

The kernels follow protobuf's merge rules (a repeated scalar field's last value wins, a
message field seen twice is merged) and validate the whole wire structure of every fragment,
nested messages included, so that a manifest they accept is one protobuf decodes.  They are
deliberately conservative: anything unusual - a known field with an unexpected wire type,
groups, a varint whose 10th byte holds more than one bit, a non-ASCII string (protobuf checks
UTF-8) - makes them report :data:`FALLBACK` and the caller decodes with protobuf itself, which
accepts the input or raises.  Malformed input (truncated varints, lengths past the end) is also
reported as :data:`FALLBACK`, never read out of bounds: every position is checked against the
end of its enclosing message.
"""

from __future__ import annotations

from lancejit.encoding.kernels.jit import njit, uint64

# No kernel here allocates: compiled without Numba's reference counting (``_nrt=False``), whose
# increments and decrements of every array argument at each helper call otherwise cost more
# than the parsing.  Helpers are separate functions, not inlined in Numba's IR: inlining them
# there (``inline="always"``, even only the varint/tag/length/skip readers) multiplied the
# compile time of ``scan_manifest`` and ``column_pages`` (seconds to tens of seconds each) to
# parse even a manifest of thousands of fragments faster by well under a millisecond.


def _kernel(*specs: str):  # noqa: ANN202 - the lazy njit decorator
    """A kernel of this module, compiled for the specializations ``specs``."""
    return njit(cache=True, nogil=True, _nrt=False, specs=specs, interpret=False)


_helper = njit(cache=True, nogil=True, _nrt=False)

#: Status: arrays filled.
OK = 0
#: Status: the kernel does not vouch for this input; decode it with protobuf instead.
FALLBACK = 1


@_helper
def _varint(buf, pos, end):  # pragma: no cover - compiled
    """``(value, next position)`` of the varint at ``pos``; next position -1 when it is
    truncated at ``end``, longer than 10 bytes or its 10th byte holds more than one bit."""
    result = uint64(0)
    shift = uint64(0)
    for i in range(10):
        if pos >= end:
            return uint64(0), -1
        b = buf[pos]
        pos += 1
        if i == 9 and b > 1:
            return uint64(0), -1
        result |= uint64(b & 0x7F) << shift
        if b < 0x80:
            return result, pos
        shift += uint64(7)
    return uint64(0), -1


@_helper
def _varint32(buf, pos, end):  # pragma: no cover - compiled
    """``(value, next position)`` of a varint of at most 5 bytes and 32 bits (tags, lengths)
    in int64 arithmetic; next position -1 otherwise (longer encodings are valid protobuf but
    no writer makes them: the caller falls back)."""
    result = 0
    shift = 0
    for _ in range(5):
        if pos >= end:
            return 0, -1
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            if result > 0xFFFFFFFF:
                return 0, -1
            return result, pos
        shift += 7
    return 0, -1


@_helper
def _tag(buf, pos, end):  # pragma: no cover - compiled
    """``(field number, wire type, next position)``; next position -1 on a bad tag."""
    tag, pos = _varint32(buf, pos, end)
    if pos < 0 or (tag >> 3) == 0:
        return 0, 0, -1
    return tag >> 3, tag & 7, pos


@_helper
def _payload(buf, pos, end):  # pragma: no cover - compiled
    """``(payload start, payload end)`` of the length-delimited value at ``pos``; -1 on error."""
    n, pos = _varint32(buf, pos, end)
    if pos < 0 or n > end - pos:
        return -1, -1
    return pos, pos + n


@_helper
def _skip(buf, pos, end, wire):  # pragma: no cover - compiled
    """Position after a value of wire type ``wire`` at ``pos``; -1 on error or a group."""
    if wire == 0:
        _, pos = _varint(buf, pos, end)
        return pos
    if wire == 1:
        return pos + 8 if pos + 8 <= end else -1
    if wire == 5:
        return pos + 4 if pos + 4 <= end else -1
    if wire == 2:
        _, stop = _payload(buf, pos, end)
        return stop
    return -1


@_helper
def _ascii(buf, start, stop):  # pragma: no cover - compiled
    acc = 0
    for i in range(start, stop):
        acc |= buf[i]
    return acc < 0x80


@_helper
def _string(buf, pos, end, wire):  # pragma: no cover - compiled
    """Position after an ASCII string field's value; -1 otherwise."""
    if wire != 2:
        return -1
    start, stop = _payload(buf, pos, end)
    if start < 0 or not _ascii(buf, start, stop):
        return -1
    return stop


@_helper
def _repeated_varints(buf, pos, end, wire):  # pragma: no cover - compiled
    """Position after one element (wire 0) or a packed run (wire 2) of a repeated varint field."""
    if wire == 0:
        _, pos = _varint(buf, pos, end)
        return pos
    if wire != 2:
        return -1
    start, stop = _payload(buf, pos, end)
    if start < 0:
        return -1
    while start < stop:
        _, start = _varint(buf, start, stop)
        if start < 0:
            return -1
    return stop


@_helper
def _file_ok(buf, pos, end, last_repeated, last_varint):  # pragma: no cover - compiled
    """True when ``buf[pos:end]`` is a well-formed message whose field 1 is a string, fields
    ``2..last_repeated`` repeated varints and ``last_repeated+1..last_varint`` varints:
    ``DataFile`` (3, 7) and ``ExternalFile`` (1, 3)."""
    while pos < end:
        field, wire, pos = _tag(buf, pos, end)
        if pos < 0:
            return False
        if field == 1:
            pos = _string(buf, pos, end, wire)
        elif 2 <= field <= last_repeated:
            pos = _repeated_varints(buf, pos, end, wire)
        elif 2 <= field <= last_varint:
            pos = _skip(buf, pos, end, wire) if wire == 0 else -1
        else:
            pos = _skip(buf, pos, end, wire)
        if pos < 0:
            return False
    return True


@_helper
def _deletion_file(buf, pos, end, deleted, i):  # pragma: no cover - compiled
    """Check a ``DeletionFile`` and store its ``num_deleted_rows`` (if present) in
    ``deleted[i]`` (merge rule: the last value wins).  False when malformed."""
    while pos < end:
        field, wire, pos = _tag(buf, pos, end)
        if pos < 0:
            return False
        if field == 4:
            if wire != 0:
                return False
            value, pos = _varint(buf, pos, end)
            deleted[i] = value
        elif (1 <= field <= 3) or field == 7:
            pos = _skip(buf, pos, end, wire) if wire == 0 else -1
        else:
            pos = _skip(buf, pos, end, wire)
        if pos < 0:
            return False
    return True


@_helper
def _fragment(buf, pos, end, i, ids, physical, deleted, has_deletion, num_files):  # pragma: no cover
    """Scan the ``DataFragment`` in ``buf[pos:end]`` into row ``i`` of the output arrays
    (zeroed by the caller).  False when malformed or not vouched for."""
    while pos < end:
        field, wire, pos = _tag(buf, pos, end)
        if pos < 0:
            return False
        if field == 1 or field == 4:
            if wire != 0:
                return False
            value, pos = _varint(buf, pos, end)
            if field == 1:
                ids[i] = value
            else:
                physical[i] = value
        elif field == 2 or field == 3 or field == 6 or field == 8 or field == 10:
            if wire != 2:
                return False
            start, stop = _payload(buf, pos, end)
            if start < 0:
                return False
            if field == 2:
                if not _file_ok(buf, start, stop, 3, 7):  # DataFile
                    return False
                num_files[i] += 1
            elif field == 3:
                if not _deletion_file(buf, start, stop, deleted, i):
                    return False
                has_deletion[i] = True
            elif not _file_ok(buf, start, stop, 1, 3):  # ExternalFile
                return False
            pos = stop
        elif field == 5 or field == 7 or field == 9:
            pos = _skip(buf, pos, end, wire) if wire == 2 else -1
        else:
            pos = _skip(buf, pos, end, wire)
        if pos < 0:
            return False
    return True


@_kernel("ro(u1[::1])")
def count_fragments(buf):  # pragma: no cover - compiled
    """Number of ``fragments`` entries of the ``Manifest`` message ``buf`` (uint8 array), or -1
    when its top-level wire structure is not one :func:`scan_manifest` accepts."""
    pos = 0
    end = len(buf)
    n = 0
    while pos < end:
        field, wire, pos = _tag(buf, pos, end)
        if pos < 0:
            return -1
        if field == 2 and wire != 2:
            return -1
        pos = _skip(buf, pos, end, wire)
        if pos < 0:
            return -1
        if field == 2:
            n += 1
    return n


@_kernel("ro(u1[::1]), i8[:, ::1], u8[:, ::1], b1[::1], u1[::1]")
def scan_manifest(buf, spans, values, has_deletion, out):  # pragma: no cover - compiled
    """Scan the ``Manifest`` message ``buf`` (uint8 array).

    Fills, for the ``i``-th ``fragments`` entry: ``spans[0, i]`` / ``spans[1, i]`` (its message
    bytes ``buf[spans[0, i]:spans[1, i]]``), ``spans[2, i]`` (its number of data files),
    ``values[0, i]`` (id), ``values[1, i]`` (physical rows) and ``values[2, i]`` (the deletion
    file's ``num_deleted_rows``) as stored (0 when absent), ``has_deletion[i]``.  ``spans``
    (int64) and ``values`` (uint64) have 3 rows of :func:`count_fragments` elements and are
    zeroed by the caller, like ``has_deletion``.

    Copies the schema's top-level fields (``fields = 1``, ``schema_metadata = 5``) to
    ``out[:m]`` and every other one but the fragments to ``out[len(buf):len(buf) + n]``, tags
    included, in order (``out`` holds ``2 * len(buf)`` bytes): the two pieces one after the other
    are the manifest without its fragments (``Manifest`` has no oneof: fields of different
    numbers may be reordered).

    Returns ``(status, m, n)``: :data:`OK` or :data:`FALLBACK` and the bytes of the two pieces.
    """
    pos = 0
    end = len(buf)
    out_schema = 0
    out_rest = end
    i = 0
    starts = spans[0]
    ends = spans[1]
    num_files = spans[2]
    ids = values[0]
    physical = values[1]
    deleted = values[2]
    while pos < end:
        begin = pos
        field, wire, pos = _tag(buf, pos, end)
        if pos < 0:
            return FALLBACK, 0, 0
        if field == 2:
            if wire != 2 or i >= len(starts):
                return FALLBACK, 0, 0
            start, stop = _payload(buf, pos, end)
            if start < 0:
                return FALLBACK, 0, 0
            starts[i] = start
            ends[i] = stop
            if not _fragment(buf, start, stop, i, ids, physical, deleted, has_deletion, num_files):
                return FALLBACK, 0, 0
            i += 1
            pos = stop
        else:
            pos = _skip(buf, pos, end, wire)
            if pos < 0:
                return FALLBACK, 0, 0
            if field == 1 or field == 5:
                for k in range(begin, pos):
                    out[out_schema] = buf[k]
                    out_schema += 1
            else:
                for k in range(begin, pos):
                    out[out_rest] = buf[k]
                    out_rest += 1
    if i != len(starts):
        return FALLBACK, 0, 0
    return OK, out_schema, out_rest - end


# ------------------------------------------------------------------------------------------
# Column metadata of a Lance 2.x file (``lance.file.v2.ColumnMetadata``, ``protos/file2.proto``)
#
# ``ColumnMetadata``: ``encoding = 1`` (``Encoding``), ``pages = 2`` (``Page``), column
# ``buffer_offsets = 3`` / ``buffer_sizes = 4`` (repeated uint64).  ``Page``: ``buffer_offsets = 1``
# / ``buffer_sizes = 2`` (repeated uint64), ``length = 3``, ``encoding = 4``, ``priority = 5``.
# ``Encoding`` is a oneof: ``indirect = 1``, ``direct = 2`` (``DirectEncoding``: ``encoding = 1``
# bytes), ``none = 3``.

#: Most buffers per page :func:`column_pages` reports (pages with more: FALLBACK).
MAX_PAGE_BUFFERS = 4

#: Columns of the ``pages`` rows :func:`column_pages` fills.
PAGE_COLUMN, PAGE_NOFF, PAGE_NSIZE, PAGE_LENGTH, PAGE_PRIORITY, PAGE_ENC_START, PAGE_ENC_END = range(7)
PAGE_FIELDS = 7
#: Width of a ``pages`` row of :func:`column_pages`: the fields, then the buffer offsets and sizes.
PAGE_ROW = PAGE_FIELDS + 2 * MAX_PAGE_BUFFERS
_HUGE = 1 << 60


@_helper
def _direct_encoding(buf, pos, end):  # pragma: no cover - compiled
    """``(start, end)`` of the bytes of an ``Encoding`` message holding only ``direct`` (once)
    whose ``DirectEncoding`` holds ``encoding`` once; ``(-1, -1)`` otherwise."""
    a = b = -1
    while pos < end:
        field, wire, pos = _tag(buf, pos, end)
        if pos < 0:
            return -1, -1
        if field == 2:
            if wire != 2 or a >= 0:
                return -1, -1
            start, stop = _payload(buf, pos, end)
            if start < 0:
                return -1, -1
            q = start
            while q < stop:
                f2, w2, q = _tag(buf, q, stop)
                if q < 0:
                    return -1, -1
                if f2 == 1:
                    if w2 != 2 or a >= 0:
                        return -1, -1
                    a, b = _payload(buf, q, stop)
                    if a < 0:
                        return -1, -1
                    q = b
                else:
                    q = _skip(buf, q, stop, w2)
                    if q < 0:
                        return -1, -1
            if a < 0:
                return -1, -1
            pos = stop
        elif field == 1 or field == 3:
            return -1, -1
        else:
            pos = _skip(buf, pos, end, wire)
            if pos < 0:
                return -1, -1
    return a, b


@_helper
def _u64_values(buf, pos, end, wire, out, row, first, count, limit):  # pragma: no cover - compiled
    """Append one element (wire 0) or a packed run (wire 2) of a repeated uint64 field to
    ``out[row, first + count:]``: ``(next position, new count)``; position -1 when malformed,
    more than ``limit`` values or a value of 2**63 or more."""
    if wire == 0:
        v, pos = _varint(buf, pos, end)
        if pos < 0 or count >= limit or v >= uint64(1) << uint64(63):
            return -1, count
        out[row, first + count] = v
        return pos, count + 1
    if wire != 2:
        return -1, count
    start, stop = _payload(buf, pos, end)
    if start < 0:
        return -1, count
    while start < stop:
        v, start = _varint(buf, start, stop)
        if start < 0 or count >= limit or v >= uint64(1) << uint64(63):
            return -1, count
        out[row, first + count] = v
        count += 1
    return stop, count


@_helper
def _page(buf, pos, end, row, pages):  # pragma: no cover - compiled
    """Fill ``pages[row]`` from the ``Page`` message ``buf[pos:end]``; False
    when it is malformed or unusual (then the caller falls back)."""
    noff = nsize = 0
    length = uint64(0)
    priority = uint64(0)
    ea = eb = -1
    while pos < end:
        field, wire, pos = _tag(buf, pos, end)
        if pos < 0:
            return False
        if field == 1:
            pos, noff = _u64_values(buf, pos, end, wire, pages, row, PAGE_FIELDS, noff, MAX_PAGE_BUFFERS)
        elif field == 2:
            pos, nsize = _u64_values(buf, pos, end, wire, pages, row, PAGE_FIELDS + MAX_PAGE_BUFFERS, nsize,
                                     MAX_PAGE_BUFFERS)
        elif field == 3 or field == 5:
            if wire != 0:
                return False
            v, pos = _varint(buf, pos, end)
            if pos < 0 or v >= uint64(1) << uint64(63):
                return False
            if field == 3:
                length = v
            else:
                priority = v
        elif field == 4:
            if wire != 2 or ea >= 0:
                return False
            start, stop = _payload(buf, pos, end)
            if start < 0:
                return False
            ea, eb = _direct_encoding(buf, start, stop)
            if ea < 0:
                return False
            pos = stop
        else:
            pos = _skip(buf, pos, end, wire)
        if pos < 0:
            return False
    if ea < 0:
        return False
    pages[row, 1] = noff
    pages[row, 2] = nsize
    pages[row, 3] = length
    pages[row, 4] = priority
    pages[row, 5] = ea
    pages[row, 6] = eb
    return True


@_kernel("ro(u1[::1]), i8[:, ::1], i8[:, ::1], i8[:, ::1], i8, i8")
def column_pages(buf, spans, cols, pages, file_size, num_rows):  # pragma: no cover - compiled
    """Scan the ``ColumnMetadata`` messages ``buf[spans[j, 0]:spans[j, 1]]`` (``buf``: uint8,
    ``spans``: ``(n, 2)`` int64).

    Fills ``cols[j]`` = ``(first row of pages, pages, column encoding bytes start, end)``
    (start -1 when the column has no encoding) and, per page, one row of ``pages`` (``(m, 15)``
    int64: column j, buffer offsets, buffer sizes, length, priority, encoding bytes start, end
    (the ``DirectEncoding.encoding`` bytes, positions in ``buf``), then up to
    :data:`MAX_PAGE_BUFFERS` offsets at column 7 and the sizes at column 11).

    Returns the pages filled; -1 (:data:`FALLBACK`: decode with protobuf) when a message is
    malformed or unusual (column buffers, a page without a direct encoding, more than
    :data:`MAX_PAGE_BUFFERS` buffers, a field seen twice where protobuf would merge...) or fails
    the checks protobuf's decode applies (a page with unequal numbers of buffer offsets and
    sizes, a buffer past ``file_size``, a column whose pages do not hold ``num_rows`` rows or a
    multiple of them); -2 when ``pages`` has too few rows.
    """
    row = 0
    cap = pages.shape[0]
    for j in range(spans.shape[0]):
        pos = spans[j, 0]
        end = spans[j, 1]
        if pos < 0 or end > len(buf) or pos > end:
            return -1
        cols[j, 0] = row
        ca = cb = -1
        first = row
        rows = 0
        while pos < end:
            field, wire, pos = _tag(buf, pos, end)
            if pos < 0:
                return -1
            if field == 2:
                if wire != 2:
                    return -1
                start, stop = _payload(buf, pos, end)
                if start < 0:
                    return -1
                if row >= cap:
                    return -2
                pages[row, 0] = j
                if not _page(buf, start, stop, row, pages):
                    return -1
                nb = pages[row, PAGE_NOFF]
                if nb != pages[row, PAGE_NSIZE]:
                    return -1
                for k in range(nb):  # (values below 2**63: no overflow in these compares)
                    off = pages[row, PAGE_FIELDS + k]
                    if off > file_size or pages[row, PAGE_FIELDS + MAX_PAGE_BUFFERS + k] > file_size - off:
                        return -1
                length = pages[row, PAGE_LENGTH]
                if length > _HUGE or rows > _HUGE:  # (absurd counts: protobuf's decode judges them)
                    return -1
                rows += length
                row += 1
                pos = stop
            elif field == 1:
                if wire != 2 or ca >= 0:
                    return -1
                start, stop = _payload(buf, pos, end)
                if start < 0:
                    return -1
                ca, cb = _direct_encoding(buf, start, stop)
                if ca < 0:
                    return -1
                pos = stop
            elif field == 3 or field == 4:
                return -1
            else:
                pos = _skip(buf, pos, end, wire)
                if pos < 0:
                    return -1
        if rows != num_rows and (num_rows == 0 or rows % num_rows != 0):
            return -1
        cols[j, 1] = row - first
        cols[j, 2] = ca
        cols[j, 3] = cb
    return row
