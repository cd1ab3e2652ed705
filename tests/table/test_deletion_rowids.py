"""Deletion files (Arrow IPC and Roaring bitmap) and stable row-id sequences."""

from __future__ import annotations


import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings, strategies as st
from pyroaring import BitMap

from lancejit.core.errors import CorruptFileError
from lancejit.pb import rowids_pb2
from lancejit.table import dataset
from lancejit.table.meta.deletion import decode_deletion_file, live_offsets
from lancejit.table.read.fragment import FragmentReader
from lancejit.table.meta.manifest import ARROW_ARRAY, BITMAP, DeletionFile
from lancejit.table.meta.rowids import RowIdIndex, decode_row_id_sequence, row_addresses, split_addresses
from lancejit.io.sync import run_sync

lance = pytest.importorskip("lance")


def _ref_live_by_fragment(path: str, version: int | None = None) -> dict[int, np.ndarray]:
    """Live local offsets per fragment, from the reference's ``_rowaddr``."""
    ref = lance.dataset(path, version=version)
    addr = ref.to_table(columns=["a"], with_row_address=True)["_rowaddr"].to_numpy()
    frags, offs = split_addresses(addr)
    return {int(f): np.sort(offs[frags == f]) for f in np.unique(frags)}


@pytest.mark.parametrize("kind", ["bigdel", "evolving"])
def test_deletion_files_match_reference(make_dataset, kind):
    path = make_dataset(kind, "2.1")
    ds = dataset(path)
    expected = _ref_live_by_fragment(path)
    kinds = set()
    for frag in ds.manifest.fragments:
        reader = FragmentReader(ds.context, frag)
        live = run_sync(reader.live_offsets())
        np.testing.assert_array_equal(live, expected.get(frag.id, np.empty(0, np.int64)))
        assert run_sync(reader.count_rows()) == len(live)
        if frag.deletion_file is not None:
            kinds.add(frag.deletion_file.file_type)
            deleted = run_sync(reader.deleted())
            assert len(deleted) == frag.deletion_file.num_deleted_rows
            assert deleted.dtype == np.uint32 and np.all(np.diff(deleted.astype(np.int64)) > 0)
    if kind == "bigdel":
        assert kinds == {ARROW_ARRAY, BITMAP}


def test_decode_arrow_and_bitmap_bytes():
    d_arrow = DeletionFile(ARROW_ARRAY, 1, 2, 3, None)
    d_bin = DeletionFile(BITMAP, 1, 2, 3, None)
    values = np.array([9, 2, 5], dtype=np.uint32)
    sink = pa.BufferOutputStream()
    schema = pa.schema([pa.field("row_id", pa.uint32(), nullable=False)])
    with pa.ipc.new_file(sink, schema) as w:
        w.write_batch(pa.record_batch([pa.array(values)], schema=schema))
    got = decode_deletion_file(sink.getvalue().to_pybytes(), d_arrow, 10, "x.arrow")
    np.testing.assert_array_equal(got, [2, 5, 9])
    got = decode_deletion_file(BitMap([9, 2, 5]).serialize(), d_bin, 10, "x.bin")
    np.testing.assert_array_equal(got, [2, 5, 9])
    with pytest.raises(CorruptFileError, match="x.bin"):
        decode_deletion_file(b"not a bitmap", d_bin, 10, "x.bin")
    with pytest.raises(CorruptFileError, match="x.arrow"):
        decode_deletion_file(b"ARROW1 garbage", d_arrow, 10, "x.arrow")
    with pytest.raises(CorruptFileError, match="offset 9"):
        decode_deletion_file(BitMap([9]).serialize(), d_bin, 5, "x.bin")
    np.testing.assert_array_equal(live_offsets(5, np.array([1, 3], np.uint32)), [0, 2, 4])
    np.testing.assert_array_equal(live_offsets(3, None), [0, 1, 2])


def test_corrupt_deletion_file_names_dataset(make_dataset, tmp_path):
    import glob
    import os
    import shutil

    path = str(tmp_path / "ds")
    shutil.copytree(make_dataset("bigdel", "2.1"), path)
    for f in glob.glob(os.path.join(path, "_deletions", "*.bin")):
        open(f, "wb").write(b"\x00\x01garbage")
    ds = dataset(path)
    reader = FragmentReader(ds.context, ds.manifest.fragments[0])
    with pytest.raises(CorruptFileError) as info:
        run_sync(reader.deleted())
    assert path in str(info.value) and "version 3" in str(info.value) and ".bin" in str(info.value)


# ------------------------------------------------------------------ row id sequences


