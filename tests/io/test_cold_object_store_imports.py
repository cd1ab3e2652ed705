"""Cold processes on object stores (issue 25): a fresh process reading a dataset on the S3
emulator (open, count, take, scan, filtered scan) imports neither s3fs, aiobotocore nor botocore
(lancejit signs its own GET, HEAD and listing requests), nor gcsfs on the GCS emulator (anonymous
reads through lancejit's own requests), nor any HTTP client library (aiohttp, yarl, multidict,
urllib.request: lancejit's own kept connections), and reads what pylance reads; a small take
imports neither Numba nor the filter parser; on GCS the first write imports the client (on S3
only multipart uploads and deletes do).  Subprocesses; counts of modules, no timings."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pyarrow.compute  # noqa: F401 - pa.compute
import pytest

lance = pytest.importorskip("lance")

CLIENTS = ("s3fs", "aiobotocore", "botocore", "gcsfs", "boto3", "google.auth", "aiohttp", "yarl", "multidict",
           "urllib.request", "http.client")

READ = """
import json, sys
import lancejit
opts = json.loads(sys.argv[2])
ds = lancejit.dataset(sys.argv[1], storage_options=opts)
out = {"count": ds.count_rows(), "take": ds.take([3, 0, 1999]).to_pylist()}
out["after_take"] = [m for m in ("numba", "sqlglot", "pyarrow.compute", "pandas") if m in sys.modules]
out.update({"scan": ds.to_table(columns=["id"])["id"].to_pylist(),
            "filtered": ds.to_table(columns=["id"], filter="x > 0.5")["id"].to_pylist()})
out["loaded"] = [m for m in json.loads(sys.argv[3]) if m in sys.modules]
if sys.argv[4] == "write":
    lancejit.write_dataset(ds.to_table(limit=10), sys.argv[1] + "-copy", storage_options=opts)
    out["after_write"] = [m for m in json.loads(sys.argv[3]) if m in sys.modules]
print(json.dumps(out))
"""


def _run(*args: str) -> dict:
    env = dict(os.environ)
    for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_PROFILE"):
        env.pop(k, None)
    res = subprocess.run([sys.executable, "-c", READ, *args], capture_output=True, text=True, env=env, timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    return json.loads(res.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("kind,version", [("s3", "2.1"), ("s3", "2.2"), ("gcs", "2.1")])
def test_object_store_reads_import_no_client_library(request, kind, version):
    endpoint = request.getfixturevalue(f"{kind}_endpoint")
    rng = np.random.default_rng(1)
    t = pa.table({"id": np.arange(2000, dtype=np.int64), "x": rng.standard_normal(2000),
                  "s": pa.array([f"v{i % 37}" for i in range(2000)])})
    root = endpoint.new_root()
    uri = root.join("ds")
    if kind == "s3":
        lance.write_dataset(t, uri, data_storage_version=version, max_rows_per_file=700,
                            storage_options=endpoint.storage_options)
    else:  # pylance does not reach the GCS emulator anonymously: lancejit writes it
        import lancejit

        lancejit.write_dataset(t, uri, data_storage_version=version, max_rows_per_file=700,
                               storage_options=endpoint.storage_options)
    got = _run(uri, json.dumps(endpoint.storage_options), json.dumps(CLIENTS), "write")
    assert got["count"] == 2000
    assert got["take"] == t.take([3, 0, 1999]).to_pylist()
    assert got["scan"] == t["id"].to_pylist()
    assert got["filtered"] == t.filter(pa.compute.greater(t["x"], 0.5))["id"].to_pylist()
    if kind == "s3":
        ref = lance.dataset(uri, storage_options=endpoint.storage_options)
        assert got["take"] == ref.take([3, 0, 1999]).to_pylist()
    assert got["loaded"] == []
    assert got["after_take"] == []  # a small take: no Numba, filter parser, pyarrow.compute nor pandas
    if kind == "s3":  # a small dataset's writes are single PUTs, signed by lancejit too
        assert "s3fs" not in got["after_write"]
    else:  # writes go through the client
        assert "gcsfs" in got["after_write"]
