"""``LanceOperation.UpdateConfig`` with a field whose metadata changes are None: skipped, as the
reference skips it; the other fields' changes are committed the same way by both libraries."""

from __future__ import annotations

import lance
import pyarrow as pa

import lancejit


def _commit(lib, uri: str):
    ds = lib.write_dataset(pa.table({"a": [1, 2, 3], "b": ["x", "y", "z"]}), uri)
    update = lib.LanceOperation.UpdateMap({"k": "v"})
    op = lib.LanceOperation.UpdateConfig(field_metadata_updates={0: None, 1: update})
    return lib.LanceDataset.commit(uri, op, read_version=ds.version)


def test_none_field_changes_are_skipped_like_pylance(tmp_path):
    ours, theirs = str(tmp_path / "ours"), str(tmp_path / "theirs")
    got, want = _commit(lancejit, ours), _commit(lance, theirs)
    assert got.version == want.version == 2
    assert got.schema.equals(want.schema, check_metadata=True)
    assert lance.dataset(ours).schema.equals(want.schema, check_metadata=True)  # the reference reads it back
    assert got.to_table().equals(want.to_table())
