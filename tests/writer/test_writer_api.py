"""The writer's public API: schema handling, metadata, errors, atomicity, global buffers."""

from __future__ import annotations

import struct

import numpy as np
import pyarrow as pa
import pytest

from writer_inspect import parse_file

lance_file = pytest.importorskip("lance.file")

from lancejit.core.errors import InvalidInputError, SchemaMismatchError  # noqa: E402
from lancejit.file.writer import AsyncLanceFileWriter, LanceFileWriter  # noqa: E402


def _table(n=100, seed=0):
    rng = np.random.default_rng(seed)
    return pa.table({"a": pa.array(rng.integers(0, 10, n)), "b": pa.array([str(i) for i in range(n)])})


@pytest.mark.parametrize("version", ["2.0", "2.1", "2.2"])
def test_schema_mismatch_leaves_no_file(tmp_path, version):
    p = tmp_path / "m.lance"
    t = _table()
    w = LanceFileWriter(str(p), t.schema, version=version)
    w.write_batch(t)
    bad = pa.table({"a": pa.array([1.5]), "b": pa.array(["x"])})
    with pytest.raises(SchemaMismatchError):
        w.write_batch(bad)
    assert not p.exists()
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(InvalidInputError):
        w.close()
    assert not p.exists()


def test_missing_column_and_nullability(tmp_path):
    p = tmp_path / "m.lance"
    schema = pa.schema([pa.field("a", pa.int64(), nullable=False)])
    with pytest.raises(SchemaMismatchError):
        with LanceFileWriter(str(p), schema) as w:
            w.write_batch(pa.table({"x": pa.array([1])}))
    assert not p.exists()
    with pytest.raises(SchemaMismatchError):
        with LanceFileWriter(str(p), schema) as w:
            w.write_batch(pa.table({"a": pa.array([1, None])}, schema=pa.schema([pa.field("a", pa.int64())])))
    assert not p.exists()


def test_exception_inside_context_discards(tmp_path):
    p = tmp_path / "e.lance"
    with pytest.raises(RuntimeError):
        with LanceFileWriter(str(p)) as w:
            w.write_batch(_table())
            raise RuntimeError("boom")
    assert not p.exists()


@pytest.mark.parametrize("version", ["2.0", "2.1", "2.2"])
def test_schema_from_first_batch_many_batches_and_metadata(tmp_path, version):
    p = tmp_path / "s.lance"
    t = _table(1000, 3)
    w = LanceFileWriter(str(p), version=version)
    for b in t.to_batches(max_chunksize=70):
        w.write_batch(b)
    w.write_batch(t.slice(0, 0))
    w.add_schema_metadata("owner", "lancejit")
    idx = w.add_global_buffer(b"hello global")
    assert idx == 1
    assert w.close() == 1000
    r = lance_file.LanceFileReader(str(p))
    assert r.read_all().to_table().equals(t)
    assert r.metadata().schema.metadata[b"owner"] == b"lancejit"
    assert bytes(r.read_global_buffer(1)) == b"hello global"
    pf = parse_file(str(p))
    assert (pf.major, pf.minor) == ((0, 3) if version == "2.0" else tuple(map(int, version.split("."))))
    for pos, _ in pf.gbo:
        assert pos % 64 == 0
    # every page buffer starts 64-aligned
    for c in pf.columns:
        for page in c.pages:
            assert all(o % 64 == 0 for o in page.buffer_offsets)
    cm0, cmo, gbo = struct.unpack("<QQQ", pf.data[-40:-16])
    assert cm0 < cmo < gbo < len(pf.data)


def test_empty_file(tmp_path):
    p = tmp_path / "empty.lance"
    schema = pa.schema([pa.field("a", pa.int32()), pa.field("s", pa.struct([("x", pa.string())]))])
    with LanceFileWriter(str(p), schema):
        pass
    r = lance_file.LanceFileReader(str(p))
    assert r.num_rows() == 0
    assert r.read_all().to_table().schema.names == ["a", "s"]


def test_no_schema_no_data_raises(tmp_path):
    p = tmp_path / "x.lance"
    with pytest.raises(InvalidInputError):
        LanceFileWriter(str(p)).close()
    assert not p.exists()


def test_bad_version():
    with pytest.raises(InvalidInputError):
        LanceFileWriter("/tmp/never.lance", version="9.9")


async def test_async_writer(tmp_path):
    p = tmp_path / "a.lance"
    t = _table(500)
    async with AsyncLanceFileWriter(str(p), t.schema) as w:
        await w.write_batch(t)
    assert lance_file.LanceFileReader(str(p)).read_all().to_table().equals(t)


