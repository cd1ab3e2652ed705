"""Real-bytes tests: pylance 14 writes 2.1/2.2 files; we slice pages by hand and check the
compression decoders reproduce exactly what pylance reads back."""

from __future__ import annotations

import struct
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pytest

from lancejit.pb import encodings_v2_1_pb2 as pb21
from lancejit.pb import file2_pb2

pytest.importorskip("lance")
import lance.file  # noqa: E402

from lancejit.encoding.v21 import compression as C  # noqa: E402
from lancejit.encoding.v21.dictionary import indices_of, take  # noqa: E402
from lancejit.encoding.v21.values import (  # noqa: E402
    FixedSizeListValues,
    FixedWidth,
    StructValues,
    VariableWidth,
)

# ------------------------------------------------------------------------------------------
# tiny file parser (footer -> column metadata -> page layouts -> mini-block chunks)


@dataclass
class Page:
    layout: pb21.PageLayout
    buffers: list[memoryview]
    num_rows: int


def read_pages(path: str) -> list[list[Page]]:
    """Pages of every column of a 2.1/2.2 file: ``result[column][page]``."""
    data = open(path, "rb").read()
    mv = memoryview(data)
    cm_pos, cmo_pos, gbo_pos, n_gb, n_cols, major, minor, magic = struct.unpack(
        "<QQQIIHH4s", data[-40:]
    )
    assert magic == b"LANC" and major == 2 and minor in (1, 2)
    columns = []
    for c in range(n_cols):
        pos, size = struct.unpack_from("<QQ", data, cmo_pos + 16 * c)
        cm = file2_pb2.ColumnMetadata()
        cm.ParseFromString(data[pos : pos + size])
        pages = []
        for p in cm.pages:
            from google.protobuf import any_pb2

            anyv = any_pb2.Any()
            anyv.ParseFromString(p.encoding.direct.encoding)
            assert anyv.type_url.endswith("lance.encodings21.PageLayout"), anyv.type_url
            layout = pb21.PageLayout()
            layout.ParseFromString(anyv.value)
            bufs = [mv[o : o + s] for o, s in zip(p.buffer_offsets, p.buffer_sizes)]
            pages.append(Page(layout, bufs, p.length))
        columns.append(pages)
    return columns


@dataclass
class Chunk:
    num_values: int
    num_levels: int
    rep: memoryview | None
    deff: memoryview | None
    values: list[memoryview]


def _pad8(x: int) -> int:
    return (x + 7) // 8 * 8


def miniblock_chunks(page: Page) -> list[Chunk]:
    """Split a mini-block page's chunk buffer into chunks (the Lance file format specification)."""
    mb = page.layout.mini_block_layout
    large = mb.has_large_chunk
    meta = page.buffers[0]
    words = np.frombuffer(meta, dtype="<u4" if large else "<u2")
    data = page.buffers[1]
    chunks = []
    pos = 0
    remaining = mb.num_items
    has_rep = mb.HasField("rep_compression")
    has_def = mb.HasField("def_compression")
    for i, w in enumerate(words):
        w = int(w)
        nbytes = ((w >> 4) + 1) * 8
        if i == len(words) - 1:
            nvals = remaining
        else:
            nvals = 1 << (w & 0xF)
        remaining -= nvals
        chunk = data[pos : pos + nbytes]
        hp = 0
        num_levels = struct.unpack_from("<H", chunk, hp)[0]
        hp += 2
        rep_size = def_size = 0
        if has_rep:
            rep_size = struct.unpack_from("<H", chunk, hp)[0]
            hp += 2
        if has_def:
            def_size = struct.unpack_from("<H", chunk, hp)[0]
            hp += 2
        sizes = []
        for _ in range(mb.num_buffers):
            if large:
                sizes.append(struct.unpack_from("<I", chunk, hp)[0])
                hp += 4
            else:
                sizes.append(struct.unpack_from("<H", chunk, hp)[0])
                hp += 2
        hp = _pad8(hp)
        rep = deff = None
        if has_rep:
            rep = chunk[hp : hp + rep_size]
            hp = _pad8(hp + rep_size)
        if has_def:
            deff = chunk[hp : hp + def_size]
            hp = _pad8(hp + def_size)
        vals = []
        for s in sizes:
            vals.append(chunk[hp : hp + s])
            hp = _pad8(hp + s)
        assert hp <= nbytes
        chunks.append(Chunk(nvals, num_levels, rep, deff, vals))
        pos += nbytes
    assert remaining == 0
    return chunks


