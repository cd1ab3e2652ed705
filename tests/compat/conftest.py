"""Side-by-side tests of the reference's Python API: the same code runs against pylance
(``lance``) and lancejit imported as ``lance``, and the results (values, return shapes,
exception builtins) are compared.  ``compat_helpers.py`` holds the runner."""

from __future__ import annotations

import os
import sys

import pytest

sys.path.append(os.path.dirname(__file__))  # (appended: other directories import their own "conftest")

os.environ.setdefault("LANCE_LOG", "error")

pytest.importorskip("lance")
