"""Fixtures for the dataset-operations tests (write_dataset, delete, update, schema evolution,
restore, tags, cleanup), all checked against pylance 14."""

from __future__ import annotations

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))

os.environ.setdefault("LANCE_LOG", "error")

lance = pytest.importorskip("lance")


@pytest.fixture
def uri(tmp_path):
    return str(tmp_path / "ds.lance")
