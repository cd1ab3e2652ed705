"""Legacy (0.1) data files written by pylance 14 (``data_storage_version="legacy"``) read back
exactly as ``lance.dataset(uri)`` reads them (pylance's file reader refuses 0.1 files)."""

from __future__ import annotations

import glob

import numpy as np
import pyarrow as pa
import pytest

import lance
from v20_helpers import BytesReader, arrays_equal, random_sorted_indices, v20_table

from lancejit.encoding.legacy import make_field_decoders
from lancejit.file.container import open_file_metadata
from lancejit.file.legacy import LegacyMetadata, parse_legacy_metadata

# (seed, rows, max_rows_per_group): small groups so every column spans many batches
CASES = [(0, 500, 64), (1, 1, 10), (2, 333, 100), (3, 1200, 1024)]


@pytest.fixture(scope="module", params=CASES, ids=lambda c: f"seed{c[0]}-n{c[1]}-g{c[2]}")
def written(request, tmp_path_factory):
    seed, n, group = request.param
    table = v20_table(seed, n)
    uri = str(tmp_path_factory.mktemp("legacy") / "ds")
    lance.write_dataset(table, uri, data_storage_version="legacy", max_rows_per_group=group)
    (path,) = glob.glob(uri + "/data/*.lance")
    with open(path, "rb") as fh:
        data = fh.read()
    return uri, path, data, seed, group


async def _open(path, data, names=None):
    reader = BytesReader(data, path)
    md = await open_file_metadata(reader)
    assert md.version == "0.1" and isinstance(md.legacy, LegacyMetadata)
    return reader, md, make_field_decoders(reader, md, names)


async def test_metadata(written):
    uri, path, data, seed, group = written
    ds = lance.dataset(uri)
    reader = BytesReader(data, path)
    size, tail = await reader.read_tail(64 * 1024)
    legacy = await parse_legacy_metadata(reader, tail, size)
    assert reader.calls == 1  # everything in the tail
    assert legacy.num_rows == ds.count_rows()
    n = legacy.num_rows
    expected_batches = [min(i, n) for i in range(0, n + group, group)]
    if expected_batches[-1] != n:
        expected_batches.append(n)
    assert legacy.batch_offsets.tolist() == sorted(set(expected_batches))
    assert legacy.arrow_schema == ds.schema
    assert legacy.page_table.shape == (len(list(legacy.schema.walk())), legacy.num_batches, 2)
    # the other argument order works too
    again = await parse_legacy_metadata(reader, size, tail)
    assert again.num_rows == legacy.num_rows


async def test_read_all_matches_pylance(written):
    uri, path, data, _, _ = written
    expected = lance.dataset(uri).to_table()
    _, md, decs = await _open(path, data)
    assert md.num_rows == expected.num_rows
    for d in decs:
        assert d.field.equals(expected.schema.field(d.field.name), check_metadata=True)
        assert arrays_equal(expected[d.field.name], await d.read_range(0, d.num_rows)), d.field.name
        assert d.estimated_bytes_per_row() > 0


async def test_read_ranges_match_pylance(written):
    uri, path, data, seed, group = written
    expected = lance.dataset(uri).to_table()
    n = expected.num_rows
    rng = np.random.default_rng(seed)
    windows = [(0, 0), (0, 1), (n - 1, n), (min(n, max(0, group - 1)), min(n, group + 1))]
    for _ in range(4):
        a, b = sorted(int(x) for x in rng.integers(0, n + 1, 2))
        windows.append((a, b))
    _, _, decs = await _open(path, data)
    for d in decs:
        for a, b in windows:
            assert arrays_equal(expected[d.field.name].slice(a, b - a), await d.read_range(a, b)), (d.field.name, a, b)


async def test_take_matches_pylance(written):
    uri, path, data, seed, _ = written
    ds = lance.dataset(uri)
    n = ds.count_rows()
    rng = np.random.default_rng(seed + 3)
    _, _, decs = await _open(path, data)
    full = ds.to_table()
    # pylance's legacy take panics on fixed-size lists of bools; compare those with its full read
    takeable = [c for c in full.column_names if c != "c_fsl_bool"]
    for k in (1, 17, n // 2, n):
        idx = random_sorted_indices(rng, n, k)
        expected = ds.take(idx, columns=takeable)
        for d in decs:
            want = expected[d.field.name] if d.field.name in takeable else full[d.field.name].take(pa.array(idx))
            assert arrays_equal(want, await d.take(idx)), (d.field.name, k)


async def test_take_requests(written):
    uri, path, data, seed, _ = written
    n = lance.dataset(uri).count_rows()
    idx = random_sorted_indices(np.random.default_rng(seed), n, 50)
    reader, _, decs = await _open(path, data, ["c_int32", "c_str", "c_list", "c_llist_str", "c_arrowdict"])
    steps = {"c_int32": 1, "c_str": 2, "c_list": 2, "c_llist_str": 3, "c_arrowdict": 1}
    for d in decs:
        reader.reset()
        await d.take(idx)
        assert 1 <= reader.calls <= steps[d.field.name], d.field.name  # empty lists skip the item step


async def test_many_fields_share_each_step(written):
    from lancejit.encoding.legacy import run_plans

    uri, path, data, seed, _ = written
    ds = lance.dataset(uri)
    n = ds.count_rows()
    idx = random_sorted_indices(np.random.default_rng(seed), n, 60)
    names = ["c_int32", "c_str", "c_list", "c_struct"]
    reader, _, decs = await _open(path, data, names)
    reader.reset()
    arrays = await run_plans(reader, [d.take_steps(idx) for d in decs])
    assert reader.calls <= 2
    expected = ds.take(idx, columns=names)
    for name, arr in zip(names, arrays):
        assert arrays_equal(expected[name], arr), name
