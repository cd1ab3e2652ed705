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
from lancejit.table.filter.compile import compile_filter, evaluate_filter

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


# ------------------------------------------------------------------ generated predicates

from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402

_NUM_COLS = ["a", "f", "st.x", "b"]
_num_atom = st.one_of(
    st.sampled_from(_NUM_COLS),
    st.integers(min_value=-50, max_value=1200).map(str),
    st.sampled_from(["0.5", "250.25", "-3.5"]),
)
_num_expr = st.recursive(
    _num_atom,
    lambda inner: st.tuples(inner, st.sampled_from(["+", "-", "*"]), inner).map(lambda t: f"({t[0]} {t[1]} {t[2]})"),
    max_leaves=3,
)
_cmp = st.tuples(_num_expr, st.sampled_from(["<", "<=", ">", ">=", "=", "!="]), _num_expr).map(" ".join)
_str_pred = st.one_of(
    st.sampled_from(["s IS NULL", "s IS NOT NULL", "f IS NULL", "c IS NULL", "s = 'upd'"]),
    st.tuples(st.sampled_from(["s", "c", "st.y"]), st.sampled_from(["LIKE", "NOT LIKE"]),
              st.sampled_from(["'s1%'", "'%3'", "'y_'", "'%!'", "'upd'"])).map(" ".join),
    st.lists(st.integers(min_value=0, max_value=1000), min_size=1, max_size=4).map(
        lambda xs: f"a IN ({', '.join(map(str, xs))})"),
)
_pred = st.recursive(
    st.one_of(_cmp, _str_pred),
    lambda inner: st.one_of(
        st.tuples(inner, st.sampled_from(["AND", "OR"]), inner).map(lambda t: f"({t[0]} {t[1]} {t[2]})"),
        inner.map(lambda p: f"NOT ({p})"),
    ),
    max_leaves=4,
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=_pred)
def test_generated_predicates_match_reference(evolving, text):
    ref, table = evolving
    try:
        expected = ref.to_table(filter=text)
    except (OSError, ValueError):
        return  # the reference rejects it (e.g. type coercions it does not do)
    got = table.take(evaluate_filter(compile_filter(text, table.schema), table))
    assert got.equals(expected), text
