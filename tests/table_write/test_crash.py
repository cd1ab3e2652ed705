"""A writer killed (SIGKILL, in a child process) at each step of a commit leaves the dataset
readable at its last committed version, and the next writer succeeds."""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import signal

import numpy as np
import pytest
import tw_helpers as H

import lance
from lancejit.io import open_store
from lancejit.table.commit import Overwrite, commit, latest_version, new_fragment, schema_fields


async def _create(uri: str) -> None:
    store, root = open_store(uri)
    t = H.make_table(0, 30)
    df = await H.write_data_file(store, root, t)
    fields, meta = schema_fields(t.schema)
    await commit(store, root, Overwrite((new_fragment([df], 30),), fields, meta), 0)


# (path marker, kill before the write?, version committed by the killed writer)
STEPS = [
    ("/data/", False, False),          # after its data file
    ("/_transactions/", False, False),  # after the transaction file
    ("/_versions/1", True, False),      # just before creating the manifest (V2 names start with 1844...)
    ("/_versions/1", False, True),      # after the manifest, before the version hint
]


@pytest.mark.parametrize("marker,before,committed", STEPS, ids=["data", "txn", "pre-manifest", "pre-hint"])
async def test_killed_writer(tmp_path, marker, before, committed):
    uri = str(tmp_path / "k.lance")
    await _create(uri)
    ctx = mp.get_context("spawn")
    p = ctx.Process(target=H.killed_append, args=(uri, marker, before))
    p.start()
    p.join(timeout=120)
    assert p.exitcode == -signal.SIGKILL
    store, root = open_store(uri)
    want = 2 if committed else 1
    assert await latest_version(store, root) == want
    hint = json.loads(open(os.path.join(uri, "_versions", "latest_version_hint.json")).read())
    assert hint == {"version": 1}  # the killed writer never updated the hint
    ds = lance.dataset(uri)
    assert ds.version == want
    rows = 40 if committed else 30
    assert ds.count_rows() == rows
    # the next writer succeeds on top
    v = await H.append_rows(store, root, H.make_table(500, 5))
    assert v == want + 1
    got = np.sort(lance.dataset(uri).to_table(columns=["a"])["a"].to_numpy())
    expected = list(range(30)) + (list(range(10_000, 10_010)) if committed else []) + list(range(500, 505))
    assert got.tolist() == sorted(expected)
    assert json.loads(open(os.path.join(uri, "_versions", "latest_version_hint.json")).read()) == {"version": v}