def compression_kinds(enc) -> list[str]:
    """The chain of oneof names of a CompressiveEncoding (outer first)."""
    out = []
    while enc is not None and enc.WhichOneof("compression"):
        k = enc.WhichOneof("compression")
        out.append(k)
        inner = getattr(enc, k)
        nxt = None
        for f in ("values", "offsets"):
            if hasattr(inner, f) and isinstance(getattr(inner, f), pb21.CompressiveEncoding) and inner.HasField(f):
                nxt = getattr(inner, f)
                break
        enc = nxt
    return out


def write(tmp_path, table: pa.Table, version: str, name: str = "t", batch_rows: int | None = None, **kw) -> str:
    """Write ``table`` with pylance.  ``batch_rows`` writes it in batches with a tiny per-column
    cache so every batch becomes its own page (crossing page boundaries)."""
    path = str(tmp_path / f"{name}_{version}.lance")
    if batch_rows is not None:
        kw.setdefault("data_cache_bytes", 4096)
    with lance.file.LanceFileWriter(path, table.schema, version=version, **kw) as w:
        if batch_rows is None:
            w.write_batch(table)
        else:
            for batch in table.to_batches(max_chunksize=batch_rows):
                w.write_batch(batch)
    return path


def read_back(path: str) -> pa.Table:
    return lance.file.LanceFileReader(path).read_all().to_table()


# ------------------------------------------------------------------------------------------
# decoded values -> Arrow (test-side only; the real builder lives with the structural code)


def _bitmap_buf(bitmap: np.ndarray | None) -> pa.Buffer | None:
    return None if bitmap is None else pa.py_buffer(np.ascontiguousarray(bitmap).tobytes())


def to_arrow(v, typ: pa.DataType, validity: np.ndarray | None = None) -> pa.Array:
    """Build an Arrow array of type ``typ`` from decoded values (validity: bool mask or None)."""
    vbuf = None
    if validity is not None:
        vbuf = pa.py_buffer(np.packbits(validity.astype(np.uint8), bitorder="little").tobytes())
    if isinstance(v, FixedWidth):
        data = v.data.tobytes()
        if v.bits_per_value == 0:  # Constant without a value: nothing stored, all null
            data = bytes(typ.byte_width * v.num_values)
        return pa.Array.from_buffers(typ, v.num_values, [vbuf, pa.py_buffer(data)])
    if isinstance(v, VariableWidth):
        off = np.asarray(v.offsets, dtype=np.int64)
        large = typ in (pa.large_string(), pa.large_binary())
        off = off if large else off.astype(np.int32)
        return pa.Array.from_buffers(
            typ, v.num_values, [vbuf, pa.py_buffer(off.tobytes()), pa.py_buffer(v.data.tobytes())]
        )
    if isinstance(v, FixedSizeListValues):
        child_valid = None
        if v.validity is not None:
            child_valid = np.unpackbits(v.validity, bitorder="little")[: v.items.num_values].astype(bool)
        child = to_arrow(v.items, typ.value_type, child_valid)
        return pa.FixedSizeListArray.from_buffers(typ, v.num_values, [vbuf], children=[child]) if False else pa.Array.from_buffers(typ, v.num_values, [vbuf], children=[child])
    if isinstance(v, StructValues):
        children = [to_arrow(c, typ.field(i).type) for i, c in enumerate(v.children)]
        return pa.Array.from_buffers(typ, v.num_values, [vbuf], children=children)
    raise TypeError(type(v))


def decode_miniblock_page(page: Page, path: str = "test") -> tuple[list, np.ndarray | None]:
    """Decode every chunk's values (dictionary applied) and def levels of a mini-block page."""
    mb = page.layout.mini_block_layout
    items = None
    if mb.HasField("dictionary"):
        items = C.decode_block(mb.dictionary, page.buffers[2], mb.num_dictionary_items, path=path)
    out, defs = [], []
    for ch in miniblock_chunks(page):
        vals = C.decode_miniblock(mb.value_compression, ch.values, ch.num_values, path=path)
        if items is not None:
            vals = take(items, indices_of(vals, path=path), path=path)
        out.append(vals)
        if ch.deff is not None:
            defs.append(C.decode_levels(mb.def_compression, ch.deff, ch.num_levels, path=path))
    return out, (np.concatenate(defs) if defs else None)