def _encoded(values: np.ndarray, width: str) -> rowids_pb2.EncodedU64Array:
    msg = rowids_pb2.EncodedU64Array()
    if width == "u64" or len(values) == 0:
        msg.u64_array.values = values.astype("<u8").tobytes()
        return msg
    base = int(values.min())
    rel = values.astype(np.uint64) - np.uint64(base)
    if width == "u16" and int(rel.max()) < 1 << 16:
        msg.u16_array.base = base
        msg.u16_array.offsets = rel.astype("<u2").tobytes()
    elif int(rel.max()) < 1 << 32:
        msg.u32_array.base = base
        msg.u32_array.offsets = rel.astype("<u4").tobytes()
    else:
        msg.u64_array.values = values.astype("<u8").tobytes()
    return msg


def _encode_sequence(ids: np.ndarray, how: str, width: str) -> bytes:
    """A RowIdSequence of one segment holding ``ids`` in representation ``how``."""
    seq = rowids_pb2.RowIdSequence()
    seg = seq.segments.add()
    if how == "array" or len(ids) == 0:
        seg.array.CopyFrom(_encoded(ids, width))
        return seq.SerializeToString()
    s = np.sort(ids)
    lo, hi = int(s[0]), int(s[-1]) + 1
    if how == "sorted":
        seg.sorted_array.CopyFrom(_encoded(s, width))
    elif how == "holes":
        seg.range_with_holes.start, seg.range_with_holes.end = lo, hi
        holes = np.setdiff1d(np.arange(lo, hi, dtype=np.uint64), s.astype(np.uint64))
        seg.range_with_holes.holes.CopyFrom(_encoded(holes, width))
    elif how == "bitmap":
        seg.range_with_bitmap.start, seg.range_with_bitmap.end = lo, hi
        present = np.zeros(hi - lo, dtype=bool)
        present[(s - lo).astype(np.int64)] = True
        seg.range_with_bitmap.bitmap = np.packbits(present, bitorder="little").tobytes()
    return seq.SerializeToString()


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.integers(min_value=0, max_value=5000), min_size=1, max_size=200, unique=True),
    st.integers(min_value=0, max_value=1 << 40),
    st.sampled_from(["array", "sorted", "holes", "bitmap"]),
    st.sampled_from(["u16", "u32", "u64"]),
)
def test_segments_decode_like_numpy(values, base, how, width):
    ids = np.array(values, dtype=np.uint64) + np.uint64(base)
    expected = ids if how == "array" else np.sort(ids)
    got = decode_row_id_sequence(_encode_sequence(ids, how, width), "seq")
    np.testing.assert_array_equal(got, expected)


def test_range_segment_and_multiple_segments():
    seq = rowids_pb2.RowIdSequence()
    seq.segments.add().range.start = 0
    seq.segments[0].range.end = 600
    assert seq.SerializeToString() == bytes.fromhex("0a050a0310d804")  # as pylance writes it
    s2 = seq.segments.add()
    s2.range.start, s2.range.end = 700, 703
    got = decode_row_id_sequence(seq.SerializeToString(), "seq")
    np.testing.assert_array_equal(got, np.r_[np.arange(600), [700, 701, 702]].astype(np.uint64))


def test_bitmap_is_lsb_first():
    seq = rowids_pb2.RowIdSequence()
    seg = seq.segments.add().range_with_bitmap
    seg.start, seg.end, seg.bitmap = 10, 18, bytes([0b00000101])
    np.testing.assert_array_equal(decode_row_id_sequence(seq.SerializeToString(), "s"), [10, 12])


def test_corrupt_sequences():
    with pytest.raises(CorruptFileError):
        decode_row_id_sequence(b"\xff\xff\xff", "seq")
    seq = rowids_pb2.RowIdSequence()
    seg = seq.segments.add()
    seg.array.u16_array.base = 0
    seg.array.u16_array.offsets = b"\x01\x00\x02"  # odd byte count
    with pytest.raises(CorruptFileError):
        decode_row_id_sequence(seq.SerializeToString(), "seq")
    seq = rowids_pb2.RowIdSequence()
    bm = seq.segments.add().range_with_bitmap
    bm.start, bm.end, bm.bitmap = 0, 100, b"\x01"
    with pytest.raises(CorruptFileError):
        decode_row_id_sequence(seq.SerializeToString(), "seq")
    seq = rowids_pb2.RowIdSequence()
    r = seq.segments.add().range
    r.start, r.end = 10, 5
    with pytest.raises(CorruptFileError):
        decode_row_id_sequence(seq.SerializeToString(), "seq")


