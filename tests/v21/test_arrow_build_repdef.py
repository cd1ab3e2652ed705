"""Unit tests: shared Arrow builders (lancejit.encoding.arrow_build) and rep/def unraveling
on the examples of the 2.1 encoding specification."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from lancejit.core.errors import CorruptFileError
from lancejit.encoding import arrow_build as ab
from lancejit.encoding.v21.repdef import (
    ALL_VALID_ITEM,
    ITEM,
    LIST,
    NULL_AND_EMPTY_LIST,
    NULLABLE_ITEM,
    NULLABLE_LIST,
    canonical_levels,
    def_translation,
    translate_def,
    unravel,
)


def test_builders_roundtrip():
    valid = np.array([True, False, True, True])
    ints = ab.fixed_width_array(pa.int32(), np.arange(4, dtype="<i4").view(np.uint8), 4, valid)
    assert ints.to_pylist() == [0, None, 2, 3]
    bools = ab.bool_array(np.packbits([1, 0, 1, 1, 0, 0, 0, 1], bitorder="little"), 5, bit_offset=1)
    assert bools.to_pylist() == [False, True, True, False, False]
    s = ab.binary_array(pa.large_string(), np.array([3, 4, 4, 7]), np.frombuffer(b"xxxabcdef", np.uint8))
    assert s.to_pylist() == ["a", "", "bcd"]
    lst = ab.list_array(pa.list_(pa.int32()), np.array([1, 3, 3, 4]), ints, np.array([True, False, True]))
    assert lst.to_pylist() == [[None, 2], None, [3]]
    big = ab.list_array(pa.large_list(pa.int32()), np.array([0, 2]), ints)
    assert big.type == pa.large_list(pa.int32()) and big.to_pylist() == [[0, None]]
    st = ab.struct_array(pa.struct([("a", pa.int32()), ("s", pa.large_string())]), [ints, s], 3, np.array([True, True, False]))
    assert st.to_pylist() == [{"a": 0, "s": "a"}, {"a": None, "s": ""}, None]
    fsl = ab.fixed_size_list_array(pa.list_(pa.int32(), 2), ints, 2, np.array([False, True]))
    assert fsl.to_pylist() == [None, [2, 3]]
    m = pa.map_(pa.string(), pa.int32())
    entries = ab.struct_array(pa.struct([m.key_field, m.item_field]), [pa.array(["k", "j"]), pa.array([1, 2], pa.int32())], 2)
    assert ab.list_array(m, np.array([0, 2, 2]), entries, np.array([True, False])).to_pylist() == [[("k", 1), ("j", 2)], None]


@pytest.mark.parametrize(
    "arr",
    [
        pa.array([1, 2, None, 4]),
        pa.array(["a", None, "c", "d"]),
        pa.array([[1], [], None, [2, 3]]),
        pa.array([{"x": 1}, None, {"x": 3}, {"x": 4}]),
        pa.array([[1.0, 2.0], None, [3.0, 4.0], [5.0, 6.0]], pa.list_(pa.float64(), 2)),
        pa.array([1, 2, 3, 4, 5]).slice(1),
        pa.array([True, False, True, True]),
    ],
)
def test_with_validity_any_type(arr):
    mask = np.array([True, True, False, True])
    got = ab.with_validity(arr, mask)
    expect = [v if m else None for v, m in zip(arr.to_pylist(), mask)]
    assert got.to_pylist() == expect


def test_builders_reject_bad_lengths():
    with pytest.raises(CorruptFileError):
        ab.fixed_width_array(pa.int64(), np.zeros(7, np.uint8), 1)
    with pytest.raises(CorruptFileError):
        ab.binary_array(pa.string(), np.array([0, 5]), np.zeros(3, np.uint8))
    with pytest.raises(CorruptFileError):
        ab.list_array(pa.list_(pa.int8()), np.array([0, 3, 2]), pa.array([1, 2, 3], pa.int8()))


def test_spec_definition_example():
    """Spec: three nested nullable layers; def 0 = valid, 3 = null outer, 2 = null middle,
    1 = null inner (all item layers here: struct<struct<int>>)."""
    canon = canonical_levels((ITEM, ITEM, ITEM))
    table = def_translation((NULLABLE_ITEM, NULLABLE_ITEM, NULLABLE_ITEM), canon, path="t")
    deff = translate_def(np.array([0, 3, 2, 1], np.uint16), table, path="t")
    nodes = unravel(canon, None, deff, 4, path="t")
    assert nodes[0].valid.tolist() == [True, False, True, True]
    assert nodes[1].valid.tolist() == [True, False, False, True]
    assert nodes[2].valid.tolist() == [True, False, False, False]


def test_spec_repetition_example():
    """Spec: [[{<0,1>, <>, <2>}, {<3>}, {<>}], [], [{<4>}]] style nesting: rep levels of
    list<list<list<int>>> with empty lists; offsets must match the spec's Arrow offsets."""
    canon = canonical_levels((LIST, LIST, LIST, ITEM))
    layers = (ALL_VALID_ITEM, NULL_AND_EMPTY_LIST, NULL_AND_EMPTY_LIST, NULL_AND_EMPTY_LIST)
    table = def_translation(layers, canon, path="t")
    rep = np.array([3, 0, 1, 1, 2, 2, 3, 3], np.uint16)
    # page def: 0 value; empty inner list = 2, empty middle = 4, empty outer = 6
    page_def = np.array([0, 0, 2, 0, 0, 4, 6, 0], np.uint16)
    nodes = unravel(canon, rep, translate_def(page_def, table, path="t"), 8, path="t")
    assert nodes[0].offsets.tolist() == [0, 3, 3, 4]
    assert nodes[1].offsets.tolist() == [0, 3, 4, 4, 5]
    assert nodes[2].offsets.tolist() == [0, 2, 2, 3, 4, 5]
    assert nodes[3].count == 5


def test_layer_mismatch_is_corrupt():
    canon = canonical_levels((LIST, ITEM))
    with pytest.raises(CorruptFileError):
        def_translation((NULLABLE_ITEM, NULLABLE_ITEM), canon, path="t")
    with pytest.raises(CorruptFileError):
        def_translation((NULLABLE_LIST,), canon, path="t")
