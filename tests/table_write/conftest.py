"""Fixtures for the write-side table tests (commits, manifests, tags, row ids, deletion files)."""

from __future__ import annotations

import os
import sys

import pytest

os.environ.setdefault("LANCE_LOG", "error")
sys.path.insert(0, os.path.dirname(__file__))

lance = pytest.importorskip("lance")


@pytest.fixture
def local_ds(tmp_path):
    """``(store, root, uri)`` of a fresh local dataset location."""
    from lancejit.io import open_store

    uri = str(tmp_path / "ds.lance")
    store, root = open_store(uri)
    return store, root, uri
