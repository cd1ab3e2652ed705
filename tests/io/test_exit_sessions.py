"""Sessions opened through the synchronous bridge are closed at interpreter exit (no aiohttp
"Unclosed client session" warning), and ``aclose`` closes them on demand."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from lancejit.io import open_store

SCRIPT = r"""
import json, sys
from lancejit.io import open_store
from lancejit.io.sync import run_sync
uri, options = sys.argv[1], json.loads(sys.argv[2])
store, path = open_store(uri, options)
data = run_sync(store.read_ranges(path, [(0, 5), (3, 9)]))
assert [bytes(b) for b in data] == [b"hello", b"lo wor"], data
print("ok")
"""


def _run_child(uri: str, options: dict[str, str]) -> subprocess.CompletedProcess:
    env = dict(os.environ, GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT="false", PYTHONWARNINGS="default")
    return subprocess.run([sys.executable, "-c", SCRIPT, uri, json.dumps(options)],
                          capture_output=True, text=True, timeout=120, env=env)


@pytest.mark.parametrize("kind", [pytest.param("s3", marks=pytest.mark.s3), pytest.param("gcs", marks=pytest.mark.gcs)])
async def test_no_unclosed_session_at_exit(kind, request):
    ep = request.getfixturevalue("s3_endpoint" if kind == "s3" else "gcs_endpoint")
    root = ep.new_root()
    uri = root.join("exit.bin")
    store, path = open_store(uri, root.storage_options)
    await store.put(path, b"hello world")
    proc = _run_child(uri, root.storage_options)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "ok"
    assert "Unclosed" not in proc.stderr, proc.stderr
