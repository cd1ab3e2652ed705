"""The fault-injecting proxy (``tests/faults/proxy.py``) in front of the session's emulators."""

from __future__ import annotations

import runpy
from pathlib import Path

import pytest

# tests run with --import-mode=importlib: load the sibling module by path
FaultProxy = runpy.run_path(str(Path(__file__).with_name("proxy.py")))["FaultProxy"]


@pytest.fixture(scope="module")
def s3_fault_proxy(s3_endpoint):
    p = FaultProxy(s3_endpoint.url, "s3")
    yield p
    p.close()


@pytest.fixture(scope="module")
def gcs_fault_proxy(gcs_endpoint):
    p = FaultProxy(gcs_endpoint.url, "gcs")
    yield p
    p.close()
