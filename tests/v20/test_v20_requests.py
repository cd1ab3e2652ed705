"""Read requests of a 2.0 take: one ``read_ranges`` call per step (primitives 1; strings, lists
and structs with strings 2; lists of strings 3), compared with the reference's IOPs for the
same data file read through a pylance dataset."""

from __future__ import annotations

import glob

import numpy as np
import pyarrow as pa
import pytest

import lance
from v20_helpers import BytesReader, arrays_equal

from lancejit.encoding.v20 import make_field_decoders
from lancejit.file.container import open_file_metadata
from lancejit.io.planner import merge_ranges

N = 20000
# column -> expected read_ranges calls for a 1,000-row random take
STEPS = {"i": 1, "f": 1, "fsl": 1, "s": 2, "l": 2, "st": 2, "ls": 3}


class CountingReader(BytesReader):
    """Also counts the physical requests a 4 KiB-block coalescing scheduler would issue."""

    def __init__(self, data, path):
        super().__init__(data, path)
        self.physical = 0

    async def read_ranges(self, ranges, *, priority=0):
        self.physical += len(merge_ranges(list(ranges), 4096))
        return await super().read_ranges(ranges, priority=priority)


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    rng = np.random.default_rng(5)
    tbl = pa.table({
        "i": pa.array(rng.integers(0, 10**9, N)),
        "f": pa.array(rng.standard_normal(N).astype(np.float32), mask=rng.random(N) < 0.1),
        "fsl": pa.FixedSizeListArray.from_arrays(pa.array(rng.standard_normal(N * 8).astype(np.float32)), 8),
        "s": pa.array([f"value-{x}" for x in rng.integers(0, 10**9, N)]),
        "l": pa.array([list(range(i % 5)) for i in range(N)], pa.list_(pa.int32())),
        "st": pa.StructArray.from_arrays([pa.array(rng.integers(0, 9, N)), pa.array([f"s{x}" for x in rng.integers(0, 10**6, N)])], names=["a", "b"]),
        "ls": pa.array([[f"w{j}" for j in range(i % 3)] for i in range(N)], pa.list_(pa.string())),
    })
    uri = str(tmp_path_factory.mktemp("v20req") / "ds")
    lance.write_dataset(tbl, uri, data_storage_version="2.0")
    return uri


async def test_take_request_counts(dataset, record_property):
    (path,) = glob.glob(dataset + "/data/*.lance")
    with open(path, "rb") as fh:
        data = fh.read()
    idx = np.sort(np.random.default_rng(9).choice(N, 1000, replace=False)).astype(np.int64)
    reader = CountingReader(data, path)
    md = await open_file_metadata(reader)
    rows = []
    for name, steps in STEPS.items():
        (dec,) = make_field_decoders(reader, md, [name])
        reader.reset()
        reader.physical = 0
        got = await dec.take(idx)
        ds = lance.dataset(dataset)
        ds.to_table(columns=[name], limit=1)
        ds.io_stats_incremental()
        expected = ds.take(idx, columns=[name])
        ref_iops = ds.io_stats_incremental().read_iops
        assert arrays_equal(expected[name], got), name
        assert reader.calls == steps, (name, reader.calls)
        rows.append((name, reader.calls, reader.ranges, reader.physical, ref_iops))
        record_property(f"take1000_{name}", f"calls={reader.calls} ranges={reader.ranges} "
                                            f"physical4k={reader.physical} reference_iops={ref_iops}")
    print("\ncolumn calls ranges physical(4KiB) reference_iops")
    for r in rows:
        print(*r)


async def test_many_fields_share_each_step(dataset):
    """``run_plans`` over several fields: one request per step for all of them."""
    from lancejit.encoding.v20 import run_plans

    (path,) = glob.glob(dataset + "/data/*.lance")
    with open(path, "rb") as fh:
        data = fh.read()
    idx = np.sort(np.random.default_rng(3).choice(N, 1000, replace=False)).astype(np.int64)
    reader = CountingReader(data, path)
    md = await open_file_metadata(reader)
    names = list(STEPS)
    decs = make_field_decoders(reader, md, names)
    reader.reset()
    arrays = await run_plans(reader, [d.take_steps(idx) for d in decs])
    assert reader.calls == max(STEPS.values())
    expected = lance.dataset(dataset).take(idx, columns=names)
    for name, arr in zip(names, arrays):
        assert arrays_equal(expected[name], arr), name
    reader.reset()
    arrays = await run_plans(reader, [d.range_steps(100, 5000) for d in decs[:3]])
    assert reader.calls == 1
    full = lance.dataset(dataset).to_table(columns=names[:3])
    for name, arr in zip(names, arrays):
        assert arrays_equal(full[name].slice(100, 4900), arr), name
