"""LanceSchema against pylance 14: file and dataset schemas, ids, logical types, errors."""

from __future__ import annotations

from pathlib import Path

import lance
import lance.arrow
import pyarrow as pa
import pytest
from lance.file import LanceFileReader, LanceFileWriter

import tests_core_raw as raw
from lancejit.core.errors import CorruptFileError, InvalidInputError, NotSupportedError
from lancejit.core.schema import (
    LanceField,
    LanceSchema,
    arrow_type_to_logical,
    logical_to_arrow_type,
    parse_field_path,
)
from lancejit.pb import file_pb2

BF16 = lance.arrow.BFloat16Type()
VERSIONS = ["2.0", "2.1", "2.2"]


def _f(name, t, nullable=True, **md):
    return pa.field(name, t, nullable=nullable, metadata=md or None)


TEMPORAL = pa.schema(
    [_f(f"ts_{u}_{i}", pa.timestamp(u, tz)) for u in ("s", "ms", "us", "ns")
     for i, tz in enumerate([None, "UTC", "America/New_York", "+05:00"])]
    + [_f("d32", pa.date32()), _f("d64", pa.date64()), _f("t32s", pa.time32("s")),
       _f("t32ms", pa.time32("ms")), _f("t64us", pa.time64("us")), _f("t64ns", pa.time64("ns"))]
    + [_f(f"dur_{u}", pa.duration(u)) for u in ("s", "ms", "us", "ns")]
)

FLAT = pa.schema(
    [_f("b", pa.bool_()), _f("i8", pa.int8(), False), _f("u8", pa.uint8()), _f("i16", pa.int16()),
     _f("u16", pa.uint16()), _f("i32", pa.int32(), False), _f("u32", pa.uint32()),
     _f("i64", pa.int64()), _f("u64", pa.uint64()), _f("f16", pa.float16()),
     _f("f32", pa.float32()), _f("f64", pa.float64(), False), _f("s", pa.string()),
     _f("ls", pa.large_string()), _f("bin", pa.binary(), False), _f("lbin", pa.large_binary()),
     _f("fsb", pa.binary(7)), _f("d128", pa.decimal128(38, 10)), _f("d128b", pa.decimal128(5, -2)),
     _f("d256", pa.decimal256(76, 3))],
    metadata={"schema-key": "schema value", "empty": ""},
)

NESTED = pa.schema([
    _f("ls", pa.list_(pa.struct([_f("a", pa.int32()),
                                 _f("inner", pa.list_(pa.field("x", pa.string(), nullable=False)))]))),
    _f("lls", pa.large_list(pa.struct([_f("y", pa.large_list(pa.float64()))]))),
    _f("ll", pa.list_(pa.list_(pa.int16()))),
    _f("st", pa.struct([_f("p", pa.struct([_f("q", pa.int8(), False)]), False),
                        _f("r", pa.list_(pa.binary()))]), False),
    _f("meta", pa.int32(), note="field metadata", **{"lance-encoding:compression": "zstd"}),
])

NULLABLE_STRUCT = pa.schema([
    _f("ns", pa.struct([_f("a", pa.int32()), _f("b", pa.string(), False)])),
    _f("lns", pa.list_(pa.struct([_f("c", pa.float32())]))),
])

FSL = pa.schema([
    _f("v", pa.list_(pa.float32(), 4)),
    _f("vv", pa.list_(pa.list_(pa.int32(), 2), 3)),
    _f("vs", pa.list_(pa.string(), 2)),
    _f("vb", pa.list_(pa.binary(3), 2)),
    _f("vts", pa.list_(pa.timestamp("us", "+01:00"), 2)),
    _f("vbf", pa.list_(BF16, 8)),
    _f("lv", pa.list_(pa.list_(pa.float64(), 2))),
])

# pylance 14 gives a fixed-size list of structs an "item" child field (2.2 only)
FSL_STRUCT = pa.schema([
    _f("fs", pa.list_(pa.field("item", pa.struct([_f("x", pa.int32()), _f("y", pa.string())])), 3)),
    _f("sfs", pa.struct([_f("f", pa.list_(pa.struct([_f("z", pa.float64(), False)]), 2))])),
])