def decode_column(pages: list[Page], typ: pa.DataType) -> pa.Array:
    """Decode a flat (no list) column of mini-block pages into Arrow."""
    arrays = []
    for page in pages:
        assert page.layout.WhichOneof("layout") == "mini_block_layout"
        chunks, defs = decode_miniblock_page(page)
        pos = 0
        for vals in chunks:
            valid = None
            if defs is not None:
                valid = defs[pos : pos + vals.num_values] == 0
            arrays.append(to_arrow(vals, typ, valid))
            pos += vals.num_values
    return pa.concat_arrays(arrays) if arrays else pa.array([], typ)


def fullzip_values(page: Page, path: str = "test"):
    """Split a full-zip page without lists into (decoded values, validity) (the Lance file format specification)."""
    fz = page.layout.full_zip_layout
    assert fz.bits_rep == 0, "helper handles pages without repetition only"
    bits = fz.bits_rep + fz.bits_def
    cw = 0 if bits == 0 else 1 if bits <= 8 else 2 if bits <= 16 else 4
    buf = bytes(page.buffers[0])
    n = fz.num_items
    pos = 0
    defs = np.zeros(n, np.uint16)
    if fz.WhichOneof("details") == "bits_per_value":
        bpv = C.bytes_per_value(fz.value_compression)
        assert bpv * 8 == fz.bits_per_value
        parts = []
        for i in range(n):
            if cw:
                defs[i] = int.from_bytes(buf[pos : pos + cw], "little") & ((1 << fz.bits_def) - 1)
                pos += cw
            parts.append(buf[pos : pos + bpv])
            pos += bpv
        data = np.frombuffer(b"".join(parts), np.uint8)
        vals = C.decode_fullzip_fixed(fz.value_compression, data, n, path=path)
        return vals, defs == 0
    lw = fz.bits_per_offset // 8
    payloads = []
    for i in range(n):
        if cw:
            defs[i] = int.from_bytes(buf[pos : pos + cw], "little") & ((1 << fz.bits_def) - 1)
            pos += cw
        if defs[i] == 0:
            ln = int.from_bytes(buf[pos : pos + lw], "little")
            pos += lw
            payloads.append(buf[pos : pos + ln])
            pos += ln
    assert pos == len(buf)
    offs = np.zeros(len(payloads) + 1, np.int64)
    np.cumsum([len(p) for p in payloads], out=offs[1:])
    vw = VariableWidth(offs, np.frombuffer(b"".join(payloads) or b"", np.uint8), len(payloads))
    vals = C.decode_fullzip_variable(fz.value_compression, vw, path=path)
    return vals, defs == 0


def spread(vals, valid: np.ndarray):
    """Variable full-zip stores nothing for nulls: re-insert empty values at null slots."""
    if valid.all():
        return vals
    assert isinstance(vals, VariableWidth)
    lens = np.zeros(len(valid), np.int64)
    lens[valid] = np.diff(np.asarray(vals.offsets))
    offs = np.zeros(len(valid) + 1, np.int64)
    np.cumsum(lens, out=offs[1:])
    return VariableWidth(offs, vals.data, len(valid))


def decode_page(page: Page, typ: pa.DataType) -> pa.Array | None:
    """Decode one page of a flat column with our compression decoders (None: a 2.2 constant /
    all-null page, which holds no compressed values and is the structural code's business)."""
    layout = page.layout.WhichOneof("layout")
    if layout == "full_zip_layout":
        vals, valid = fullzip_values(page)
        if isinstance(vals, VariableWidth):
            vals = spread(vals, valid)
        return to_arrow(vals, typ, None if valid.all() else valid)
    if layout == "mini_block_layout":
        return decode_column([page], typ)
    return None


def check_column(path: str, col: int, name: str, typ: pa.DataType, expect_kinds: list[str] | None = None):
    """Decode column ``col`` of ``path`` (flat, no lists) page by page and compare each page with
    the matching rows of pylance's read-back."""
    pages = read_pages(path)[col]
    expected = read_back(path).column(name).combine_chunks()
    start = decoded = 0
    for page in pages:
        got = decode_page(page, typ)
        if got is not None:
            want = expected.slice(start, page.num_rows)
            assert got.equals(want), f"{name}: rows {start}..{start + page.num_rows} differ from pylance"
            decoded += 1
        start += page.num_rows
    assert start == len(expected) and decoded > 0
    layout = pages[0].layout.WhichOneof("layout")
    if expect_kinds is not None:
        enc = getattr(pages[0].layout, layout).value_compression
        assert compression_kinds(enc) == expect_kinds
    return pages


# ------------------------------------------------------------------------------------------
# tests

