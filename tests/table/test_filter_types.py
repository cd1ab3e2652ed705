"""Filters on every Arrow type lancejit stores against literals of every kind, as pylance answers.

The table (``filters.typed_table``: NULLs, uint64 past 2**63, int64 past 2**53, float32 values no
double equals, sub-unit timestamps, time zones, decimals, binaries, dictionaries) is written by
pylance; every filter's rows, ``count_rows`` and (for a sample) ``delete`` equal the reference's,
and every filter the reference refuses is refused.  The grid runs each column against each
literal kind in the places the reference converts literals to the column's type
(``c = L``, ``L > c``, ``BETWEEN``, ``IN``) and where it does not (under ``NOT``), so every pair
of :data:`lancejit.table.filter.literals.RULES` and of :mod:`lancejit.table.filter.operands` is
checked.
"""

from __future__ import annotations

import importlib.util
import pathlib
import shutil

import pyarrow as pa
import pytest

import lancejit
from lancejit.core.errors import InvalidInputError
from lancejit.table.filter.compile import compile_filter, evaluate_filter
from lancejit.table.filter.literals import RULES, rule

lance = pytest.importorskip("lance")

_spec = importlib.util.spec_from_file_location("table_filters", pathlib.Path(__file__).with_name("filters.py"))
_filters = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_filters)

COLUMNS = [c for c in _filters.typed_table().column_names if c != "id"]
#: Filters where the reference refuses a comparison lancejit answers (its engine fails casting a
#: constant it could not hold; lancejit compares exactly).
ANSWERED_WHERE_REFUSED = {"NOT (d32 <= 9223372036854775807)", "NOT (d32 = 9223372036854775807)"}


@pytest.fixture(scope="module")
def typed(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("typed") / "ds")
    table = _filters.typed_table()
    lance.write_dataset(table, path, max_rows_per_file=7)  # two fragments
    return lance.dataset(path), lancejit.dataset(path), table, path


@pytest.fixture(scope="module")
def one_fragment(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("typed1") / "ds")
    table = _filters.typed_table()
    lance.write_dataset(table, path)
    return lance.dataset(path), table


def _reference(ref, text: str):
    """The reference's answer: ``("rows", ids)`` or ``("error", None)``."""
    try:
        return "rows", ref.to_table(columns=["id"], filter=text).column("id").to_pylist()
    except (ValueError, OSError):
        return "error", None


@pytest.mark.parametrize("text", _filters.TYPED_FILTERS)
def test_typed_filters_match_reference(typed, text):
    ref, ours, table, _ = typed
    expected = ref.to_table(columns=["id"], filter=text).column("id").to_pylist()
    assert sorted(ours.to_table(columns=["id"], filter=text).column("id").to_pylist()) == sorted(expected), text
    assert ours.count_rows(text) == ref.count_rows(text) == len(expected), text
    # the same predicate evaluated on the in-memory rows (no scan, no statistics)
    got = table.take(evaluate_filter(compile_filter(text, table.schema), table)).column("id").to_pylist()
    assert sorted(got) == sorted(expected), text


@pytest.mark.parametrize("text", _filters.TYPED_REFUSED)
def test_typed_filters_refused_like_reference(typed, text):
    ref, ours, _, _ = typed
    with pytest.raises((ValueError, OSError)):
        ref.to_table(filter=text)
    with pytest.raises(InvalidInputError):
        ours.to_table(filter=text)


_SHAPES = ["{c} = {L}", "NOT ({c} <= {L})"]
_MORE_SHAPES = ["{L} > {c}", "{c} BETWEEN {L} AND {L}", "{c} IN ({L}, {L})", "{c} != {L}"]
_MORE_LITERALS = ["5", "-5", "18446744073709551615", "1.5", "'5'", "NULL", "TIMESTAMP '2020-01-01 00:00:00'"]


@pytest.mark.parametrize("column", COLUMNS)
def test_literal_grid(one_fragment, column):
    """Every literal kind against ``column`` in the places the reference converts literals
    (``c = L``...) and where it does not (``NOT (c <= L)``): lancejit's compiled predicate over
    the rows selects what the reference's scan selects, or both refuse the filter (the scan
    path is checked by test_typed_filters_match_reference)."""
    ref, table = one_fragment
    texts = [s.format(c=column, L=lit) for s in _SHAPES for lit in _filters.TYPED_LITERALS]
    texts += [s.format(c=column, L=lit) for s in _MORE_SHAPES for lit in _MORE_LITERALS]
    bad = []
    for text in texts:
        want = _reference(ref, text)
        try:
            got = "rows", table.take(evaluate_filter(compile_filter(text, table.schema), table)).column("id").to_pylist()
        except InvalidInputError:
            got = "error", None
        if want[0] == "rows" and got[0] == "rows":
            if sorted(want[1]) != sorted(got[1]):
                bad.append((text, want, got))
        elif want[0] != got[0] and text not in ANSWERED_WHERE_REFUSED:
            bad.append((text, want, got))
    assert not bad, bad


def test_conversion_table_names_every_literal_kind():
    """The rules' table: every literal kind has a row; a NULL converts to every type; numbers
    never convert to temporal types, text never to numbers (the grid checks each pair)."""
    assert set(RULES) == {"Int64", "UInt64", "Float64", "Utf8", "Boolean", "Binary"}
    for t in (pa.int8(), pa.timestamp("us", "UTC"), pa.string(), pa.decimal128(5, 0)):
        assert rule("Null", t) == "null"
    assert rule("Int64", pa.timestamp("us")) is None and rule("Int64", pa.date32()) is None
    assert rule("Utf8", pa.float64()) is None and rule("Utf8", pa.binary()) is None
    assert rule("Int64", pa.decimal128(5, 0)) == "decimal" and rule("UInt64", pa.decimal128(38, 0)) is None


@pytest.mark.parametrize("text", ["u64 < 1", "u64 = 5", "dec > 0", "tz_us > TIMESTAMP '2020-01-01 00:00:00'",
                                  "b IS NOT TRUE", "i64 IN (9007199254740993, 2)", "f32 = 0.1"])
def test_typed_deletes_match_reference(typed, tmp_path, text):
    _, _, _, path = typed
    mine, theirs = str(tmp_path / "mine"), str(tmp_path / "theirs")
    shutil.copytree(path, mine)
    shutil.copytree(path, theirs)
    lancejit.dataset(mine).delete(text)
    lance.dataset(theirs).delete(text)
    got = lance.dataset(mine).to_table().sort_by("id")  # the reference reads what lancejit wrote
    assert got.equals(lance.dataset(theirs).to_table().sort_by("id")), text
    assert lancejit.dataset(mine).count_rows() == got.num_rows