@pytest.mark.parametrize("version", [None, 3, 5])
def test_stable_row_ids_match_reference(make_dataset, version):
    path = make_dataset("stable", "2.1")
    ref = lance.dataset(path, version=version).to_table(columns=["a"], with_row_id=True, with_row_address=True)
    ds = dataset(path, version=version)
    assert ds.has_stable_row_ids
    got_ids, got_addr = [], []
    for frag in ds.manifest.fragments:
        reader = FragmentReader(ds.context, frag)
        ids = run_sync(reader.row_ids())
        live = run_sync(reader.live_offsets())
        got_ids.append(ids[live])
        got_addr.append(row_addresses(frag.id, live))
    np.testing.assert_array_equal(np.concatenate(got_ids), ref["_rowid"].to_numpy())
    np.testing.assert_array_equal(np.concatenate(got_addr), ref["_rowaddr"].to_numpy())
    # the index maps every live id to its address; deleted ids are not found
    from lancejit.table.read.take import row_id_index

    index = run_sync(row_id_index(ds.context))
    addrs, found = index.lookup(ref["_rowid"].to_numpy())
    assert found.all()
    np.testing.assert_array_equal(addrs, ref["_rowaddr"].to_numpy())
    assert run_sync(row_id_index(ds.context)) is index  # built once per version
    missing = np.setdiff1d(np.arange(int(ref["_rowid"].to_numpy().max()) + 2, dtype=np.uint64), ref["_rowid"].to_numpy())
    assert not index.lookup(missing)[1].any()


def test_row_id_index_lookup():
    index = RowIdIndex.build([(3, np.array([10, 5], np.uint64), np.array([0, 2], np.int64)),
                              (1, np.array([7], np.uint64), np.array([4], np.int64))])
    addrs, found = index.lookup(np.array([5, 6, 7, 10, 99], np.uint64))
    assert found.tolist() == [True, False, True, True, False]
    assert addrs[found].tolist() == [(3 << 32) | 2, (1 << 32) | 4, 3 << 32]
    empty = RowIdIndex.build([])
    assert not empty.lookup(np.array([1], np.uint64))[1].any()
    f, o = split_addresses(np.array([(5 << 32) | 7], np.uint64))
    assert (f[0], o[0]) == (5, 7)


def test_external_row_id_sequences(make_dataset, tmp_path):
    """Row-id sequences stored in another file (``external_row_ids``: path relative to the
    dataset root, byte offset and size) read like inline ones."""
    import glob
    import os
    import shutil
    import struct

    from lancejit.pb import table_pb2
    from lancejit.table.meta.manifest import manifest_position

    path = str(tmp_path / "ds")
    shutil.copytree(make_dataset("stable", "2.1"), path)
    expected = lance.dataset(path).to_table(columns=["a"], with_row_id=True)
    latest = min(glob.glob(os.path.join(path, "_versions", "*.manifest")))  # V2 names: smallest = newest
    data = open(latest, "rb").read()
    pos = manifest_position(data, len(data), latest)
    pb = table_pb2.Manifest.FromString(data[pos + 4 : len(data) - 16])
    blob = bytearray(b"HEADER--")
    for frag in pb.fragments:
        seq = bytes(frag.inline_row_ids)
        offset = len(blob)
        blob += seq + b"pad"
        frag.external_row_ids.path = "_rowids/all.bin"
        frag.external_row_ids.offset = offset
        frag.external_row_ids.size = len(seq)
        assert frag.WhichOneof("row_id_sequence") == "external_row_ids"
    os.makedirs(os.path.join(path, "_rowids"))
    open(os.path.join(path, "_rowids", "all.bin"), "wb").write(bytes(blob))
    body = pb.SerializeToString()
    open(latest, "wb").write(data[:pos] + struct.pack("<I", len(body)) + body + struct.pack("<q", pos) + data[-8:])
    ds = dataset(path)
    assert all(not isinstance(f.row_ids, bytes) for f in ds.manifest.fragments)
    got_ids = []
    for frag in ds.manifest.fragments:
        reader = FragmentReader(ds.context, frag)
        got_ids.append(run_sync(reader.row_ids())[run_sync(reader.live_offsets())])
    np.testing.assert_array_equal(np.concatenate(got_ids), expected["_rowid"].to_numpy())
    assert ds.to_table(columns=["a"], with_row_id=True).equals(expected)
    ids = expected["_rowid"].to_numpy()[[5, 1, 300]]
    assert ds.take_rows(ids, columns=["a"]).equals(expected.take([5, 1, 300]).select(["a"]))



@settings(max_examples=200, deadline=None)
@given(st.integers(1, 300).flatmap(lambda n: st.tuples(
    st.just(n), st.sets(st.integers(0, n - 1), max_size=n - 1), st.data())))
def test_physical_of_logical_equals_live_offsets(case):
    """The searchsorted mapping logical -> physical equals indexing the live-offset array."""
    from lancejit.table.meta.deletion import physical_of_logical

    n, deleted_set, data = case
    deleted = np.array(sorted(deleted_set), dtype=np.uint32)
    live = live_offsets(n, deleted)
    logical = np.array(data.draw(st.lists(st.integers(0, len(live) - 1), max_size=50)), dtype=np.int64)
    np.testing.assert_array_equal(physical_of_logical(logical, deleted), live[logical])
    np.testing.assert_array_equal(physical_of_logical(logical, None), logical)