VERSIONS = ["2.1", "2.2"]
SEEDS = [0, 1]


def _f(name: str, typ: pa.DataType, **meta: str) -> pa.Field:
    return pa.field(name, typ, metadata=meta or None)


def _table(cols: list[tuple[pa.Field, pa.Array]]) -> pa.Table:
    return pa.table([a for _, a in cols], schema=pa.schema([f for f, _ in cols]))


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("seed", SEEDS)
def test_natural_miniblock_encodings(tmp_path, version, seed):
    rng = np.random.default_rng(seed)
    n = 5000 + 333 * seed  # partial last chunk
    cols = [
        (_f("seq", pa.int32()), pa.array(np.arange(n, dtype=np.int32) + seed)),
        (_f("neg", pa.int64()), pa.array(rng.integers(-(2**40), 2**40, n))),
        (_f("runs", pa.int32()), pa.array((np.arange(n) // 100).astype(np.int32))),
        (_f("f32", pa.float32()), pa.array(rng.random(n).astype(np.float32))),
        (_f("f64", pa.float64()), pa.array(rng.random(n))),
        (_f("f16", pa.float16()), pa.array(rng.random(n).astype(np.float16))),
        (_f("i8", pa.int8()), pa.array(rng.integers(-100, 100, n).astype(np.int8))),
        (_f("u16", pa.uint16()), pa.array(rng.integers(0, 3000, n).astype(np.uint16))),
        (_f("u64", pa.uint64()), pa.array(rng.integers(0, 2**63, n, dtype=np.uint64) * np.uint64(2))),
        (_f("b", pa.bool_()), pa.array(rng.random(n) < 0.3)),
        (_f("s", pa.string()), pa.array([f"str{i}_xx{i * 7 + seed}" for i in range(n)])),
        (_f("ls", pa.large_string()), pa.array([f"v{i * 13}" * (i % 4) for i in range(n)], pa.large_string())),
        (_f("lows", pa.string()), pa.array([["apple", "banana", "cherry", None][i % 4] for i in range(n)])),
        (_f("lowi", pa.int64()), pa.array(rng.integers(0, 100, n) * 1_000_003)),
        (_f("nul", pa.int32()), pa.array([None if i % 7 == seed else i for i in range(n)], pa.int32())),
        (_f("d128", pa.decimal128(20, 3)), pa.array([None if i % 11 == 0 else i * 1000 + 7 for i in range(n)], pa.decimal128(20, 3))),
        (_f("d256", pa.decimal256(40, 3)), pa.array([i * 10**20 + 7 for i in range(n)], pa.decimal256(40, 3))),
        (_f("bin", pa.binary()), pa.array([bytes(rng.integers(0, 256, i % 9, dtype=np.uint8)) for i in range(n)])),
    ]
    table = _table(cols)
    paged = seed == 1
    path = write(tmp_path, table, version, batch_rows=1777 if paged else None)
    kinds = {}
    for i, (f, _) in enumerate(cols):
        pages = check_column(path, i, f.name, f.type)
        assert (len(pages) > 1) == paged
        mb = pages[0].layout.mini_block_layout
        kinds[f.name] = compression_kinds(mb.value_compression)
    # the shapes above must exercise the encodings we claim to test
    assert kinds["seq"] == ["inline_bitpacking"]
    if paged:
        return
    assert kinds["runs"] == ["rle", "flat"]
    assert kinds["s"] == ["fsst", "variable", "flat"]
    assert kinds["b"] == ["flat"]
    assert kinds["d256"] == ["flat"]


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("seed", SEEDS)
def test_forced_general_and_bss(tmp_path, version, seed):
    rng = np.random.default_rng(seed)
    n = 6000 + 77 * seed
    cols = [
        (_f("i_lz4", pa.int32(), **{"lance-encoding:compression": "lz4"}), pa.array(rng.integers(0, 1000, n).astype(np.int32))),
        (
            _f("i_zstd", pa.int64(), **{"lance-encoding:compression": "zstd", "lance-encoding:compression-level": "7"}),
            pa.array(rng.integers(0, 10**6, n)),
        ),
        (_f("f_bss", pa.float64(), **{"lance-encoding:compression": "zstd", "lance-encoding:bss": "on"}), pa.array(rng.random(n))),
        (
            _f("f32_bss", pa.float32(), **{"lance-encoding:compression": "lz4", "lance-encoding:bss": "on"}),
            pa.array(rng.random(n).astype(np.float32)),
        ),
        (_f("s_zstd", pa.string(), **{"lance-encoding:compression": "zstd"}), pa.array([f"v{i % 37}_{i}" for i in range(n)])),
        (_f("s_lz4", pa.string(), **{"lance-encoding:compression": "lz4"}), pa.array([f"k{i % 5}" * 3 + str(i) for i in range(n)])),
    ]
    paged = seed == 1
    path = write(tmp_path, _table(cols), version, batch_rows=2500 if paged else None)
    kinds = {}
    for i, (f, _) in enumerate(cols):
        pages = check_column(path, i, f.name, f.type)
        assert (len(pages) > 1) == paged
        kinds[f.name] = compression_kinds(pages[0].layout.mini_block_layout.value_compression)
    assert kinds["f_bss"] == ["general", "byte_stream_split", "flat"]
    assert kinds["f32_bss"] == ["general", "byte_stream_split", "flat"]
    assert kinds["s_zstd"][0] == "general"
    assert kinds["i_lz4"][0] == "general"


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("paged", [False, True])
def test_fixed_size_lists(tmp_path, version, paged):
    rng = np.random.default_rng(3)
    n = 3000
    fz = {"lance-encoding:structural-encoding": "fullzip"}
    null_items = pa.array([None if i % 5 == 0 else i for i in range(n * 4)], pa.int32())
    cols = [
        (_f("vec", pa.list_(pa.float32(), 8)), pa.FixedSizeListArray.from_arrays(pa.array(rng.random(n * 8).astype(np.float32)), 8)),
        (_f("vec_null", pa.list_(pa.int32(), 4)), pa.FixedSizeListArray.from_arrays(null_items, 4)),
        (_f("bigvec", pa.list_(pa.float32(), 128)), pa.FixedSizeListArray.from_arrays(pa.array(rng.random(n * 128).astype(np.float32)), 128)),
        (_f("vec_null_fz", pa.list_(pa.int32(), 4), **fz), pa.FixedSizeListArray.from_arrays(null_items, 4)),
        (_f("bools", pa.list_(pa.bool_(), 3)), pa.FixedSizeListArray.from_arrays(pa.array(rng.random(n * 3) < 0.5), 3)),
        (_f("null_items", pa.list_(pa.int32(), 128)), pa.FixedSizeListArray.from_arrays(pa.array([None] * (n * 128), pa.int32()), 128)),
        (
            _f("nested", pa.list_(pa.list_(pa.int32(), 8), 8)),
            pa.FixedSizeListArray.from_arrays(
                pa.FixedSizeListArray.from_arrays(pa.array([None if i % 3 else i for i in range(n * 64)], pa.int32()), 8), 8
            ),
        ),
        (
            _f("nested_small", pa.list_(pa.list_(pa.int16(), 2), 3)),
            pa.FixedSizeListArray.from_arrays(
                pa.FixedSizeListArray.from_arrays(
                    pa.array([None if i % 4 == 1 else i for i in range(n * 6)], pa.int16()), 2,
                    mask=pa.array([i % 5 == 2 for i in range(n * 3)]),
                ),
                3,
            ),
        ),
    ]
    path = write(tmp_path, _table(cols), version, batch_rows=1100 if paged else None)
    layouts = {}
    for i, (f, _) in enumerate(cols):
        pages = check_column(path, i, f.name, f.type)
        assert (len(pages) > 1) == paged
        layouts[f.name] = pages[0].layout.WhichOneof("layout")
    assert layouts["bigvec"] == "full_zip_layout"
    assert layouts["vec_null"] == "mini_block_layout"
    assert layouts["null_items"] == layouts["nested"] == "full_zip_layout"
    assert layouts["nested_small"] == "mini_block_layout"


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("paged", [False, True])
def test_fullzip_variable(tmp_path, version, paged):
    rng = np.random.default_rng(4)
    n = 400
    big = [("x" * 300 + str(i) * (i % 50)) if i % 9 else None for i in range(n)]
    blobs = [bytes(rng.integers(0, 4, 40000 + i, dtype=np.uint8)) if i % 3 else None for i in range(8)]
    cols = [
        (_f("big_s", pa.string()), pa.array(big)),
        (_f("big_fsst", pa.string()), pa.array([f"row {i} " + "lorem ipsum dolor " * 20 for i in range(n)])),
        (_f("lb", pa.large_binary()), pa.array(blobs + [b"abc"] * (n - 8), pa.large_binary())),
        (
            _f("s_lz4", pa.string(), **{"lance-encoding:compression": "lz4"}),
            pa.array([f"{i}:" + "abcdefgh" * (40 + i % 30) for i in range(n)]),
        ),
        (
            _f("b_zstd", pa.binary(), **{"lance-encoding:compression": "zstd", "lance-encoding:compression-level": "1"}),
            pa.array([None if i % 10 == 3 else bytes([i % 7]) * (300 + i) for i in range(n)]),
        ),
    ]
    path = write(tmp_path, _table(cols), version, batch_rows=150 if paged else None)
    kinds, schemes = {}, {}
    for i, (f, _) in enumerate(cols):
        pages = check_column(path, i, f.name, f.type)
        assert (len(pages) > 1) == paged
        assert pages[0].layout.WhichOneof("layout") == "full_zip_layout"
        enc = pages[0].layout.full_zip_layout.value_compression
        kinds[f.name] = compression_kinds(enc)
        if kinds[f.name][0] == "general":
            schemes[f.name] = enc.general.compression.scheme
    assert kinds["big_fsst"][0] == "fsst"
    # pylance 14 compresses full-zip values per value with zstd even when lz4 was requested
    zstd = pb21.COMPRESSION_ALGORITHM_ZSTD
    assert schemes == {"lb": zstd, "s_lz4": zstd, "b_zstd": zstd}


def test_packed_structs(tmp_path):
    n = 3000
    fixed = pa.struct([("a", pa.int32()), ("b", pa.float64())])
    var = pa.struct([("a", pa.int32()), ("s", pa.string()), ("c", pa.int64())])
    packed = {"lance-encoding:packed": "true"}
    cols = [
        (_f("ps", fixed, **packed), pa.array([{"a": i, "b": i / 2} for i in range(n)], fixed)),
        (_f("vps", var, **packed), pa.array([{"a": i, "s": "q" * (i % 7), "c": -i} for i in range(n)], var)),
    ]
    path = write(tmp_path, _table(cols), "2.2")
    check_column(path, 0, "ps", fixed, ["packed_struct", "flat"])
    check_column(path, 1, "vps", var, ["variable_packed_struct"])
    path21 = write(tmp_path, _table(cols[:1]), "2.1")
    check_column(path21, 0, "ps", fixed, ["packed_struct", "flat"])


def _expected_list_levels(arr: pa.ListArray) -> tuple[np.ndarray, np.ndarray]:
    """rep/def for list<int32 not-null items>: def 0 value, 1 null list, 2 empty list."""
    reps, defs = [], []
    for v in arr.to_pylist():
        if v is None:
            reps.append(1), defs.append(1)
        elif len(v) == 0:
            reps.append(1), defs.append(2)
        else:
            for k in range(len(v)):
                reps.append(1 if k == 0 else 0), defs.append(0)
    return np.array(reps, np.uint16), np.array(defs, np.uint16)


@pytest.mark.parametrize("version", VERSIONS)
def test_list_levels_and_values(tmp_path, version):
    n = 4000
    lst = pa.array([None if i % 13 == 0 else list(range(i % 5)) for i in range(n)], pa.list_(pa.int32()))
    path = write(tmp_path, _table([(_f("lst", pa.list_(pa.int32())), lst)]), version)
    (page,) = read_pages(path)[0]
    mb = page.layout.mini_block_layout
    assert compression_kinds(mb.rep_compression)[0] in ("out_of_line_bitpacking", "inline_bitpacking")
    reps, defs, vals = [], [], []
    for ch in miniblock_chunks(page):
        reps.append(C.decode_levels(mb.rep_compression, ch.rep, ch.num_levels, path=path))
        defs.append(C.decode_levels(mb.def_compression, ch.deff, ch.num_levels, path=path))
        vals.append(C.decode_miniblock(mb.value_compression, ch.values, ch.num_values, path=path).view(np.int32))
    exp_rep, exp_def = _expected_list_levels(lst)
    np.testing.assert_array_equal(np.concatenate(reps), exp_rep)
    np.testing.assert_array_equal(np.concatenate(defs), exp_def)
    np.testing.assert_array_equal(np.concatenate(vals), lst.flatten().to_numpy())


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("pattern", ["all_null", "mixed"])
def test_all_null_list_levels(tmp_path, version, pattern):
    n = 5000
    if pattern == "all_null":
        arr = pa.array([None] * n, pa.list_(pa.int32()))
    else:
        arr = pa.array([None if i % 3 else [] for i in range(n)], pa.list_(pa.int32()))
    path = write(tmp_path, _table([(_f("l", pa.list_(pa.int32())), arr)]), version)
    (page,) = read_pages(path)[0]
    an = page.layout.all_null_layout
    rep_enc = an.rep_compression if an.HasField("rep_compression") else None
    def_enc = an.def_compression if an.HasField("def_compression") else None
    if version == "2.2" and pattern == "all_null":
        assert compression_kinds(def_enc) == ["rle", "flat"]
        assert compression_kinds(rep_enc) == ["rle", "flat"]
    nrep = an.num_rep_values if version == "2.2" else len(page.buffers[0]) // 2
    ndef = an.num_def_values if version == "2.2" else len(page.buffers[1]) // 2
    rep = C.decode_levels(rep_enc, page.buffers[0], nrep, path=path)
    deff = C.decode_levels(def_enc, page.buffers[1], ndef, path=path)
    exp_rep, exp_def = _expected_list_levels(arr)
    np.testing.assert_array_equal(rep, exp_rep)
    np.testing.assert_array_equal(deff, exp_def)


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("seed", SEEDS)
def test_dictionaries(tmp_path, version, seed):
    rng = np.random.default_rng(seed)
    n = 5000 + seed * 111
    cols = [
        (_f("a", pa.int64()), pa.array(rng.integers(0, 1000, n))),
        (_f("b", pa.int64()), pa.array(rng.integers(0, 100, n) * 1_000_003)),
        (_f("s", pa.string()), pa.array([["apple", "banana", "cherry", None][i % 4] for i in range(n)])),
        (_f("e", pa.float64()), pa.array(rng.integers(0, 50, n).astype(np.float64))),
        (_f("d", pa.decimal128(38, 0)), pa.array([10**20 + int(x) for x in rng.integers(0, 30, n)], pa.decimal128(38, 0))),
    ]
    paged = seed == 1
    path = write(tmp_path, _table(cols), version, batch_rows=2000 if paged else None)
    dicts = {}
    for i, (f, _) in enumerate(cols):
        pages = check_column(path, i, f.name, f.type)
        mb = pages[0].layout.mini_block_layout
        dicts[f.name] = compression_kinds(mb.dictionary) if mb.HasField("dictionary") else None
        assert (len(pages) > 1) == paged
    if paged:
        return
    if version == "2.1":
        assert dicts["s"] == ["variable", "flat"] and dicts["d"] == ["flat"]
    else:
        assert dicts["a"] == ["inline_bitpacking"]
        assert dicts["b"] == ["general", "flat"]
        assert dicts["s"] == ["general", "variable", "flat"]


@pytest.mark.parametrize("version", VERSIONS)
def test_small_list_inline_levels(tmp_path, version):
    arr = pa.array([[1, 2, 3] if i % 2 else ([] if i % 3 else None) for i in range(300)], pa.list_(pa.int32()))
    path = write(tmp_path, _table([(_f("g", pa.list_(pa.int32())), arr)]), version)
    (page,) = read_pages(path)[0]
    mb = page.layout.mini_block_layout
    assert compression_kinds(mb.rep_compression) == ["inline_bitpacking"]
    (ch,) = miniblock_chunks(page)
    exp_rep, exp_def = _expected_list_levels(arr)
    np.testing.assert_array_equal(C.decode_levels(mb.rep_compression, ch.rep, ch.num_levels, path=path), exp_rep)
    np.testing.assert_array_equal(C.decode_levels(mb.def_compression, ch.deff, ch.num_levels, path=path), exp_def)


def test_corrupt_real_chunk_raises(tmp_path):
    """Flipping bytes of real chunks gives CorruptFileError (never IndexError/segfault)."""
    from lancejit.core.errors import CorruptFileError, LanceJitError

    n = 3000
    t = pa.table(
        {
            "seq": pa.array(np.arange(n, dtype=np.int32)),
            "s": pa.array([f"str{i}_xx{i * 7}" for i in range(n)]),
            "r": pa.array((np.arange(n) // 100).astype(np.int32)),
        }
    )
    path = write(tmp_path, t, "2.2")
    rng = np.random.default_rng(7)
    for col in range(3):
        (page,) = read_pages(path)[col]
        mb = page.layout.mini_block_layout
        ch = miniblock_chunks(page)[0]
        # truncation
        cut = [memoryview(bytes(b)[: len(b) // 2]) for b in ch.values]
        with pytest.raises(CorruptFileError):
            C.decode_miniblock(mb.value_compression, cut, ch.num_values, path=path)
        # random byte flips: either decodes or raises lancejit's own error
        for _ in range(30):
            bufs = []
            for b in ch.values:
                raw = bytearray(b)
                if raw:
                    for pos in rng.integers(0, len(raw), 3):
                        raw[pos] = int(rng.integers(0, 256))
                bufs.append(memoryview(bytes(raw)))
            try:
                C.decode_miniblock(mb.value_compression, bufs, ch.num_values, path=path)
            except LanceJitError:
                pass


def test_decoding_in_threads_matches_serial(tmp_path):
    """Kernels release the GIL; concurrent decoding must give the same results as serial."""
    from concurrent.futures import ThreadPoolExecutor

    n = 20000
    t = pa.table(
        {
            "seq": pa.array(np.arange(n, dtype=np.int64) * 3),
            "s": pa.array([f"str{i}_xx{i * 7}" for i in range(n)]),
        }
    )
    path = write(tmp_path, t, "2.2")
    jobs = []
    for col in range(2):
        (page,) = read_pages(path)[col]
        enc = page.layout.mini_block_layout.value_compression
        jobs += [(enc, ch) for ch in miniblock_chunks(page)]

    def run(job):
        enc, ch = job
        v = C.decode_miniblock(enc, ch.values, ch.num_values, path=path)
        return v.data.tobytes()

    serial = [run(j) for j in jobs]
    with ThreadPoolExecutor(4) as pool:
        parallel = list(pool.map(run, jobs))
    assert serial == parallel


@pytest.mark.parametrize("version", VERSIONS)
def test_repacking_reproduces_pylance_bytes(tmp_path, version):
    """Our packers (writer side) reproduce pylance's inline and out-of-line bit-packed bytes."""
    from lancejit.encoding.v21.bitpacking import pack_inline, pack_out_of_line

    n = 5000
    lst = pa.array([None if i % 13 == 0 else list(range(i % 5)) for i in range(n)], pa.list_(pa.int32()))
    t = pa.table({"seq": pa.array(np.arange(n, dtype=np.int32) * 5), "lst": lst})
    path = write(tmp_path, t, version)
    (page,) = read_pages(path)[0]
    mb = page.layout.mini_block_layout
    for ch in miniblock_chunks(page):
        v = C.decode_miniblock(mb.value_compression, ch.values, ch.num_values, path=path)
        assert pack_inline(v.view(np.uint32)) == bytes(ch.values[0])
    (page,) = read_pages(path)[1]
    mb = page.layout.mini_block_layout
    checked = 0
    for ch in miniblock_chunks(page):
        for enc, buf in ((mb.rep_compression, ch.rep), (mb.def_compression, ch.deff)):
            levels = C.decode_levels(enc, buf, ch.num_levels, path=path)
            if enc.WhichOneof("compression") == "out_of_line_bitpacking":
                width = enc.out_of_line_bitpacking.values.flat.bits_per_value
                assert pack_out_of_line(levels, width) == bytes(buf)
                checked += 1
    assert checked > 0


@pytest.mark.parametrize("version", VERSIONS)
def test_misc_fixed_types(tmp_path, version):
    rng = np.random.default_rng(5)
    n = 2500
    cols = [
        (_f("fsb5", pa.binary(5)), pa.array([bytes(rng.integers(0, 256, 5, dtype=np.uint8)) for _ in range(n)], pa.binary(5))),
        (_f("fsb300", pa.binary(300)), pa.array([bytes([i % 256]) * 300 for i in range(n)], pa.binary(300))),
        (_f("bnull", pa.bool_()), pa.array([None if i % 5 == 0 else bool(i % 3) for i in range(n)])),
        (_f("u8", pa.uint8()), pa.array(rng.integers(0, 17, n).astype(np.uint8))),
        (_f("ts", pa.timestamp("us")), pa.array(rng.integers(0, 2**50, n), pa.timestamp("us"))),
        (_f("hvec", pa.list_(pa.float16(), 4)), pa.FixedSizeListArray.from_arrays(pa.array(rng.random(n * 4).astype(np.float16)), 4)),
        (_f("i16z", pa.int16(), **{"lance-encoding:compression": "zstd"}), pa.array(rng.integers(-500, 500, n).astype(np.int16))),
    ]
    path = write(tmp_path, _table(cols), version)
    layouts = {}
    for i, (f, _) in enumerate(cols):
        pages = check_column(path, i, f.name, f.type)
        layouts[f.name] = pages[0].layout.WhichOneof("layout")
    assert layouts["fsb300"] == "full_zip_layout"
