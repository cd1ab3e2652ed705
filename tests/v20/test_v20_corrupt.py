"""Corrupt 2.0 files raise lancejit errors, never IndexError/ValueError/crashes."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import lance.file as lf
from v20_helpers import BytesReader, flip_random_bytes, v20_table

from lancejit.core.errors import CorruptFileError, LanceJitError
from lancejit.encoding.v20 import make_field_decoders
from lancejit.file.container import open_file_metadata


@pytest.fixture(scope="module")
def good(tmp_path_factory):
    table = v20_table(11, 300)
    path = str(tmp_path_factory.mktemp("v20bad") / "t.lance")
    with lf.LanceFileWriter(path, version="2.0", max_page_bytes=1024) as w:
        w.write_batch(table)
    with open(path, "rb") as fh:
        return path, fh.read()


async def _decode_everything(data: bytes, path: str, md=None):
    reader = BytesReader(data, path)
    if md is None:
        md = await open_file_metadata(reader)
    for d in make_field_decoders(reader, md, None):
        await d.read_range(0, d.num_rows)
        await d.take(np.arange(0, d.num_rows, 7, dtype=np.int64))


def _replace_page(md, col_index, page_index, **changes):
    cols = list(md.columns)
    col = cols[col_index]
    pages = list(col.pages)
    pages[page_index] = dataclasses.replace(pages[page_index], **changes)
    cols[col_index] = dataclasses.replace(col, pages=tuple(pages))
    return dataclasses.replace(md, columns=tuple(cols))


def _column_of(md, name):
    from lancejit.encoding.v20.field import column_count

    first = 0
    for f in md.schema.fields:
        if f.name == name:
            return first
        first += column_count(f)
    raise KeyError(name)


async def test_buffer_past_end_of_file(good):
    path, data = good
    md = await open_file_metadata(BytesReader(data, path))
    c = _column_of(md, "c_int32")
    page = md.columns[c].pages[0]
    bad = _replace_page(md, c, 0, buffer_offsets=tuple(o + len(data) for o in page.buffer_offsets))
    with pytest.raises(CorruptFileError):
        await _decode_everything(data, path, bad)


async def test_page_longer_than_its_buffer(good):
    path, data = good
    md = await open_file_metadata(BytesReader(data, path))
    c = _column_of(md, "c_int64")
    page = md.columns[c].pages[0]
    bad = _replace_page(md, c, 0, num_rows=page.num_rows + 1000)
    with pytest.raises(LanceJitError):
        await _decode_everything(data, path, bad)


async def test_buffer_index_out_of_range(good):
    path, data = good
    md = await open_file_metadata(BytesReader(data, path))
    c = _column_of(md, "c_f64")
    page = md.columns[c].pages[0]
    bad = _replace_page(md, c, 0, buffer_offsets=page.buffer_offsets[:0], buffer_sizes=page.buffer_sizes[:0])
    with pytest.raises(CorruptFileError):
        await _decode_everything(data, path, bad)


def _overwrite_buffer(data: bytes, md, name: str, buffer_index: int, fill: bytes) -> bytes:
    c = _column_of(md, name)
    page = md.columns[c].pages[0]
    start, size = page.buffer_offsets[buffer_index], page.buffer_sizes[buffer_index]
    out = bytearray(data)
    out[start : start + size] = (fill * (size // len(fill) + 1))[:size]
    return bytes(out)


@pytest.mark.parametrize(
    "name, buffer_index, fill",
    [
        ("c_str", 0, b"\xff\xff\xff\xff\x00\x00\x00\x01"),  # end offsets decrease / past bytes
        ("c_lstr", 0, b"\x10\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00"),
        ("c_dictstr", 0, b"\xfe"),  # 1-based dictionary index past the dictionary
        ("c_arrowdict", 0, b"\x7f\x7f"),  # Arrow dictionary index past the dictionary
    ],
)
async def test_garbage_in_buffers(good, name, buffer_index, fill):
    path, data = good
    md = await open_file_metadata(BytesReader(data, path))
    bad = _overwrite_buffer(data, md, name, buffer_index, fill)
    reader = BytesReader(bad, path)
    (d,) = make_field_decoders(reader, md, [name])
    with pytest.raises(CorruptFileError):
        await d.read_range(0, d.num_rows)


async def test_garbage_list_offsets(good):
    path, data = good
    md = await open_file_metadata(BytesReader(data, path))
    bad = _overwrite_buffer(data, md, "c_list", 0, b"\x00\x00\x00\x00\x00\x10\x00\x00")
    reader = BytesReader(bad, path)
    (d,) = make_field_decoders(reader, md, ["c_list"])
    with pytest.raises(CorruptFileError):
        await d.read_range(0, d.num_rows)


async def test_wrong_column_count(good):
    path, data = good
    md = await open_file_metadata(BytesReader(data, path))
    bad = dataclasses.replace(md, columns=md.columns[:-1])
    with pytest.raises(CorruptFileError):
        make_field_decoders(BytesReader(data, path), bad, None)


@pytest.mark.parametrize("seed", range(40))
async def test_random_byte_flips_raise_only_lancejit_errors(good, seed):
    path, data = good
    try:
        await _decode_everything(flip_random_bytes(data, seed), path)
    except LanceJitError:
        pass


@pytest.mark.parametrize("cut", [1, 40, 100, 1000])
async def test_truncated_file(good, cut):
    path, data = good
    with pytest.raises(LanceJitError):
        await _decode_everything(data[:-cut], path)
