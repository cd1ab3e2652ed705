"""Property tests: random Arrow schemas survive Arrow -> Lance -> protobuf -> Lance -> Arrow."""

from __future__ import annotations

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from lancejit.core.schema import LanceSchema
from lancejit.pb import file_pb2

NAMES = st.text(alphabet="abcxyz_.", min_size=1, max_size=4)
PRIMITIVES = st.sampled_from([
    pa.bool_(), pa.int8(), pa.uint16(), pa.int32(), pa.uint64(), pa.float16(), pa.float64(),
    pa.string(), pa.large_binary(), pa.binary(5), pa.date32(), pa.time64("ns"),
    pa.timestamp("ms", "Europe/Paris"), pa.timestamp("us"), pa.duration("s"),
    pa.decimal128(12, 4), pa.decimal256(60, 0), pa.dictionary(pa.int16(), pa.string()),
    pa.list_(pa.float32(), 3), pa.list_(pa.list_(pa.int8(), 2), 2),
])
METADATA = st.none() | st.dictionaries(st.sampled_from(["k", "note"]), st.text(max_size=5),
                                       min_size=1, max_size=2)


def _fields(children: st.SearchStrategy[pa.DataType]) -> st.SearchStrategy[list[pa.Field]]:
    return st.lists(st.builds(pa.field, NAMES, children, st.booleans(), METADATA),
                    min_size=0, max_size=3, unique_by=lambda f: f.name)


def _nested(children: st.SearchStrategy[pa.DataType]) -> st.SearchStrategy[pa.DataType]:
    item = st.builds(pa.field, NAMES, children, st.booleans(), METADATA)
    key = st.sampled_from([pa.string(), pa.int64()])
    return st.one_of(
        st.builds(pa.list_, item),
        st.builds(pa.large_list, item),
        st.builds(pa.struct, _fields(children)),
        st.builds(lambda k, v: pa.map_(k, v), key, item),
    )


TYPES = st.recursive(PRIMITIVES, _nested, max_leaves=8)
SCHEMAS = st.builds(
    lambda fields, md: pa.schema(fields, metadata=md),
    st.lists(st.builds(pa.field, NAMES, TYPES, st.booleans(), METADATA), min_size=1,
             max_size=4, unique_by=lambda f: f.name),
    METADATA,
)


@settings(max_examples=150, deadline=None)
@given(SCHEMAS)
def test_arrow_lance_round_trip(schema: pa.Schema) -> None:
    lance_schema = LanceSchema.from_arrow(schema)
    ids = lance_schema.field_ids()
    assert ids == list(range(len(ids)))
    for f in lance_schema.walk():
        for c in f.children:
            assert c.parent_id == f.id
    wire = [file_pb2.Field.FromString(pb.SerializeToString()) for pb in lance_schema.to_pb()]
    again = LanceSchema.from_pb(wire, dict(lance_schema.metadata))
    assert again == lance_schema
    out = again.to_arrow()
    # as any Arrow import (and pylance) returns it: map entries named key/value
    expected = pa.ipc.read_schema(schema.serialize())
    assert out.equals(expected, check_metadata=True), f"\n{out}\n!=\n{expected}"
    for path_field in again.walk():
        if path_field.id >= 0:
            assert again.field(again.path_of(path_field.id)) == path_field