DICTS = pa.schema([
    _f("d8", pa.dictionary(pa.int8(), pa.string())),
    _f("d16", pa.dictionary(pa.int16(), pa.string())),
    _f("d32", pa.dictionary(pa.int32(), pa.large_string())),
    _f("du8", pa.dictionary(pa.uint8(), pa.string())),
])

MAPS = pa.schema([
    _f("m", pa.map_(pa.string(), pa.int32())),
    _f("mn", pa.map_(pa.int64(), pa.field("value", pa.list_(pa.string()), nullable=False)), False),
    _f("sm", pa.struct([_f("inner", pa.map_(pa.string(), pa.float64()))])),
    _f("lm", pa.list_(pa.map_(pa.int32(), pa.string()))),
    _f("named", pa.map_(pa.field("k", pa.string(), nullable=False), pa.field("v", pa.int8()))),
])

EXTENSIONS = pa.schema([
    _f("u", pa.uuid()),
    _f("bf", BF16),
    _f("lbf", pa.list_(BF16)),
    _f("uk", pa.int64(), False, **{"lance-schema:unenforced-primary-key": "true"}),
])

#: (id, schema, versions pylance 14 accepts it in, round-trips exactly through from_arrow)
CASES = [
    ("flat", FLAT, VERSIONS),
    ("temporal", TEMPORAL, VERSIONS),
    ("nested", NESTED, VERSIONS),
    ("nullable_struct", NULLABLE_STRUCT, ["2.1", "2.2"]),
    ("fsl", FSL, VERSIONS),
    ("fsl_struct", FSL_STRUCT, ["2.2"]),
    ("dicts", DICTS, VERSIONS),
    ("maps", MAPS, ["2.2"]),
    ("extensions", EXTENSIONS, VERSIONS),
]
PARAMS = [pytest.param(s, v, id=f"{name}-{v}") for name, s, vs in CASES for v in vs]


def _write_file(path: Path, schema: pa.Schema, version: str) -> None:
    with LanceFileWriter(str(path), schema=schema, version=version):
        pass


def _assert_schema_equal(mine: pa.Schema, theirs: pa.Schema) -> None:
    assert mine.equals(theirs, check_metadata=True), f"\nours:\n{mine}\npylance:\n{theirs}"
    for a, b in zip(mine, theirs):  # nested field metadata too
        assert a.equals(b, check_metadata=True), f"{a} != {b}"


@pytest.mark.parametrize(("schema", "version"), PARAMS)
def test_file_schema_matches_pylance(tmp_path: Path, schema: pa.Schema, version: str) -> None:
    path = tmp_path / "s.lance"
    _write_file(path, schema, version)
    fd = raw.read_raw_file(path).descriptor
    ours = LanceSchema.from_file_descriptor(fd, path=str(path))
    _assert_schema_equal(ours.to_arrow(), LanceFileReader(str(path)).metadata().schema)
    # what we would write is what pylance wrote (ids, parents, types, hints, metadata)
    assert LanceSchema.from_arrow(schema).to_pb() == list(fd.schema.fields)
    assert ours.to_pb() == list(fd.schema.fields)
    assert ours == LanceSchema.from_arrow(schema)
    # Arrow imports (pylance's too) rename map entries to key/value
    _assert_schema_equal(LanceSchema.from_arrow(schema).to_arrow(),
                         pa.ipc.read_schema(schema.serialize()))


@pytest.mark.parametrize(("schema", "version"), PARAMS)
def test_dataset_schema_matches_pylance(tmp_path: Path, schema: pa.Schema, version: str) -> None:
    uri = tmp_path / "ds"
    lance.write_dataset(pa.Table.from_batches([], schema=schema), uri,
                        data_storage_version=version)
    manifest, _, txn, _ = raw.read_manifest(raw.latest_manifest_path(uri))
    ours = LanceSchema.from_pb(manifest.fields, dict(manifest.schema_metadata))
    _assert_schema_equal(ours.to_arrow(dataset=True), lance.dataset(uri).schema)
    assert LanceSchema.from_arrow(schema).to_pb() == list(manifest.fields)
    assert list(txn.overwrite.schema) == list(manifest.fields)


