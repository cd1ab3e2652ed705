"""Rows of one leaf column as (rep levels, canonical def levels, stored values).

:class:`LeafRows` is what every 2.1/2.2 page reader returns for a set of row ranges; the field
decoder concatenates them across pages and turns them into Arrow with
:func:`lancejit.encoding.v21.repdef.unravel`.  Row ranges are half-open ``[start, end)``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import pyarrow as pa

from lancejit.core.arrow_compute import take as arrow_take
from lancejit.core.errors import CorruptFileError
from lancejit.encoding.arrow_build import index_array
from lancejit.encoding.v21.repdef import CanonicalLevels, max_visible_canonical


@dataclass(frozen=True, slots=True)
class LeafRows:
    """``num_levels`` level slots with their rep/def (None = none/all zero) and the values stored
    for the visible slots (``values`` has one entry per visible slot, no validity)."""

    rep: np.ndarray | None
    deff: np.ndarray | None
    values: pa.Array
    num_levels: int


def concat_rows(parts: Sequence[LeafRows], value_type: pa.DataType) -> LeafRows:
    """Concatenate level runs in order."""
    parts = [p for p in parts if p.num_levels or len(p.values)]
    if not parts:
        return LeafRows(None, None, pa.array([], type=value_type), 0)
    if len(parts) == 1:
        return parts[0]
    total = sum(p.num_levels for p in parts)
    rep = None
    if any(p.rep is not None for p in parts):
        rep = np.concatenate([p.rep if p.rep is not None else np.zeros(p.num_levels, np.uint16) for p in parts])
    deff = None
    if any(p.deff is not None for p in parts):
        deff = np.concatenate(
            [p.deff if p.deff is not None else np.zeros(p.num_levels, np.uint16) for p in parts]
        )
    values = pa.concat_arrays([p.values for p in parts])
    return LeafRows(rep, deff, values, total)


def visible_prefix(rows: LeafRows, canon: CanonicalLevels) -> np.ndarray | None:
    """``cs[i]`` = stored values before level ``i`` (``num_levels + 1`` entries); None when every
    level stores a value."""
    if rows.deff is None or canon.max_rep == 0:
        return None
    vis = rows.deff <= max_visible_canonical(canon)
    cs = np.zeros(rows.num_levels + 1, dtype=np.int64)
    np.cumsum(vis, out=cs[1:])
    return cs


def extract_row_ranges(
    run: LeafRows,
    canon: CanonicalLevels,
    first_row: int,
    has_preamble: bool,
    ranges: Sequence[tuple[int, int]],
    *,
    path: str,
) -> list[LeafRows]:
    """Cut row ranges out of ``run``, a decoded run of levels whose first row start is row
    ``first_row`` (levels before it, the *preamble*, belong to an earlier row when
    ``has_preamble``).  Ranges are half-open, sorted, and must lie inside the run."""
    out: list[LeafRows] = []
    if canon.max_rep == 0:
        n = run.num_levels
        if len(run.values) != n:
            raise CorruptFileError(f"{len(run.values)} values for {n} rows", path=path)
        for a, b in ranges:
            lo, hi = a - first_row, b - first_row
            if lo < 0 or hi > n:
                raise CorruptFileError(f"rows [{a}, {b}) outside decoded rows [{first_row}, {first_row + n})", path=path)
            out.append(
                LeafRows(
                    None,
                    None if run.deff is None else run.deff[lo:hi],
                    run.values.slice(lo, hi - lo),
                    hi - lo,
                )
            )
        return out
    if run.rep is None:
        raise CorruptFileError("list page without repetition levels", path=path)
    starts = np.flatnonzero(run.rep == canon.max_rep)
    if not has_preamble and run.num_levels and (starts.size == 0 or starts[0] != 0):
        raise CorruptFileError("repetition levels do not start a row", path=path)
    cs = visible_prefix(run, canon)
    nstarts = starts.size
    for a, b in ranges:
        lo, hi = a - first_row, b - first_row
        if lo < 0 or lo >= nstarts or hi > nstarts or hi <= lo:
            raise CorruptFileError(
                f"rows [{a}, {b}) not found in decoded levels ({nstarts} rows from {first_row})", path=path
            )
        p0 = int(starts[lo])
        p1 = int(starts[hi]) if hi < nstarts else run.num_levels
        v0, v1 = (p0, p1) if cs is None else (int(cs[p0]), int(cs[p1]))
        if v1 > len(run.values):
            raise CorruptFileError(f"levels need {v1} values, {len(run.values)} decoded", path=path)
        out.append(
            LeafRows(
                run.rep[p0:p1],
                None if run.deff is None else run.deff[p0:p1],
                run.values.slice(v0, v1 - v0),
                p1 - p0,
            )
        )
    return out


def count_visible(rep: np.ndarray | None, deff: np.ndarray | None, canon: CanonicalLevels, num_levels: int) -> int:
    """Number of level slots that store a value."""
    if deff is None or canon.max_rep == 0:
        return num_levels
    return int(np.count_nonzero(deff <= max_visible_canonical(canon)))


def ranges_to_index(p0: np.ndarray, p1: np.ndarray) -> np.ndarray:
    """Concatenation of ``arange(p0[i], p1[i])`` for all i (int64)."""
    lens = p1 - p0
    total = int(lens.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    ends = np.cumsum(lens)
    return np.arange(total, dtype=np.int64) + np.repeat(p0 - (ends - lens), lens)


def extract_runs(
    decoded: LeafRows,
    canon: CanonicalLevels,
    run_l0: np.ndarray,
    run_l1: np.ndarray,
    run_first_row: np.ndarray,
    run_preamble: np.ndarray,
    run_of: np.ndarray,
    ra: np.ndarray,
    rb: np.ndarray,
    *,
    path: str,
) -> LeafRows:
    """Rows ``[ra[k], rb[k])`` from decoded runs of levels, concatenated in order.

    Run ``r`` spans levels ``[run_l0[r], run_l1[r])`` of ``decoded``; its first row start is
    row ``run_first_row[r]`` (levels before it belong to an earlier row when
    ``run_preamble[r]``); range ``k`` lies in run ``run_of[k]``.
    """
    r = run_of
    if canon.max_rep == 0:
        p0 = run_l0[r] + (ra - run_first_row[r])
        p1 = p0 + (rb - ra)
        if np.any(p0 < run_l0[r]) or np.any(p1 > run_l1[r]):
            raise CorruptFileError("requested rows fall outside the decoded chunks", path=path)
        if len(decoded.values) != decoded.num_levels:
            raise CorruptFileError(f"{len(decoded.values)} values for {decoded.num_levels} rows", path=path)
        v0, v1 = p0, p1
    else:
        if decoded.rep is None:
            raise CorruptFileError("list page without repetition levels", path=path)
        starts = np.flatnonzero(decoded.rep == canon.max_rep)
        i0 = np.searchsorted(starts, run_l0)
        i1 = np.searchsorted(starts, run_l1)
        # a run without a preamble must begin exactly at a row start
        starts_at_l0 = np.zeros(run_l0.size, dtype=bool)
        inside = i0 < starts.size
        starts_at_l0[inside] = starts[i0[inside]] == run_l0[inside]
        if not np.all(run_preamble | starts_at_l0 | (run_l0 == run_l1)):
            raise CorruptFileError("repetition levels do not start a row where the index says", path=path)
        j0 = ra - run_first_row[r]
        j1 = rb - run_first_row[r]
        nrows = i1[r] - i0[r]
        if np.any(j0 < 0) or np.any(j1 > nrows) or np.any(j1 <= j0):
            raise CorruptFileError("rows not found in the decoded levels", path=path)
        p0 = starts[i0[r] + j0]
        k1 = i0[r] + j1
        p1 = np.where(k1 < i1[r], starts[np.minimum(k1, starts.size - 1)], run_l1[r])
        cs = visible_prefix(decoded, canon)
        if cs is None:
            v0, v1 = p0, p1
        else:
            v0, v1 = cs[p0], cs[p1]
        if v1.size and int(v1.max()) > len(decoded.values):
            raise CorruptFileError("levels need more values than were decoded", path=path)
    if p0.size == 1 and p0[0] == 0 and p1[0] == decoded.num_levels:
        return decoded
    if p0.size == 1:
        a, b = int(p0[0]), int(p1[0])
        va, vb = int(v0[0]), int(v1[0])
        return LeafRows(
            None if decoded.rep is None else decoded.rep[a:b],
            None if decoded.deff is None else decoded.deff[a:b],
            decoded.values.slice(va, vb - va),
            b - a,
        )
    lidx = ranges_to_index(p0, p1)
    vidx = lidx if v0 is p0 else ranges_to_index(v0, v1)
    values = arrow_take(decoded.values, index_array(vidx)) if vidx.size != len(decoded.values) or not _is_identity(vidx) else decoded.values
    return LeafRows(
        None if decoded.rep is None else decoded.rep[lidx],
        None if decoded.deff is None else decoded.deff[lidx],
        values,
        int(lidx.size),
    )


def _is_identity(idx: np.ndarray) -> bool:
    return bool(idx.size == 0 or (idx[0] == 0 and idx[-1] == idx.size - 1 and np.all(np.diff(idx) == 1)))
