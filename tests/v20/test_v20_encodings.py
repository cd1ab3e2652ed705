"""2.0 encodings pylance writes only on request: packed structs, FSST, zstd/lz4 binary bytes,
blobs; plus Arrow dictionaries and per-page string dictionaries across many pages."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

import lance.file as lf
from v20_helpers import BytesReader, arrays_equal, random_sorted_indices

from lancejit.encoding.v20 import make_field_decoders
from lancejit.file.container import open_file_metadata


def _words(rng, n, nulls=0.1):
    vocab = ["lance", "columnar", "format", "numba", "arrow", "decoder", "page", "buffer", "zone"]
    out = []
    for _ in range(n):
        if rng.random() < nulls:
            out.append(None)
        else:
            out.append(" ".join(vocab[int(i)] for i in rng.integers(0, len(vocab), int(rng.integers(0, 12)))))
    return out


def _bf16_values(values):
    from lance.arrow import bfloat16_array

    return bfloat16_array([float(v) for v in values])


def _bf16_type():
    return pa.list_(pa.field("item", _bf16_values([0.0]).type), 2)


def _special_table(seed: int, n: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    words = _words(rng, n)
    schema = pa.schema([
        pa.field("fsst", pa.string(), metadata={"lance-encoding:compression": "fsst"}),
        pa.field("fsst_bin", pa.binary(), metadata={"lance-encoding:compression": "fsst"}),
        pa.field("zstd", pa.string(), metadata={"lance-encoding:compression": "zstd"}),
        pa.field("zstd_lvl", pa.large_binary(), metadata={"lance-encoding:compression": "zstd",
                                                          "lance-encoding:compression-level": "9"}),
        pa.field("lz4", pa.binary(), metadata={"lance-encoding:compression": "lz4"}),
        pa.field("packed", pa.struct([("a", pa.int32()), ("b", pa.float64()), ("v", pa.list_(pa.float32(), 2))]),
                 metadata={"packed": "true"}),
        pa.field("packed2", pa.struct([("u", pa.uint8()), ("w", pa.int64())]),
                 metadata={"lance-encoding:packed": "true"}),
        pa.field("blob", pa.large_binary(), metadata={"lance-encoding:blob": "true"}),
        pa.field("adict", pa.dictionary(pa.int16(), pa.string())),
        pa.field("adict_int", pa.dictionary(pa.int32(), pa.int64())),
        pa.field("lowcard", pa.string()),
        pa.field("uuid", pa.uuid()),
        pa.field("json", pa.json_(pa.string())),
        pa.field("bf16", _bf16_type()),
    ])
    packed = pa.StructArray.from_arrays(
        [pa.array(rng.integers(-99, 99, n).astype(np.int32)), pa.array(rng.standard_normal(n)),
         pa.FixedSizeListArray.from_arrays(pa.array(rng.standard_normal(2 * n).astype(np.float32)), 2)],
        fields=list(schema.field("packed").type),
    )
    packed2 = pa.StructArray.from_arrays(
        [pa.array(rng.integers(0, 255, n).astype(np.uint8)), pa.array(rng.integers(-(10**12), 10**12, n))],
        fields=list(schema.field("packed2").type),
    )
    blob = pa.array([None if rng.random() < 0.2 else bytes(rng.integers(0, 256, int(rng.integers(0, 300))).astype(np.uint8))
                     for _ in range(n)], pa.large_binary())
    cols = [
        pa.array(words),
        pa.array([None if w is None else w.encode() for w in words], pa.binary()),
        pa.array(_words(rng, n)),
        pa.array([None if w is None else w.encode() for w in _words(rng, n)], pa.large_binary()),
        pa.array([None if w is None else w.encode() for w in _words(rng, n)], pa.binary()),
        packed,
        packed2,
        blob,
        pa.array([None if rng.random() < 0.2 else ["x", "yy", "zzz", ""][int(i)] for i in rng.integers(0, 4, n)]).dictionary_encode().cast(
            pa.dictionary(pa.int16(), pa.string())),
        pa.array(rng.integers(0, 7, n)).dictionary_encode(),
        pa.array([None if rng.random() < 0.1 else ["north", "south", "east", "west"][int(i)] for i in rng.integers(0, 4, n)]),
        pa.array([None if rng.random() < 0.1 else bytes(rng.integers(0, 256, 16).astype(np.uint8)) for _ in range(n)], pa.uuid()),
        pa.array([None if rng.random() < 0.1 else f'{{"k": {int(i)}}}' for i in rng.integers(0, 99, n)], pa.json_(pa.string())),
        pa.FixedSizeListArray.from_arrays(_bf16_values(rng.standard_normal(2 * n)), 2),
    ]
    return pa.Table.from_arrays(cols, schema=schema)


CASES = [(0, 3000, 64 * 1024), (1, 401, 2048), (2, 50, 1 << 20)]


@pytest.fixture(scope="module", params=CASES, ids=lambda c: f"seed{c[0]}-n{c[1]}")
def written(request, tmp_path_factory):
    seed, n, page = request.param
    table = _special_table(seed, n)
    path = str(tmp_path_factory.mktemp("v20enc") / "t.lance")
    with lf.LanceFileWriter(path, version="2.0", max_page_bytes=page) as w:
        half = n // 2
        w.write_batch(table.slice(0, half))
        w.write_batch(table.slice(half))
    with open(path, "rb") as fh:
        data = fh.read()
    return path, lf.LanceFileReader(path), data, seed


async def _open(path, data):
    reader = BytesReader(data, path)
    md = await open_file_metadata(reader)
    return reader, md, make_field_decoders(reader, md, None)


async def test_special_encodings_are_present(written):
    path, ref, data, seed = written
    _, md, _ = await _open(path, data)
    kinds = {}
    for i, col in enumerate(md.columns):
        for p in col.pages:
            kinds.setdefault(i, set()).add(p.encoding.WhichOneof("array_encoding"))
    flat = set().union(*kinds.values())
    assert {"fsst", "packed_struct", "binary", "dictionary"} <= flat
    if seed == 0:  # pages over 32 KiB: FSST compression switched on
        fsst_pages = [p for c in md.columns for p in c.pages if p.encoding.WhichOneof("array_encoding") == "fsst"]
        on = [p for p in fsst_pages if int.from_bytes(p.encoding.fsst.symbol_table[:8], "little") & (1 << 24)]
        assert on, "expected at least one FSST page with compression on"


async def test_read_all_and_ranges(written):
    path, ref, data, seed = written
    expected = ref.read_all().to_table()
    _, _, decs = await _open(path, data)
    n = expected.num_rows
    rng = np.random.default_rng(seed)
    for d in decs:
        assert d.field.equals(ref.metadata().schema.field(d.field.name), check_metadata=True)
        assert arrays_equal(expected[d.field.name], await d.read_range(0, n)), d.field.name
        for _ in range(3):
            a, b = sorted(int(x) for x in rng.integers(0, n + 1, 2))
            assert arrays_equal(expected[d.field.name].slice(a, b - a), await d.read_range(a, b)), (d.field.name, a, b)


async def test_take(written):
    path, ref, data, seed = written
    n = ref.num_rows()
    rng = np.random.default_rng(seed + 1)
    _, _, decs = await _open(path, data)
    for k in (1, 40, n):
        idx = random_sorted_indices(rng, n, k)
        expected = ref.take_rows(idx).to_table()
        for d in decs:
            assert arrays_equal(expected[d.field.name], await d.take(idx)), (d.field.name, k)


@pytest.mark.parametrize("name", ["zstd", "lz4", "fsst", "blob", "packed"])
async def test_garbage_in_compressed_and_packed_pages(written, name):
    from lancejit.core.errors import CorruptFileError, LanceJitError
    from lancejit.encoding.v20.field import column_count

    path, ref, data, seed = written
    _, md, _ = await _open(path, data)
    first = 0
    for f in md.schema.fields:
        if f.name == name:
            break
        first += column_count(f)
    bad = bytearray(data)
    for page in md.columns[first].pages:
        for off, size in zip(page.buffer_offsets, page.buffer_sizes):
            bad[off : off + size] = bytes([0xAB]) * size
    reader = BytesReader(bytes(bad), path)
    (d,) = make_field_decoders(reader, md, [name])
    if name in ("zstd", "lz4", "blob"):
        with pytest.raises(CorruptFileError):
            await d.read_range(0, d.num_rows)
    else:  # garbage may still decode (fixed-width rows, valid codes): never a foreign error
        try:
            await d.read_range(0, d.num_rows)
        except LanceJitError:
            pass
