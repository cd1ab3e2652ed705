"""lancejit-written files read back by pylance 14 equal the input, per type, version, seed, size."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

import writer_datagen as g
from writer_inspect import parse_file

lance_file = pytest.importorskip("lance.file")

from lancejit.file.writer import LanceFileWriter  # noqa: E402

VERSIONS = ["2.2", "2.1"]


def _families(rng, n):
    return g.flat_families(rng, n)


def _write(path, table, version, max_page_bytes=None, batches=1):
    with LanceFileWriter(str(path), table.schema, version=version, max_page_bytes=max_page_bytes) as w:
        if batches == 1:
            w.write_batch(table)
        else:
            bounds = np.linspace(0, table.num_rows, batches + 1).astype(int)
            for a, b in zip(bounds[:-1], bounds[1:]):
                w.write_batch(table.slice(a, b - a))


def _check(path, table):
    got = lance_file.LanceFileReader(str(path)).read_all().to_table()
    assert got.num_rows == table.num_rows
    for name in table.column_names:
        exp = table[name].combine_chunks()
        act = got[name].combine_chunks()
        if act.type != exp.type:
            act = act.cast(exp.type)
        assert act.equals(exp), name


@pytest.mark.parametrize("version", VERSIONS + ["2.0"])
@pytest.mark.parametrize("seed,n", [(0, 1), (1, 37), (2, 1500), (3, 5000)])
def test_flat_types(tmp_path, version, seed, n):
    rng = np.random.default_rng(seed)
    t = pa.table(_families(rng, n))
    p = tmp_path / "f.lance"
    _write(p, t, version)
    _check(p, t)


@pytest.mark.parametrize("version", VERSIONS + ["2.0"])
@pytest.mark.parametrize("seed", [4, 5])
def test_flat_types_many_pages(tmp_path, version, seed):
    """Small pages and several batches: pages and mini-block chunks cross boundaries."""
    rng = np.random.default_rng(seed)
    t = pa.table(_families(rng, 7000))
    p = tmp_path / "f.lance"
    _write(p, t, version, max_page_bytes=16 * 1024, batches=3)
    pf = parse_file(str(p))
    assert max(len(c.pages) for c in pf.columns) > 3
    _check(p, t)


def _nested(rng, n):
    return g.nested_families(rng, n)


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("seed,n,page", [(0, 1, None), (1, 50, None), (2, 3000, None), (3, 4000, 8192)])
def test_nested_types(tmp_path, version, seed, n, page):
    rng = np.random.default_rng(seed)
    t = pa.table(_nested(rng, n))
    p = tmp_path / "n.lance"
    _write(p, t, version, max_page_bytes=page, batches=2 if n > 1 else 1)
    _check(p, t)


@pytest.mark.parametrize("version", VERSIONS)
def test_all_null_and_constant(tmp_path, version):
    n = 3000
    t = pa.table({
        "nulls": pa.nulls(n, pa.int32()),
        "null_type": pa.nulls(n),
        "null_str": pa.nulls(n, pa.string()),
        "null_lists": pa.array([None] * n, pa.list_(pa.int32())),
        "empty_lists": pa.array([[]] * n, pa.list_(pa.int64())),
        "null_or_empty": pa.array([None if i % 2 else [] for i in range(n)], pa.list_(pa.int64())),
        "const": pa.array(np.full(n, 7, dtype=np.int64)),
        "const_nulls": pa.array([7 if i % 3 else None for i in range(n)], pa.int32()),
        "const_str": pa.array(["same"] * n),
        "const_str_nulls": pa.array(["same" if i % 3 else None for i in range(n)], pa.large_string()),
        "const_bool": pa.array([True] * n),
        "const_fsb": pa.array([b"abc"] * n, pa.binary(3)),
        "const_dec": pa.array([5] * n, pa.decimal128(10, 1)),
        "null_struct": pa.array([None] * n, pa.struct([("x", pa.int32())])),
    })
    p = tmp_path / "c.lance"
    _write(p, t, version)
    _check(p, t)


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("seed", [0, 1])
def test_wide_values_full_zip(tmp_path, version, seed):
    rng = np.random.default_rng(seed)
    n = 300
    big = [None if i % 5 == 0 else rng.bytes(int(rng.integers(200, 50_000))) for i in range(n)]
    lens = rng.integers(0, 3, n)
    t = pa.table({
        "wide_bin": pa.array(big, pa.large_binary()),
        "wide_str": pa.array([("w" * 300 + str(i)) if i % 4 else None for i in range(n)]),
        "big_vec": g.vectors(rng, n, dim=128),
        "big_vec_nulls": g.vectors(rng, n, dim=100, nulls=0.2),
        "list_wide": pa.ListArray.from_arrays(
            pa.array(np.concatenate([[0], np.cumsum(lens)]), pa.int32()),
            pa.array([rng.bytes(400) for _ in range(int(lens.sum()))]),
            mask=pa.array(rng.random(n) < 0.1)),
    })
    p = tmp_path / "w.lance"
    _write(p, t, version, max_page_bytes=256 * 1024)
    pf = parse_file(str(p))
    kinds = {pf.page_layouts(c)[0].WhichOneof("layout") for c in range(len(pf.columns))}
    assert kinds == {"full_zip_layout"}, [(c, pf.page_layouts(c)[0].WhichOneof("layout")) for c in range(len(pf.columns))]
    _check(p, t)


def _nested_v20(rng, n):
    lens = rng.integers(0, 4, n)
    offs = pa.array(np.concatenate([[0], np.cumsum(lens)]), pa.int32())
    inner = g.lists(rng, n * 2, nulls=0.1, empties=0.1, item_nulls=0.1)
    return {
        "list": g.lists(rng, n),
        "large_list": g.lists(rng, n, large=True, item_nulls=0.2),
        "list_of_list": pa.ListArray.from_arrays(
            pa.array(np.arange(0, 2 * n + 1, 2, dtype=np.int32)), inner),
        "struct": g.structs(rng, n, nulls=0.0),
        "list_struct": pa.ListArray.from_arrays(offs, g.structs(rng, int(lens.sum()), nulls=0.0),
                                                mask=pa.array(rng.random(n) < 0.1)),
        "list_str": pa.ListArray.from_arrays(offs, g.strings(rng, int(lens.sum()), nulls=0.1)),
        "list_vec": pa.ListArray.from_arrays(offs, g.vectors(rng, int(lens.sum()), dim=4, nulls=0.1)),
        "nulls": pa.nulls(n, pa.int64()),
        "null_str": pa.nulls(n, pa.string()),
    }


@pytest.mark.parametrize("seed,n,page", [(0, 1, None), (1, 50, None), (2, 3000, None), (3, 4000, 8192)])
def test_nested_types_v20(tmp_path, seed, n, page):
    rng = np.random.default_rng(seed)
    t = pa.table(_nested_v20(rng, n))
    p = tmp_path / "n20.lance"
    _write(p, t, "2.0", max_page_bytes=page, batches=2 if n > 1 else 1)
    pf = parse_file(str(p))
    assert (pf.major, pf.minor) == (0, 3)
    _check(p, t)


def test_v20_rejects_null_structs(tmp_path):
    from lancejit.core.errors import NotSupportedError

    arr = g.structs(np.random.default_rng(0), 100, nulls=0.5)
    with pytest.raises(NotSupportedError):
        _write(tmp_path / "x.lance", pa.table({"s": arr}), "2.0")
    assert not (tmp_path / "x.lance").exists()


@pytest.mark.parametrize("version", ["2.2", "2.1", "2.0"])
def test_arrow_dictionary_input(tmp_path, version):
    rng = np.random.default_rng(7)
    a = pa.array([["x", "yy", None, "zzz"][i] for i in rng.integers(0, 4, 3000)]).dictionary_encode()
    b = pa.DictionaryArray.from_arrays(pa.array(rng.integers(0, 3, 3000).astype(np.int8)),
                                       pa.array(["p", "q", "unused"]))
    c = pa.DictionaryArray.from_arrays(pa.array(rng.integers(0, 2, 3000).astype(np.int16)),
                                       pa.array([10, 20], pa.int64()))
    t = pa.table({"a": a, "b": b, "c": c})
    p = tmp_path / "d.lance"
    _write(p, t, version, batches=3)
    got = lance_file.LanceFileReader(str(p)).read_all().to_table()
    for name in t.column_names:
        exp = t[name].combine_chunks()
        act = got[name].combine_chunks()
        assert act.type == exp.type
        # 2.0 (as the reference) appends a null item to the dictionary: compare decoded values
        assert act.cast(exp.type.value_type).equals(exp.cast(exp.type.value_type)), name


@pytest.mark.parametrize("version", ["2.2", "2.1"])
def test_map_type(tmp_path, version):
    m = pa.array([[("a", 1), ("b", None)], None, [], [("c", 3)]] * 300, pa.map_(pa.string(), pa.int32()))
    t = pa.table({"m": m.slice(5, 1000)})
    p = tmp_path / "m.lance"
    _write(p, t, version, batches=2)
    _check(p, t)


def _vec_item_nulls(rng, n, dim, dtype=np.float32, vec_nulls=0.1, item_nulls=0.1):
    vals = pa.array(rng.standard_normal(n * dim).astype(dtype), mask=rng.random(n * dim) < item_nulls)
    return pa.FixedSizeListArray.from_arrays(vals, dim, mask=pa.array(rng.random(n) < vec_nulls))


@pytest.mark.parametrize("version", VERSIONS + ["2.0"])
@pytest.mark.parametrize("seed", [0, 1])
def test_vectors_with_item_nulls(tmp_path, version, seed):
    rng = np.random.default_rng(seed)
    n = 700
    t = pa.table({
        "small": _vec_item_nulls(rng, n, 3),
        "wide": _vec_item_nulls(rng, n, 70, np.float64),
        "nested_fsl": pa.FixedSizeListArray.from_arrays(_vec_item_nulls(rng, n * 2, 2, np.int32), 2),
        "fsb_vec": pa.FixedSizeListArray.from_arrays(pa.array([rng.bytes(3) for _ in range(n * 4)], pa.binary(3)), 4),
    })
    p = tmp_path / "v.lance"
    _write(p, t, version, batches=2)
    _check(p, t)


@pytest.mark.parametrize("version", VERSIONS + ["2.0"])
def test_non_nullable_fields(tmp_path, version):
    rng = np.random.default_rng(3)
    n = 2000
    st_type = pa.struct([pa.field("a", pa.int64(), nullable=False), pa.field("b", pa.string(), nullable=False)])
    schema = pa.schema([
        pa.field("i", pa.int32(), nullable=False),
        pa.field("s", pa.string(), nullable=False),
        pa.field("st", st_type, nullable=False),
        pa.field("l", pa.list_(pa.field("item", pa.int16(), nullable=False)), nullable=False),
    ])
    lens = rng.integers(0, 4, n)
    t = pa.table([
        pa.array(rng.integers(0, 100, n).astype(np.int32)),
        pa.array([str(x) for x in rng.integers(0, 10**6, n)]),
        pa.StructArray.from_arrays([pa.array(rng.integers(0, 9, n)), pa.array(["x"] * n)], fields=list(st_type)),
        pa.ListArray.from_arrays(pa.array(np.concatenate([[0], np.cumsum(lens)]), pa.int32()),
                                 pa.array(rng.integers(0, 9, int(lens.sum())).astype(np.int16)),
                                 type=schema.field("l").type),
    ], schema=schema)
    p = tmp_path / "nn.lance"
    _write(p, t, version)
    _check(p, t)
    got = lance_file.LanceFileReader(str(p)).read_all().to_table()
    assert not got.schema.field("i").nullable


@pytest.mark.parametrize("nulls,page", [(0.0, None), (0.2, None), (0.2, 8192)])
def test_fixed_size_list_of_struct_v22(tmp_path, nulls, page):
    rng = np.random.default_rng(5)
    n = 2000
    st = pa.StructArray.from_arrays(
        [pa.array(rng.integers(0, 9, n * 2).astype(np.int32)), g.strings(rng, n * 2, nulls=nulls)],
        names=["x", "s"], mask=pa.array(rng.random(n * 2) < nulls))
    fs = pa.FixedSizeListArray.from_arrays(st, 2, mask=pa.array(rng.random(n) < nulls))
    t = pa.table({"a": fs.slice(3, 1500)})  # pylance counts its pages in items: read it alone
    p = tmp_path / "fs.lance"
    _write(p, t, "2.2", max_page_bytes=page)
    pf = parse_file(str(p))
    assert [f.logical_type for f in pf.descriptor.schema.fields][:2] == ["fixed_size_list:struct:2", "struct"]
    _check(p, t)


@pytest.mark.parametrize("version", ["2.1", "2.0"])
def test_fixed_size_list_of_struct_needs_v22(tmp_path, version):
    from lancejit.core.errors import NotSupportedError

    st = pa.StructArray.from_arrays([pa.array([1, 2, 3, 4])], names=["x"])
    t = pa.table({"a": pa.FixedSizeListArray.from_arrays(st, 2)})
    with pytest.raises(NotSupportedError):
        _write(tmp_path / "x.lance", t, version)
    assert not (tmp_path / "x.lance").exists()


@pytest.mark.parametrize("version", ["2.2", "2.1", "2.0"])
def test_extension_types_bfloat16(tmp_path, version):
    arrow_mod = pytest.importorskip("lance.arrow")
    rng = np.random.default_rng(8)
    vals = [None if i % 9 == 0 else float(x) for i, x in enumerate(rng.standard_normal(4000).round(2))]
    bf = arrow_mod.bfloat16_array(vals)
    t = pa.table({"bf": bf.slice(0, 500), "vec": pa.FixedSizeListArray.from_arrays(arrow_mod.bfloat16_array(vals), 8)})
    p = tmp_path / "bf.lance"
    _write(p, t, version, batches=2)
    got = lance_file.LanceFileReader(str(p)).read_all().to_table()
    for name in t.column_names:
        assert got[name].type == t[name].type
        assert got[name].combine_chunks().equals(t[name].combine_chunks())


def _edge_cases():
    return {
        "empty_strs": pa.array([""] * 5000),
        "empty_strs_nulls": pa.array(["" if i % 2 else None for i in range(5000)]),
        "len255": pa.array(["x" * 255 + str(i % 10) for i in range(3000)]),
        "len256": pa.array(["y" * 256 + str(i) for i in range(3000)]),
        "empty_bin_large": pa.array([b""] * 100, pa.large_binary()),
        "one_huge": pa.array([b"z" * (3 << 20)], pa.large_binary()),
        "neg_ints": pa.array(-np.arange(5000)),
        "u64max": pa.array(np.full(3000, np.iinfo(np.uint64).max, dtype=np.uint64)),
        "lists_all_empty": pa.array([[]] * 3000, pa.list_(pa.string())),
        "lists_big": pa.array([list(range(20000))] * 3, pa.list_(pa.int32())),
        # mostly empty lists: > 65535 rep/def levels per page -> pages split at row starts
        "lists_sparse": pa.ListArray.from_arrays(
            pa.array(np.concatenate([[0], np.cumsum(np.where(np.arange(150_000) % 1000 == 0, 3, 0))]),
                     pa.int32()), pa.array(np.arange(450, dtype=np.int32))),
    }


@pytest.mark.parametrize("version", ["2.2", "2.1", "2.0"])
@pytest.mark.parametrize("page", [None, 100])
@pytest.mark.parametrize("case", list(_edge_cases()))
def test_edge_cases(tmp_path, version, page, case):
    arr = _edge_cases()[case]
    t = pa.table({"a": arr})
    p = tmp_path / "e.lance"
    _write(p, t, version, max_page_bytes=page)
    _check(p, t)


def _page_rows(path) -> list[list[int]]:
    pf = parse_file(str(path))
    return [[p.length for p in c.pages] for c in pf.columns]


def _list_shape(shape: str, rng, n: int) -> pa.Array:
    lens = np.full(n, 3)
    if shape == "empty_lists":
        lens[rng.random(n) < 0.05] = 0
    offs = pa.array(np.concatenate([[0], np.cumsum(lens)]).astype(np.int32))
    m = int(lens.sum())
    item_nulls = shape in ("dense_item_nulls", "null_lists_item_nulls", "struct_struct_list_item_nulls")
    items = pa.array(rng.integers(0, 9, m).astype(np.int32), mask=(rng.random(m) < 0.1) if item_nulls else None)
    if shape == "list_list":
        items = pa.ListArray.from_arrays(pa.array((np.arange(m + 1) * 2).astype(np.int32)),
                                         pa.array(rng.integers(0, 9, 2 * m).astype(np.int32)))
    null_lists = shape in ("null_lists", "null_lists_item_nulls", "struct_struct_list_item_nulls")
    arr = pa.ListArray.from_arrays(offs, items, mask=pa.array(rng.random(n) < 0.05) if null_lists else None)
    if shape.startswith("struct_"):
        for _ in range(shape.count("struct_")):
            arr = pa.StructArray.from_arrays([arr], names=["s"], mask=pa.array(rng.random(n) < 0.1))
    return arr


@pytest.mark.parametrize("version", ["2.1", "2.2"])
@pytest.mark.parametrize("shape", ["dense", "dense_item_nulls", "null_lists", "empty_lists", "list_list",
                                   "null_lists_item_nulls", "struct_list", "struct_struct_list_item_nulls"])
def test_list_pages_split_like_reference(tmp_path, version, shape):
    """Pages with many rep/def levels: pylance 14 cuts them only when some list is null or
    empty (dense lists stay in one page), at 65 535 / 43 690 / 32 767 levels by level width."""
    rng = np.random.default_rng(11)
    t = pa.table({"a": _list_shape(shape, rng, 40_000)})
    ours, ref = tmp_path / "o.lance", tmp_path / "r.lance"
    _write(ours, t, version)
    with lance_file.LanceFileWriter(str(ref), t.schema, version=version) as w:
        w.write_batch(t)
    assert _page_rows(ours) == _page_rows(ref)
    _check(ours, t)


def _uses_fsst(path) -> bool:
    return "fsst" in str(parse_file(str(path)).page_layouts(0)[0])


@pytest.mark.parametrize("version", ["2.1", "2.2"])
@pytest.mark.parametrize("kind", ["string", "large_string", "binary", "large_binary", "wide_binary", "wide_string"])
def test_fsst_chosen_like_reference(tmp_path, version, kind):
    """pylance 14 compresses utf8 pages with FSST on its own, never binary ones."""
    reps = 40 if kind.startswith("wide") else 1
    texts = [f"the quick brown fox {i} jumps" * reps for i in range(3000 if reps > 1 else 20_000)]
    typ = {"string": pa.string(), "large_string": pa.large_string(), "binary": pa.binary(),
           "large_binary": pa.large_binary(), "wide_binary": pa.binary(), "wide_string": pa.string()}[kind]
    vals = texts if "string" in kind else [s.encode() for s in texts]
    t = pa.table({"a": pa.array(vals, typ)})
    ours, ref = tmp_path / "o.lance", tmp_path / "r.lance"
    _write(ours, t, version)
    with lance_file.LanceFileWriter(str(ref), t.schema, version=version) as w:
        w.write_batch(t)
    assert _uses_fsst(ours) == _uses_fsst(ref) == ("string" in kind)
    _check(ours, t)


def test_binary_fsst_when_asked(tmp_path):
    f = pa.field("a", pa.binary(), metadata={"lance-encoding:compression": "fsst"})
    t = pa.table({"a": pa.array([f"value {i} of a binary column".encode() for i in range(20_000)])},
                 schema=pa.schema([f]))
    p = tmp_path / "b.lance"
    _write(p, t, "2.2")
    assert _uses_fsst(p)
    _check(p, t)
