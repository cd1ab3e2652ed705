"""write_dataset: create / append / overwrite from every kind of input, read back by pylance 14;
data file names and descriptions as the reference writes them; failures leave nothing behind."""

from __future__ import annotations

import os
import re

import lance
import numpy as np
import pyarrow as pa
import pytest
from ops_helpers import make_table, manifest_shape

import lancejit
import lancejit.table as lt
from lancejit.core.errors import AlreadyExistsError, SchemaMismatchError

NAME = re.compile(r"^[01]{24}[0-9a-f]{26}\.lance$")


def _data_files(uri):
    d = os.path.join(uri, "data")
    return sorted(os.listdir(d)) if os.path.isdir(d) else []


@pytest.mark.parametrize("version", ["2.0", "2.1", "2.2"])
def test_create_append_overwrite(tmp_path, version):
    uri = str(tmp_path / "ds")
    theirs = str(tmp_path / "theirs")
    t1, t2, t3 = make_table(0, 23), make_table(23, 9), make_table(500, 6)
    ds = lt.write_dataset(t1, uri, data_storage_version=version, max_rows_per_file=5)
    assert ds.version == 1 and ds.data_storage_version == version
    # appends keep the dataset's storage version; columns are matched by name
    ds = lancejit.write_dataset(t2.select(["l", "st", "a", "s"]), uri, mode="append", max_rows_per_file=4)
    assert ds.version == 2
    ds = lt.write_dataset(t3, uri, mode="overwrite")
    lance.write_dataset(t1, theirs, data_storage_version=version, max_rows_per_file=5)
    lance.write_dataset(t2, theirs, mode="append", max_rows_per_file=4)
    lance.write_dataset(t3, theirs, mode="overwrite")
    expected = {1: t1, 2: pa.concat_tables([t1, t2]), 3: t3}
    for v, exp in expected.items():
        got = lance.dataset(uri, version=v)
        assert got.data_storage_version == version
        assert got.to_table().equals(exp), v
        assert lt.dataset(uri, version=v).to_table().equals(exp), v
        # same fragments, field ids, column indices and file versions as pylance's dataset
        assert manifest_shape(uri, v) == manifest_shape(theirs, v), v
    assert [len(f.data_files()) for f in lance.dataset(uri, version=2).get_fragments()] == [1] * 8
    names = _data_files(uri)
    assert len(names) == 5 + 3 + 1 and all(NAME.match(n) for n in names)
    for frag in lance.dataset(uri).get_fragments():
        for df in frag.data_files():
            assert df.file_size_bytes == os.path.getsize(os.path.join(uri, "data", df.path))


def test_input_kinds(tmp_path):
    pd = pytest.importorskip("pandas")
    t = make_table(0, 12)
    simple = t.select(["a", "s"])
    cases = {
        "reader": (pa.RecordBatchReader.from_batches(t.schema, t.to_batches(max_chunksize=5)), t),
        "generator": ((b for b in t.to_batches(max_chunksize=4)), t),
        "batch": (t.to_batches()[0], t),
        "pandas": (simple.to_pandas(), None),
    }
    for name, (data, exp) in cases.items():
        uri = str(tmp_path / name)
        lt.write_dataset(data, uri, max_rows_per_file=5)
        if exp is None:  # pandas: whatever types pylance gives the same frame
            exp = lance.write_dataset(data, str(tmp_path / "pd_ref")).to_table()
            assert exp.column("a").to_pylist() == simple.column("a").to_pylist()
        assert lance.dataset(uri).to_table().equals(exp), name
    # a generator with an explicit schema; an empty dataset from a schema alone
    uri = str(tmp_path / "schema")
    lt.write_dataset(iter([]), uri, schema=t.schema)
    assert lance.dataset(uri).count_rows() == 0 and lance.dataset(uri).schema == t.schema
    lt.write_dataset(iter(t.to_batches(max_chunksize=3)), uri, mode="append", schema=t.schema)
    assert lance.dataset(uri).to_table().equals(t)
    del pd