def test_memory_bounded_by_pages(tmp_path):
    """Pages are flushed as data streams in: many small batches give many pages."""
    p = tmp_path / "big.lance"
    rng = np.random.default_rng(0)
    schema = pa.schema([pa.field("x", pa.float64())])
    with LanceFileWriter(str(p), schema, max_page_bytes=64 * 1024) as w:
        for _ in range(20):
            w.write_batch(pa.table({"x": pa.array(rng.random(4096))}))
    pf = parse_file(str(p))
    assert len(pf.columns[0].pages) >= 9
    assert [pg.priority for pg in pf.columns[0].pages] == sorted(pg.priority for pg in pf.columns[0].pages)
    assert lance_file.LanceFileReader(str(p)).num_rows() == 20 * 4096


@pytest.mark.parametrize("version", [(2, 2), (2, 0)])
def test_pending_data_is_bounded(version):
    """After a big batch, what stays buffered is at most about one page per column and does not
    keep the whole batch's buffers alive."""
    from lancejit.encoding.v20.encode.field import FieldEncoder20
    from lancejit.encoding.v21.encode.field import FieldEncoder

    page = 64 * 1024
    arr = pa.array(np.arange(400_000, dtype=np.int64))  # 3.2 MB
    f = pa.field("x", pa.int64())
    if version == (2, 0):
        enc = FieldEncoder20(f, 0, page)
        pages = enc.add(arr)
        held = sum(a.get_total_buffer_size() for c in enc.columns for a in c.pending)
    else:
        enc = FieldEncoder(f, 0, version, page)
        pages = enc.add(arr)
        held = sum(s.values.get_total_buffer_size() for lf in enc.leaves for s in lf.pending)
    assert len(pages) >= 40
    assert held <= 2 * page + 4096
    rows = sum(p.num_rows for _, p, _ in pages + enc.finish())
    assert rows == 400_000


def test_json_columns_rejected(tmp_path):
    from lancejit.core.errors import NotSupportedError

    t = pa.table({"j": pa.array(['{"a": 1}', None], pa.json_())})
    with pytest.raises(NotSupportedError):
        LanceFileWriter(str(tmp_path / "j.lance"), t.schema)
    with pytest.raises(NotSupportedError):
        with LanceFileWriter(str(tmp_path / "j.lance")) as w:
            w.write_batch(t)
    assert not (tmp_path / "j.lance").exists()


def _renumbered(schema: pa.Schema, offset: int):
    from lancejit.core.schema import LanceSchema

    pbs = LanceSchema.from_arrow(schema).to_pb()
    for pb in pbs:
        pb.id += offset
        if pb.parent_id >= 0:
            pb.parent_id += offset
    return LanceSchema.from_pb(pbs)


@pytest.mark.parametrize("version", ["2.0", "2.1", "2.2"])
def test_lance_schema_gives_field_ids_and_state_properties(tmp_path, version):
    schema = pa.schema([pa.field("a", pa.int64()),
                        pa.field("s", pa.struct([pa.field("x", pa.int32()), pa.field("y", pa.string())])),
                        pa.field("b", pa.string())])
    t = pa.table({"a": pa.array(np.arange(50)),
                  "s": pa.array([{"x": i, "y": str(i)} for i in range(50)], schema.field("s").type),
                  "b": pa.array([str(i) for i in range(50)])}, schema=schema)
    ls = _renumbered(schema, 10)
    p = tmp_path / "ids.lance"
    w = LanceFileWriter(str(p), lance_schema=ls, version=version)  # Arrow schema from lance_schema
    assert w.num_columns > 0 and w.bytes_written == 0 and w.rows_written == 0
    assert w.field_ids == [10, 11, 12, 13, 14]
    w.write_batch(t)
    assert w.rows_written == 50
    w.close()
    assert w.bytes_written == p.stat().st_size
    pf = parse_file(str(p))
    assert [(f.id, f.parent_id) for f in pf.descriptor.schema.fields] == [(10, -1), (11, -1), (12, 11), (13, 11), (14, -1)]
    assert w.num_columns == len(pf.columns)
    assert lance_file.LanceFileReader(str(p)).read_all().to_table().equals(t)


def test_lance_schema_type_checked(tmp_path):
    with pytest.raises(InvalidInputError):
        LanceFileWriter(str(tmp_path / "x.lance"), lance_schema={"a": 1})
