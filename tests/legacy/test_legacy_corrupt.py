"""Corrupt legacy (0.1) files raise lancejit errors; large metadata needs one more request."""

from __future__ import annotations

import glob
import struct

import numpy as np
import pyarrow as pa
import pytest

import lance
from v20_helpers import BytesReader, arrays_equal, flip_random_bytes, v20_table

from lancejit.core.errors import CorruptFileError, LanceJitError
from lancejit.encoding.legacy import make_field_decoders
from lancejit.file.container import open_file_metadata
from lancejit.file.legacy import parse_legacy_metadata


@pytest.fixture(scope="module")
def good(tmp_path_factory):
    uri = str(tmp_path_factory.mktemp("legbad") / "ds")
    lance.write_dataset(v20_table(21, 200), uri, data_storage_version="legacy", max_rows_per_group=50)
    (path,) = glob.glob(uri + "/data/*.lance")
    with open(path, "rb") as fh:
        return path, fh.read()


async def _decode_everything(data: bytes, path: str):
    reader = BytesReader(data, path)
    md = await open_file_metadata(reader)
    for d in make_field_decoders(reader, md, None):
        await d.read_range(0, d.num_rows)
        await d.take(np.arange(0, d.num_rows, 3, dtype=np.int64))


async def test_bad_metadata_position(good):
    path, data = good
    for pos in (len(data) + 5, len(data) - 16, -3):
        bad = data[:-16] + struct.pack("<q", pos) + data[-8:]
        with pytest.raises(CorruptFileError):
            await _decode_everything(bad, path)


async def test_garbage_metadata(good):
    path, data = good
    (meta_pos,) = struct.unpack("<q", data[-16:-8])
    bad = bytearray(data)
    bad[meta_pos + 4 : len(data) - 16] = b"\xff" * (len(data) - 16 - meta_pos - 4)
    with pytest.raises(CorruptFileError):
        await _decode_everything(bytes(bad), path)


async def test_garbage_page_table(good):
    path, data = good
    reader = BytesReader(data, path)
    size, tail = await reader.read_tail(1 << 20)
    legacy = await parse_legacy_metadata(reader, tail, size)
    bad = bytearray(data)
    pt = legacy.page_table_position
    n = legacy.page_table.size * 8
    bad[pt : pt + n] = np.full(legacy.page_table.size, len(data) // 2, dtype="<i8").tobytes()
    with pytest.raises(LanceJitError):
        await _decode_everything(bytes(bad), path)


@pytest.mark.parametrize("name, fill", [("c_str", b"\xff" * 8), ("c_list", b"\x00\x00\x00\x7f"), ("c_arrowdict", b"\x7f\x7f\x7f\x7f")])
async def test_garbage_pages(good, name, fill):
    path, data = good
    reader = BytesReader(data, path)
    md = await open_file_metadata(reader)
    field = md.schema.field(name)
    pos, length = md.legacy.page(field.id, 0)
    width = {"c_str": 8 * (length + 1), "c_list": 4 * length, "c_arrowdict": 4 * length}[name]
    bad = bytearray(data)
    bad[pos : pos + width] = (fill * (width // len(fill) + 1))[:width]
    reader = BytesReader(bytes(bad), path)
    (d,) = make_field_decoders(reader, md, [name])
    with pytest.raises(CorruptFileError):
        await d.read_range(0, d.num_rows)


@pytest.mark.parametrize("seed", range(40))
async def test_random_byte_flips_raise_only_lancejit_errors(good, seed):
    path, data = good
    try:
        await _decode_everything(flip_random_bytes(data, seed), path)
    except LanceJitError:
        pass


@pytest.mark.parametrize("cut", [1, 15, 17, 200])
async def test_truncated(good, cut):
    path, data = good
    with pytest.raises(LanceJitError):
        await _decode_everything(data[:-cut], path)


async def test_metadata_larger_than_the_tail(tmp_path):
    n = 6000
    rng = np.random.default_rng(0)
    table = pa.table({"a": pa.array(rng.integers(0, 100, n)), "s": pa.array([f"v{i % 7}" for i in range(n)]),
                      "d": pa.array([f"k{i % 3}" for i in range(n)]).dictionary_encode()})
    uri = str(tmp_path / "ds")
    lance.write_dataset(table, uri, data_storage_version="legacy", max_rows_per_group=3)
    (path,) = glob.glob(uri + "/data/*.lance")
    data = open(path, "rb").read()
    reader = BytesReader(data, path)
    md = await open_file_metadata(reader)
    assert reader.calls == 2  # the tail, then the metadata region before it
    expected = lance.dataset(uri).to_table()
    for d in make_field_decoders(reader, md, None):
        assert arrays_equal(expected[d.field.name], await d.read_range(0, n))


async def test_schema_supplied_by_the_caller(good):
    """Files read with the dataset's schema (as the table layer does) decode the same."""
    from lancejit.core.schema import LanceSchema

    path, data = good
    reader = BytesReader(data, path)
    size, tail = await reader.read_tail(1 << 16)
    embedded = await parse_legacy_metadata(reader, tail, size)
    given = await parse_legacy_metadata(reader, tail, size, schema=LanceSchema(embedded.schema.fields))
    assert given.page_table.tolist() == embedded.page_table.tolist()
    assert given.arrow_schema.equals(embedded.arrow_schema)