def test_stream_is_not_materialised(tmp_path):
    """Files are written while the input is still being produced."""
    uri = str(tmp_path / "ds")
    seen = []

    def gen():
        for i in range(4):
            seen.append(len(_data_files(uri)))
            yield make_table(i * 10, 10).to_batches()[0]

    lt.write_dataset(gen(), uri, max_rows_per_file=10)
    assert seen == [0, 1, 2, 3]
    assert lance.dataset(uri).to_table().equals(make_table(0, 40))


def test_errors_leave_dataset_intact(tmp_path):
    uri = str(tmp_path / "ds")
    t = make_table(0, 10)
    lt.write_dataset(t, uri, max_rows_per_file=4)
    before = _data_files(uri)
    with pytest.raises(AlreadyExistsError):
        lt.write_dataset(t, uri)
    bad = t.set_column(0, "a", pa.array(np.arange(10), pa.int32()))
    with pytest.raises(SchemaMismatchError):
        lt.write_dataset(bad, uri, mode="append")
    with pytest.raises(SchemaMismatchError):
        lt.write_dataset(t.append_column("extra", pa.array(range(10))), uri, mode="append")

    def failing():
        yield from make_table(100, 12).to_batches(max_chunksize=4)
        raise RuntimeError("source failed")

    with pytest.raises(RuntimeError, match="source failed"):
        lt.write_dataset(failing(), uri, mode="append", max_rows_per_file=4)
    # a schema change in the middle of the stream
    with pytest.raises(SchemaMismatchError):
        lt.write_dataset(iter([t.to_batches()[0], bad.to_batches()[0]]), uri, mode="append", max_rows_per_file=4)
    assert _data_files(uri) == before
    ds = lance.dataset(uri)
    assert ds.version == 1 and ds.to_table().equals(t)


def test_non_nullable_and_v1_paths(tmp_path):
    uri = str(tmp_path / "ds")
    schema = pa.schema([pa.field("k", pa.int64(), nullable=False), pa.field("v", pa.string())])
    t = pa.table({"k": [1, 2, 3], "v": ["a", None, "c"]}, schema=schema)
    lt.write_dataset(t, uri, enable_v2_manifest_paths=False)
    assert os.listdir(os.path.join(uri, "_versions")).count("1.manifest") == 1
    with pytest.raises(SchemaMismatchError):
        lt.write_dataset(pa.table({"k": pa.array([None], pa.int64()), "v": ["x"]}), uri, mode="append")
    with pytest.raises(SchemaMismatchError):  # a non-nullable column may not be left out
        lt.write_dataset(pa.table({"v": ["x"]}), uri, mode="append")
    lt.write_dataset(t, uri, mode="append")
    ds = lance.dataset(uri)
    assert ds.schema == schema and ds.to_table().equals(pa.concat_tables([t, t]))
    # a nullable one may (it reads as nulls), as with pylance
    only_k = pa.table({"k": pa.array([9], pa.int64())})
    ds = lt.write_dataset(iter(only_k.to_batches()), uri, mode="append")
    ref = str(tmp_path / "ref")
    lance.write_dataset(t, ref)
    lance.write_dataset(t, ref, mode="append")
    lance.write_dataset(only_k, ref, mode="append")
    assert lance.dataset(uri).to_table().equals(lance.dataset(ref).to_table())
    assert ds.to_table().equals(lance.dataset(ref).to_table())
    frag = lance.dataset(uri).get_fragments()[-1]
    assert [list(df.fields) for df in frag.data_files()] == [[0]]
    assert sorted(n for n in os.listdir(os.path.join(uri, "_versions")) if n.endswith(".manifest")) == [
        "1.manifest", "2.manifest", "3.manifest"]


def test_progress_and_bytes_limit(tmp_path):
    uri = str(tmp_path / "ds")
    done = []
    t = pa.table({"a": np.arange(2000, dtype=np.int64), "b": np.arange(2000, dtype=np.float64)})
    lt.write_dataset(t, uri, max_bytes_per_file=1, progress=done.append,
                     max_rows_per_file=1000)
    # with a 1-byte limit every batch write closes the file
    assert len(done) == len(lance.dataset(uri).get_fragments()) >= 2
    assert sum(d["num_rows"] for d in done) == 2000
    assert lance.dataset(uri).to_table().equals(t)
