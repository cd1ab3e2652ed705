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


def flat_families(rng, n):
    return {
        "int8": ints(rng, n, np.int8, lo=-128, hi=127),
        "uint16": ints(rng, n, np.uint16, hi=60000, nulls=0.05),
        "int32": ints(rng, n, np.int32, nulls=0.1),
        "int64": ints(rng, n, np.int64, lo=-(1 << 40), hi=1 << 40),
        "uint64": pa.array(rng.integers(0, 1 << 63, n, dtype=np.uint64) * 2),
        "int64_lowcard": pa.array(rng.integers(0, 50, n) * 1000003),
        "runs": pa.array(np.repeat(rng.integers(0, 1000, n // 50 + 1), 50)[:n].astype(np.int32)),
        "f16": pa.array(rng.standard_normal(n).astype(np.float16)),
        "f32": floats(rng, n, nulls=0.05),
        "f64": floats(rng, n, np.float64),
        "bool": bools(rng, n),
        "bool_nulls": bools(rng, n, nulls=0.2),
        "str": strings(rng, n, nulls=0.1),
        "large_str": strings(rng, n, large=True),
        "str_lowcard": strings(rng, n, card=7, nulls=0.05),
        "bin": binaries(rng, n, nulls=0.1),
        "large_bin": binaries(rng, n, large=True),
        "vec": vectors(rng, n),
        "vec_nulls": vectors(rng, n, dim=3, nulls=0.2, dtype=np.float64),
        "date32": pa.array(rng.integers(0, 20000, n).astype(np.int32), pa.date32()),
        "ts": pa.array(rng.integers(0, 1 << 50, n), pa.timestamp("us", tz="UTC")),
        "dec": pa.array([None if i % 7 == 0 else i * 3 for i in range(n)], pa.decimal128(20, 2)),
        "fsb": pa.array([rng.bytes(5) for _ in range(n)], pa.binary(5)),
        "uint8": ints(rng, n, np.uint8, hi=255, nulls=0.1),
        "date64": pa.array(rng.integers(0, 1 << 40, n), pa.date64()),
        "time32": pa.array(rng.integers(0, 86400, n).astype(np.int32), pa.time32("s")),
        "time64": pa.array(rng.integers(0, 86400 * 10**6, n), pa.time64("us")),
        "duration": pa.array(rng.integers(-(1 << 40), 1 << 40, n), pa.duration("ns")),
        "ts_naive": pa.array(rng.integers(0, 1 << 50, n), pa.timestamp("ms")),
        "dec256": pa.array([None if i % 5 == 0 else -i * 7 for i in range(n)], pa.decimal256(40, 3)),
    }


def nested_families(rng, n):
    lst = lists(rng, n)
    inner = lists(rng, n * 3, nulls=0.1, empties=0.1, item_nulls=0.1)
    lol = pa.ListArray.from_arrays(
        pa.array(np.concatenate([[0], np.cumsum(np.full(n, 3))]), pa.int32()), inner
    )
    st = structs(rng, n)
    st_list = pa.ListArray.from_arrays(
        pa.array(np.arange(0, n + 1, dtype=np.int32)), structs(rng, n, nulls=0.2),
        mask=pa.array(rng.random(n) < 0.1))
    lens = rng.integers(0, 4, n)
    list_str = pa.ListArray.from_arrays(
        pa.array(np.concatenate([[0], np.cumsum(lens)]), pa.int32()),
        strings(rng, int(lens.sum()), nulls=0.1), mask=pa.array(rng.random(n) < 0.05))
    nested_struct = pa.StructArray.from_arrays(
        [st, ints(rng, n, np.int16, nulls=0.3)], names=["inner", "z"],
        mask=pa.array(rng.random(n) < 0.1))
    return {
        "list": lst,
        "large_list": lists(rng, n, large=True, item_nulls=0.2),
        "list_of_list": lol,
        "struct": st,
        "list_struct": st_list,
        "list_str": list_str,
        "nested_struct": nested_struct,
        "list_vec": pa.ListArray.from_arrays(
            pa.array(np.concatenate([[0], np.cumsum(lens)]), pa.int32()),
            vectors(rng, int(lens.sum()), dim=4)),
    }
