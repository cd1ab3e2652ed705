"""Scalar indices and concurrent writers: index builds racing appends, deletes, updates and
compactions never give a stale answer (every version's answers equal the scan without indices
and pylance's); compaction remaps the indices as the reference does."""

from __future__ import annotations

import threading

import numpy as np
import pyarrow as pa
import pytest

import lancejit
from lancejit.core.errors import CommitConflictError
from lancejit.core import config

lance = pytest.importorskip("lance")

FILTERS = ["a = 77", "a IN (3, 150, 1777, 5001)", "a BETWEEN 100 AND 180", "a > 5995", "k = 3",
           "k IN (1, 5) AND a < 900", "NOT (k = 2) AND a < 300", "k IS NULL", "a < 20 OR k = 4"]


def _table(n: int, start: int = 0) -> pa.Table:
    a = np.arange(start, start + n, dtype=np.int64)
    return pa.table({"a": a, "k": pa.array(a % 7, mask=a % 11 == 0), "v": a.astype(np.float64) * 0.5})


def _truth(ds: lancejit.Dataset, text: str) -> pa.Table:
    with config.override(scalar_indices=False):
        return ds.to_table(filter=text)


def _check_every_version(path: str) -> int:
    latest = lancejit.dataset(path)
    checked = 0
    for v in latest.versions():
        ds = latest.checkout_version(v["version"])
        for text in FILTERS:
            got = ds.to_table(filter=text)
            assert got.equals(_truth(ds, text)), f"v{v['version']}: {text}"
            assert ds.count_rows(text) == got.num_rows, f"v{v['version']}: {text}"
        checked += 1
    ref = lance.dataset(path)
    for text in FILTERS:
        assert ref.to_table(filter=text).equals(latest.to_table(filter=text)), text
    return checked


def _import_everything(tmp_path) -> None:
    """Every operation once in this thread first: lancejit imports modules on first use, and
    two threads doing that at once race in Python's import machinery."""
    scratch = str(tmp_path / "scratch")
    lance.write_dataset(_table(100), scratch, max_rows_per_file=30)
    ds = lancejit.dataset(scratch).create_scalar_index("a", "BTREE").create_scalar_index("k", "BITMAP")
    ds.insert(_table(10, start=500))
    ds.delete("a = 3")
    ds.update({"k": "k + 1"}, where="a = 5")
    ds.optimize.compact_files(target_rows_per_fragment=100)
    lancejit.dataset(scratch).to_table(filter="a = 7 OR k = 2")


@pytest.mark.parametrize("stable", [False, True])
def test_builds_racing_writers(tmp_path, stable):
    _import_everything(tmp_path)
    path = str(tmp_path / "race")
    lance.write_dataset(_table(4000), path, max_rows_per_file=800, enable_stable_row_ids=stable)
    errors: list[BaseException] = []
    start = threading.Barrier(2)

    def guarded(fn):
        def run():
            start.wait()
            try:
                fn()
            except CommitConflictError:
                pass  # incompatible: the loser simply did not commit
            except BaseException as exc:  # noqa: BLE001
                errors.append(exc)
        return run

    rounds = [
        lambda: lancejit.dataset(path).insert(_table(300, start=5000 + 300 * 0)),
        lambda: lancejit.dataset(path).delete("a % 13 = 5"),
        lambda: lancejit.dataset(path).update({"k": "k + 10"}, where="a BETWEEN 150 AND 170"),
        lambda: lancejit.dataset(path).optimize.compact_files(target_rows_per_fragment=2000),
        lambda: lancejit.dataset(path).insert(_table(300, start=5600)),
        lambda: lancejit.dataset(path).delete("a BETWEEN 1770 AND 1780"),
    ]
    builds = [
        lambda: lancejit.dataset(path).create_scalar_index("a", "BTREE"),
        lambda: lancejit.dataset(path).create_scalar_index("k", "BITMAP"),
    ]
    for i, writer in enumerate(rounds):
        build = builds[i % 2]
        threads = [threading.Thread(target=guarded(build)), threading.Thread(target=guarded(writer))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors, errors
    assert len(lancejit.dataset(path).describe_indices()) == 2
    assert _check_every_version(path) >= 2 * len(rounds)


def test_compaction_remaps_indices_like_the_reference(tmp_path):
    """Compacting indexed fragments with deletions: the remapped indices answer like the scan,
    in both libraries, and a further pylance compaction of lancejit's remapped indices too."""
    path = str(tmp_path / "c")
    lance.write_dataset(_table(6000), path, max_rows_per_file=700)
    ds = lancejit.dataset(path).create_scalar_index("a", "BTREE").create_scalar_index("k", "BITMAP")
    ds.delete("a % 10 = 1 OR a BETWEEN 2000 AND 2100")
    ds.insert(_table(200, start=7000))
    ds = lancejit.dataset(path)
    m = ds.optimize.compact_files(target_rows_per_fragment=2500)
    assert m.fragments_removed >= 8
    ds = lancejit.dataset(path)
    frags = {f.id for f in ds.get_fragments()}
    for ix in lance.dataset(path).list_indices():
        assert set(ix["fragment_ids"]) <= frags
    _check_every_version(path)
    lance.write_dataset(_table(100, start=8000), path, mode="append")
    lance.dataset(path).delete("a % 9 = 2")
    lance.dataset(path).optimize.compact_files(target_rows_per_fragment=5000)
    _check_every_version(path)
