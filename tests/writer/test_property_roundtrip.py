"""Property test: random nested data (lists / structs / nulls / empties) round-trips via pylance."""

from __future__ import annotations

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

lance_file = pytest.importorskip("lance.file")

from lancejit.file.writer import LanceFileWriter  # noqa: E402

TYPES = [
    pa.int32(),
    pa.string(),
    pa.list_(pa.int64()),
    pa.struct([("a", pa.int16()), ("b", pa.string())]),
    pa.list_(pa.struct([("a", pa.int32()), ("b", pa.list_(pa.string()))])),
    pa.list_(pa.list_(pa.float64())),
    pa.struct([("s", pa.struct([("x", pa.list_(pa.int8()))]))]),
    pa.list_(pa.list_(pa.int32(), 2)),
    pa.bool_(),
    pa.large_list(pa.large_string()),
    pa.struct([("l", pa.list_(pa.bool_())), ("v", pa.list_(pa.float32(), 3)), ("n", pa.int64())]),
    pa.list_(pa.struct([("m", pa.map_(pa.string(), pa.int32()))])),
]


def values_for(t: pa.DataType):
    if pa.types.is_boolean(t):
        return st.booleans()
    if pa.types.is_map(t):
        return st.lists(st.tuples(st.text(alphabet="kq", min_size=1, max_size=2),
                                  st.one_of(st.none(), st.integers(-5, 5))), max_size=3)
    if pa.types.is_integer(t):
        return st.integers(-100, 100)
    if pa.types.is_floating(t):
        return st.floats(allow_nan=False, width=64)
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return st.text(alphabet="abcxyz", max_size=6)
    if pa.types.is_fixed_size_list(t):
        return st.lists(st.one_of(st.none(), values_for(t.value_type)), min_size=t.list_size,
                        max_size=t.list_size)
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return st.lists(st.one_of(st.none(), values_for(t.value_type)), max_size=4)
    if pa.types.is_struct(t):
        return st.fixed_dictionaries(
            {t.field(i).name: st.one_of(st.none(), values_for(t.field(i).type)) for i in range(t.num_fields)})
    raise TypeError(t)


@st.composite
def tables(draw):
    t = draw(st.sampled_from(TYPES))
    rows = draw(st.lists(st.one_of(st.none(), values_for(t)), min_size=1, max_size=60))
    return pa.table({"c": pa.array(rows, type=t)})


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(tables(), st.sampled_from(["2.1", "2.2"]), st.sampled_from([None, 256]))
def test_random_nested_roundtrip(tmp_path, table, version, page):
    p = tmp_path / "h.lance"
    if p.exists():
        p.unlink()
    with LanceFileWriter(str(p), table.schema, version=version, max_page_bytes=page) as w:
        half = table.num_rows // 2
        w.write_batch(table.slice(0, half))
        w.write_batch(table.slice(half))
    got = lance_file.LanceFileReader(str(p)).read_all().to_table()
    assert got.column(0).combine_chunks().equals(table.column(0).combine_chunks())
