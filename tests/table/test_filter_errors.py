"""Bad filters: lancejit's error names where the text stops parsing and, for an unknown column,
the closest names, side by side with what the reference answers for the same text.

The reference wraps a filter in ``SELECT 1 FROM t WHERE `` before parsing it, so the columns its
tokenizer reports are those of the filter plus that prefix; its parser names the token it found
instead (``found: =``, ``found: EOF``).
"""

from __future__ import annotations

import re

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import lancejit
from lancejit.core.errors import FilterSyntaxError, InvalidInputError, UnknownColumnError
from lancejit.table.filter.compile import compile_filter
from lancejit.table.filter.parse import CHAIN_TO_IN, parse_filter

lance = pytest.importorskip("lance")

#: What the reference puts before the filter text it parses.
REF_PREFIX = "SELECT 1 FROM t WHERE "

SCHEMA = pa.schema([
    ("id", pa.int64()), ("label", pa.string()), ("score", pa.float64()), ("labels", pa.int32()),
    ("st", pa.struct([("x", pa.int32()), ("yy", pa.int32())])), ("user_name", pa.string()),
])


@pytest.fixture(scope="module")
def both(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("filter_errors") / "ds.lance")
    t = pa.table({
        "id": pa.array([1, 2, 3], pa.int64()), "label": ["a", "b", "it's"], "score": [0.5, 1.0, 2.0],
        "labels": pa.array([1, 2, 3], pa.int32()),
        "st": pa.array([{"x": 1, "yy": 2}] * 3, SCHEMA.field("st").type), "user_name": ["u", "v", "w"],
    })
    lance.write_dataset(t, path)
    return lance.dataset(path), lancejit.dataset(path)


def _ref_error(ref, text: str) -> str:
    with pytest.raises(ValueError) as info:
        ref.to_table(filter=text)
    return str(info.value)


def _lj_error(lj, text: str, cls: type) -> Exception:
    with pytest.raises(cls) as info:
        lj.to_table(filter=text)
    err = info.value
    assert isinstance(err, InvalidInputError) and isinstance(err, ValueError)
    return err


def _ref_offset(message: str) -> int | None:
    """1-based character of the filter where the reference's tokenizer stopped, if it says."""
    m = re.search(r"Line: (\d+), Column: (\d+)", message)
    if m is None:
        return None
    line, col = int(m[1]), int(m[2])
    return col - len(REF_PREFIX) if line == 1 else None  # the prefix is on line 1


@pytest.mark.parametrize("text", [
    "label = '", "id = 1 AND label = 'x", "label = \"x", "label = 'it''s' AND user_name = 'x",
    "id = = 1", "id >", "id = 1 AND (label", "id IN (1, 2", "id BETWEEN 1", "id = 1 AND label LIKE",
    "label = 'it''s' AND id = = 2", "id IN (1, 2, 3) AND score = = 1",
])
def test_parse_errors_name_the_position(both, text):
    ref, lj = both
    ref_msg = _ref_error(ref, text)
    err = _lj_error(lj, text, FilterSyntaxError)
    pos = err.position
    assert pos is not None and 1 <= pos <= len(text)
    assert f"character {pos}" in str(err)
    ref_pos = _ref_offset(ref_msg)
    found = re.search(r"found: (\S+)\)", ref_msg)
    if ref_pos is not None:  # the reference's tokenizer names the character: the same one
        assert pos == ref_pos
    elif found is not None and found[1] == "EOF":  # lancejit points at the last token
        assert " " not in text[pos - 1 :].strip()
        assert "where the filter ends" in str(err)
    else:  # lancejit points at the token the reference names
        assert found is not None and text[pos - 1 :].startswith(found[1])


def test_multiline_position(both):
    ref, lj = both
    text = "id = 1\n  AND label = 'x"
    ref_msg = _ref_error(ref, text)
    m = re.search(r"Line: 2, Column: (\d+)", ref_msg)
    err = _lj_error(lj, text, FilterSyntaxError)
    assert m is not None and err.position == len("id = 1\n") + int(m[1])


@pytest.mark.parametrize("text", ["lable = 1", "labl = 1", "scroe > 1", "idd = 1", "username = 'x'",
                                  "userName = 'x'", "scroe > 1 AND id = 2"])
