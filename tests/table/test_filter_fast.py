"""Kernel evaluation of filters (lancejit.table.filter.fast, lancejit.encoding.kernels.filter)
equals the Arrow evaluation (the reference's semantics are tested on that one in
test_filter*.py and test_scan_many.py): random tables with NULLs, NaN, -0.0, extremes, chunked
and sliced columns, and random AND/OR/NOT trees of every kernel leaf."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lancejit.core.errors import InvalidInputError
from lancejit.table.filter import compile as F
from lancejit.table.filter.fast import MAX_LEAVES, fast_positions

I64 = np.iinfo(np.int64)


def _both(text: str, table: pa.Table) -> tuple[np.ndarray, np.ndarray, bool]:
    fast = F.compile_filter(text, table.schema)
    slow = F.CompiledFilter(fast.root, fast.columns, fast.text)  # same expression, no kernel plan
    return F.filter_positions(fast, table), F.filter_positions(slow, table), fast.fast is not None


def _table(rng: np.random.Generator, n: int) -> pa.Table:
    ints = rng.integers(-50, 50, n)
    ints[rng.random(n) < 0.05] = I64.max
    ints[rng.random(n) < 0.05] = I64.min
    floats = rng.uniform(-2, 2, n).round(1)
    specials = np.array([np.nan, -np.nan, -0.0, 0.0, np.inf, -np.inf, 1.5, -1.5])
    pick = rng.random(n) < 0.2
    floats[pick] = specials[rng.integers(0, len(specials), pick.sum())]
    nulls = rng.random(n) < 0.15
    words = np.array(["", "a", "ab", "abc", "abcdefgh", "abcdefghij", "abcdefgh\u00e9", "b", "\u00e9t\u00e9", "ab_c"])
    return pa.table({
        "i": pa.array(ints, mask=nulls),
        "j": pa.array(rng.integers(-20, 20, n).astype(np.int32)),
        "k": pa.array(rng.integers(-100, 100, n).astype(np.int8), mask=rng.random(n) < 0.1),
        "u": pa.array(rng.integers(0, 40, n).astype(np.uint32)),
        "x": pa.array(floats, mask=rng.random(n) < 0.1),
        "y": pa.array(floats.astype(np.float32)),
        "s": pa.array(words[rng.integers(0, len(words), n)], mask=rng.random(n) < 0.1),
        "ls": pa.array(words[rng.integers(0, len(words), n)], pa.large_string()),
    })


def _chunked(table: pa.Table, rng: np.random.Generator) -> pa.Table:
    """The same rows with every column cut into chunks at its own random edges (sliced arrays)."""
    cols = []
    for col in table.columns:
        arr = col.combine_chunks()
        edges = np.unique(np.r_[0, rng.integers(0, len(arr) + 1, 3), len(arr)])
        cols.append(pa.chunked_array([arr.slice(a, b - a) for a, b in zip(edges[:-1], edges[1:])], type=arr.type))
    return pa.Table.from_arrays(cols, schema=table.schema)


_NUM = ["-3", "0", "7", "-0.0", "0.0", "1.5", "-1.5", "0.25", "1e300", "-1e300", "9223372036854775807",
        "-9223372036854775807", "2.5"]


@st.composite
def leaf(draw) -> str:
    col = draw(st.sampled_from(["i", "j", "k", "u", "x", "y"]))
    kind = draw(st.sampled_from(["cmp", "cmp", "between", "in", "mod", "null", "like"]))
    num = st.sampled_from(_NUM)
    if kind == "cmp":
        op = draw(st.sampled_from(["=", "!=", "<", "<=", ">", ">="]))
        v = draw(num)
        return f"{v} {op} {col}" if draw(st.booleans()) else f"{col} {op} {v}"
    if kind == "between":
        neg = "NOT " if draw(st.booleans()) else ""
        return f"{col} {neg}BETWEEN {draw(num)} AND {draw(num)}"
    if kind == "in":
        neg = "NOT " if draw(st.booleans()) else ""
        ints = col not in ("x", "y")
        pool = st.integers(-60, 60) if ints else st.sampled_from(["0.0", "-0.0", "1.5", "-1.5", "2", "0.1"])
        vals = draw(st.lists(pool, min_size=1, max_size=12))
        if ints and draw(st.booleans()):
            vals.append(draw(st.sampled_from([I64.max, I64.min, 10**9])))
        return f"{col} {neg}IN ({', '.join(str(v) for v in vals)})"
    if kind == "mod":
        if col in ("x", "y"):
            col = "i"
        k = draw(st.sampled_from([2, 3, 7, -3, -7, 1000, I64.max]))
        op = draw(st.sampled_from(["=", "!=", "<", ">="]))
        return f"{col} % {k} {op} {draw(st.integers(-8, 8))}"
    if kind == "null":
        return f"{draw(st.sampled_from(['i', 'k', 'x', 's']))} IS {'NOT ' if draw(st.booleans()) else ''}NULL"
    pat = draw(st.sampled_from(["", "a", "ab", "abcdefgh", "abcdefghi", "abcdefgh\u00e9", "\u00e9", "z"]))
    neg = "NOT " if draw(st.booleans()) else ""
    scol = draw(st.sampled_from(['s', 'ls']))
    form = draw(st.integers(0, 3))
    if form == 1:
        return f"{scol} {draw(st.sampled_from(['=', '!=']))} '{pat}'"
    if form == 2:
        return f"'{pat}' = {scol}"
    if form == 3:
        vals = draw(st.lists(st.sampled_from(["", "a", "ab", "abcdefgh", "\u00e9t\u00e9", "b"]), min_size=1, max_size=5))
        return f"{scol} {neg}IN ({', '.join(repr(v) for v in vals)})"
    return f"{scol} {neg}LIKE '{pat}%'"


@st.composite
def predicate(draw, depth: int = 0) -> str:
    if depth >= 3 or draw(st.integers(0, 2)) == 0:
        return draw(leaf())
    parts = [draw(predicate(depth + 1)) for _ in range(draw(st.integers(2, 4)))]
    text = f" {draw(st.sampled_from(['AND', 'OR']))} ".join(f"({p})" for p in parts)
    return f"NOT ({text})" if draw(st.integers(0, 3)) == 0 else text


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=predicate(), seed=st.integers(0, 3), n=st.sampled_from([1, 17, 300]))
def test_kernels_equal_arrow(text, seed, n):
    rng = np.random.default_rng(seed)
    table = _table(rng, n)
    for t in (table, _chunked(table, rng), table.slice(n // 3)):
        try:
            fast, slow, planned = _both(text, t)
        except InvalidInputError:
            return  # the Arrow compilation refuses it (e.g. an IN list not fitting the column)
        # leaves: one per AND/OR operand, string IN lists one per item (more leaves: Arrow evaluates)
        if text.count(" AND ") + text.count(" OR ") + text.count("', '") < MAX_LEAVES:
            assert planned, text
        np.testing.assert_array_equal(fast, slow, err_msg=text)


@pytest.mark.parametrize("text", [
    "x > 0.5 AND i < 10", "i IN (1, 5, 99, 1000, 77777)", "i % 1000 = 0", "x BETWEEN -0.1 AND 0.1 OR i = 5",
    "s LIKE 'ab%'", "NOT (k > 3 OR x IS NULL)", "NOT (j >= 2.5)", "u >= 3 AND NOT (u >= 30.5)",
])
def test_bench_filters_have_kernel_plans(text):
    fast, slow, planned = _both(text, _table(np.random.default_rng(0), 500))
    assert planned
    np.testing.assert_array_equal(fast, slow)


@pytest.mark.parametrize("text", [
    "s < 'a'", "s ILIKE 'a%'", "s LIKE 'a_%'", "s LIKE '%a'", "x + 1 > 2", "i > j", "st.x > 1",
    "i IN (1, NULL) IS NULL", "NOT i IN (1, NULL)", "i % 0 = 0", "i % -1 = 0",
    " OR ".join(f"i % {v + 2} = 1" for v in range(MAX_LEAVES + 1)),
])
def test_unsupported_filters_use_arrow(text):
    schema = _table(np.random.default_rng(0), 10).schema.append(pa.field("st", pa.struct([("x", pa.int64())])))
    try:
        compiled = F.compile_filter(text, schema)
    except InvalidInputError:
        return
    assert compiled.fast is None


def test_unexpected_layout_falls_back():
    """A chunk of another type than the plan expects (here doubles for an int64 column) goes
    to Arrow."""
    t = pa.table({"s": pa.array(["ab", "b", None, "abc"]), "i": pa.array([1.0, 2.0, 3.0, 4.0])})
    compiled = F.compile_filter("i > 1 AND s LIKE 'ab%'", pa.schema([("s", pa.string()), ("i", pa.int64())]))
    assert compiled.fast is not None and fast_positions(compiled.fast, t) is None
    assert F.filter_positions(compiled, t).tolist() == [3]


def test_mod_kernel_matches_numpy_truncated_remainder():
    from lancejit.encoding.kernels.filter import mod_range

    v = np.array([I64.min, I64.min + 1, -7, -1, 0, 1, 7, I64.max], dtype=np.int64)
    for k in (2, 3, -3, 1000, I64.max, I64.min):
        expect = np.fmod(v, k)  # C's truncated remainder
        for target in (-2, -1, 0, 1, 2):
            out = np.empty(len(v), dtype=np.uint8)
            mod_range(v, k, target, target, np.uint8(0), out)
            np.testing.assert_array_equal(out.astype(bool), expect == target)


@settings(max_examples=150, deadline=None)
@given(bound=st.sampled_from([50, (1 << 31) - 1, 1 << 31, (1 << 50) - 1, 1 << 50, I64.max]),
       k=st.one_of(st.integers(1, 40), st.sampled_from([(1 << 31) - 1, 1 << 31, (1 << 40) + 3, I64.max]))
       .flatmap(lambda m: st.sampled_from([m, -m]) if m > 1 else st.just(m)),
       target=st.integers(-45, 45), seed=st.integers(0, 2**32 - 1), n=st.sampled_from([1, 31, 257]))
def test_mod_kernel_loops_match_numpy(bound, k, target, seed, n):
    """Each of mod_range's loops (32-bit lanes, doubles, integer division; picked by the
    dividends' and divisor's magnitudes) equals NumPy's truncated remainder."""
    from lancejit.encoding.kernels.filter import mod_range

    rng = np.random.default_rng(seed)
    v = rng.integers(-bound, bound, n, dtype=np.int64, endpoint=True)
    v[: min(n, 3)] = [-bound, bound, 0][: min(n, 3)]
    expect = np.fmod(v, k)
    for lo, hi in ((target, target), (target, target + 3), (-abs(k), abs(k))):
        for negate in (0, 1):
            out = np.empty(n, dtype=np.uint8)
            mod_range(v, np.int64(k), np.int64(lo), np.int64(hi), np.uint8(negate), out)
            np.testing.assert_array_equal(out.astype(bool), ((expect >= lo) & (expect <= hi)) ^ bool(negate))


