"""Repetition / definition levels (2.1/2.2) -> per-node validity and list offsets.

A leaf column's *path* is the chain of Arrow nodes from the top-level field down to the leaf,
outermost first.  Each node is a LIST node (list, large_list, map) or an ITEM node (struct, leaf).
Pages describe their def levels with ``RepDefLayer`` values, innermost first; layers vary per page
(a page without nulls may say ALL_VALID), so each page's def levels are first translated to a
*canonical* numbering that depends only on the path:

* walking from the leaf outwards, an ITEM node gets one level (null), a LIST node two levels
  (null, then empty); 0 means "valid at every level".

Repetition: ``max_rep`` = number of LIST nodes; a level ``r`` starts a new list at every list
depth ``<= r`` (the outermost list has depth ``max_rep``).  Positions whose def says that an
enclosing list is null or empty carry no child items ("invisible").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import overload

import numpy as np

from lancejit.core.errors import CorruptFileError

ITEM = 0
LIST = 1
#: A fixed-size list of structs ("structural FSL"): one def level (null) like an ITEM, and each
#: of its slots spans ``dimension`` consecutive child slots.  Encoded as ``FSL_BASE + dimension``.
FSL_BASE = 1 << 20


def fsl_kind(dimension: int) -> int:
    """The node kind of a structural fixed-size list of ``dimension`` items."""
    return FSL_BASE + dimension


def is_fsl(kind: int) -> bool:
    return kind >= FSL_BASE

# lance.encodings21.RepDefLayer values
UNSPECIFIED = 0
ALL_VALID_ITEM = 1
ALL_VALID_LIST = 2
NULLABLE_ITEM = 3
NULLABLE_LIST = 4
EMPTYABLE_LIST = 5
NULL_AND_EMPTY_LIST = 6

_LIST_LAYERS = (ALL_VALID_LIST, NULLABLE_LIST, EMPTYABLE_LIST, NULL_AND_EMPTY_LIST)
_ITEM_LAYERS = (ALL_VALID_ITEM, NULLABLE_ITEM)


@dataclass(frozen=True, slots=True)
class CanonicalLevels:
    """Canonical def numbering for a path (all arrays indexed outermost-first)."""

    kinds: tuple[int, ...]
    null_level: tuple[int, ...]  # def value meaning "this node is null"
    empty_level: tuple[int, ...]  # def value meaning "this list is empty" (-1 for items)
    rep_depth: tuple[int, ...]  # number of LIST nodes at or below each node
    max_rep: int
    max_def: int

    @property
    def lo(self) -> tuple[int, ...]:
        """The first def level owned by each node."""
        return self.null_level


def canonical_levels(kinds: tuple[int, ...]) -> CanonicalLevels:
    """The canonical def numbering of a path with node ``kinds`` (outermost first)."""
    n = len(kinds)
    null_level = [0] * n
    empty_level = [-1] * n
    cur = 1
    for i in range(n - 1, -1, -1):
        null_level[i] = cur
        if kinds[i] == LIST:
            empty_level[i] = cur + 1
            cur += 2
        else:
            cur += 1
    rep_depth = [0] * n
    acc = 0
    for i in range(n - 1, -1, -1):
        if kinds[i] == LIST:
            acc += 1
        rep_depth[i] = acc
    return CanonicalLevels(tuple(kinds), tuple(null_level), tuple(empty_level), tuple(rep_depth), acc, cur - 1)


def def_translation(layers: tuple[int, ...], canon: CanonicalLevels, *, path: str) -> np.ndarray:
    """A lookup table mapping a page's def level to the canonical level.

    ``layers``: the page's RepDefLayer values, innermost first, one per path node.
    """
    n = len(canon.kinds)
    if len(layers) != n:
        raise CorruptFileError(f"page has {len(layers)} rep/def layers, schema path needs {n}", path=path)
    table = [0]
    for j, layer in enumerate(layers):
        i = n - 1 - j  # path index of this layer
        kind = canon.kinds[i]
        if kind == LIST and layer not in _LIST_LAYERS:
            raise CorruptFileError(f"layer {j} is {layer}, a list layer was expected", path=path)
        if kind != LIST and layer not in _ITEM_LAYERS:
            raise CorruptFileError(f"layer {j} is {layer}, an item layer was expected", path=path)
        if layer == NULLABLE_ITEM or layer == NULLABLE_LIST:
            table.append(canon.null_level[i])
        elif layer == EMPTYABLE_LIST:
            table.append(canon.empty_level[i])
        elif layer == NULL_AND_EMPTY_LIST:
            table.append(canon.null_level[i])
            table.append(canon.empty_level[i])
    return np.asarray(table, dtype=np.uint16)


@overload
def translate_def(page_def: np.ndarray, table: np.ndarray, *, path: str) -> np.ndarray: ...


@overload
def translate_def(page_def: None, table: np.ndarray, *, path: str) -> None: ...


@overload
def translate_def(page_def: np.ndarray | None, table: np.ndarray, *, path: str) -> np.ndarray | None: ...


def translate_def(page_def: np.ndarray | None, table: np.ndarray, *, path: str) -> np.ndarray | None:
    """Canonical def levels for one page's def levels (None stays None)."""
    if page_def is None:
        return None
    if page_def.size and int(page_def.max()) >= table.size:
        raise CorruptFileError(f"def level {int(page_def.max())} exceeds the page's layers", path=path)
    if table.size == np.arange(table.size).size and np.array_equal(table, np.arange(table.size, dtype=np.uint16)):
        return page_def.astype(np.uint16, copy=False)
    return table[page_def]


