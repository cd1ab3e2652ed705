"""The same sequence of operations done by lancejit and by pylance 14 gives the same datasets:
pylance reads every version of lancejit's dataset equal to its own (rows, ``_rowid``), and the
manifests have the same fragments, field ids, row-id sequences and version metadata."""

from __future__ import annotations

import lance
import pytest
from ops_helpers import make_table, manifest_meta, manifest_shape

import lancejit.table as lt


def _lancejit_ops(uri, version, stable):
    ds = lt.write_dataset(make_table(0, 10), uri, data_storage_version=version, max_rows_per_file=4,
                          enable_stable_row_ids=stable)
    ds = lt.write_dataset(make_table(10, 5), uri, mode="append", max_rows_per_file=4)
    ds.delete("a > 100")
    ds.update({"s": "'upd'", "a": "a + 1000"}, where="a < 2 OR a = 5")
    ds.delete("a >= 4 AND a < 8")
    ds.add_columns({"z": "a * 2"})
    ds.drop_columns(["s"])
    ds.alter_columns({"path": "a", "name": "aa"})
    ds.delete("aa = 12")
    ds = ds.checkout_version(4).restore()
    ds = lt.write_dataset(make_table(100, 3), uri, mode="overwrite")
    return ds.version


def _pylance_ops(uri, version, stable):
    ds = lance.write_dataset(make_table(0, 10), uri, data_storage_version=version, max_rows_per_file=4,
                             enable_stable_row_ids=stable)
    ds = lance.write_dataset(make_table(10, 5), uri, mode="append", max_rows_per_file=4)
    ds.delete("a > 100")
    ds.update({"s": "'upd'", "a": "a + 1000"}, where="a < 2 OR a = 5")
    ds.delete("a >= 4 AND a < 8")
    ds.add_columns({"z": "a * 2"})
    ds.drop_columns(["s"])
    ds.alter_columns({"path": "a", "name": "aa"})
    ds.delete("aa = 12")
    lance.dataset(uri, version=4).restore()
    ds = lance.write_dataset(make_table(100, 3), uri, mode="overwrite")
    return ds.version


@pytest.mark.parametrize("stable", [False, True], ids=["addr", "stable"])
@pytest.mark.parametrize("version", ["2.0", "2.1", "2.2"])
def test_same_history_as_pylance(tmp_path, version, stable):
    ours, theirs = str(tmp_path / "ours"), str(tmp_path / "theirs")
    n = _lancejit_ops(ours, version, stable)
    assert _pylance_ops(theirs, version, stable) == n == 11
    for v in range(1, n + 1):
        got = lance.dataset(ours, version=v)
        exp = lance.dataset(theirs, version=v)
        assert got.schema == exp.schema, v
        g, e = got.to_table(with_row_id=True), exp.to_table(with_row_id=True)
        if not stable:  # row addresses follow fragment ids, which match too
            pass
        assert g.equals(e), (v, g.to_pydict(), e.to_pydict())
        assert got.data_storage_version == exp.data_storage_version == version
        assert manifest_shape(ours, v) == manifest_shape(theirs, v), v
        assert manifest_meta(ours, v) == manifest_meta(theirs, v), v
        # and lancejit reads its own versions the same way
        assert lt.dataset(ours, version=v).to_table(with_row_id=True).equals(e), v