@pytest.mark.parametrize("staged", [True, False])
def test_staged_and_scans_equal_reference(tmp_path, monkeypatch, staged):
    """ANDs over several columns evaluated column by column (units rejected by the first
    column skip the others) read what the reference reads; with deletions, several fragments
    and units of both sizes (small: take path; big: range path)."""
    lance = pytest.importorskip("lance")
    import lancejit.table as lt
    from lancejit.table.read import late

    monkeypatch.setattr(late, "STAGED_AND", staged)
    rng = np.random.default_rng(3)
    n = 30_000
    t = pa.table({"id": np.arange(n), "x": rng.uniform(-1, 1, n),
                  "s": pa.array([None if i % 13 == 0 else f"user-{i}" for i in range(n)]),
                  "k": pa.array(rng.integers(0, 9, n).astype(np.int8), mask=rng.random(n) < 0.1)})
    uri = str(tmp_path / "ds")
    lance.write_dataset(t, uri, max_rows_per_file=12_000)
    lance.dataset(uri).delete("id % 11 = 4 OR (id >= 5000 AND id < 6000)")
    ref, ours = lance.dataset(uri), lt.dataset(uri)
    for text in ["x > 0.5 AND id < 8000", "id < 3000 AND s LIKE 'user-1%'", "id > 99999 AND x > 0",
                 "k IS NULL AND x < 0 AND id >= 20000", "NOT (id >= 100 OR k > 3)", "k IN (1, 2) AND id % 7 = 1"]:
        for cols in (None, ["s"], ["id", "k"]):
            assert ours.to_table(filter=text, columns=cols).equals(ref.to_table(filter=text, columns=cols)), text
        assert ours.count_rows(text) == ref.count_rows(text), text



@settings(max_examples=50, deadline=None)
@given(bits=st.lists(st.booleans(), max_size=300))
def test_positions_kernel_matches_flatnonzero(bits):
    from lancejit.table.filter.fast import positions

    mask = np.array(bits, dtype=np.uint8)
    np.testing.assert_array_equal(positions(mask), np.flatnonzero(mask))
