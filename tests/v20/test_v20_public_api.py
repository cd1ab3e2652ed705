"""2.0 files through the public :class:`lancejit.LanceFileReader` (the real scheduler)."""

from __future__ import annotations

import numpy as np
import pytest

import lance.file as lf
from v20_helpers import arrays_equal, v20_table

from lancejit.file.reader import LanceFileReader  # lancejit.LanceFileReader once the editable install knows lancejit/__init__.py


@pytest.fixture(scope="module", params=[(4, 900, 2048), (5, 60, 512)], ids=lambda c: f"seed{c[0]}-n{c[1]}")
def written(request, tmp_path_factory):
    seed, n, page = request.param
    path = str(tmp_path_factory.mktemp("v20api") / "t.lance")
    with lf.LanceFileWriter(path, version="2.0", max_page_bytes=page) as w:
        w.write_batch(v20_table(seed, n))
    return path, seed


def _same(expected, got):
    assert expected.column_names == got.column_names
    for c in expected.column_names:
        assert arrays_equal(expected[c], got[c]), c


def test_read_all_range_take(written):
    path, seed = written
    ref = lf.LanceFileReader(path)
    reader = LanceFileReader(path)
    assert reader.version == "2.0"
    assert reader.num_rows == ref.num_rows()
    assert reader.schema.equals(ref.metadata().schema, check_metadata=True)
    _same(ref.read_all().to_table(), reader.read_all())
    n = reader.num_rows
    _same(ref.read_range(n // 4, n // 2).to_table(), reader.read_range(n // 4, n // 2))
    rng = np.random.default_rng(seed)
    idx = np.sort(rng.choice(n, size=min(n, 100), replace=False))
    _same(ref.take_rows(idx).to_table(), reader.take_rows(idx))
    # request order and duplicates are the file layer's job; values must follow the request
    shuffled = np.concatenate([idx[::-1], idx[:3]])
    got = reader.take_rows(shuffled)
    want = ref.read_all().to_table().take(shuffled)
    _same(want, got)


def test_batches(written):
    path, _ = written
    ref = lf.LanceFileReader(path).read_all().to_table()
    reader = LanceFileReader(path)
    batches = list(reader.to_batches(batch_size=97))
    assert sum(b.num_rows for b in batches) == ref.num_rows
    import pyarrow as pa

    _same(ref, pa.Table.from_batches(batches))
