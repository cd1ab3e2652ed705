"""The per-version fragment index (``table/index.py``) from a manifest's counts in one pass.

Input: the values :func:`lancejit.encoding.kernels.pbwire.scan_manifest` read for every fragment
(ids, physical rows and deleted rows as stored, uint64; deletion-file presence; data-file
counts).  Output: the index's int64 arrays and what the caller must check, with the rules of
``table/fragment_list.apply_trust`` and ``table/index.py`` (their NumPy versions are the
reference in the tests):

* untrusted statistics (a manifest without a writer version): physical rows unknown (0),
  deleted rows unknown (-1) wherever there is a deletion file;
* a deletion file whose count is 0 or above the fragment's known physical rows: unknown (-1);
* a fragment with data files and 0 physical rows: unknown (its data file is authoritative).
"""

from __future__ import annotations

from lancejit.encoding.kernels.jit import NumbaName, njit, uint64

int64 = NumbaName("int64")

#: Deleted-row count the manifest does not give.
UNKNOWN = -1


@njit(cache=True, nogil=True, _nrt=False, specs=(
    "u8[::1], u8[::1], u8[::1], b1[::1], i8[::1], b1, i8, i8[:, ::1], i8[::1]",
))
def index_arrays(ids, physical, deleted, has_deletion, num_files, trusted, max_rows, out, starts):  # pragma: no cover
    """Fill ``out`` (int64, 4 rows of ``len(ids)``: ids, physical rows, deleted rows, live rows)
    and ``starts`` (int64, ``len(ids) + 1``: prefix sums of the live rows).

    Returns ``(too_big, no_files, increasing, unknown)``: the first position whose physical rows
    exceed ``max_rows`` (-1: none; checked first, the other outputs are then incomplete), the
    first position without data files (-1: none), whether the int64 ids strictly increase, and
    whether some count is unknown (the live rows and ``starts`` are then meaningless).
    """
    n = len(ids)
    out_ids = out[0]
    out_physical = out[1]
    out_deleted = out[2]
    out_live = out[3]
    no_files = -1
    increasing = True
    unknown = False
    starts[0] = 0
    for i in range(n):
        p = physical[i] if trusted else uint64(0)
        if p > uint64(max_rows):
            return i, no_files, increasing, unknown
        d = int64(0)
        if has_deletion[i]:
            recorded = deleted[i]
            if not trusted or recorded == uint64(0) or (p != uint64(0) and recorded > p):
                d = int64(UNKNOWN)
            else:
                d = int64(recorded)
        ident = int64(ids[i])
        out_ids[i] = ident
        out_physical[i] = int64(p)
        out_deleted[i] = d
        if i > 0 and ident <= out_ids[i - 1]:
            increasing = False
        if num_files[i] == 0:
            if no_files < 0:
                no_files = i
        elif p == uint64(0):
            unknown = True
        if d == UNKNOWN:
            unknown = True
        live = int64(p) - d
        out_live[i] = live
        starts[i + 1] = starts[i] + live
    return -1, no_files, increasing, unknown
