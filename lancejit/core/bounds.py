"""Sizes and counts read from a file are claims: bound them by the bytes before allocating.

The rule every decoder, metadata parser, manifest reader and deletion/row-id reader follows:

* A count, length, offset or size read from a file or manifest is checked against what the
  bytes that back it can hold (a buffer's length, the file's size, a fragment's rows) before
  anything is allocated or expanded for it; a claim the bytes cannot hold is a
  :class:`~lancejit.core.errors.CorruptFileError` naming the file.
* A read allocates for the rows asked, never for the rows a page or fragment claims: what a
  page holds without bytes (all-null and constant pages, ranges of row ids) is made per read.

The helpers return the checked value as a Python ``int`` so that callers use the checked
value, not the raw field.
"""

from __future__ import annotations

from lancejit.core.errors import CorruptFileError, NotSupportedError

#: Widest machine word any Lance encoding stores integers in (bits).
MAX_WORD_BITS = 64


def claim(value: int, limit: int, what: str, path: str | None) -> int:
    """``value`` if ``0 <= value <= limit``; else ``CorruptFileError`` naming ``path``."""
    v = int(value)
    if v < 0 or v > limit:
        raise CorruptFileError(f"{what} is {v}, more than the {limit} the bytes allow", path=path)
    return v


def claim_items(count: int, min_bits_each: int, nbytes: int, what: str, path: str | None) -> int:
    """``count`` items of at least ``min_bits_each`` bits each must fit in ``nbytes`` bytes."""
    limit = (int(nbytes) * 8) // max(1, int(min_bits_each))
    return claim(count, limit, what, path)


def word_bits(bits: int, supported: tuple[int, ...], what: str, path: str | None) -> int:
    """A word width in bits: outside ``1..64`` it is corrupt; inside but not in ``supported``,
    a valid width lancejit does not implement (``NotSupportedError``)."""
    b = int(bits)
    if b < 1 or b > MAX_WORD_BITS:
        raise CorruptFileError(f"{what} of {b} bits", path=path)
    if b not in supported:
        raise NotSupportedError(f"{path}: {what} of {b} bits is not supported")
    return b


__all__ = ["MAX_WORD_BITS", "claim", "claim_items", "word_bits"]
