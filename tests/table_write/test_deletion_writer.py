"""Deletion files: kind by size (Arrow <= 5000 offsets, roaring bitmap above), names, cumulative
sets, and agreement with the files pylance writes for the same deletions."""

from __future__ import annotations

import os

import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc
import pytest

import lance
from lancejit.core.errors import InvalidInputError
from lancejit.table.commit import delete_rows, read_deleted_offsets, write_deletion_file
from lancejit.table.commit.deletion_writer import BITMAP_THRESHOLD, deletion_file_path
from lancejit.table.meta.deletion import decode_arrow_deletions, decode_bitmap_deletions


@pytest.mark.parametrize("n,kind", [(1, 0), (BITMAP_THRESHOLD, 0), (BITMAP_THRESHOLD + 1, 1)])
async def test_kind_and_content(local_ds, n, kind):
    store, root, uri = local_ds
    rng = np.random.default_rng(n)
    offsets = rng.choice(20_000, size=n, replace=False)
    d = await write_deletion_file(store, root, 7, 3, offsets, physical_rows=20_000)
    assert d.file_type == kind and d.read_version == 3 and d.num_deleted_rows == n
    path = deletion_file_path(root, 7, d)
    assert os.path.basename(path) == f"7-3-{d.id}.{'arrow' if kind == 0 else 'bin'}"
    data = open(path, "rb").read()
    decoded = decode_arrow_deletions(data, path) if kind == 0 else decode_bitmap_deletions(data, path)
    assert np.array_equal(decoded, np.sort(offsets).astype(np.uint32))
    if kind == 0:  # the reference's shape: one batch, one non-null uint32 column "row_id"
        r = ipc.open_file(pa.py_buffer(data))
        assert r.num_record_batches == 1
        assert r.schema == pa.schema([pa.field("row_id", pa.uint32(), nullable=False)])


async def test_empty_and_bad(local_ds):
    store, root, _ = local_ds
    assert await write_deletion_file(store, root, 0, 1, np.array([], dtype=np.int64)) is None
    with pytest.raises(InvalidInputError):
        await write_deletion_file(store, root, 0, 1, np.array([10]), physical_rows=10)
    with pytest.raises(InvalidInputError):
        await write_deletion_file(store, root, 0, 1, np.array([-1]))


async def test_cumulative_on_pylance_deletions(tmp_path):
    """Our cumulative set on top of a deletion file pylance wrote equals pylance's own."""
    uri = str(tmp_path / "p.lance")
    lance.write_dataset(pa.table({"a": np.arange(12_000)}), uri, max_rows_per_file=12_000)
    lance.dataset(uri).delete("a % 3 = 0")  # 4000 rows: an Arrow file
    from lancejit.io import open_store
    from lancejit.table.commit import load_manifest

    store, root = open_store(uri)
    frag = (await load_manifest(store, root)).manifest.fragments[0]
    assert frag.deletion_file.file_type == 0
    theirs = await read_deleted_offsets(store, root, frag)
    assert np.array_equal(theirs, np.arange(0, 12_000, 3))
    new = await delete_rows(store, root, frag, 2, np.arange(1, 12_000, 3))  # 8000 rows now: bitmap
    assert new.deletion_file.file_type == 1 and new.deletion_file.num_deleted_rows == 8000
    got = await read_deleted_offsets(store, root, new)
    assert np.array_equal(got, np.sort(np.concatenate([np.arange(0, 12_000, 3), np.arange(1, 12_000, 3)])))
    # no change -> same fragment; everything deleted -> None
    same = await delete_rows(store, root, new, 2, np.array([0, 1]))
    assert same.deletion_file == new.deletion_file
    assert await delete_rows(store, root, new, 2, np.arange(2, 12_000, 3)) is None
