"""Each ``lance-encoding:*`` key produces the encoding it names; pylance reads the file exactly."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from writer_inspect import parse_file

lance_file = pytest.importorskip("lance.file")

from lancejit.core.errors import InvalidInputError  # noqa: E402
from lancejit.file.writer import LanceFileWriter  # noqa: E402

N = 20000


def _data(kind: str, seed: int) -> pa.Array:
    rng = np.random.default_rng(seed)
    if kind == "ints":
        return pa.array(rng.integers(0, 1000, N).astype(np.int32))
    if kind == "floats":
        return pa.array(rng.random(N).astype(np.float32))
    if kind == "runs":
        return pa.array((np.arange(N) // 100).astype(np.int64))
    if kind == "strings":
        return pa.array([f"name{i % 300}_{i}" for i in range(N)])
    if kind == "lowcard":
        return pa.array([f"s{i % 1500}" for i in range(N)])
    if kind == "wide":
        return pa.array([rng.bytes(100) * 3 + str(i).encode() for i in range(300)])
    if kind == "struct":
        return pa.StructArray.from_arrays(
            [pa.array(rng.integers(0, 100, N).astype(np.int32)), pa.array(rng.random(N))],
            names=["x", "y"], mask=pa.array(rng.random(N) < 0.1))
    if kind == "blob":
        return pa.array([None if i % 7 == 0 else (b"" if i % 5 == 0 else rng.bytes(int(rng.integers(1, 5000))))
                         for i in range(60)], pa.large_binary())
    raise ValueError(kind)


def _layout(path):
    pf = parse_file(str(path))
    return pf.page_layouts(0)[0]


def _kinds(enc) -> list[str]:
    out = []
    while enc is not None and enc.WhichOneof("compression"):
        k = enc.WhichOneof("compression")
        out.append(k)
        inner = getattr(enc, k)
        enc = inner.values if k in ("general", "fsst", "byte_stream_split", "fixed_size_list") else None
    return out


def _write_read(tmp_path, arr, md, version):
    f = pa.field("a", arr.type, True, metadata=md)
    t = pa.table([arr], schema=pa.schema([f]))
    p = tmp_path / "k.lance"
    with LanceFileWriter(str(p), t.schema, version=version) as w:
        w.write_batch(t)
    got = lance_file.LanceFileReader(str(p)).read_all().to_table()
    assert got.column(0).combine_chunks().equals(arr)
    return _layout(p)


CASES = [
    # (data kind, metadata, check(layout) -> bool, description)
    ("ints", {"lance-encoding:compression": "lz4"},
     lambda l: _kinds(l.mini_block_layout.value_compression)[0] == "general"
     and l.mini_block_layout.value_compression.general.compression.scheme == 1, "lz4 general"),
    ("ints", {"lance-encoding:compression": "zstd", "lance-encoding:compression-level": "9"},
     lambda l: l.mini_block_layout.value_compression.general.compression.scheme == 2
     and l.mini_block_layout.value_compression.general.compression.level == 9, "zstd level 9"),
    ("ints", {"lance-encoding:compression": "none"},
     lambda l: _kinds(l.mini_block_layout.value_compression) == ["flat"], "none -> flat"),
    ("floats", {"lance-encoding:compression": "zstd", "lance-encoding:bss": "on"},
     lambda l: _kinds(l.mini_block_layout.value_compression)[:2] == ["general", "byte_stream_split"], "bss on"),
    ("floats", {"lance-encoding:compression": "zstd", "lance-encoding:bss": "off"},
     lambda l: "byte_stream_split" not in _kinds(l.mini_block_layout.value_compression), "bss off"),
    ("strings", {"lance-encoding:compression": "fsst"},
     lambda l: _kinds(l.mini_block_layout.value_compression)[0] == "fsst", "fsst"),
    ("strings", {"lance-encoding:compression": "none"},
     lambda l: _kinds(l.mini_block_layout.value_compression) == ["variable"], "strings none"),
    ("strings", {"lance-encoding:compression": "lz4"},
     lambda l: _kinds(l.mini_block_layout.value_compression)[0] == "general", "strings lz4"),
    ("runs", {"lance-encoding:rle-threshold": "0.0"},
     lambda l: "rle" not in _kinds(l.mini_block_layout.value_compression), "rle never"),
    ("ints", {"lance-encoding:rle-threshold": "1.0"},
     lambda l: _kinds(l.mini_block_layout.value_compression) == ["rle"], "rle always"),
    ("ints", {"lance-encoding:structural-encoding": "fullzip"},
     lambda l: l.WhichOneof("layout") == "full_zip_layout", "force fullzip"),
    ("wide", {"lance-encoding:structural-encoding": "miniblock"},
     lambda l: l.WhichOneof("layout") == "mini_block_layout", "force miniblock"),
    ("lowcard", {"lance-encoding:dict-divisor": "2"},
     lambda l: l.mini_block_layout.num_dictionary_items > 0, "dict-divisor 2 -> dictionary"),
    ("lowcard", {"lance-encoding:dict-divisor": "100000"},
     lambda l: l.mini_block_layout.num_dictionary_items == 0, "dict-divisor huge -> none"),
    ("ints", {"lance-encoding:general": "on"},
     lambda l: _kinds(l.mini_block_layout.value_compression)[0] == "general", "general on"),
    ("wide", {"lance-encoding:compression": "zstd"},
     lambda l: _kinds(l.full_zip_layout.value_compression)[0] == "general", "full-zip per-value zstd"),
    ("wide", {"lance-encoding:compression": "fsst"},
     lambda l: _kinds(l.full_zip_layout.value_compression)[0] == "fsst", "full-zip fsst"),
    ("struct", {"lance-encoding:packed": "true"},
     lambda l: _kinds(l.mini_block_layout.value_compression) == ["packed_struct"], "packed"),
    ("blob", {"lance-encoding:blob": "true"},
     lambda l: l.WhichOneof("layout") == "blob_layout", "blob"),
]


@pytest.mark.parametrize("version", ["2.2", "2.1"])
@pytest.mark.parametrize("kind,md,check,desc", CASES, ids=[c[3] for c in CASES])
def test_config_key(tmp_path, version, kind, md, check, desc):
    layout = _write_read(tmp_path, _data(kind, 1), md, version)
    assert check(layout), layout


def test_packed_struct_is_one_column(tmp_path):
    arr = _data("struct", 2)
    f = pa.field("a", arr.type, True, metadata={"lance-encoding:packed": "true"})
    p = tmp_path / "p.lance"
    with LanceFileWriter(str(p), pa.schema([f])) as w:
        w.write_batch(pa.table([arr], schema=pa.schema([f])))
    assert len(parse_file(str(p)).columns) == 1


def test_bad_key_values_raise(tmp_path):
    arr = _data("ints", 0)
    for md in ({"lance-encoding:compression": "brotli"}, {"lance-encoding:structural-encoding": "zigzag"}):
        f = pa.field("a", arr.type, True, metadata=md)
        with pytest.raises(InvalidInputError):
            with LanceFileWriter(str(tmp_path / "bad.lance"), pa.schema([f])) as w:
                w.write_batch(pa.table([arr], schema=pa.schema([f])))
        assert not (tmp_path / "bad.lance").exists()


def _var_struct(n=3000, seed=0):
    rng = np.random.default_rng(seed)
    return pa.StructArray.from_arrays(
        [pa.array(rng.integers(0, 100, n).astype(np.int32)), pa.array([str(i) for i in range(n)]),
         pa.array([rng.bytes(int(k)) for k in rng.integers(0, 5, n)], pa.large_binary())],
        names=["x", "s", "b"], mask=pa.array(rng.random(n) < 0.1))


def test_packed_struct_variable_children_v22(tmp_path):
    arr = _var_struct()
    layout = _write_read(tmp_path, arr, {"lance-encoding:packed": "true"}, "2.2")
    assert layout.WhichOneof("layout") == "full_zip_layout"
    fields = layout.full_zip_layout.value_compression.variable_packed_struct.fields
    assert [f.WhichOneof("layout") for f in fields] == ["bits_per_value", "bits_per_length", "bits_per_length"]


def test_packed_struct_variable_children_v21_rejected(tmp_path):
    from lancejit.core.errors import NotSupportedError

    arr = _var_struct(100)
    f = pa.field("a", arr.type, True, metadata={"lance-encoding:packed": "true"})
    with pytest.raises(NotSupportedError):
        with LanceFileWriter(str(tmp_path / "v.lance"), pa.schema([f]), version="2.1") as w:
            w.write_batch(pa.table([arr], schema=pa.schema([f])))
    assert not (tmp_path / "v.lance").exists()


V20_CASES = [
    ("strings", {"lance-encoding:compression": "zstd", "lance-encoding:compression-level": "7"},
     lambda l: l.binary.bytes.flat.compression.scheme == "zstd" and l.binary.bytes.flat.compression.level == 7),
    ("strings", {"lance-encoding:compression": "lz4"},
     lambda l: l.binary.bytes.flat.compression.scheme == "lz4"),
    ("blob", {"lance-encoding:blob": "true"}, lambda l: len(l.packed_struct.inner) == 2),
]


@pytest.mark.parametrize("kind,md,check", V20_CASES, ids=["zstd", "lz4", "blob"])
def test_config_key_v20(tmp_path, kind, md, check):
    layout = _write_read(tmp_path, _data(kind, 3), md, "2.0")
    assert check(layout), layout


def test_packed_struct_v20(tmp_path):
    rng = np.random.default_rng(4)
    arr = pa.StructArray.from_arrays(
        [pa.array(rng.integers(0, 100, 500).astype(np.int32)), pa.array(rng.random(500))], names=["x", "y"])
    layout = _write_read(tmp_path, arr, {"lance-encoding:packed": "true"}, "2.0")
    assert [i.nullable.no_nulls.values.flat.bits_per_value for i in layout.packed_struct.inner] == [32, 64]


@pytest.mark.parametrize("version", ["2.2", "2.1", "2.0"])
def test_writer_level_encoding_options(tmp_path, version):
    """Writer options apply to every field; field metadata overrides them."""
    s = _data("strings", 5)
    f_plain = pa.field("a", s.type)
    f_over = pa.field("b", s.type, metadata={"lance-encoding:compression": "none"})
    schema = pa.schema([f_plain, f_over])
    t = pa.table([s, s], schema=schema)
    p = tmp_path / "o.lance"
    with LanceFileWriter(str(p), schema, version=version, encoding_options={"compression": "zstd"}) as w:
        w.write_batch(t)
    assert lance_file.LanceFileReader(str(p)).read_all().to_table().equals(t)
    pf = parse_file(str(p))
    a, b = pf.page_layouts(0)[0], pf.page_layouts(1)[0]
    if version == "2.0":
        assert a.binary.bytes.flat.compression.scheme == "zstd"
        assert not b.binary.bytes.flat.HasField("compression")
    else:
        assert _kinds(a.mini_block_layout.value_compression)[0] == "general"
        assert _kinds(b.mini_block_layout.value_compression) == ["variable"]