LEGACY_PARAMS = [pytest.param(s, id=name) for name, s, _ in CASES if name != "dicts"]


@pytest.mark.parametrize("schema", LEGACY_PARAMS)
def test_legacy_dataset_schema_matches_pylance(tmp_path: Path, schema: pa.Schema) -> None:
    uri = tmp_path / "legacy"
    lance.write_dataset(pa.Table.from_batches([], schema=schema), uri,
                        data_storage_version="legacy")
    manifest, _, _, _ = raw.read_manifest(raw.latest_manifest_path(uri))
    assert manifest.data_format.version == "0.1"
    ours = LanceSchema.from_pb(manifest.fields, dict(manifest.schema_metadata))
    _assert_schema_equal(ours.to_arrow(dataset=True), lance.dataset(uri).schema)
    assert LanceSchema.from_arrow(schema).to_pb() == list(manifest.fields)


def test_legacy_dictionary_field_carries_offsets(tmp_path: Path) -> None:
    table = pa.table({"d": pa.array(["a", "b", "a", None, "c"]).dictionary_encode(),
                      "x": pa.array([1, 2, 3, 4, 5])})
    uri = tmp_path / "legacy"
    lance.write_dataset(table, uri, data_storage_version="legacy")
    manifest, _, _, _ = raw.read_manifest(raw.latest_manifest_path(uri))
    ours = LanceSchema.from_pb(manifest.fields, dict(manifest.schema_metadata))
    offset, length = ours.field("d").dictionary
    assert length == 3 and offset >= 0
    assert ours.field("x").dictionary is None
    assert ours.to_pb() == list(manifest.fields)
    _assert_schema_equal(ours.to_arrow(dataset=True), lance.dataset(uri).schema)


def test_json_differs_between_file_and_dataset(tmp_path: Path) -> None:
    schema = pa.schema([_f("j", pa.json_(), extra="x"), _f("k", pa.json_(pa.large_string()))])
    table = pa.table([pa.array(['{"a": 1}'], pa.json_()),
                      pa.array(["[1]"], pa.json_(pa.large_string()))], schema=schema)
    path = tmp_path / "j.lance"
    with LanceFileWriter(str(path), version="2.2") as writer:
        writer.write_batch(table)
    fd = raw.read_raw_file(path).descriptor
    ours = LanceSchema.from_file_descriptor(fd)
    assert [f.logical_type for f in ours] == ["json", "json"]
    _assert_schema_equal(ours.to_arrow(), LanceFileReader(str(path)).metadata().schema)
    assert LanceSchema.from_arrow(schema).to_pb() == list(fd.schema.fields)
    uri = tmp_path / "ds"
    lance.write_dataset(table, uri)
    manifest, _, _, _ = raw.read_manifest(raw.latest_manifest_path(uri))
    ours = LanceSchema.from_pb(manifest.fields, dict(manifest.schema_metadata))
    _assert_schema_equal(ours.to_arrow(dataset=True), lance.dataset(uri).schema)


