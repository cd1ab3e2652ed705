"""Layout-specific 2.1/2.2 files: full-zip, all-null, constant, dictionary, forced encodings."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

import v21data as D
from v21support import Opened, check_file, write_lance

VERSIONS = ["2.1", "2.2"]


def _meta(arr: pa.Array, name: str, **md) -> tuple[pa.Field, pa.Array]:
    return pa.field(name, arr.type, metadata={f"lance-encoding:{k.replace('_', '-')}": v for k, v in md.items()}), arr


def _table(pairs) -> pa.Table:
    fields = [f for f, _ in pairs]
    return pa.Table.from_arrays([a for _, a in pairs], schema=pa.schema(fields))


def _layouts(path) -> set[str]:
    op = Opened(path)
    return {p.encoding.WhichOneof("layout") for c in op.meta.columns for p in c.pages}


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("seed", [1, 2])
def test_fullzip(tmp_path, version, seed):
    rng = np.random.default_rng(seed)
    n = 600
    big = [bytes(rng.integers(0, 256, size=int(rng.integers(200, 700)), dtype=np.uint8)) for _ in range(n)]
    t = _table(
        [
            _meta(D.vectors(rng, n, 128, nulls=0), "vec128"),
            _meta(D.vectors(rng, n, 96, nulls=0.2), "vec_null"),
            _meta(pa.array(D._with_nulls(big, rng, 0.2), pa.large_binary()), "big"),
            _meta(pa.array([b.hex() for b in big], pa.string()), "bigs"),
            _meta(D.ints(rng, n, pa.int64()), "fz_int", structural_encoding="fullzip"),
            _meta(D.strings(rng, n), "fz_str", structural_encoding="fullzip"),
            _meta(D.lists(rng, n, D.ints(rng, 5 * n, pa.int32())), "fz_list", structural_encoding="fullzip"),
            _meta(D.lists(rng, n, D.strings(rng, 5 * n)), "fz_lstr", structural_encoding="fullzip"),
            _meta(D.structs(rng, n, {"x": D.ints(rng, n), "y": D.strings(rng, n)}), "fz_st", structural_encoding="fullzip"),
        ]
    )
    path = write_lance(tmp_path / "fz.lance", t, version, 64 * 1024)
    assert "full_zip_layout" in _layouts(path)
    check_file(path, rng, n_takes=3)


@pytest.mark.parametrize("version", VERSIONS)
def test_all_null_and_constant(tmp_path, version):
    rng = np.random.default_rng(7)
    n = 2500
    t = pa.table(
        {
            "null_i": pa.nulls(n, pa.int32()),
            "null_s": pa.nulls(n, pa.string()),
            "null_type": pa.nulls(n),
            "null_list": pa.nulls(n, pa.list_(pa.int32())),
            "null_st": pa.nulls(n, pa.struct([("a", pa.int32()), ("b", pa.string())])),
            "list_of_nulls": D.lists(rng, n, pa.nulls(5 * n, pa.int64())),
            "const_i": pa.array([7] * n, pa.int32()),
            "const_f": pa.array([2.5] * n, pa.float64()),
            "const_b": pa.array([True] * n),
            "const_s": pa.array(["same"] * n),
            "const_lb": pa.array([b"xyz"] * n, pa.large_binary()),
            "const_dec": pa.array([D.decimal.Decimal("1.5")] * n, pa.decimal128(10, 2)),
            "const_null": pa.array([None if i % 3 == 0 else 9 for i in range(n)], pa.int64()),
            "const_snull": pa.array([None if i % 5 == 0 else "abc" for i in range(n)]),
            "const_u8": pa.array([3] * n, pa.uint8()),
        }
    )
    path = write_lance(tmp_path / "c.lance", t, version, 16 * 1024)
    assert "all_null_layout" in _layouts(path)
    check_file(path, rng, n_takes=3)


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("seed", [3, 4])
def test_dictionary_and_forced(tmp_path, version, seed):
    rng = np.random.default_rng(seed)
    n = 4000
    pairs = [
        _meta(D.strings(rng, n, card=6), "lowcard"),
        _meta(pa.array(rng.integers(0, 100, n) * 1_000_003, pa.int64()), "lowcard_i64"),
        _meta(D.strings(rng, n, card=40), "dictdiv", dict_divisor="3"),
        _meta(D.floats(rng, n, pa.float32()), "f32_lz4", compression="lz4"),
        _meta(D.floats(rng, n, pa.float64()), "f64_zstd", compression="zstd", compression_level="9"),
        _meta(D.floats(rng, n, pa.float64()), "bss_on", compression="zstd", bss="on"),
        _meta(D.ints(rng, n, pa.int32()), "bss_off", compression="lz4", bss="off"),
        _meta(pa.array(np.arange(n) // 13, pa.int32()), "rle", rle_threshold="0.9"),
        _meta(D.strings(rng, n, maxlen=40), "str_zstd", compression="zstd"),
        _meta(D.strings(rng, n, maxlen=30), "mb_str", structural_encoding="miniblock"),
        _meta(D.lists(rng, n, D.ints(rng, 5 * n, pa.int64())), "list_lz4", compression="lz4"),
    ]
    path = write_lance(tmp_path / "d.lance", _table(pairs), version, 32 * 1024)
    check_file(path, rng, n_takes=3)


@pytest.mark.parametrize("version", VERSIONS)
def test_maps_dicts_misc(tmp_path, version):
    rng = np.random.default_rng(11)
    n = 1500
    dict_arr = pa.DictionaryArray.from_arrays(
        pa.array(rng.integers(0, 4, n), pa.int32(), mask=D._mask(rng, n, 0.2)), pa.array(["a", "bb", "ccc", "dddd"])
    )
    cols = {"m": D.maps(rng, n)} if version != "2.1" else {}  # 2.1 cannot store maps
    t = pa.table(
        {
            **cols,
            "dict": dict_arr,
            "ls_nn": D.lists(rng, n, D.ints(rng, 5 * n, pa.int32(), nulls=0), nulls=0, empties=0),
            "deep": D.lists(rng, n, D.structs(rng, 5 * n, {"l": D.lists(rng, 5 * n, D.strings(rng, 25 * n))})),
        }
    )
    path = write_lance(tmp_path / "m.lance", t, version, 16 * 1024)
    check_file(path, rng, n_takes=3)


@pytest.mark.parametrize("version", VERSIONS)
def test_constant_every_type(tmp_path, version):
    import datetime
    import decimal

    rng = np.random.default_rng(12)
    n = 3000
    t = pa.table(
        {
            "ts": pa.array([datetime.datetime(2020, 1, 2)] * n, pa.timestamp("us", tz="UTC")),
            "d32": pa.array([datetime.date(2020, 1, 2)] * n),
            "fsb": pa.array([b"abcd"] * n, pa.binary(4)),
            "f16": pa.array(np.full(n, 1.5, np.float16)),
            "bin": pa.array([b"qq"] * n, pa.binary()),
            "ls": pa.array(["zz"] * n, pa.large_string()),
            "fsl": pa.array([[1.0, 2.0]] * n, pa.list_(pa.float32(), 2)),
            "dec256": pa.array([decimal.Decimal("3.25")] * n, pa.decimal256(40, 2)),
            "dict": pa.DictionaryArray.from_arrays(pa.array(np.zeros(n, np.int32)), pa.array(["only"])),
            "li_const": pa.array([[3]] * n, pa.list_(pa.int64())),
            "st_const_null": pa.array([{"a": 2} if i % 9 else None for i in range(n)], pa.struct([("a", pa.int16())])),
            "dur": pa.array([5] * n, pa.duration("s")),
            "time64": pa.array([7] * n, pa.time64("ns")),
            "i8n": pa.array([None if i % 4 == 0 else -3 for i in range(n)], pa.int8()),
        }
    )
    path = write_lance(tmp_path / "k.lance", t, version, 16 * 1024)
    if version == "2.2":
        assert "all_null_layout" in _layouts(path)
    check_file(path, rng, n_takes=3)


@pytest.mark.parametrize("version", VERSIONS)
def test_bfloat16_extension(tmp_path, version):
    import lance.arrow as la

    rng = np.random.default_rng(13)
    vals = [None if i % 7 == 0 else float(x) for i, x in enumerate(rng.standard_normal(500))]
    t = pa.table(
        {
            "bf": la.bfloat16_array(vals),
            "vbf": pa.FixedSizeListArray.from_arrays(la.bfloat16_array([float(x) for x in rng.standard_normal(1000)]), 2),
        }
    )
    path = write_lance(tmp_path / "bf.lance", t, version, 4096)
    check_file(path, rng)
