"""Late materialization on big units (``late._read_at``): the filter's columns and the other
projected columns read by run plans (``scan_multi.read_members``) or by range then ``take``,
equal to the reference (pylance 14) for the whole filter table, with deletions, on one and on
several fragments, with files read by ranges and held whole.

Units are made small (``scan.MAX_UNIT_ROWS``) and counted as big (``late.SMALL_UNIT_ROWS``) so
that a few thousand rows cross many unit boundaries."""

from __future__ import annotations

import importlib.util
import pathlib

import numpy as np
import pyarrow as pa
import pytest

import lancejit.table as lt
import lancejit.table.read.late as late

lance = pytest.importorskip("lance")

_spec = importlib.util.spec_from_file_location("test_scan_many_", pathlib.Path(__file__).with_name("test_scan_many.py"))
_many = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_many)


@pytest.fixture(scope="module", params=[1, 3], ids=["one", "three"])
def data(request, tmp_path_factory):
    n = 5000
    path = str(tmp_path_factory.mktemp(f"big{request.param}") / "ds")
    lance.write_dataset(_many._table(n), path, max_rows_per_file=-(-n // request.param), data_storage_version="2.1")
    lance.dataset(path).delete("a % 17 = 3 OR (a >= 1300 AND a < 1730)")
    return path


@pytest.mark.parametrize("fraction", [0.0, 0.25, 2.0], ids=["range", "mixed", "members"])
@pytest.mark.parametrize("whole", [False, True], ids=["ranges", "whole"])
def test_big_units_match_reference(knobs, data, monkeypatch, fraction, whole):
    knobs(scan_unit_rows=311)
    monkeypatch.setattr(late, "SMALL_UNIT_ROWS", 16)
    knobs(late_take_fraction=fraction)
    monkeypatch.setattr(late, "OFFLOAD_SELECT_ROWS", 64)  # the worker-thread take path too
    monkeypatch.setattr(late, "OFFLOAD_EVAL", fraction == 0.25)  # and evaluation in a thread
    if not whole:
        knobs(whole_file_bytes=0)
    ref, ours = lance.dataset(data), lt.dataset(data)
    for text in _many.ALL_FILTERS:
        assert ours.to_table(filter=text).equals(ref.to_table(filter=text)), text
    for text in ("a % 5 = 0", "s LIKE 's1%'", "f > 100 AND a < 3000", "a IN (1, 2, 3, 500, 999)"):
        for cols in (["st", "a"], ["s"], ["f", "s"]):
            got = ours.to_table(filter=text, columns=cols, with_row_id=True)
            assert got.equals(ref.to_table(filter=text, columns=cols, with_row_id=True)), (text, cols)


def test_select_takes_rows_of_plain_and_chunked_arrays():
    rng = np.random.default_rng(4)
    n = 1000
    vec = pa.FixedSizeListArray.from_arrays(pa.array(rng.random(n * 4).astype(np.float32)), 4)
    arrays = [pa.array(np.arange(n)), pa.chunked_array([pa.array([f"v{i}" for i in range(n)][:400]),
                                                        pa.array([f"v{i}" for i in range(n)][400:])]), vec]
    for frac in (0.0, 0.01, 0.5, 1.0):
        pos = np.flatnonzero(rng.random(n) < frac).astype(np.int64)
        got = late._select(arrays, pos, n)
        mask = np.zeros(n, dtype=bool)
        mask[pos] = True
        for a, g in zip(arrays, got):
            assert g.to_pylist() == a.filter(pa.array(mask)).to_pylist()


@pytest.fixture(scope="module")
def small_fragments(tmp_path_factory):
    n = 3000
    path = str(tmp_path_factory.mktemp("small") / "ds")
    lance.write_dataset(_many._table(n), path, max_rows_per_file=47, data_storage_version="2.1")
    lance.dataset(path).delete("a % 13 = 3 OR (a >= 940 AND a < 1100)")  # whole fragments too
    return path


@pytest.mark.parametrize("fraction", [0.0, 2.0], ids=["dense", "sparse"])
@pytest.mark.parametrize("whole", [False, True], ids=["ranges", "whole"])
def test_small_fragment_groups_match_reference(knobs, small_fragments, monkeypatch, fraction, whole):
    """Groups of small fragments (``late.read_small_group``): the filter's columns decoded for
    the group at once, the other columns for every live row then taken (dense) or for the
    matching rows only (sparse)."""
    knobs(late_take_fraction=fraction)
    if not whole:
        knobs(whole_file_bytes=0)
    ref, ours = lance.dataset(small_fragments), lt.dataset(small_fragments)
    for text in _many.ALL_FILTERS:
        assert ours.to_table(filter=text).equals(ref.to_table(filter=text)), text
    for text in ("a % 5 = 0", "s LIKE 's1%'", "f > 100 AND a < 3000", "a >= 1000"):
        for cols in (["st", "a"], ["s"], ["f", "s"], []):
            got = ours.to_table(filter=text, columns=cols, with_row_id=True, with_row_address=True)
            expect = ref.to_table(filter=text, columns=cols, with_row_id=True, with_row_address=True)
            assert got.equals(expect), (text, cols)
