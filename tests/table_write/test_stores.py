"""The committer on every store kind (local, memory, S3 via moto, GCS via fake-gcs-server): a lost
race is retried on top of the winner; lancejit's reader (and pylance on local/S3) see every version."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
import tw_helpers as H

import lance
from lancejit.io import open_store
from lancejit.table import dataset as lj_dataset
from lancejit.table.commit import (
    Append,
    Overwrite,
    Transaction,
    commit,
    commit_transaction,
    create_tag,
    list_tags,
    new_fragment,
    schema_fields,
)


class RacingStore:
    """Wraps a store: right before the first manifest create, another writer commits ``rival``."""

    def __init__(self, inner, root, rival) -> None:
        self._inner, self._root, self._rival, self.raced = inner, root, rival, False

    def __getattr__(self, name):
        return getattr(self._inner, name)

    async def put_if_absent(self, path, data):
        if "/_versions/" in path and not self.raced:
            self.raced = True
            await commit(self._inner, self._root, self._rival, 1)
        await self._inner.put_if_absent(path, data)


@pytest.mark.parametrize("store_root", ["local", "memory", "s3", "gcs"], indirect=True)
async def test_commit_on_store(store_root):
    uri = store_root.join("d.lance")
    opts = store_root.storage_options or None
    store, root = open_store(uri, opts)
    t1 = H.make_table(0, 20)
    fields, meta = schema_fields(t1.schema)
    df = await H.write_data_file(store, root, t1)
    assert await commit(store, root, Overwrite((new_fragment([df], 20),), fields, meta), 0) == 1

    rival_t, mine_t = H.make_table(100, 5), H.make_table(200, 7)
    rival = Append((new_fragment([await H.write_data_file(store, root, rival_t)], 5),))
    mine = Append((new_fragment([await H.write_data_file(store, root, mine_t)], 7),))
    racing = RacingStore(store, root, rival)
    res = await commit_transaction(racing, root, Transaction(1, mine), backoff_base_s=0.001)
    assert racing.raced and res.attempts == 2 and res.version == 3
    assert res.transaction.read_version == 2  # moved forward past the rival
    assert [f.id for f in res.manifest.fragments] == [0, 1, 2]

    await create_tag(store, root, "first", 1)
    assert [(t.name, t.version) for t in await list_tags(store, root)] == [("first", 1)]

    expected = {1: t1, 2: pa.concat_tables([t1, rival_t]), 3: pa.concat_tables([t1, rival_t, mine_t])}
    for v, exp in expected.items():
        got = lj_dataset(uri, version=v, storage_options=opts).to_table()
        assert got.sort_by("a").equals(exp.sort_by("a")), v
    assert lj_dataset(uri, version="first", storage_options=opts).version == 1
    if store_root.kind in ("local", "s3"):
        kw = {"storage_options": opts} if opts else {}
        ds = lance.dataset(uri, **kw)
        assert ds.version == 3 and ds.count_rows() == 32
        assert ds.tags.list()["first"]["version"] == 1
        assert np.array_equal(np.sort(ds.to_table()["a"].to_numpy()),
                              np.sort(expected[3]["a"].to_numpy()))
