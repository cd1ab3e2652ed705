"""The table of SQL filter strings run through both lancejit and pylance (shared by tests)."""

FILTERS = [
    "a > 500",
    "a >= 100 AND a < 130",
    "a < 10 OR a > 990",
    "NOT (a < 500)",
    "a IN (1, 2, 3, 500, 999)",
    "a NOT IN (1, 2, 3)",
    "a IN (5)",
    "s IS NULL",
    "NOT s IS NULL",
    "s IS NOT NULL AND f IS NULL",
    "s IS NULL OR s = 's3'",
    "s LIKE 's1%'",
    "s NOT LIKE '%5'",
    "s ILIKE 'S1%'",
    "s = 'upd'",
    "NOT (s = 'upd')",
    "s < 's2'",
    "s >= 's5' AND s < 's6'",
    "s IN ('s1', 's22', 'upd')",
    "a BETWEEN 100 AND 200",
    "a NOT BETWEEN 100 AND 900",
    "a % 5 = 0",
    "(a - 500) % 7 = -3",
    "f % 2 = 0.5",
    "a % 3 = 1 AND st.y != 'y1'",
    "a * 2 + 1 > 1500",
    "a / 3 = 100",
    "-a > -10",
    "a != 5",
    "a <> 5",
    "`a` > 998",
    "CAST(a AS DOUBLE) > 500.5",
    "f > 100.5",
    "f - 1 < 0",
    "f / 2 > 100",
    "f = 0.5",
    "f IS NOT NULL AND f > 400",
    "st.x > 700",
    "st.x + 1 = 12",
    "st.y = 'y3'",
    "(a > 10 AND a < 20) OR (a > 900 AND s IS NOT NULL)",
    "a > 5 = true",
    "true",
    "false",
    "(s = 'upd') IS NOT TRUE",
    "(f > 100.5) IS TRUE",
    "(s < 's3') IS FALSE",
    "(s = 's1') IS NOT FALSE AND a < 200",
]

#: Filters on columns that exist only in some versions of the "evolving" datasets.
EVOLVED_FILTERS = [
    "b = 200",
    "b - a = a",
    "c LIKE 's1%!'",
    "c IS NULL",
    "z IS NULL",
    "z IS NOT NULL",
]