def max_visible_canonical(canon: CanonicalLevels) -> int:
    """Largest canonical def level at which a leaf value is stored (visible)."""
    innermost_list = [i for i, k in enumerate(canon.kinds) if k == LIST]
    if not innermost_list:
        return canon.max_def
    return canon.null_level[innermost_list[-1]] - 1


@dataclass(frozen=True, slots=True)
class NodeLevels:
    """Decoded structure of one path node over a run of levels.

    ``count``: slots of this node; ``valid``: bool per slot or None (all valid);
    ``offsets``: for LIST nodes, ``count + 1`` int64 offsets into the child node's slots.
    """

    count: int
    valid: np.ndarray | None
    offsets: np.ndarray | None


def unravel(
    canon: CanonicalLevels, rep: np.ndarray | None, deff: np.ndarray | None, num_levels: int, *, path: str
) -> list[NodeLevels]:
    """Per-node structure (outermost first) from canonical ``rep``/``deff`` levels.

    ``num_levels`` is the number of level slots (used when both are None).  The last entry's
    ``count`` is the number of leaf values consumed.
    """
    n = len(canon.kinds)
    if rep is None and canon.max_rep > 0:
        raise CorruptFileError("list column page without repetition levels", path=path)
    if rep is not None and rep.size != num_levels:
        raise CorruptFileError(f"{rep.size} rep levels for {num_levels} slots", path=path)
    if deff is not None and deff.size != num_levels:
        raise CorruptFileError(f"{deff.size} def levels for {num_levels} slots", path=path)
    if deff is not None and deff.size and int(deff.max()) > canon.max_def:
        raise CorruptFileError("def level out of range", path=path)
    if rep is not None and rep.size and int(rep.max()) > canon.max_rep:
        raise CorruptFileError("rep level out of range", path=path)
    if deff is None or not deff.any():
        deff = None
    out: list[NodeLevels] = []
    alive: np.ndarray | None = None  # positions where no enclosing list is null/empty
    slot_masks: list[np.ndarray | None] = []
    for i in range(n):
        r = canon.rep_depth[i]
        if r > 0:
            assert rep is not None  # a list level implies max_rep > 0: checked above
            starts = rep >= r
            mask = starts if alive is None else (starts & alive)
        else:
            mask = alive
        # a structural FSL at or below node i repeats each of node i's levels ``stride`` times
        stride = 1
        for k in canon.kinds[i:]:
            if is_fsl(k):
                stride *= k - FSL_BASE
        if stride > 1:
            pos = np.arange(num_levels) if mask is None else np.flatnonzero(mask)
            if pos.size % stride:
                raise CorruptFileError(f"{pos.size} level slots are not whole lists of {stride}", path=path)
            mask = np.zeros(num_levels, dtype=bool)
            mask[pos[::stride]] = True
        slot_masks.append(mask)
        if canon.kinds[i] == LIST:
            # children of this list live where def < its null level
            alive = None if deff is None else (deff < canon.null_level[i])
    for i in range(n):
        mask = slot_masks[i]
        count = num_levels if mask is None else int(np.count_nonzero(mask))
        valid = None
        if deff is not None:
            d = deff if mask is None else deff[mask]
            if canon.kinds[i] == LIST:
                v = d != canon.null_level[i]
            else:
                v = d < canon.null_level[i]
            valid = None if v.all() else v
        offsets = None
        if canon.kinds[i] == LIST:
            child_mask = slot_masks[i + 1] if i + 1 < n else None
            if child_mask is None:
                cs = np.arange(num_levels + 1, dtype=np.int64)
            else:
                cs = np.zeros(num_levels + 1, dtype=np.int64)
                np.cumsum(child_mask, out=cs[1:])
            pos = np.flatnonzero(mask) if mask is not None else np.arange(num_levels)
            offsets = np.empty(count + 1, dtype=np.int64)
            offsets[:count] = cs[pos]
            offsets[count] = cs[-1]
        out.append(NodeLevels(count, valid, offsets))
    return out


def row_starts(rep: np.ndarray, max_rep: int) -> np.ndarray:
    """Positions (int64) where a new top-level row starts (rep == max_rep)."""
    return np.flatnonzero(rep == max_rep)


def visible_mask(deff: np.ndarray | None, canon: CanonicalLevels, num_levels: int) -> np.ndarray | None:
    """Bool mask of level slots that carry a stored leaf value (None = all)."""
    if deff is None or canon.max_rep == 0:
        return None
    return deff <= max_visible_canonical(canon)
