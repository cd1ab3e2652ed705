"""The generated protobuf modules parse everything pylance 14 writes, with no unknown fields."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import lance
import numpy as np
import pyarrow as pa
import pytest
from lance.file import LanceFileReader, LanceFileWriter

import tests_core_raw as raw
from lancejit.pb import (
    encodings_v2_1_pb2,
    file_pb2,
    rowids_pb2,
    table_pb2,
    transaction_pb2,
)

ROOT = Path(__file__).resolve().parents[2]


def test_full_names_match_any_type_urls() -> None:
    from lancejit.pb import encodings_v2_0_pb2, file2_pb2

    assert encodings_v2_0_pb2.ColumnEncoding.DESCRIPTOR.full_name == "lance.encodings.ColumnEncoding"
    assert encodings_v2_0_pb2.ArrayEncoding.DESCRIPTOR.full_name == "lance.encodings.ArrayEncoding"
    assert encodings_v2_1_pb2.PageLayout.DESCRIPTOR.full_name == "lance.encodings21.PageLayout"
    assert file2_pb2.ColumnMetadata.DESCRIPTOR.full_name == "lance.file.v2.ColumnMetadata"
    assert file_pb2.FileDescriptor.DESCRIPTOR.full_name == "lance.file.FileDescriptor"
    assert table_pb2.Manifest.DESCRIPTOR.full_name == "lance.table.Manifest"
    assert transaction_pb2.Transaction.DESCRIPTOR.full_name == "lance.table.Transaction"
    oneof = encodings_v2_0_pb2.ArrayEncoding.DESCRIPTOR.oneofs_by_name["array_encoding"]
    assert sorted(f.number for f in oneof.fields) == list(range(1, 22))
    oneof = encodings_v2_1_pb2.CompressiveEncoding.DESCRIPTOR.oneofs_by_name["compression"]
    assert sorted(f.number for f in oneof.fields) == list(range(1, 14))
    ops = transaction_pb2.Transaction.DESCRIPTOR.oneofs_by_name["operation"]
    assert sorted(f.number for f in ops.fields) == list(range(100, 115))


def test_generated_code_is_up_to_date(tmp_path: Path) -> None:
    pytest.importorskip("grpc_tools")
    out = tmp_path / "pb"
    subprocess.run([sys.executable, str(ROOT / "scripts" / "gen_protos.py"), "--out", str(out)],
                   check=True, capture_output=True)
    committed = ROOT / "lancejit" / "pb"
    generated = sorted(p.name for p in out.iterdir() if p.is_file())
    assert generated == sorted(p.name for p in committed.iterdir()
                               if p.is_file() and p.suffix in (".py", ".pyi"))
    for name in generated:
        assert (out / name).read_text() == (committed / name).read_text(), name


def _mixed_table(n: int, seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    return pa.table({
        "i": pa.array(rng.integers(0, 1000, n), pa.int32()),
        "const": pa.array([7] * n, pa.int32()),
        "f": pa.array(rng.random(n)),
        "s": pa.array([f"s{x % 7}" if x % 5 else None for x in range(n)]),
        "u": pa.array([f"unique{x}" * 3 for x in range(n)]),
        "wide": pa.array([rng.bytes(300) for _ in range(n)], pa.binary()),
        "nul": pa.nulls(n, pa.int64()),
        "l": pa.array([[1, 2, None] if x % 3 else (None if x % 2 else []) for x in range(n)],
                      pa.list_(pa.int64())),
        "st": pa.array([{"a": x, "b": str(x)} for x in range(n)]),
        "v": pa.FixedSizeListArray.from_arrays(pa.array(rng.random(4 * n).astype("float32")), 4),
        "d": pa.array([f"x{x % 3}" for x in range(n)]).dictionary_encode(),
        "dec": pa.array([x for x in range(n)], pa.decimal128(10, 2)),
        "b": pa.array([x % 2 == 0 for x in range(n)]),
    })


def _blob_table(n: int, seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    schema = pa.schema([
        pa.field("blob", pa.large_binary(), metadata={"lance-encoding:blob": "true"}),
        pa.field("ps", pa.struct([("x", pa.int32()), ("y", pa.float64())]),
                 metadata={"lance-encoding:packed": "true"}),
        pa.field("k", pa.int64()),
    ])
    return pa.table([
        pa.array([rng.bytes(500) for _ in range(n)], pa.large_binary()),
        pa.array([{"x": i, "y": 2.0} for i in range(n)], schema.field("ps").type),
        pa.array([5] * n, pa.int64()),
    ], schema=schema)


def _page_kinds(rf: raw.RawFile) -> set[tuple[str, str]]:
    kinds = set()
    for pages in rf.page_encodings:
        for url, enc in pages:
            kinds.add((url, enc.WhichOneof(enc.DESCRIPTOR.oneofs[0].name)))
    return kinds


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("version", ["2.0", "2.1", "2.2"])
def test_file_metadata_parses_exactly(tmp_path: Path, version: str, seed: int) -> None:
    n = 3000 + 777 * seed
    table = _mixed_table(n, seed)
    path = tmp_path / "f.lance"
    with LanceFileWriter(str(path), version=version, max_page_bytes=16 * 1024,
                         data_cache_bytes=16 * 1024) as writer:
        writer.write_batch(table.slice(0, n // 2))
        writer.write_batch(table.slice(n // 2))
    rf = raw.read_raw_file(path)
    expected_version = {"2.0": (0, 3), "2.1": (2, 1), "2.2": (2, 2)}[version]
    assert (rf.major, rf.minor) == expected_version
    assert rf.descriptor.length == n
    assert rf.global_buffers[0][0] % 64 == 0
    names = [f.name for f in rf.descriptor.schema.fields if f.parent_id == -1]
    assert names == table.column_names
    for cm in rf.columns:
        assert len(cm.pages) >= 1
        assert [p.priority for p in cm.pages][0] == 0
    assert any(len(cm.pages) > 1 for cm in rf.columns)  # small pages cross boundaries
    for enc in rf.column_encodings:
        assert enc.WhichOneof("column_encoding") == "values"
    kinds = _page_kinds(rf)
    if version == "2.0":
        assert {k for _, k in kinds} == {"nullable", "binary", "list", "struct", "dictionary"}
        assert rf.num_columns == len(rf.descriptor.schema.fields)
    else:
        assert {u for u, _ in kinds} == {"/lance.encodings21.PageLayout"}
        assert {"mini_block_layout", "full_zip_layout", "all_null_layout"} <= {k for _, k in kinds}
        leaf_count = sum(1 for f in rf.descriptor.schema.fields
                         if not any(g.parent_id == f.id for g in rf.descriptor.schema.fields))
        assert rf.num_columns == leaf_count
        mini = [enc.mini_block_layout for pages in rf.page_encodings for _, enc in pages
                if enc.HasField("mini_block_layout")]
        assert all(m.has_large_chunk == (version == "2.2") for m in mini)
        # the 2.1 rows per page add up to the file's rows for top-level columns
        for cm in rf.columns[:1]:
            assert sum(p.length for p in cm.pages) == n


@pytest.mark.parametrize("version", ["2.1", "2.2"])
def test_blob_packed_and_constant_layouts(tmp_path: Path, version: str) -> None:
    path = tmp_path / "b.lance"
    with LanceFileWriter(str(path), version=version) as writer:
        writer.write_batch(_blob_table(1500, 3))
    rf = raw.read_raw_file(path)
    kinds = {k for _, k in _page_kinds(rf)}
    assert "blob_layout" in kinds
    if version == "2.2":
        consts = [enc.all_null_layout for pages in rf.page_encodings for _, enc in pages
                  if enc.HasField("all_null_layout")]
        assert consts and all(c.inline_value == (5).to_bytes(8, "little") for c in consts)


def test_legacy_file_metadata(tmp_path: Path) -> None:
    table = _mixed_table(2500, 4).select(["i", "u", "l", "v"])
    uri = tmp_path / "legacy"
    lance.write_dataset(table, uri, data_storage_version="legacy", max_rows_per_group=1000)
    (data_file,) = (uri / "data").glob("*.lance")
    data = data_file.read_bytes()
    assert data[-4:] == b"LANC" and data[-8:-4] == b"\x00\x00\x02\x00"
    import struct

    pos = struct.unpack_from("<q", data, len(data) - 16)[0]
    length = struct.unpack_from("<I", data, pos)[0]
    meta = raw.parse_exact(file_pb2.Metadata, data[pos + 4 : pos + 4 + length], "legacy metadata")
    assert list(meta.batch_offsets) == [0, 1000, 2000, 2500]
    assert 0 < meta.page_table_position < pos
    manifest, _, _, _ = raw.read_manifest(raw.latest_manifest_path(uri))
    assert manifest.data_format.version == "0.1"
    assert [f.file_major_version for f in manifest.fragments[0].files] == [0]


def test_dataset_manifests_transactions_and_index(tmp_path: Path) -> None:
    table = _mixed_table(1200, 5).select(["i", "s", "l", "st"])
    uri = tmp_path / "ds"
    ds = lance.write_dataset(table, uri)
    ds.delete("i < 10")
    ds.add_columns({"z": "i + 1"})
    ds.update({"i": "i + 1"}, where="i > 900")
    ds.create_scalar_index("i", "BTREE")
    lance.write_dataset(table.slice(0, 10).append_column(
        "z", pa.array(range(10), pa.int32())), uri, mode="append")
    ops = {}
    manifests = sorted((uri / "_versions").glob("*.manifest"))
    assert len(manifests) == 6
    for path in manifests:
        manifest, index, txn, data = raw.read_manifest(path)
        assert manifest.writer_version.library == "lance"
        assert manifest.data_format.file_format == "lance"
        assert not manifest.HasField("transaction_section_deprecated")
        assert txn is not None
        ops[manifest.version] = txn.WhichOneof("operation")
        # the inline transaction is the .txn file's bytes
        txn_bytes = (uri / "_transactions" / manifest.transaction_file).read_bytes()
        assert raw.parse_exact(transaction_pb2.Transaction, txn_bytes) == txn
        for frag in manifest.fragments:
            for df in frag.files:
                assert df.file_size_bytes == (uri / "data" / df.path).stat().st_size
                assert (df.file_major_version, df.file_minor_version) == (2, 2)
                rf = raw.read_raw_file(uri / "data" / df.path)
                assert len(df.column_indices) == len(df.fields)
                assert max(df.column_indices) < rf.num_columns
        if manifest.version >= 5:
            assert index is not None
            (idx,) = index.indices
            assert idx.index_details.type_url == "/lance.table.BTreeIndexDetails"
            assert {f.path for f in idx.files} == {"page_data.lance", "page_lookup.lance"}
            idx_dir = uri / "_indices" / _uuid_str(idx.uuid.uuid)
            for f in idx.files:
                assert (idx_dir / f.path).stat().st_size == f.size_bytes
        else:
            assert index is None
    assert ops == {1: "overwrite", 2: "delete", 3: "merge", 4: "update", 5: "create_index",
                   6: "append"}
    manifest, _, txn, _ = raw.read_manifest(manifests[0])
    assert manifest.reader_feature_flags & 1  # deletion files present
    merge_txn = next(raw.read_manifest(p)[2] for p in manifests
                     if raw.read_manifest(p)[2].WhichOneof("operation") == "merge")
    assert merge_txn.merge.preserves_nullability is True
    assert [f.name for f in merge_txn.merge.schema if f.parent_id == -1][-1] == "z"


def _uuid_str(b: bytes) -> str:
    h = b.hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def test_stable_row_ids_and_versions(tmp_path: Path) -> None:
    uri = tmp_path / "rid"
    lance.write_dataset(pa.table({"k": pa.array(range(600), pa.int64())}), uri,
                        enable_stable_row_ids=True)
    ds = lance.dataset(uri)
    ds.delete("k % 7 = 3")
    ds.update({"k": "k + 1000"}, where="k < 20")
    manifest, _, _, _ = raw.read_manifest(raw.latest_manifest_path(uri))
    assert manifest.reader_feature_flags & 2
    kinds: set[str] = set()
    all_ids: set[int] = set()
    for frag in manifest.fragments:
        seq = raw.parse_exact(rowids_pb2.RowIdSequence, frag.inline_row_ids)
        ids = [i for seg in seq.segments for i in _segment_ids(seg, kinds)]
        assert len(ids) == frag.physical_rows
        all_ids.update(ids)
        for name in ("inline_created_at_versions", "inline_last_updated_at_versions"):
            if frag.HasField(name):
                runs = raw.parse_exact(rowids_pb2.RowDatasetVersionSequence, getattr(frag, name))
                assert sum(len(_segment_ids(r.span, kinds)) for r in runs.runs) == frag.physical_rows
                assert all(1 <= r.version <= manifest.version for r in runs.runs)
    assert manifest.next_row_id == 600
    live = lance.dataset(uri).to_table(with_row_id=True)["_rowid"].to_pylist()
    assert len(live) == 600 - len([k for k in range(600) if k % 7 == 3])
    assert set(live) <= all_ids <= set(range(600))
    assert "range" in kinds


def _segment_ids(seg: rowids_pb2.U64Segment, kinds: set[str]) -> list[int]:
    """Row ids of one segment (bitmaps are least-significant-bit first)."""
    kind = seg.WhichOneof("segment")
    kinds.add(kind)
    if kind == "range":
        return list(range(seg.range.start, seg.range.end))
    if kind == "range_with_bitmap":
        r = seg.range_with_bitmap
        return [r.start + i for i in range(r.end - r.start) if r.bitmap[i // 8] >> (i % 8) & 1]
    if kind == "range_with_holes":
        r = seg.range_with_holes
        holes = set(_array_values(r.holes))
        return [i for i in range(r.start, r.end) if i not in holes]
    return _array_values(getattr(seg, kind))


def _array_values(arr: rowids_pb2.EncodedU64Array) -> list[int]:
    kind = arr.WhichOneof("array")
    if kind == "u64_array":
        return list(np.frombuffer(arr.u64_array.values, "<u8"))
    inner = getattr(arr, kind)
    dtype = "<u2" if kind == "u16_array" else "<u4"
    return [inner.base + int(v) for v in np.frombuffer(inner.offsets, dtype)]


def test_reader_sees_what_we_parse(tmp_path: Path) -> None:
    table = _mixed_table(500, 6)
    path = tmp_path / "r.lance"
    with LanceFileWriter(str(path), version="2.2") as writer:
        writer.write_batch(table)
    rf = raw.read_raw_file(path)
    meta = LanceFileReader(str(path)).metadata()
    assert meta.num_rows == rf.descriptor.length
    assert len(meta.columns) == rf.num_columns
    for ours, theirs in zip(rf.columns, meta.columns):
        assert len(ours.pages) == len(theirs.pages)
        for page, their_page in zip(ours.pages, theirs.pages):
            assert list(zip(page.buffer_offsets, page.buffer_sizes)) == [
                (b.position, b.size) for b in their_page.buffers]


def test_runtime_version_guard_accepts_installed_protobuf() -> None:
    """Generated code needs protobuf >= 7.35.1, < 8 (protoc 35.1 gencode guard)."""
    import re

    import google.protobuf

    text = (ROOT / "lancejit" / "pb" / "file_pb2.py").read_text()
    major, minor, patch = map(int, re.search(
        r"ValidateProtobufRuntimeVersion\(\s*_runtime_version\.Domain\.PUBLIC,\s*(\d+),\s*(\d+),"
        r"\s*(\d+),", text).groups())
    assert (major, minor, patch) == (7, 35, 1)
    installed = tuple(int(x) for x in google.protobuf.__version__.split(".")[:3])
    assert installed[0] == major and installed >= (major, minor, patch)