# --------------------------------------------------------------- literals against every type
def typed_table():
    """Twelve rows, one column per Arrow type lancejit stores, with NULLs and extremes (uint64
    at and past 2**63, int64 past 2**53, NaN and -0.0, float32 values no double equals, sub-unit
    timestamps, time zones): the table the typed filters below run on."""
    import datetime as dt
    import decimal

    import numpy as np
    import pyarrow as pa

    D = decimal.Decimal
    n = 12
    base_ns = 1577836800 * 10**9  # 2020-01-01T00:00:00Z
    ns = [base_ns + 500, base_ns, base_ns - 500, base_ns - 1, -500, None, 0, base_ns + 86400 * 10**9,
          base_ns + 3600 * 10**9, None, base_ns + 10**9 // 2, -(10**9)]

    def ts(unit, tz=None):
        per = {"s": 10**9, "ms": 10**6, "us": 10**3, "ns": 1}[unit]
        vals = [None if v is None else (abs(v) // per) * (1 if v >= 0 else -1) for v in ns]
        return pa.array(vals, pa.int64()).cast(pa.timestamp(unit, tz))

    def nulls(values, every=5):
        return [None if i % every == 4 else v for i, v in enumerate(values)]

    ints = [1, 5, -5, 0, 2, 7, 127, -128, 3, 5, 0, 1]
    f = np.array([0.1, 5, -5, 1.5, np.nan, -0.0, 0.0, np.inf, -np.inf, 16777217, 2.5, 1e-7])
    f16 = np.array([0.1, 5, -5, 1.5, np.nan, -0.0, 0.0, np.inf, -np.inf, 65504, 2.5, 1e-7], dtype=np.float16)
    return pa.table({
        "id": pa.array(np.arange(n, dtype=np.int64)),
        "i8": pa.array(nulls(ints), pa.int8()),
        "i16": pa.array(nulls([v * 250 for v in ints]), pa.int16()),
        "i32": pa.array(nulls([v * 16_000_000 for v in ints]), pa.int32()),
        "i64": pa.array(nulls([2**53 + 1, 5, -5, 2**62, 2**53, 2**63 - 1, -(2**63), 0, 9007199254740993,
                               2**53 + 2, 1, -1])),
        "u8": pa.array(nulls([1, 5, 0, 255, 2, 3, 4, 5, 6, 7, 8, 0]), pa.uint8()),
        "u16": pa.array(nulls([1, 5, 0, 65535, 2, 3, 4, 5, 6, 7, 8, 0]), pa.uint16()),
        "u32": pa.array(nulls([1, 5, 0, 2**32 - 1, 2, 3, 4, 5, 6, 7, 8, 0]), pa.uint32()),
        "u64": pa.array(nulls([1, 5, 0, 2**63 + 3, 2, 2**64 - 1, 2**63, 2**63 - 1, 6, 7, 8, 0]), pa.uint64()),
        "f16": pa.array(f16, mask=np.arange(n) % 5 == 4),
        "f32": pa.array(f.astype(np.float32), mask=np.arange(n) % 5 == 4),
        "f64": pa.array(f, mask=np.arange(n) % 5 == 4),
        "dec": pa.array(nulls([D("1.00"), D("5.00"), D("-5.00"), D("1.50"), D("0"), D("0.00"), D("99999999.99"),
                               D("-0.01"), D("2.00"), D("300"), D("7"), D("0.10")]), pa.decimal128(10, 2)),
        "dec0": pa.array(nulls([D(v) for v in (1, 5, -5, 2, 0, 99999, -99999, 300, 7, 0, 3, 1)]), pa.decimal128(5, 0)),
        "d256": pa.array(nulls([D("1.00"), D("5.00"), D("-5.00"), D("9223372036854775807.00"), D("0"), D("1.50"),
                                D("0"), D("2"), D("3"), D("4"), D("5"), D("6")]), pa.decimal256(40, 2)),
        "s": pa.array(nulls(["1", "5", "a", "2020-01-01", "x", "", "b", "5", "A", "é", "s1", "2"])),
        "ls": pa.array(nulls(["1", "5", "a", "2020-01-01", "x", "", "b", "5", "A", "é", "s1", "2"]), pa.large_string()),
        "bin": pa.array(nulls([b"1", b"5", b"a", b"\x01", b"x", b"", b"\x00", b"5", b"ab", b"\xff", b"s", b"2"])),
        "lbin": pa.array(nulls([b"1", b"5", b"a", b"\x01", b"x", b"", b"\x00", b"5", b"ab", b"\xff", b"s", b"2"]),
                         pa.large_binary()),
        "fsb": pa.array(nulls([b"11", b"55", b"aa", b"\x01\x02", b"xx", b"00", b"55", b"ab", b"\x00\x00", b"zz",
                               b"s1", b"22"]), pa.binary(2)),
        "b": pa.array([True, False, None, True, False, None, True, True, False, None, False, True]),
        "d32": pa.array(nulls([dt.date(2020, 1, 1), dt.date(2021, 1, 1), dt.date(1970, 1, 1), dt.date(1969, 12, 31),
                               dt.date(2019, 12, 31), dt.date(2020, 1, 2), dt.date(1970, 1, 6), dt.date(2020, 1, 1),
                               dt.date(1900, 1, 1), dt.date(2100, 1, 1), dt.date(2020, 6, 1), dt.date(1970, 1, 1)]),
                        pa.date32()),
        "d64": pa.array(nulls([v * 86400000 for v in (18262, 18628, 0, -1, 18261, 18263, 5, 18262, -25567, 47482,
                                                       18414, 0)]), pa.int64()).cast(pa.date64()),
        **{f"ts_{u}": ts(u) for u in ("s", "ms", "us", "ns")},
        **{f"tz_{u}": ts(u, "UTC") for u in ("s", "ms", "us", "ns")},
        "tz_ny": ts("us", "America/New_York"),
        "t32": pa.array(nulls([1, 5, 0, 3600, 2, 86399, 5, 7, 60, 0, 3, 1]), pa.int32()).cast(pa.time32("s")),
        "t32ms": pa.array(nulls([1, 5, 0, 3600, 2, 86399, 5, 7, 60, 0, 3, 1]), pa.int32()).cast(pa.time32("ms")),
        "t64": pa.array(nulls([1, 5, 0, 3600, 2, 86399, 5, 7, 60, 0, 3, 1]), pa.int64()).cast(pa.time64("us")),
        "dur": pa.array(nulls([1, 5, 0, 3600, 2, 86399, 5, 7, 60, 0, 3, 1]), pa.int64()).cast(pa.duration("us")),
        "dict": pa.array(nulls(["a", "5", "b", "a", "c", "", "5", "a", "z", "b", "c", "a"])).dictionary_encode(),
        "st": pa.StructArray.from_arrays([pa.array(nulls(ints), pa.int8())], names=["x"]),
    })


#: Literals of every kind the reference types (Int64, UInt64, Float64, Utf8, Boolean, Null,
#: Binary) and casts of them, for the grid of ``TYPED_COLUMNS`` x literals in test_filter_types.py.
TYPED_LITERALS = [
    "0", "5", "-5", "2", "300", "9223372036854775807", "9223372036854775808", "18446744073709551615",
    "18446744073709551616", "-9223372036854775808", "1.5", "5.0", "0.1", "1e3", "-0.0", "1e-8", "65519.99",
    "'5'", "'a'", "'2020-01-01'", "'2020-01-01 00:00:00'", "'01:00:00'", "true", "NULL", "X'35'", "X'3535'",
    "DATE '2020-01-01'", "TIMESTAMP '2020-01-01 00:00:00'", "TIMESTAMP '2020-01-01 00:00:00+00:00'",
]

#: The issue's pairs and their neighbours, each as the reference answers it (filter text).
TYPED_FILTERS = [
    # uint64 columns holding values at and past 2**63 against small integer literals
    "u64 < 1", "u64 = 5", "u64 BETWEEN 2 AND 10", "u64 = 18446744073709551615", "u64 IN (5, 18446744073709551615)",
    "u64 >= 9223372036854775808", "u64 NOT IN (0, 1)", "NOT (u64 = 5)", "NOT (u64 < -1)", "5 = u64",
    "u64 + 0 = 5", "u64 = 5 AND i8 = 5", "NOT (u64 < 1.5)",
    # int64 past 2**53
    "i64 = 9007199254740993", "i64 IN (9007199254740993, 9007199254740994)", "i64 > 9007199254740992",
    "i64 = -9223372036854775807 - 1", "NOT (i64 = 9223372036854775808)", "NOT (i64 < 1.5)",
    # decimals against integers
    "dec > 0", "dec = 5", "dec0 = 99999", "dec IN (5, 0)", "dec BETWEEN 0 AND 2", "d256 = 9223372036854775807",
    "NOT (dec = 5)", "NOT (dec0 < 300)", "NOT (dec = 1.5)", "NOT (dec = '5')", "dec = CAST(1.5 AS DECIMAL(10,2))",
    # time zones and units against TIMESTAMP / DATE literals and text
    "tz_us > TIMESTAMP '2020-01-01 00:00:00'", "tz_us = TIMESTAMP '2020-01-01 00:00:00+00:00'",
    "tz_ns = TIMESTAMP '2020-01-01 00:00:00'", "tz_s <= TIMESTAMP '2020-01-01 00:00:00.5'",
    "tz_ny = TIMESTAMP '2019-12-31 19:00:00'", "tz_ny = TIMESTAMP '2020-01-01 00:00:00+00:00'",
    "tz_ms IN (TIMESTAMP '2020-01-01 00:00:00', TIMESTAMP '2020-01-02 00:00:00')",
    "tz_us BETWEEN TIMESTAMP '2019-12-31 00:00:00' AND TIMESTAMP '2020-01-01 00:00:00'",
    "ts_ns = TIMESTAMP '2020-01-01 00:00:00'", "ts_ns <= TIMESTAMP '2020-01-01 00:00:00'",
    "ts_s = TIMESTAMP '2020-01-01 00:00:00.5'", "ts_s < TIMESTAMP '1969-12-31 23:59:59.5'",
    "ts_ns = TIMESTAMP(9) '2020-01-01 00:00:00.0000005'", "ts_us = DATE '2020-01-01'", "tz_ny < DATE '2020-01-01'",
    "ts_ns = ts_s", "ts_ns > ts_us", "tz_ns = ts_ns", "tz_ny = ts_us", "d32 = ts_s",
    "NOT (tz_ny = '2020-01-01 00:00:00')", "NOT (tz_ny = '2020-01-01T00:00:00Z')", "NOT (d32 < '2020-01-01')",
    "NOT (d32 <= 0)", "NOT (d64 = 1577836800000)", "i32 < DATE '2020-01-01'",
    # floats: literals in the column's type
    "f32 = 0.1", "f32 = 16777217", "f32 BETWEEN 0.1 AND 0.1", "0.1 = f32", "f16 = 0.1", "f16 = 65519.99",
    "f16 < 0.1", "f32 IN (0.1, 2.5)", "NOT (f32 = 0.1)", "NOT (f32 IN (0.1))", "f32 NOT IN (0.1)",
    "NOT (f32 = 16777217)", "f64 = 0.1", "f32 = -0.0", "f64 > 1e308",
    # binary, dictionary, time, nested
    "bin = X'35'", "lbin = X'35'", "fsb = X'3535'", "NOT (bin = '5')", "dict = 'a'", "dict IN ('a', 'c')",
    "NOT (dict IN ('a', 'c'))", "t32 = 5", "t32ms = 5", "NOT (t32 = '01:00:00')", "NOT (t64 = '5')",
    "st.x IN (5, 300)", "st.x = 5", "NOT (st.x = 300)",
    # IS [NOT] TRUE / FALSE with NULLs
    "b IS TRUE", "b IS NOT TRUE", "b IS FALSE", "b IS NOT FALSE", "NOT (b IS FALSE)", "b IS TRUE AND i8 > 0",
    "(i8 > 1) IS NOT FALSE", "(i8 > 1) IS TRUE", "(f64 > 1) IS NOT TRUE", "NULL IS TRUE", "b IS TRUE OR b IS NULL",
    "(u64 = 5) IS TRUE", "b = true", "b != false",
]

#: Filters the reference refuses (lancejit must refuse them too).
TYPED_REFUSED = [
    "i8 = 300", "i8 = 1.5", "u8 = -5", "i64 = 9223372036854775808", "i64 = 1.5", "f32 = '5'", "dec = 1.5",
    "dec0 = 100000", "d256 = 18446744073709551615", "s = 5", "bin = '5'", "fsb = X'35'", "b = 1",
    "d32 = '2020-01-01'", "ts_us = '2020-01-01 00:00:00'", "t64 = 5", "dur = 5", "i8 = 1 + 299",
    "st.x = 300", "st.x BETWEEN 1 AND 300", "i8 IN (300)", "i64 IN (-9223372036854775808)", "u64 = 5 OR i8 = 300",
    "i8 IS TRUE", "s IS FALSE", "f16 = 1e-8", "NOT (b = 1)", "NOT (fsb = '5')", "NOT (i8 = DATE '2020-01-01')",
    "i64 = TIMESTAMP '2020-01-01 00:00:00'",
]


def same_rows(a, b, key: str) -> bool:
    """Tables with the same rows once sorted by ``key`` (NaN equal to NaN)."""
    import numpy as np
    import pyarrow as pa

    a, b = a.sort_by(key), b.sort_by(key)
    if a.schema != b.schema or a.num_rows != b.num_rows:
        return False
    for x, y in zip(a.columns, b.columns):
        if pa.types.is_floating(x.type):
            if not np.array_equal(x.to_numpy(zero_copy_only=False), y.to_numpy(zero_copy_only=False), equal_nan=True):
                return False
        elif not x.equals(y):
            return False
    return True