@pytest.mark.parametrize("version", ["2.1", "2.2"])
def test_blob_fields(tmp_path: Path, version: str) -> None:
    schema = pa.schema([_f("blob", pa.large_binary(), **{"lance-encoding:blob": "true"}),
                        _f("k", pa.int32())])
    table = pa.table([pa.array([b"abc", None], pa.large_binary()), pa.array([1, 2], pa.int32())],
                     schema=schema)
    uri = tmp_path / "ds"
    lance.write_dataset(table, uri, data_storage_version=version)
    manifest, _, _, _ = raw.read_manifest(raw.latest_manifest_path(uri))
    ours = LanceSchema.from_pb(manifest.fields, dict(manifest.schema_metadata))
    assert ours.fields[0].is_blob
    _assert_schema_equal(ours.to_arrow(dataset=True), lance.dataset(uri).schema)
    # the data file's own schema: blob v2 descriptor fields (id -1, parent -1) sit under the
    # blob field, as the dataset scan returns them (pylance's file reader lists them flat)
    (data_file,) = (uri / "data").glob("*.lance")
    fd = raw.read_raw_file(data_file).descriptor
    file_schema = LanceSchema.from_file_descriptor(fd)
    if version == "2.2":
        assert ours.fields[0].extension_name == "lance.blob.v2"
        assert [c.name for c in ours.fields[0].children] == ["data", "uri"]
        assert [f.name for f in file_schema] == ["blob", "k"]
        scanned = lance.dataset(uri).to_table().schema
        mine = file_schema.to_arrow()
        assert mine.field("blob").type == scanned.field("blob").type
        assert mine.field("blob").type == pa.struct([
            _f("kind", pa.uint8(), False), _f("position", pa.uint64(), False),
            _f("size", pa.uint64(), False), _f("blob_id", pa.uint32(), False),
            _f("blob_uri", pa.string(), False)])
        assert dict(mine.field("blob").metadata) == dict(scanned.field("blob").metadata)
        _assert_schema_equal(mine.remove(0), scanned.remove(0))
        assert file_schema.to_pb() == list(fd.schema.fields)
    else:
        _assert_schema_equal(file_schema.to_arrow(), LanceFileReader(str(data_file)).metadata().schema)
        assert LanceSchema.from_arrow(schema).to_pb() == list(manifest.fields)


def test_blob_v2_descriptor_ids_do_not_collide() -> None:
    blob = file_pb2.Field(name="blob", id=0, parent_id=-1, logical_type="struct")
    blob.metadata["lance-encoding:blob"] = b"true"
    pbs = [blob,
           file_pb2.Field(name="kind", id=-1, parent_id=-1, logical_type="uint8"),
           file_pb2.Field(name="size", id=-1, parent_id=-1, logical_type="uint64"),
           file_pb2.Field(name="x", id=3, parent_id=-1, logical_type="int32")]
    s = LanceSchema.from_pb(pbs, {})
    assert s.to_arrow().names == ["blob", "x"]
    assert [c.name for c in s.fields[0].children] == ["kind", "size"]
    assert s.field_by_id(3).name == "x"
    assert s.to_pb() == pbs
    # id -1 fields after a plain struct stay top-level
    plain = [file_pb2.Field(name="s", id=0, parent_id=-1, logical_type="struct"), *pbs[1:]]
    assert LanceSchema.from_pb(plain, {}).to_arrow().names == ["s", "kind", "size", "x"]


def test_fsl_of_struct_children_are_checked() -> None:
    pbs = [file_pb2.Field(name="f", id=0, parent_id=-1, logical_type="fixed_size_list:struct:2",
                          nullable=True),
           file_pb2.Field(name="item", id=1, parent_id=0, logical_type="struct", nullable=True),
           file_pb2.Field(name="a", id=2, parent_id=1, logical_type="int32", nullable=True)]
    t = LanceSchema.from_pb(pbs, {}).to_arrow().field("f").type
    assert t == pa.list_(pa.field("item", pa.struct([pa.field("a", pa.int32())])), 2)
    extra = pbs + [file_pb2.Field(name="item2", id=3, parent_id=0, logical_type="struct")]
    with pytest.raises(CorruptFileError):
        LanceSchema.from_pb(extra, {})
    bad = [file_pb2.Field(name="f", id=0, parent_id=-1, logical_type="fixed_size_list:struct:x"),
           *pbs[1:]]
    with pytest.raises(CorruptFileError):
        LanceSchema.from_pb(bad, {})


# --------------------------------------------------------------------------------------
# structure, lookup, projection
# --------------------------------------------------------------------------------------


