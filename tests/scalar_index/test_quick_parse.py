"""Simple filters parsed without sqlglot's parser give exactly sqlglot's tree."""

from __future__ import annotations

import sqlglot
from hypothesis import given, settings, strategies as st

import table_filters as filters  # (registered by conftest.py)
from lancejit.table.filter.parse import DIALECT, PLACEHOLDER, _chain_to_in, _extract_in_lists
from lancejit.table.filter.quick import quick_tree

names = st.sampled_from(["a", "b", "`my col`", "x_1", "Id"])
numbers = st.one_of(st.integers(-10**12, 10**12).map(str), st.floats(-1e6, 1e6, allow_nan=False).map(
    lambda v: f"{v:.6g}" if "e" not in f"{v:.6g}" and "n" not in f"{v:.6g}" else "1.5"))
strings = st.text("abc xyz-_0", max_size=6).map(lambda s: f"'{s}'")
literals = st.one_of(numbers, strings, st.sampled_from(["TRUE", "false", "NULL"]))
ops = st.sampled_from(["=", "!=", "<>", "<", "<=", ">", ">="])


def predicate() -> st.SearchStrategy[str]:
    return st.one_of(
        st.builds(lambda c, o, v: f"{c} {o} {v}", names, ops, literals),
        st.builds(lambda v, o, c: f"{v} {o} {c}", literals, ops, names),
        st.builds(lambda c, lo, hi, n: f"{c} {'NOT ' if n else ''}BETWEEN {lo} AND {hi}", names, numbers, numbers,
                  st.booleans()),
        st.builds(lambda c, vs, n: f"{c} {'NOT ' if n else ''}IN ({', '.join(vs)})", names,
                  st.lists(numbers, min_size=1, max_size=4), st.booleans()),
        st.builds(lambda c, n: f"{c} IS {'NOT ' if n else ''}NULL", names, st.booleans()),
    )


filters_st = st.recursive(
    predicate(),
    lambda inner: st.one_of(
        st.builds(lambda a, b, op: f"{a} {op} {b}", inner, inner, st.sampled_from(["AND", "OR", "and", "or"])),
        st.builds(lambda a: f"NOT {a}", inner),
        st.builds(lambda a: f"({a})", inner),
    ),
    max_leaves=6,
)


def _check(text: str) -> bool:
    rewritten, _, _ = _extract_in_lists(_chain_to_in(text))
    quick = quick_tree(rewritten, PLACEHOLDER)
    if quick is None:
        return False
    ref = sqlglot.parse_one(rewritten, dialect=DIALECT)
    assert quick == ref and repr(quick) == repr(ref), text
    return True


@settings(max_examples=400, deadline=None)
@given(filters_st)
def test_generated_filters_parse_like_sqlglot(text):
    _check(text)


def test_filter_table_parses_like_sqlglot():
    done = [_check(t) for t in filters.FILTERS + filters.EVOLVED_FILTERS]
    assert sum(done) >= 20
    for t in ["a LIKE 'x%'", "a + 1 = 2", "st.x = 1", "CAST(a AS INT) = 1", "f(a) = 1", "a = 'it''s'", "a % 2 = 0"]:
        assert not _check(t), t
