"""``lancejit explain scan``: its words say what the statistics did, on datasets the reference
wrote without statistics, with a zone map covering some fragments, and with filters statistics
cannot decide; the rows of both measured scans are the reference's."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pytest

from lancejit.cli import main

lance = pytest.importorskip("lance")


def _table(n: int, start: int = 0) -> pa.Table:
    ids = np.arange(start, start + n, dtype=np.int64)
    return pa.table({"id": ids, "label": pa.array(np.where(ids % 3 == 0, "a", "b"))})


@pytest.fixture(scope="module")
def plain(tmp_path_factory) -> str:
    uri = str(tmp_path_factory.mktemp("explain") / "plain.lance")
    lance.write_dataset(_table(30000), uri, max_rows_per_file=10000, data_storage_version="2.1")
    return uri


@pytest.fixture(scope="module")
def zoned(tmp_path_factory) -> str:
    """A zone map on ``id`` over 3 fragments, then a fourth fragment appended (not covered)."""
    uri = str(tmp_path_factory.mktemp("explain") / "zoned.lance")
    ds = lance.write_dataset(_table(30000), uri, max_rows_per_file=10000)
    ds.create_scalar_index("id", index_type="ZONEMAP")
    lance.write_dataset(_table(5000, 30000), uri, mode="append")
    return uri


def _explain(capsys, uri: str, flt: str) -> tuple[dict, str]:
    assert main(["explain", "scan", uri, "--filter", flt, "--run", "--json", "-"]) == 0
    out = capsys.readouterr()  # with --json -, the text goes to stderr
    return json.loads(out.out), out.err


def _same_rows(report: dict, uri: str, flt: str) -> None:
    expected = lance.dataset(uri).count_rows(flt)
    assert report["measured"]["pruned"]["rows"] == report["measured"]["not pruned"]["rows"] == expected


def test_no_statistics_says_every_page_is_read(capsys, plain):
    flt = "id > 100 AND label = 'a'"
    report, text = _explain(capsys, plain, flt)
    _same_rows(report, plain, flt)
    assert report["conditions"] == ["id > 100", "label = 'a'"]
    assert [(s["source"], s["fragments"]) for s in report["statistics"]] == [(None, 0), (None, 0)]
    assert report["pages"] == report["pages_pruned"] == report["rows_pruned"] == 0
    assert "decided by statistics" not in text
    assert "no statistics for these conditions: every page is read" in text
    assert "no ZONEMAP index on the column, and data files of version 2.1 keep no page statistics" in text
    assert "(no statistics: both read every page)" in text
    m = report["measured"]
    assert m["pruned"]["read_bytes"] == m["not pruned"]["read_bytes"]


def test_zone_map_counts_the_pages_it_prunes(capsys, zoned):
    flt = "id BETWEEN 100 AND 150 AND label = 'a'"
    report, text = _explain(capsys, zoned, flt)
    _same_rows(report, zoned, flt)
    ref = lance.dataset(zoned)
    covered = set(ref.describe_indices()[0].segments[0].fragment_ids)
    frags = [f.fragment_id for f in ref.get_fragments()]
    assert len(covered) == 3 and len(frags) == 4
    stats = {s["condition"]: s for s in report["statistics"]}
    assert stats["id BETWEEN 100 AND 150"] == {"condition": "id BETWEEN 100 AND 150", "source": "zone map",
                                               "fragments": len(covered)}
    assert stats["label = 'a'"]["source"] is None
    by_id = {f["id"]: f for f in report["fragments"]}
    assert [fid for fid in frags if by_id[fid]["pages"]] == sorted(covered)
    assert 0 < report["pages_pruned"] < report["pages"]
    assert report["measured"]["pruned"]["pages_pruned"] == report["pages_pruned"]
    assert "id BETWEEN 100 AND 150: zone map in 3 of 4 fragments" in text
    assert f"pages pruned: {report['pages_pruned']} of {report['pages']} " in text
    assert "  fragment 3: 5000 rows, no statistics" in text
    # statistics that cannot exclude a page
    report, text = _explain(capsys, zoned, "id >= 0")
    assert report["pages"] > 0 and report["pages_pruned"] == 0
    assert "the statistics leave every page possibly matching; every page is read" in text


def test_filter_without_conditions(capsys, zoned):
    flt = "id > 100 OR label = 'a'"
    report, text = _explain(capsys, zoned, flt)
    _same_rows(report, zoned, flt)
    assert report["conditions"] == [] and report["pages"] == 0
    assert "nothing for statistics to decide: every page is read" in text