def test_ids_are_preorder_and_lookups_work() -> None:
    s = LanceSchema.from_arrow(NESTED)
    assert s.field_ids() == list(range(len(s.field_ids())))
    names = [(f.id, f.parent_id, f.name, f.logical_type) for f in s.walk()]
    assert names[:7] == [(0, -1, "ls", "list.struct"), (1, 0, "item", "struct"),
                         (2, 1, "a", "int32"), (3, 1, "inner", "list"), (4, 3, "x", "string"),
                         (5, -1, "lls", "large_list.struct"), (6, 5, "item", "struct")]
    assert s.leaf_ids() == [f.id for f in s.walk() if not f.children]
    assert 1 not in s.leaf_ids() and 2 in s.leaf_ids()
    assert s.field("ls.item.inner.x").id == 4
    assert s.field(["st", "p", "q"]).logical_type == "int8"
    assert s.field_by_id(4).name == "x"
    assert s.path_of(4) == ["ls", "item", "inner", "x"]
    assert s.max_field_id() == max(s.field_ids())
    with pytest.raises(KeyError):
        s.field("ls.nope")
    with pytest.raises(KeyError):
        s.field_by_id(999)
    assert s.fields[0].is_list and s.fields[3].is_struct and not s.fields[3].is_leaf


def test_project_keeps_ids_and_order() -> None:
    s = LanceSchema.from_arrow(NESTED)
    p = s.project(["meta", "st.p", "ls"])
    assert [f.name for f in p] == ["ls", "st", "meta"]
    assert [c.name for c in p.field("st").children] == ["p"]
    assert p.field("st.p.q").id == s.field("st.p.q").id
    assert p.field("ls.item.inner.x").id == 4
    assert p.metadata == s.metadata
    arrow = p.to_arrow()
    assert arrow.field("st").type == pa.struct([_f("p", pa.struct([_f("q", pa.int8(), False)]),
                                                   False)])
    with pytest.raises(KeyError):
        s.project(["missing"])


def test_parse_field_path() -> None:
    assert parse_field_path("a") == ["a"]
    assert parse_field_path("a.b.c") == ["a", "b", "c"]
    assert parse_field_path("a.`b.c`.d") == ["a", "b.c", "d"]
    assert parse_field_path("`x``y`") == ["x`y"]
    for bad in ["", "a..b", "a.", "`open"]:
        with pytest.raises(InvalidInputError):
            parse_field_path(bad)


def test_dotted_names_lookup() -> None:
    s = LanceSchema.from_arrow(pa.schema([_f("a.b", pa.struct([_f("c", pa.int32())]))]))
    assert s.field("`a.b`.c").id == 1


def test_field_is_frozen_and_metadata_read_only() -> None:
    s = LanceSchema.from_arrow(NESTED)
    f = s.field("meta")
    assert f.metadata == {"note": b"field metadata", "lance-encoding:compression": b"zstd"}
    with pytest.raises(TypeError):
        f.metadata["x"] = b"y"  # type: ignore[index]
    with pytest.raises(AttributeError):
        f.name = "other"  # type: ignore[misc]
    assert hash(f) == hash(s.field("meta"))


# --------------------------------------------------------------------------------------
# logical types and errors
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize(("logical", "arrow"), [
    ("halffloat", pa.float16()),
    ("timestamp:ns:+05:30", pa.timestamp("ns", "+05:30")),
    ("timestamp:s:-", pa.timestamp("s")),
    ("fixed_size_list:fixed_size_list:int32:2:3", pa.list_(pa.list_(pa.int32(), 2), 3)),
    ("fixed_size_list:timestamp:us:+01:00:2", pa.list_(pa.timestamp("us", "+01:00"), 2)),
    ("dict:string:int16:false", pa.dictionary(pa.int16(), pa.string())),
    ("decimal:256:40:-3", pa.decimal256(40, -3)),
    ("fixed_size_binary:16", pa.binary(16)),
    ("json", pa.large_binary()),
])
def test_logical_type_strings(logical: str, arrow: pa.DataType) -> None:
    assert logical_to_arrow_type(logical) == arrow
    if logical != "json":
        assert arrow_type_to_logical(arrow) == logical


@pytest.mark.parametrize("logical", ["uuid", "string_view", "decimal:512:10:2", "time32:us",
                                     "duration:fs", "union"])
