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

from lancejit.core.errors import CorruptFileError
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
