"""The container API reports what pylance 14 reports for the same files (issue 2, acceptance 1)."""

from __future__ import annotations

import asyncio
import re

import lance
import pyarrow as pa
import pytest

from lancejit.file.container import open_file_metadata
from lancejit.file.reader import LanceFileReader
from lancejit.file.cache import SearchCache

V2_KEYS = [(v, n) for n in ("flat", "nested", "many", "bigmeta") for v in ("2.0", "2.1", "2.2")]


def reference_metadata(path) -> "lance.file.LanceFileMetadata":
    return lance.file.LanceFileReader(str(path)).metadata()


def assert_summary_matches(summary, ref) -> None:
    """Everything pylance's ``metadata()`` exposes, compared field by field."""
    assert summary.schema.equals(ref.schema, check_metadata=True)
    assert summary.num_rows == ref.num_rows
    assert (summary.major_version, summary.minor_version) == (ref.major_version, ref.minor_version)
    assert summary.num_global_buffers == len(ref.global_buffers)
    assert list(summary.global_buffers) == [(b.position, b.size) for b in ref.global_buffers]
    assert summary.num_columns == len(ref.columns)
    assert [c.num_pages for c in summary.columns] == [len(c.pages) for c in ref.columns]
    assert summary.num_pages == sum(len(c.pages) for c in ref.columns)
    for ours, theirs in zip(summary.columns, ref.columns):
        assert list(ours.column_buffers) == [(b.position, b.size) for b in theirs.column_buffers]
        for page, ref_page in zip(ours.pages, theirs.pages):
            assert list(page.buffers) == [(b.position, b.size) for b in ref_page.buffers]
    assert summary.num_data_bytes == ref.num_data_bytes
    assert summary.num_column_metadata_bytes == ref.num_column_metadata_bytes
    assert summary.num_global_buffer_bytes == ref.num_global_buffer_bytes


@pytest.mark.parametrize("key", V2_KEYS, ids=lambda k: f"{k[1]}-{k[0]}")
def test_metadata_matches_pylance(samples, key):
    path = samples[key]
    reader = LanceFileReader(str(path), cache=SearchCache())
    ref = reference_metadata(path)
    summary = reader.metadata()
    assert summary.version == key[0]
    assert_summary_matches(summary, ref)
    assert reader.schema.equals(ref.schema, check_metadata=True)
    assert reader.num_rows == ref.num_rows


@pytest.mark.parametrize("key", V2_KEYS, ids=lambda k: f"{k[1]}-{k[0]}")
def test_file_metadata_fields(samples, key, bytes_reader):
    """The dataclass the decoders consume: pages unwrapped, rows add up, priorities cumulative."""
    from lancejit.pb import encodings_v2_0_pb2, encodings_v2_1_pb2

    version, _ = key
    data = samples[key].read_bytes()
    meta = asyncio.run(open_file_metadata(bytes_reader(data, str(samples[key]))))
    assert meta.version == version
    assert meta.file_size == len(data)
    page_cls = encodings_v2_0_pb2.ArrayEncoding if version == "2.0" else encodings_v2_1_pb2.PageLayout
    ref = reference_metadata(samples[key])
    assert len(meta.columns) == len(ref.columns)
    for col, ref_col in zip(meta.columns, ref.columns):
        assert len(col.pages) == len(ref_col.pages)
        assert isinstance(col.encoding, encodings_v2_0_pb2.ColumnEncoding)
        assert col.encoding.WhichOneof("column_encoding") == "values"
        expected_priority = 0
        for page in col.pages:
            assert isinstance(page.encoding, page_cls)
            assert page.encoding.ByteSize() > 0
            assert len(page.buffer_offsets) == len(page.buffer_sizes)
            assert all(o + s <= meta.file_size for o, s in zip(page.buffer_offsets, page.buffer_sizes))
            if version != "2.0":  # 2.0 list children count items, not rows
                assert page.priority == expected_priority
                expected_priority += page.num_rows
        if version != "2.0":
            assert col.num_rows == meta.num_rows
    # pylance prints each page's message (Rust Debug text): the outer variant must be ours
    for col, ref_col in zip(meta.columns, ref.columns):
        for page, ref_page in zip(col.pages, ref_col.pages):
            assert _outer_variant(ref_page.encoding) == _our_variant(page.encoding, version)