def test_unknown_column_suggests_what_the_reference_suggests(both, text):
    ref, lj = both
    ref_msg = _ref_error(ref, text)
    m = re.search(r"Did you mean '([^']+)'", ref_msg)
    assert m is not None
    err = _lj_error(lj, text, UnknownColumnError)
    assert err.suggestions[0] == m[1]
    assert f"did you mean {m[1]!r}" in str(err)
    assert err.name in text


def test_unknown_column_without_a_close_name_lists_the_columns(both):
    ref, lj = both
    ref_msg = _ref_error(ref, "qqqq = 1")
    err = _lj_error(lj, "qqqq = 1", UnknownColumnError)
    assert err.suggestions == () and err.name == "qqqq"
    for name in SCHEMA.names:
        assert name in ref_msg and repr(name) in str(err)


def test_nested_ambiguous_and_case_different_names():
    with pytest.raises(UnknownColumnError) as info:  # the reference lists every column here
        compile_filter("Scroe > 1", SCHEMA)
    assert info.value.suggestions == ("score",)
    with pytest.raises(UnknownColumnError) as info:
        compile_filter("st.xx = 1", SCHEMA)
    assert info.value.suggestions == ("st.x",) and info.value.name == "st.xx"
    with pytest.raises(UnknownColumnError) as info:
        compile_filter("st.q = 1", SCHEMA)
    assert info.value.suggestions == () and "'x', 'yy'" in str(info.value)
    with pytest.raises(UnknownColumnError) as info:
        compile_filter("id.x = 1", SCHEMA)
    assert "not a struct" in str(info.value)
    wide = pa.schema([(f"c{i}", pa.int8()) for i in range(50)] + [("AB", pa.int8()), ("ab", pa.int8())])
    with pytest.raises(UnknownColumnError) as info:
        compile_filter("zzzz = 1", wide)
    assert "and 32 more" in str(info.value)
    with pytest.raises(InvalidInputError) as info:
        compile_filter("Ab = 1", wide)
    assert not isinstance(info.value, UnknownColumnError) and "ambiguous" in str(info.value)
    assert compile_filter("`AB` = 1", wide).columns == {"AB"}


@pytest.mark.parametrize("text", ["", "   ", "\n"])
def test_empty_filter(text):
    with pytest.raises(FilterSyntaxError) as info:
        parse_filter(text)
    assert info.value.position == 1


# ------------------------------------------------- positions through parse_filter's rewrites
_STRINGS = st.text(alphabet="ab'\\ %_", max_size=6).map(lambda s: "'" + s.replace("'", "''") + "'")
_INTS = st.integers(-1000, 1000).map(str)
_TERM = st.one_of(
    st.builds(lambda v: f"id = {v}", _INTS),
    st.builds(lambda v: f"label = {v}", _STRINGS),
    st.builds(lambda vs: f"id IN ({', '.join(vs)})", st.lists(_INTS, min_size=1, max_size=12)),
    st.builds(lambda vs: f"label NOT IN ({', '.join(vs)})", st.lists(_STRINGS, min_size=1, max_size=5)),
    st.builds(lambda a, b: f"score BETWEEN {a} AND {b}", _INTS, _INTS),
    st.builds(lambda vs: "(" + " OR ".join(f"id = {v}" for v in vs) + ")",
              st.lists(_INTS, min_size=CHAIN_TO_IN, max_size=CHAIN_TO_IN + 4)),
    st.just("st.x > 2"),
)
_JOIN = st.sampled_from([" AND ", " OR ", "\n AND ", "  OR\t"])


@st.composite
def _filters(draw) -> str:
    terms = draw(st.lists(_TERM, min_size=0, max_size=5))
    out = terms[0] if terms else ""
    for t in terms[1:]:
        out += draw(_JOIN) + t
    return out


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(before=_filters(), after=_filters(), kind=st.sampled_from(["double =", "unterminated"]))
def test_position_survives_rewrites(before, after, kind):
    """A defect placed among literals, IN lists and OR chains (which parse_filter rewrites before
    sqlglot sees them) is reported at its character of the caller's text."""
    head = before + " AND " if before else ""
    if kind == "double =":
        text = head + "score = = 3" + (" AND " + after if after else "")
        want = len(head) + len("score = =")
    else:
        text = head + "label = 'open"
        want = len(head) + len("label = '")
    with pytest.raises(FilterSyntaxError) as info:
        compile_filter(text, SCHEMA)
    assert info.value.position == want, (text, str(info.value))
    compile_filter(before or "true", SCHEMA)  # the text around the defect parses
