"""Fixtures of the benchmark tests (``bench store``, ``bench dataset``, ``explain take``)."""

from __future__ import annotations

import os
import sys

import pytest

os.environ.setdefault("LANCE_LOG", "error")
sys.path.insert(0, os.path.dirname(__file__))

pytest.importorskip("matplotlib")
pytest.importorskip("tqdm")