_VARIANT = re.compile(r"^(?:PageLayout|ArrayEncoding) \{\s*\w+: Some\(\s*(\w+)\(")
_LAYOUT_NAMES = {
    "mini_block_layout": "MiniBlockLayout",
    "full_zip_layout": "FullZipLayout",
    "all_null_layout": "ConstantLayout",  # pylance 14's name for the 2.2 all-null/constant message
    "blob_layout": "BlobLayout",
}


def _outer_variant(debug_text: str) -> str:
    match = _VARIANT.match(debug_text)
    assert match, debug_text[:200]
    return match.group(1)


def _our_variant(message, version: str) -> str:
    if version == "2.0":
        return "".join(part.capitalize() for part in message.WhichOneof("array_encoding").split("_"))
    which = message.WhichOneof("layout")
    if which == "all_null_layout" and version == "2.1":
        return "AllNullLayout"
    return _LAYOUT_NAMES[which]


def test_schema_and_field_metadata_kept(samples):
    reader = LanceFileReader(str(samples[("2.2", "flat")]), cache=SearchCache())
    assert reader.schema.metadata[b"origin"] == b"lancejit-tests"
    assert reader.schema.field("i64").metadata[b"note"] == b"some nulls"
    assert reader.schema.field("i32").nullable is False


def test_layout_names(samples):
    """Names of layouts/compressions: one line per page, consistent with the page messages."""
    s20 = LanceFileReader(str(samples[("2.0", "flat")]), cache=SearchCache()).metadata()
    assert s20.columns[0].pages[0].encoding == "nullable(flat)"
    assert s20.columns[0].pages[0].layout == "nullable"
    s22 = LanceFileReader(str(samples[("2.2", "flat")]), cache=SearchCache()).metadata()
    names = {p.layout for c in s22.columns for p in c.pages}
    assert names <= {"mini_block", "full_zip", "all_null", "constant", "blob"}
    assert s22.columns[0].pages[0].encoding == "mini_block(inline_bitpacking)"
    nested = LanceFileReader(str(samples[("2.1", "nested")]), cache=SearchCache()).metadata()
    assert any(p.encoding.startswith("full_zip(") or p.encoding.startswith("mini_block(") for c in nested.columns for p in c.pages)


def test_constant_and_all_null_layouts(tmp_path):
    """2.2 writes constants with the all-null message; the names tell them apart."""
    table = pa.table(
        {
            "k": pa.array([7] * 5000, type=pa.int64()),
            "n": pa.array([None] * 5000, type=pa.int32()),
            "s": pa.array(["same"] * 5000),
        }
    )
    path = tmp_path / "const.lance"
    with lance.file.LanceFileWriter(str(path), version="2.2") as w:
        w.write_batch(table)
    summary = LanceFileReader(str(path), cache=SearchCache()).metadata()
    assert_summary_matches(summary, reference_metadata(path))
    kinds = [c.pages[0].layout for c in summary.columns]
    assert kinds == ["constant", "all_null", "constant"]


def test_legacy_metadata(samples):
    """0.1 data files (from a legacy dataset): schema and rows as the reference dataset reports."""
    pytest.importorskip("lancejit.file.legacy")
    for name in ("flat", "many"):
        path = samples[("0.1", name)]
        ds = lance.dataset(str(path.parent.parent))
        reader = LanceFileReader(str(path), cache=SearchCache())
        assert reader.version == "0.1"
        assert reader.num_rows == ds.count_rows()
        assert reader.schema.remove_metadata() == ds.schema.remove_metadata()
        summary = reader.metadata()
        assert summary.num_rows == ds.count_rows()
        assert summary.version == "0.1"


