"""Datasets written by old pylance releases (``tests/data/legacy_datasets/v*/ds``, made once by
``generate.py`` in a separate virtualenv): lancejit reads every version as that release counted
it and as pylance 14 reads it (``to_table``, ``count_rows``, ``take``, ``take_rows``)."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

import lancejit

lance = pytest.importorskip("lance")
compare = sys.modules["tests_legacy_compare"]

DATA = Path(__file__).resolve().parents[1] / "data" / "legacy_datasets"
RELEASES = sorted(p.name for p in DATA.glob("v*") if (p / "ds").is_dir())


@pytest.mark.skipif(not RELEASES, reason="no old-release datasets in tests/data/legacy_datasets")
@pytest.mark.parametrize("release", RELEASES or ["none"])
def test_old_release_dataset(release, tmp_path):
    src = DATA / release
    path = str(tmp_path / "ds")
    shutil.copytree(src / "ds", path)
    expected = json.loads((src / "expected.json").read_text())["versions"]
    for version, want in expected.items():
        t = lancejit.dataset(path, version=int(version)).to_table()
        assert t.num_rows == want["rows"], (release, version)
        assert int(np.sum(t["a"].to_numpy())) == want["sum_a"], (release, version)
        assert lancejit.dataset(path, version=int(version)).count_rows() == want["rows"]
    outcome = compare.assert_same_as_reference(lance, path, versions=[int(v) for v in expected])
    assert outcome == ["rows"] * len(expected)


@pytest.mark.skipif("v0_7_5" not in RELEASES, reason="no pylance 0.7.5 dataset")
def test_describe_reports_unknown_counts_as_none():
    """``lancejit inspect`` of a pre-0.8 dataset: the manifest records no row counts (None),
    not 0 rows."""
    from lancejit.table.describe import describe

    d = describe(lancejit.dataset(str(DATA / "v0_7_5" / "ds")))
    assert [f["physical_rows"] for f in d["fragments"]] == [None] * len(d["fragments"])
