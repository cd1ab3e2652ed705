"""Legacy (0.1) data files through the public :class:`lancejit.LanceFileReader`."""

from __future__ import annotations

import glob

import numpy as np
import pyarrow as pa
import pytest

import lance
from v20_helpers import arrays_equal, v20_table

from lancejit.file.reader import LanceFileReader  # lancejit.LanceFileReader once the editable install knows lancejit/__init__.py


@pytest.fixture(scope="module", params=[(6, 700, 128), (7, 33, 5)], ids=lambda c: f"seed{c[0]}-n{c[1]}")
def written(request, tmp_path_factory):
    seed, n, group = request.param
    uri = str(tmp_path_factory.mktemp("legapi") / "ds")
    lance.write_dataset(v20_table(seed, n), uri, data_storage_version="legacy", max_rows_per_group=group)
    (path,) = glob.glob(uri + "/data/*.lance")
    return uri, path, seed


def _same(expected, got):
    assert expected.column_names == got.column_names
    for c in expected.column_names:
        assert arrays_equal(expected[c], got[c]), c


def test_read_all_range_take(written):
    uri, path, seed = written
    ds = lance.dataset(uri)
    full = ds.to_table()
    reader = LanceFileReader(path)
    assert reader.version == "0.1"
    assert reader.num_rows == full.num_rows
    assert reader.schema.equals(ds.schema, check_metadata=True)
    _same(full, reader.read_all())
    n = reader.num_rows
    _same(full.slice(n // 3, n // 2), reader.read_range(n // 3, n // 2))
    rng = np.random.default_rng(seed)
    idx = rng.choice(n, size=min(n, 80), replace=False)  # unsorted: the file layer reorders
    _same(full.take(pa.array(idx)), reader.take_rows(idx))
    batches = list(reader.to_batches(batch_size=50))
    _same(full, pa.Table.from_batches(batches))
