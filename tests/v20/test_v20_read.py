"""2.0 files written by pylance 14 read back exactly as pylance reads them (read_all, ranges, take)."""

from __future__ import annotations

import numpy as np
import pytest

import lance.file as lf
from v20_helpers import BytesReader, arrays_equal, random_sorted_indices, v20_table

from lancejit.encoding.v20 import make_field_decoders
from lancejit.file.container import open_file_metadata

# (seed, rows, max_page_bytes): small pages so every column spans many pages
CASES = [(0, 700, 1024), (1, 1, 4096), (2, 257, 256), (3, 1500, 8192)]


@pytest.fixture(scope="module", params=CASES, ids=lambda c: f"seed{c[0]}-n{c[1]}-p{c[2]}")
def written(request, tmp_path_factory):
    seed, n, page = request.param
    table = v20_table(seed, n)
    path = str(tmp_path_factory.mktemp("v20") / f"t{seed}.lance")
    with lf.LanceFileWriter(path, version="2.0", max_page_bytes=page) as w:
        w.write_batch(table)
    ref = lf.LanceFileReader(path)
    with open(path, "rb") as fh:
        data = fh.read()
    return path, ref, data, seed


async def _decoders(path, data, names=None):
    reader = BytesReader(data, path)
    md = await open_file_metadata(reader)
    assert md.version == "2.0" and (md.major, md.minor) == (0, 3)
    return reader, make_field_decoders(reader, md, names)


async def test_read_all_matches_pylance(written):
    path, ref, data, _ = written
    expected = ref.read_all().to_table()
    _, decs = await _decoders(path, data)
    assert [d.field.name for d in decs] == expected.column_names
    for d in decs:
        assert d.num_rows == expected.num_rows
        got = await d.read_range(0, d.num_rows)
        assert arrays_equal(expected[d.field.name], got), d.field.name


async def test_fields_match_pylance_schema(written):
    path, ref, data, _ = written
    schema = ref.metadata().schema
    _, decs = await _decoders(path, data)
    for d in decs:
        assert d.field.equals(schema.field(d.field.name), check_metadata=True), d.field.name
        assert d.estimated_bytes_per_row() >= 0


async def test_read_ranges_match_pylance(written):
    path, ref, data, seed = written
    expected = ref.read_all().to_table()
    n = expected.num_rows
    rng = np.random.default_rng(seed + 100)
    windows = [(0, 0), (0, 1), (n - 1, n), (0, n)]
    for _ in range(4):
        a, b = sorted(int(x) for x in rng.integers(0, n + 1, 2))
        windows.append((a, b))
    _, decs = await _decoders(path, data)
    for d in decs:
        for a, b in windows:
            got = await d.read_range(a, b)
            assert arrays_equal(expected[d.field.name].slice(a, b - a), got), (d.field.name, a, b)


async def test_take_matches_pylance(written):
    path, ref, data, seed = written
    n = ref.num_rows()
    rng = np.random.default_rng(seed + 7)
    _, decs = await _decoders(path, data)
    for k in (1, 13, n // 3, n):
        idx = random_sorted_indices(rng, n, k)
        expected = ref.take_rows(idx).to_table()
        for d in decs:
            got = await d.take(idx)
            assert arrays_equal(expected[d.field.name], got), (d.field.name, k)


async def test_projection_and_bad_names(written):
    path, ref, data, _ = written
    expected = ref.read_all().to_table()
    names = ["c_list_struct", "c_int8", "c_struct"]
    _, decs = await _decoders(path, data, names)
    assert [d.field.name for d in decs] == names
    for d in decs:
        assert arrays_equal(expected[d.field.name], await d.read_range(0, d.num_rows))
    from lancejit.core.errors import InvalidInputError

    with pytest.raises(InvalidInputError):
        await _decoders(path, data, ["no_such_column"])


async def test_row_bounds_are_checked(written):
    from lancejit.core.errors import RowIndexError

    path, ref, data, _ = written
    _, decs = await _decoders(path, data, ["c_int32"])
    d = decs[0]
    with pytest.raises(RowIndexError):
        await d.read_range(0, d.num_rows + 1)
    with pytest.raises(RowIndexError):
        await d.take(np.array([d.num_rows], dtype=np.int64))
    assert len(await d.take(np.array([], dtype=np.int64))) == 0


async def test_empty_file(tmp_path):
    schema = v20_table(0, 3).schema
    path = str(tmp_path / "empty.lance")
    with lf.LanceFileWriter(path, schema, version="2.0"):
        pass
    expected = lf.LanceFileReader(path).read_all().to_table()
    with open(path, "rb") as fh:
        data = fh.read()
    _, decs = await _decoders(path, data)
    assert len(decs) == len(schema)
    for d in decs:
        assert d.num_rows == 0
        assert arrays_equal(expected[d.field.name], await d.read_range(0, 0))
        assert len(await d.take(np.array([], dtype=np.int64))) == 0
