"""Random Arrow columns (with nulls at every level) for 2.1/2.2 round-trip tests."""

from __future__ import annotations

import decimal

import numpy as np
import pyarrow as pa


def _mask(rng, n, p=0.2):
    return rng.random(n) < p


def _with_nulls(values: list, rng, p=0.2) -> list:
    m = _mask(rng, len(values), p)
    return [None if m[i] else v for i, v in enumerate(values)]


def ints(rng, n, t=pa.int32(), nulls=0.2):
    info = np.iinfo(t.to_pandas_dtype())
    v = rng.integers(max(info.min, -(1 << 40)), min(info.max, 1 << 40), size=n, endpoint=True).astype(t.to_pandas_dtype())
    return pa.array(v, type=t, mask=_mask(rng, n, nulls) if nulls else None)


def floats(rng, n, t=pa.float64(), nulls=0.2):
    v = rng.standard_normal(n)
    if t == pa.float16():
        v = v.astype(np.float16)
    elif t == pa.float32():
        v = v.astype(np.float32)
    v[rng.random(n) < 0.05] = np.nan
    return pa.array(v, type=t, mask=_mask(rng, n, nulls) if nulls else None)


def bools(rng, n, nulls=0.2):
    return pa.array(rng.random(n) < 0.5, mask=_mask(rng, n, nulls) if nulls else None)


def strings(rng, n, t=pa.string(), nulls=0.2, maxlen=12, card=None):
    alphabet = np.array(list("abcdefghijklmnopqrstuvwxyz0123456789 "))
    if card:
        pool = ["".join(rng.choice(alphabet, size=rng.integers(0, maxlen))) for _ in range(card)]
        vals = [pool[i] for i in rng.integers(0, card, size=n)]
    else:
        vals = ["".join(rng.choice(alphabet, size=rng.integers(0, maxlen))) for _ in range(n)]
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        vals = [v.encode() for v in vals]
    return pa.array(_with_nulls(vals, rng, nulls), type=t)


def lists(rng, n, child: pa.Array, t=None, nulls=0.2, empties=0.15, maxlen=5):
    lens = rng.integers(0, maxlen + 1, size=n)
    lens[rng.random(n) < empties] = 0
    nullm = _mask(rng, n, nulls) if nulls else np.zeros(n, bool)
    lens[nullm] = 0
    offsets = np.concatenate([[0], np.cumsum(lens)]).astype(np.int64)
    total = int(offsets[-1])
    if len(child) < total:
        reps = total // max(len(child), 1) + 1
        child = pa.concat_arrays([child] * reps)
    child = child.slice(0, total)
    t = t or pa.list_(child.type)
    off_arr = pa.array(offsets.astype(np.int64 if pa.types.is_large_list(t) else np.int32))
    mask = pa.array(nullm) if nulls else None
    if pa.types.is_large_list(t):
        arr = pa.LargeListArray.from_arrays(off_arr, child, mask=mask)
    else:
        arr = pa.ListArray.from_arrays(off_arr, child, mask=mask)
    return arr.cast(t) if arr.type != t else arr


def structs(rng, n, children: dict, nulls=0.2):
    names = list(children)
    arrs = [children[k] for k in names]
    mask = pa.array(_mask(rng, n, nulls)) if nulls else None
    return pa.StructArray.from_arrays(arrs, names=names, mask=mask)


def vectors(rng, n, dim=8, t=pa.float32(), nulls=0.1, item_nulls=0.0):
    v = rng.standard_normal(n * dim).astype(t.to_pandas_dtype())
    items = pa.array(v, type=t, mask=_mask(rng, n * dim, item_nulls) if item_nulls else None)
    arr = pa.FixedSizeListArray.from_arrays(items, dim)
    if nulls:
        m = _mask(rng, n, nulls)
        arr = pa.FixedSizeListArray.from_arrays(items, dim, mask=pa.array(m))
    return arr


def temporal(rng, n, t, nulls=0.2):
    if pa.types.is_date32(t) or pa.types.is_time32(t):
        raw = rng.integers(0, 80000, size=n).astype(np.int32)
    else:
        raw = rng.integers(0, 10**12, size=n).astype(np.int64)
    base = pa.int32() if raw.dtype == np.int32 else pa.int64()
    return pa.array(raw, type=base, mask=_mask(rng, n, nulls)).view(t)


def decimals(rng, n, t=pa.decimal128(20, 4), nulls=0.2):
    vals = [decimal.Decimal(int(x)) / decimal.Decimal(10**4) for x in rng.integers(-10**12, 10**12, size=n)]
    return pa.array(_with_nulls(vals, rng, nulls), type=t)


def fsb(rng, n, width=4, nulls=0.2):
    vals = [bytes(rng.integers(0, 256, size=width, dtype=np.uint8)) for _ in range(n)]
    return pa.array(_with_nulls(vals, rng, nulls), type=pa.binary(width))


def maps(rng, n, nulls=0.2):
    lens = rng.integers(0, 4, size=n)
    nullm = _mask(rng, n, nulls)
    lens[nullm] = 0
    offsets = np.concatenate([[0], np.cumsum(lens)]).astype(np.int32)
    total = int(offsets[-1])
    keys = pa.array([f"k{i % 7}" for i in range(total)])
    items = ints(rng, total, pa.int64())
    return pa.MapArray.from_arrays(pa.array(offsets), keys, items, mask=pa.array(nullm))
