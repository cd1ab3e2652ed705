"""Several processes (multiprocessing, spawn) appending at once to one dataset, locally and on S3
(moto): no row lost or duplicated, one version per successful commit, pylance reads the result."""

from __future__ import annotations

import multiprocessing as mp

import numpy as np
import pyarrow as pa
import pytest
import tw_helpers as H

import lance
from lancejit.io import open_store
from lancejit.table.commit import Overwrite, commit, latest_version, new_fragment, schema_fields

WRITERS = 4
BATCHES = 3
ROWS = 20


async def _create(uri: str, opts: dict | None) -> None:
    store, root = open_store(uri, opts)
    t = H.make_table(-5, 5)
    df = await H.write_data_file(store, root, t)
    fields, meta = schema_fields(t.schema)
    assert await commit(store, root, Overwrite((new_fragment([df], 5),), fields, meta), 0) == 1


def _run_writers(uri: str, opts: dict | None) -> list[int]:
    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    procs = [ctx.Process(target=H.append_worker, args=(uri, opts or {}, w, BATCHES, ROWS, out))
             for w in range(WRITERS)]
    for p in procs:
        p.start()
    results = [out.get(timeout=240) for _ in procs]
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    return sorted(v for _, vs in results for v in vs)


def _expected_keys() -> np.ndarray:
    keys = [np.arange(-5, 0)]
    for w in range(WRITERS):
        for b in range(BATCHES):
            start = (w * 1000 + b) * ROWS
            keys.append(np.arange(start, start + ROWS))
    return np.sort(np.concatenate(keys))


async def _check(uri: str, opts: dict | None, versions: list[int]) -> None:
    n_commits = WRITERS * BATCHES
    assert versions == list(range(2, 2 + n_commits))  # one version per commit, none lost or shared
    store, root = open_store(uri, opts)
    assert await latest_version(store, root) == 1 + n_commits
    kw = {"storage_options": opts} if opts else {}
    ds = lance.dataset(uri, **kw)
    keys = np.sort(ds.to_table(columns=["a"])["a"].to_numpy())
    assert np.array_equal(keys, _expected_keys())  # no row lost, none duplicated
    assert len(ds.versions()) == 1 + n_commits
    frag_ids = [f.fragment_id for f in ds.get_fragments()]
    assert sorted(frag_ids) == list(range(1 + n_commits))


async def test_concurrent_appends_local(tmp_path):
    uri = str(tmp_path / "c.lance")
    await _create(uri, None)
    await _check(uri, None, _run_writers(uri, None))


@pytest.mark.s3
async def test_concurrent_appends_s3(s3_endpoint):
    root = s3_endpoint.new_root()
    uri = root.join("c.lance")
    opts = dict(root.storage_options)
    await _create(uri, opts)
    await _check(uri, opts, _run_writers(uri, opts))
