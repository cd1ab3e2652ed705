"""SQL filter strings -> pyarrow expressions, evaluated like the reference evaluates them.

These tests need no lancejit data decoding: the rows come from the reference, the predicate
is evaluated by lancejit and compared with the reference's own filtered result.
"""

from __future__ import annotations

import importlib.util
import pathlib

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from lancejit.core.errors import InvalidInputError
from lancejit.table.filter import compile_filter, evaluate_filter

lance = pytest.importorskip("lance")

_spec = importlib.util.spec_from_file_location("table_filters", pathlib.Path(__file__).with_name("filters.py"))
_filters = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_filters)
FILTERS = _filters.FILTERS + _filters.EVOLVED_FILTERS


@pytest.fixture(scope="module")
def evolving(make_dataset):
    path = make_dataset("evolving", "2.1")
    ref = lance.dataset(path)
    return ref, ref.to_table()


@pytest.mark.parametrize("text", FILTERS)
def test_filter_matches_reference(evolving, text):
    ref, table = evolving
    compiled = compile_filter(text, table.schema)
    assert compiled.columns <= set(table.column_names)
    got = table.take(evaluate_filter(compiled, table))
    assert got.equals(ref.to_table(filter=text))


def test_columns_read_by_a_filter():
    schema = pa.schema([("a", pa.int64()), ("s", pa.string()), ("st", pa.struct([("x", pa.int32())]))])
    assert compile_filter("a > 1 AND st.x < 2", schema).columns == {"a", "st"}
    assert compile_filter("true", schema).columns == frozenset()
    assert compile_filter("A > 1", schema).columns == {"a"}  # case-insensitive fallback
    expr = pc.field("s") == "x"
    assert compile_filter(expr, schema).columns == {"s"}


@pytest.mark.parametrize(
    "text",
    ["a >", "nope = 1", "st.nope = 1", "a IN (SELECT 1)", "", "a LIKE s", "a = ANY(1)"],
)
def test_bad_filters(text):
    schema = pa.schema([("a", pa.int64()), ("s", pa.string()), ("st", pa.struct([("x", pa.int32())]))])
    with pytest.raises(InvalidInputError):
        compile_filter(text, schema)


def test_type_errors_are_lancejit_errors():
    t = pa.table({"a": [1, 2], "s": ["x", "y"]})
    compiled = compile_filter("s + 1 > a", t.schema)
    with pytest.raises(InvalidInputError, match="cannot be evaluated"):
        evaluate_filter(compiled, t)
