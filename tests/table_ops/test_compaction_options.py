"""Compaction options and binning side by side with pylance: the same fragment layout (rows per
fragment after compaction), the same metrics and rows, for several layouts and every option
of ``optimize.compact_files`` (issue 24 item 8)."""

from __future__ import annotations

import shutil

import numpy as np
import pyarrow as pa
import pytest

import lancejit
from lancejit.table.write.compaction import file_rows

import lance


def _layout(uri: str, sizes: list[int], deleted: str | None, version: str) -> None:
    start = 0
    for n in sizes:
        t = pa.table({"id": np.arange(start, start + n, dtype=np.int64), "x": np.arange(n) * 0.5,
                      "s": pa.array([f"v{i}" for i in range(start, start + n)])})
        lance.write_dataset(t, uri, mode="append", max_rows_per_file=n, data_storage_version=version)
        start += n
    if deleted:
        lance.dataset(uri).delete(deleted)


CASES = [
    ([100] * 40, "id % 7 = 3", dict(target_rows_per_fragment=1000)),          # 1,029 / 1,028 / 1,372
    ([5000], "id < 994", dict(target_rows_per_fragment=1000)),                 # 1,002 x 2, 1,001 x 2
    ([5000, 100], "id % 5 = 0", dict(target_rows_per_fragment=1000)),
    ([100, 5000, 100], "id < 5000 AND id % 5 = 0", dict(target_rows_per_fragment=1000)),
    ([900] * 3, "id % 5 = 0", dict(target_rows_per_fragment=1000)),
    ([999] * 5, "id = 0", dict(target_rows_per_fragment=1000)),
    ([600] * 5, None, dict(target_rows_per_fragment=1000)),
    ([1500, 1500], "id % 5 = 0", dict(target_rows_per_fragment=1000)),
    ([5000, 5000], "id % 3 = 0", dict(target_rows_per_fragment=1000, num_threads=1)),
    ([100] * 40, "id % 7 = 3", dict(target_rows_per_fragment=1000, batch_size=64, max_rows_per_group=50)),
    ([1000, 50, 50, 1000], "id % 4 = 0", dict(target_rows_per_fragment=500, materialize_deletions=False)),
    ([1000, 50, 50, 1000], "id % 20 = 0", dict(target_rows_per_fragment=500, materialize_deletions_threshold=0.04)),
    ([1000, 50, 50, 1000], "id % 4 = 0", dict(target_rows_per_fragment=500, materialize_deletions_threshold=1.0)),
    ([20000], "id < 3000", dict(target_rows_per_fragment=10000, max_bytes_per_file=200_000)),
]


@pytest.mark.parametrize("version", ["2.0", "2.2"])
@pytest.mark.parametrize("case", range(len(CASES)))
def test_compaction_layout_equals_pylance(tmp_path, case, version):
    sizes, deleted, options = CASES[case]
    jit_uri, ref_uri = str(tmp_path / "jit.lance"), str(tmp_path / "ref.lance")
    _layout(jit_uri, sizes, deleted, version)
    shutil.copytree(jit_uri, ref_uri)
    ref_m = lance.dataset(ref_uri).optimize.compact_files(**options)
    jit_m = lancejit.dataset(jit_uri).optimize.compact_files(**options)
    assert (jit_m.fragments_removed, jit_m.fragments_added, jit_m.files_removed, jit_m.files_added) == (
        ref_m.fragments_removed, ref_m.fragments_added, ref_m.files_removed, ref_m.files_added)
    jit, ref = lance.dataset(jit_uri), lance.dataset(ref_uri)
    assert [f.count_rows() for f in jit.get_fragments()] == [f.count_rows() for f in ref.get_fragments()]
    assert [f.metadata.physical_rows for f in jit.get_fragments()] == [
        f.metadata.physical_rows for f in ref.get_fragments()]
    assert jit.to_table().equals(ref.to_table())
    assert lancejit.dataset(jit_uri).to_table().equals(ref.to_table())


def test_issue_example_three_fragments(tmp_path):
    uri = str(tmp_path / "d.lance")
    _layout(uri, [100] * 40, "id % 7 = 3", "2.2")
    lancejit.dataset(uri).optimize.compact_files(target_rows_per_fragment=1000)
    assert [f.metadata.physical_rows for f in lance.dataset(uri).get_fragments()] == [1029, 1028, 1372]


@pytest.mark.parametrize("rows,target", [(1029, 1000), (4006, 1000), (2999, 1000), (999, 1000), (10, 3), (0, 5)])
def test_file_rows_even_split(rows, target):
    got = file_rows(rows, target)
    assert sum(got) == rows and len(got) == max(1, rows // target)
    assert max(got) - min(got) <= 1 and got == sorted(got, reverse=True)


def test_bad_options_fail_before_any_write(tmp_path):
    uri = str(tmp_path / "d.lance")
    _layout(uri, [100] * 4, None, "2.2")
    ds = lancejit.dataset(uri)
    for bad in (dict(target_rows_per_fragment=-1), dict(max_rows_per_group=0), dict(max_bytes_per_file=0),
                dict(num_threads=0), dict(batch_size=0)):
        with pytest.raises(ValueError):
            ds.optimize.compact_files(**bad)
    assert lancejit.dataset(uri).version == ds.version