@pytest.mark.parametrize("version", ["2.0", "2.1", "2.2"])
def test_short_tails_read_the_rest_in_few_requests(samples, bytes_reader, version):
    """Whatever part of the metadata the tail holds, the parse reads the rest in at most one
    request (two when even the global-buffer table is outside the tail) and gets the same result."""
    import struct

    from lancejit.file.container import parse_file_metadata

    data = samples[(version, "flat")].read_bytes()
    n = len(data)
    full = asyncio.run(open_file_metadata(bytes_reader(data)))
    cm_start = struct.unpack_from("<Q", data, n - 40)[0]
    for tail_len, expected_requests in [(40, 2), (56, 1), (n - cm_start, 1), (n, 0)]:
        reader = bytes_reader(data)
        meta = asyncio.run(parse_file_metadata(reader, n, memoryview(data)[n - tail_len :]))
        assert len(reader.requests) == expected_requests, (tail_len, reader.requests)
        assert meta.arrow_schema == full.arrow_schema
        assert meta.columns == full.columns
        assert meta.num_rows == full.num_rows and meta.global_buffers == full.global_buffers


def _varied_table(n: int = 3000) -> pa.Table:
    import numpy as np

    rng = np.random.default_rng(0)
    table = pa.table(
        {
            "fsst": pa.array([f"https://example.com/some/long/path/{i}/{rng.integers(1e9)}" for i in range(n)]),
            "dict": pa.array([f"cat{i % 10}" for i in range(n)]),
            "vec": pa.FixedSizeListArray.from_arrays(pa.array(rng.random(n * 128).astype(np.float32)), 128),
            "blob": pa.array([b"x" * 100 for _ in range(n)], pa.large_binary()),
            "runs": pa.array(np.arange(n) // 100),
            "packed": pa.array(
                [{"a": i, "b": float(i)} for i in range(n)], pa.struct([("a", pa.int32()), ("b", pa.float64())])
            ),
            "nulls": pa.array([None] * n, pa.int64()),
            "comp": pa.array(rng.integers(0, 1000, n)),
        }
    )
    schema = table.schema
    for name, key, value in [
        ("blob", "lance-encoding:blob", "true"),
        ("packed", "lance-encoding:packed", "true"),
        ("comp", "lance-encoding:compression", "zstd"),
    ]:
        i = schema.get_field_index(name)
        schema = schema.set(i, schema.field(name).with_metadata({key: value}))
    return table.cast(schema)


@pytest.mark.parametrize("version", ["2.0", "2.1", "2.2"])
def test_varied_encodings(tmp_path, version):
    """Blob, packed struct, FSST, dictionary, full-zip, all-null, zstd: same metadata as pylance,
    one named column per physical column, a name for every page."""
    path = tmp_path / f"varied_{version}.lance"
    with lance.file.LanceFileWriter(str(path), version=version) as w:
        w.write_batch(_varied_table())
    summary = LanceFileReader(str(path), cache=SearchCache()).metadata()
    assert_summary_matches(summary, reference_metadata(path))
    names = [c.name for c in summary.columns]
    assert names == ["fsst", "dict", "vec", "blob", "runs", "packed", "nulls", "comp"]
    encodings = {c.name: c.pages[0].encoding for c in summary.columns}
    if version == "2.0":
        assert encodings["packed"].startswith("packed_struct(")
        assert encodings["nulls"] == "nullable(all_null)"
        assert summary.columns[3].encoding == "blob"  # column-level blob encoding
    else:
        assert encodings["blob"].startswith("blob(")
        assert encodings["vec"].startswith("full_zip(")
        assert encodings["nulls"] == "all_null"
        assert "fsst(" in encodings["fsst"]
        assert "dict=" in encodings["dict"]
        assert "zstd(" in encodings["comp"]


@pytest.mark.parametrize("version", ["2.0", "2.1", "2.2"])
def test_zero_row_file(tmp_path, version):
    schema = pa.schema([("a", pa.int64()), ("s", pa.string()), ("st", pa.struct([("x", pa.int32())]))])
    path = tmp_path / "empty.lance"
    with lance.file.LanceFileWriter(str(path), schema=schema, version=version):
        pass
    reader = LanceFileReader(str(path), cache=SearchCache())
    assert_summary_matches(reader.metadata(), reference_metadata(path))
    assert reader.num_rows == 0
    table = reader.read_all()
    assert table.num_rows == 0 and table.schema == schema
    assert list(reader.to_batches()) == []
    assert reader.take_rows([]).schema == schema
