"""Decoded vector columns kept between searches (per fragment, bounded in bytes).

A flat search decodes a fragment's vector column (and its row ids); with the cache on, the
arrays stay in memory so the next search of that fragment only runs the scoring kernel.  A key
names immutable things only: the dataset root, the fragment id, its data files, its deletion
file and the column, so versions sharing a fragment share its entry and a new deletion file
makes a new one.  Entries are evicted least recently used first beyond :func:`budget` bytes
(the ``vector_cache_mb`` knob; default an eighth of physical memory, at most 2 GiB; 0 turns
the cache off).
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Hashable

import numpy as np

from lancejit.core.config import settings

_LOCK = threading.Lock()
_ITEMS: "OrderedDict[Hashable, Entry]" = OrderedDict()
_BYTES = 0
_BUDGET: int | None = None


@dataclass(frozen=True, slots=True)
class Block:
    """One fragment's live vectors: ``values`` ``(n, dim)``, ``row_ids`` uint64 (the ids a search
    returns), ``keep`` uint8 (empty: every row valid), ``addrs`` uint64 row addresses."""

    values: np.ndarray
    row_ids: np.ndarray
    keep: np.ndarray
    addrs: np.ndarray

    @property
    def nbytes(self) -> int:
        shared = self.addrs is self.row_ids or np.shares_memory(self.addrs, self.row_ids)
        return self.values.nbytes + self.row_ids.nbytes + self.keep.nbytes + (0 if shared else self.addrs.nbytes)


@dataclass(frozen=True, slots=True)
class Entry:
    """One fragment's blocks (in row order)."""

    blocks: tuple[Block, ...]

    @property
    def nbytes(self) -> int:
        return sum(b.nbytes for b in self.blocks) + 64


def budget() -> int:
    """The cache's size bound in bytes (see the module docstring)."""
    global _BUDGET
    if _BUDGET is None:
        mb = settings().vector_cache_mb
        if mb >= 0:
            _BUDGET = mb << 20
        else:
            try:
                phys = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
            except (ValueError, OSError, AttributeError):
                phys = 8 << 30
            _BUDGET = min(2 << 30, phys // 8)
    return _BUDGET


def set_budget(nbytes: int | None) -> None:
    """Set the bound (None: back to the default); evicts down to it."""
    global _BUDGET
    _BUDGET = None if nbytes is None else max(0, int(nbytes))
    _evict(budget())


def get(key: Hashable) -> Entry | None:
    with _LOCK:
        b = _ITEMS.get(key)
        if b is not None:
            _ITEMS.move_to_end(key)
        return b


def put(key: Hashable, block: Entry) -> None:
    """Keep ``block`` if it fits the budget (evicting older entries)."""
    global _BYTES
    limit = budget()
    if block.nbytes > limit:
        return
    with _LOCK:
        old = _ITEMS.pop(key, None)
        if old is not None:
            _BYTES -= old.nbytes
        _ITEMS[key] = block
        _BYTES += block.nbytes
    _evict(limit)


def _evict(limit: int) -> None:
    global _BYTES
    with _LOCK:
        while _BYTES > limit and _ITEMS:
            _, b = _ITEMS.popitem(last=False)
            _BYTES -= b.nbytes


def clear() -> None:
    global _BYTES
    with _LOCK:
        _ITEMS.clear()
        _BYTES = 0


def cached_bytes() -> int:
    return _BYTES


__all__ = ["Block", "Entry", "budget", "cached_bytes", "clear", "get", "put", "set_budget"]
