"""A caller that runs each S3 request in its own event loop (``asyncio.run`` per request) leaves
no aiohttp session open and no socket behind: the per-loop sessions close when their loop
shuts down (:mod:`lancejit.io.loop_close`)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pyarrow as pa
import pytest

import lancejit

RUNS = 100

SCRIPT = r"""
import asyncio, gc, json, os, sys
import numpy as np
import lancejit
from lancejit.io import open_store

file_uri, ds_uri, options = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
runs = int(sys.argv[4])


def sockets():
    n = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            n += os.readlink(f"/proc/self/fd/{fd}").startswith("socket:")
        except OSError:
            pass
    return n


store, path = open_store(file_uri, options)
ds = lancejit.dataset(ds_uri, storage_options=options)
expected = ds.take([3, 1, 7]).column("x").to_pylist()


async def file_call():  # a reader opened in this loop
    reader = await lancejit.AsyncLanceFileReader.open(file_uri, options)
    return (await reader.read_range(2, 3)).column("x").to_pylist()


async def store_call():  # one store shared by every loop
    return bytes((await store.read_ranges(path, [(0, 4)]))[0])


async def dataset_call():  # one dataset shared by every loop
    return (await ds.take_async([3, 1, 7])).column("x").to_pylist()


head = bytes(asyncio.run(store_call()))
assert asyncio.run(file_call()) == [2, 3, 4]
gc.collect()
before = sockets()
for i in range(runs):
    call = (file_call, store_call, dataset_call)[i % 3]
    got = asyncio.run(call())
    want = {file_call: [2, 3, 4], store_call: head, dataset_call: expected}[call]
    assert got == want, (call.__name__, got, want)
gc.collect()
print(json.dumps({"before": before, "after": sockets()}))
"""


@pytest.mark.s3
def test_asyncio_run_per_call_closes_sessions(s3_endpoint):
    root = s3_endpoint.new_root()
    opts = root.storage_options
    table = pa.table({"x": pa.array(range(1000), pa.int64())})
    file_uri = root.join("f.lance")
    with lancejit.LanceFileWriter(file_uri, table.schema, storage_options=opts) as w:
        w.write_batch(table)
    ds_uri = root.join("ds")
    lancejit.write_dataset(table, ds_uri, storage_options=opts)
    env = dict(os.environ, PYTHONWARNINGS="default")
    proc = subprocess.run([sys.executable, "-c", SCRIPT, file_uri, ds_uri, json.dumps(opts), str(RUNS)],
                          capture_output=True, text=True, timeout=600, env=env)
    assert proc.returncode == 0, proc.stderr
    assert "Unclosed" not in proc.stderr, proc.stderr
    counts = json.loads(proc.stdout.strip().splitlines()[-1])
    assert counts["after"] <= counts["before"], counts
