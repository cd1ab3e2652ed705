"""Test data for the writer tests: one generator per type family, seeded."""

from __future__ import annotations

import numpy as np
import pyarrow as pa


def _mask(rng, n, p):
    return rng.random(n) < p if p else None


def ints(rng, n, dtype=np.int32, nulls=0.0, lo=0, hi=1 << 20):
    return pa.array(rng.integers(lo, hi, n).astype(dtype), mask=_mask(rng, n, nulls))


def floats(rng, n, dtype=np.float32, nulls=0.0):
    return pa.array(rng.standard_normal(n).astype(dtype), mask=_mask(rng, n, nulls))


def bools(rng, n, nulls=0.0):
    return pa.array(rng.random(n) < 0.3, mask=_mask(rng, n, nulls))


def strings(rng, n, nulls=0.0, card=None, large=False, minlen=0, maxlen=20):
    if card:
        pool = ["v" + "x" * int(rng.integers(minlen, maxlen + 1)) + str(i) for i in range(card)]
        vals = [pool[i] for i in rng.integers(0, card, n)]
    else:
        lens = rng.integers(minlen, maxlen + 1, n)
        alphabet = np.frombuffer(b"abcdefghijklmnopqrstuvwxyz0123456789 ", dtype=np.uint8)
        vals = [bytes(alphabet[rng.integers(0, len(alphabet), k)]).decode() for k in lens]
    m = _mask(rng, n, nulls)
    if m is not None:
        vals = [None if m[i] else v for i, v in enumerate(vals)]
    return pa.array(vals, type=pa.large_string() if large else pa.string())


def binaries(rng, n, nulls=0.0, maxlen=40, large=False):
    vals = [rng.bytes(int(k)) for k in rng.integers(0, maxlen + 1, n)]
    m = _mask(rng, n, nulls)
    if m is not None:
        vals = [None if m[i] else v for i, v in enumerate(vals)]
    return pa.array(vals, type=pa.large_binary() if large else pa.binary())


def vectors(rng, n, dim=16, nulls=0.0, dtype=np.float32):
    vals = pa.array(rng.standard_normal(n * dim).astype(dtype))
    m = _mask(rng, n, nulls)
    return pa.FixedSizeListArray.from_arrays(vals, dim, mask=pa.array(m) if m is not None else None)


def lists(rng, n, nulls=0.1, empties=0.1, item_nulls=0.0, maxlen=5, large=False):
    lens = rng.integers(0, maxlen + 1, n)
    lens[rng.random(n) < empties] = 0
    offsets = np.concatenate([[0], np.cumsum(lens)])
    items = ints(rng, int(offsets[-1]), np.int32, nulls=item_nulls)
    m = _mask(rng, n, nulls)
    if large:
        return pa.LargeListArray.from_arrays(pa.array(offsets, pa.int64()), items, mask=pa.array(m) if m is not None else None)
    return pa.ListArray.from_arrays(pa.array(offsets, pa.int32()), items, mask=pa.array(m) if m is not None else None)


def structs(rng, n, nulls=0.1):
    a = ints(rng, n, np.int64, nulls=0.1)
    b = strings(rng, n, nulls=0.1)
    m = _mask(rng, n, nulls)
    return pa.StructArray.from_arrays([a, b], names=["a", "b"], mask=pa.array(m) if m is not None else None)