def test_unknown_logical_type_not_supported(logical: str) -> None:
    pbs = [file_pb2.Field(name="x", id=0, parent_id=-1, logical_type=logical)]
    with pytest.raises((NotSupportedError, CorruptFileError)) as info:
        LanceSchema.from_pb(pbs, {})
    if logical in ("uuid", "string_view", "decimal:512:10:2", "union"):
        assert isinstance(info.value, NotSupportedError)


@pytest.mark.parametrize("logical", ["fixed_size_list:int32", "fixed_size_list:int32:x",
                                     "fixed_size_binary:", "dict:string:int32",
                                     "dict:string:float:false", "decimal:128:p:2",
                                     "timestamp:xs:-", "timestamp:us", "fixed_size_binary:-1"])
def test_malformed_logical_type_is_corrupt(logical: str) -> None:
    pbs = [file_pb2.Field(name="x", id=0, parent_id=-1, logical_type=logical)]
    with pytest.raises(CorruptFileError, match="f.lance"):
        LanceSchema.from_pb(pbs, {}, path="f.lance")


@pytest.mark.parametrize("pbs", [
    # parent that does not exist
    [file_pb2.Field(name="a", id=0, parent_id=5, logical_type="int32")],
    # child before its parent
    [file_pb2.Field(name="c", id=1, parent_id=0, logical_type="int32"),
     file_pb2.Field(name="p", id=0, parent_id=-1, logical_type="struct")],
    # duplicate id
    [file_pb2.Field(name="a", id=0, parent_id=-1, logical_type="int32"),
     file_pb2.Field(name="b", id=0, parent_id=-1, logical_type="int32")],
    # list without its item
    [file_pb2.Field(name="l", id=0, parent_id=-1, logical_type="list")],
    # list with two items
    [file_pb2.Field(name="l", id=0, parent_id=-1, logical_type="list"),
     file_pb2.Field(name="a", id=1, parent_id=0, logical_type="int32"),
     file_pb2.Field(name="b", id=2, parent_id=0, logical_type="int32")],
    # map without key/value
    [file_pb2.Field(name="m", id=0, parent_id=-1, logical_type="map"),
     file_pb2.Field(name="entries", id=1, parent_id=0, logical_type="struct")],
    # primitive with a child
    [file_pb2.Field(name="a", id=0, parent_id=-1, logical_type="int32"),
     file_pb2.Field(name="b", id=1, parent_id=0, logical_type="int32")],
])
def test_malformed_tree_is_corrupt(pbs: list[file_pb2.Field]) -> None:
    with pytest.raises(CorruptFileError):
        LanceSchema.from_pb(pbs, {})


@pytest.mark.parametrize("t", [pa.string_view(), pa.binary_view(), pa.list_view(pa.int32()),
                               pa.dense_union([pa.field("a", pa.int32())]),
                               pa.run_end_encoded(pa.int32(), pa.string()),
                               pa.map_(pa.string(), pa.int32(), keys_sorted=True)])
def test_from_arrow_rejects_unsupported(t: pa.DataType) -> None:
    with pytest.raises(NotSupportedError):
        LanceSchema.from_arrow(pa.schema([pa.field("x", t)]))


def test_non_utf8_metadata_is_returned_lossy_like_pylance() -> None:
    pbs = [file_pb2.Field(name="x", id=0, parent_id=-1, logical_type="int32",
                          metadata={"k": b"\xff\xfeok"})]
    s = LanceSchema.from_pb(pbs, {"m": b"\xc3"})
    assert s.fields[0].metadata["k"] == b"\xff\xfeok"  # raw bytes kept
    arrow = s.to_arrow()
    assert arrow.field("x").metadata[b"k"] == "\ufffd\ufffdok".encode()
    assert arrow.metadata[b"m"] == "\ufffd".encode()


def test_legacy_dictionary_offsets_round_trip() -> None:
    pb = file_pb2.Field(name="d", id=0, parent_id=-1, logical_type="dict:string:int32:false",
                        encoding=file_pb2.DICTIONARY,
                        dictionary=file_pb2.Dictionary(offset=100, length=3))
    s = LanceSchema.from_pb([pb], {})
    assert s.fields[0].dictionary == (100, 3)
    assert s.to_pb() == [pb]
    assert isinstance(s.fields[0], LanceField)
